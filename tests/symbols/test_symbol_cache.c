/*
 * test_symbol_cache.c — the cache never returns a wrong stack, holds its
 * memory cap, and keeps handed-out stacks alive.
 *
 *  - hostile patterns: A B A B, its permutations, the empty stack, long
 *    repeats — each answer carries exactly the pcs asked for, and the hash
 *    tells them apart (a plain XOR would not);
 *  - forced collisions (every key masked to a few bits): still never a
 *    wrong stack;
 *  - threads hammering shared and private stacks while the cap shrinks and
 *    grows (run under TSan by scripts/test.sh);
 *  - the cap: SNAP_TEST_CACHE_STACKS distinct stacks (1 M in the plain
 *    builds) keep the charged bytes under the cap and the resident memory
 *    flat (measured by the kernel, not by us);
 *  - a stack held by the caller survives eviction.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "stacksnap.h"
#include "symbols/cache.h"
#include "symbols/hash.h"

#ifndef SNAP_TEST_CACHE_STACKS
#define SNAP_TEST_CACHE_STACKS 1000000
#endif

/* Functions to point pcs into; their names are the expected answers. */
__attribute__((noinline)) int snap_cache_fn_a(int x) { return x * 3 + 1; }
__attribute__((noinline)) int snap_cache_fn_b(int x) { return x * 5 + 2; }
static const char *names[2] = {"snap_cache_fn_a", "snap_cache_fn_b"};

/* A return address inside fn (pc - 1 still inside). */
static uintptr_t in(int which) {
  return (uintptr_t)(which ? snap_cache_fn_b : snap_cache_fn_a) + 2;
}

/* The answer for pcs must carry exactly those pcs, each named right. */
static int verify(const snap_stack_t *s, const uintptr_t *pcs, const int *which,
                  int n) {
  if (!s || snap_stack_count(s) != n)
    return 0;
  for (int i = 0; i < n; i++) {
    const snap_frame_t *f = snap_stack_frame(s, i);
    if (f->pc != pcs[i])
      return 0;
    if (which && (!f->symbol || strcmp(f->symbol, names[which[i]]) != 0))
      return 0;
  }
  return 1;
}

static void check_pattern(const int *which, int n, const char *what) {
  uintptr_t pcs[600];
  for (int i = 0; i < n; i++)
    pcs[i] = in(which[i]);
  /* A first sighting (not cached: cache_admit.c), a cached miss, a hit. */
  for (int round = 0; round < 3; round++) {
    const snap_stack_t *s = snap_symbolicate(pcs, n, 0);
    CHECK(verify(s, pcs, which, n), "%s (round %d)", what, round);
    snap_stack_release(s);
  }
}

static void test_hostile_patterns(void) {
  static const int abab[] = {0, 1, 0, 1}, baba[] = {1, 0, 1, 0},
                   aabb[] = {0, 0, 1, 1}, ab[] = {0, 1}, ba[] = {1, 0},
                   aa[] = {0, 0}, a[] = {0};
  /* Interleave them so each lookup follows a different stack. */
  for (int k = 0; k < 3; k++) {
    check_pattern(abab, 4, "A B A B");
    check_pattern(baba, 4, "B A B A");
    check_pattern(aabb, 4, "A A B B");
    check_pattern(ab, 2, "A B");
    check_pattern(ba, 2, "B A");
    check_pattern(aa, 2, "A A");
    check_pattern(a, 1, "A");
    check_pattern(NULL, 0, "empty");
  }
  static int rep[600];
  for (int n = 497; n <= 500; n++) /* long repeats differing by one */
    check_pattern(rep, n, "A x n");

  /* The key itself: the flaw of a plain XOR is gone. */
  uintptr_t A = in(0), B = in(1);
  uintptr_t s_abab[] = {A, B, A, B}, s_baba[] = {B, A, B, A},
            s_aabb[] = {A, A, B, B}, s_aa[] = {A, A};
  uint64_t h[] = {
      snap__stack_hash(s_abab, 4, 0), snap__stack_hash(s_baba, 4, 0),
      snap__stack_hash(s_aabb, 4, 0), snap__stack_hash(s_aa, 2, 0),
      snap__stack_hash(NULL, 0, 0),   snap__stack_hash(s_abab, 2, 0)};
  for (size_t i = 0; i < sizeof h / sizeof *h; i++)
    for (size_t j = i + 1; j < sizeof h / sizeof *h; j++)
      CHECK(h[i] != h[j], "hash %zu == hash %zu", i, j);
}

static void test_forced_collisions(void) {
  snap__cache_set_key_mask(0x3); /* four keys for every stack there is */
  uint32_t seed = 12345;
  for (int iter = 0; iter < 4000; iter++) {
    int which[8];
    uintptr_t pcs[8];
    int n = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 8;
    for (int i = 0; i < n; i++) {
      which[i] = (int)((seed = seed * 1103515245u + 12345u) >> 16) & 1;
      pcs[i] = in(which[i]);
    }
    const snap_stack_t *s = snap_symbolicate(pcs, n, 0);
    CHECK(verify(s, pcs, which, n), "collision iteration %d", iter);
    snap_stack_release(s);
  }
  snap__cache_set_key_mask(UINT64_MAX);
}

/* ---- Threads -------------------------------------------------------------
 */

#define SHARED 64
static uintptr_t g_shared[SHARED][6];
static int g_which[SHARED][6];
static _Atomic int g_wrong;

static void *hammer(void *arg) {
  uint32_t seed = (uint32_t)(uintptr_t)arg * 2654435761u;
  int iters = SNAP_TEST_TSAN ? 3000 : 20000;
  for (int i = 0; i < iters; i++) {
    seed = seed * 1103515245u + 12345u;
    int k = (int)(seed >> 16) % SHARED;
    const snap_stack_t *s = snap_symbolicate(g_shared[k], 6, 0);
    if (!verify(s, g_shared[k], g_which[k], 6))
      g_wrong++;
    /* Hold it across another call: eviction must not free it. */
    uintptr_t mine[3] = {in(0) + (seed & 1), (uintptr_t)arg + 0x1000, in(1)};
    const snap_stack_t *t = snap_symbolicate(mine, 3, 0);
    if (!verify(t, mine, NULL, 3) || !verify(s, g_shared[k], g_which[k], 6))
      g_wrong++;
    snap_stack_release(t);
    snap_stack_release(s);
  }
  return NULL;
}

/* A lower cap empties every thread's front, and under 4 KiB nothing is
   cached: while squeezed, the hammering threads name every stack afresh
   (~50 us each under qemu). So the cap stays low for a short while (still
   hundreds of times a second, racing with the hammering) and back at the
   default for longer. */
static void *squeeze(void *arg) {
  _Atomic int *stop = arg;
  for (unsigned i = 0; !*stop; i++) {
    snap_set_symbol_cache_limit(i % 2 ? 4096 : SNAP_SYMBOL_CACHE_DEFAULT_BYTES);
    nanosleep(&(struct timespec){0, i % 2 ? 20000 : 10000000}, NULL);
  }
  return NULL;
}

static void test_threads(void) {
  for (int k = 0; k < SHARED; k++)
    for (int i = 0; i < 6; i++) {
      g_which[k][i] = (k >> i) & 1;
      g_shared[k][i] = in(g_which[k][i]) + (uintptr_t)(i == 5 ? k % 2 : 0);
    }
  pthread_t th[4], sq;
  _Atomic int stop = 0;
  pthread_create(&sq, NULL, squeeze, (void *)&stop);
  for (uintptr_t i = 0; i < 4; i++)
    pthread_create(&th[i], NULL, hammer, (void *)(i + 1));
  for (int i = 0; i < 4; i++)
    pthread_join(th[i], NULL);
  stop = 1;
  pthread_join(sq, NULL);
  snap_set_symbol_cache_limit(SNAP_SYMBOL_CACHE_DEFAULT_BYTES);
  CHECK_EQ(g_wrong, 0);
}

/* ---- The cap -------------------------------------------------------------
 */

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld", &kib) == 1)
      break;
  if (f)
    fclose(f);
  return kib;
}

static void test_cap(void) {
  const size_t cap = 1u << 20;
  snap_set_symbol_cache_limit(cap);
  snap_symbol_cache_stats_t st = {.size = sizeof st};
  long rss_warm = 0;
  uintptr_t pcs[4];
  const snap_stack_t *held = NULL;
  for (long i = 0; i < SNAP_TEST_CACHE_STACKS; i++) {
    /* Distinct stacks: pcs stepping through two functions' bytes. */
    pcs[0] = in(0) + (uintptr_t)(i & 7);
    pcs[1] = in(1) + (uintptr_t)((i >> 3) & 7);
    pcs[2] = (uintptr_t)(i >> 6) * 64 + 0x10000; /* no image: unnamed */
    pcs[3] = in(0);
    /* Twice: a stack is cached on its second sighting (cache_admit.c). */
    snap_stack_release(snap_symbolicate(pcs, 4, 0));
    const snap_stack_t *s = snap_symbolicate(pcs, 4, 0);
    if (!s || snap_stack_frame(s, 2)->pc != pcs[2])
      g_wrong++;
    if (i == 10) /* held across a million evictions */
      held = s;
    else
      snap_stack_release(s);
    if (i == SNAP_TEST_CACHE_STACKS / 10)
      rss_warm = rss_kib();
    if (i % 4096 == 0) {
      snap_symbol_cache_stats(&st);
      if (st.bytes > cap)
        g_wrong++;
    }
  }
  long rss_end = rss_kib();
  snap_symbol_cache_stats(&st);
  CHECK(st.bytes <= cap, "bytes %llu > cap", (unsigned long long)st.bytes);
  CHECK(st.evictions > 0 && st.entries > 100, "entries %llu evictions %llu",
        (unsigned long long)st.entries, (unsigned long long)st.evictions);
  CHECK_EQ(g_wrong, 0);
  CHECK(held && snap_stack_frame(held, 2)->pc == 10 / 64 * 64 + 0x10000 &&
            strcmp(snap_stack_frame(held, 0)->symbol, names[0]) == 0,
        "a held stack outlives its eviction");
  snap_stack_release(held);
#if !SNAP_TEST_ASAN && !SNAP_TEST_TSAN
  /* The allocator's own growth, seen by the kernel: flat once warm. */
  CHECK(rss_end - rss_warm < 4096, "RSS grew %ld KiB after warm-up",
        rss_end - rss_warm);
#endif
  printf("cap: %d stacks, %llu cached (%llu bytes), RSS %ld -> %ld KiB\n",
         SNAP_TEST_CACHE_STACKS, (unsigned long long)st.entries,
         (unsigned long long)st.bytes, rss_warm, rss_end);

  /* Limit 0: nothing cached, every answer still right. */
  snap_set_symbol_cache_limit(0);
  snap_symbol_cache_stats(&st);
  CHECK_EQ(st.entries, 0);
  uintptr_t one = in(1);
  const snap_stack_t *x = snap_symbolicate(&one, 1, 0);
  const snap_stack_t *y = snap_symbolicate(&one, 1, 0);
  CHECK(x && y && x != y && verify(y, &one, (int[]){1}, 1), "uncached");
  snap_stack_release(x);
  snap_stack_release(y);
  snap_set_symbol_cache_limit(SNAP_SYMBOL_CACHE_DEFAULT_BYTES);
}

int main(void) {
  test_hostile_patterns();
  test_forced_collisions();
  test_threads();
  test_cap();
  return check_result("test_symbol_cache");
}
