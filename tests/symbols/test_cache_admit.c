/*
 * test_cache_admit.c — the symbol cache admits a stack on its second
 * sighting (cache_admit.c, issue 26 goal 1: a cached miss cost 1.5-4x an
 * uncached one, and most cold stacks are never asked for again).
 *
 *  - one-off stacks (each named once) leave nothing in the cache: no
 *    entry, no byte counted, every first sighting counted as a miss, every
 *    answer still right (the first sighting carries its own names);
 *  - a stack named twice is cached by the second call, and the third is a
 *    hit: the very object the second returned, and the hit count grows;
 *  - a stack the doorkeeper forgot (many first sightings later) while the
 *    table still holds it is served right, and found in the table again
 *    from a thread whose front never held it;
 *  - a cap of 0 still caches nothing, however often a stack is named.
 *
 * Oracles: the cache's own stats (entries, bytes, hits, misses) and the
 * identity of the objects handed out; the names from dladdr.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "stacksnap.h"

#define ONE_OFFS 500
#define DEPTH 8
/* Past two of the doorkeeper's windows (DOOR_WINDOW, cache_admit.c):
   whatever it knew is forgotten. */
#define FORGET 20000

__attribute__((noinline)) int snap_admit_fn_a(int x) {
  volatile int v = x;
  for (int i = 0; i < 3; i++)
    v = v * 3 + i;
  return v;
}
__attribute__((noinline)) int snap_admit_fn_b(int x) {
  volatile int v = x;
  for (int i = 0; i < 3; i++)
    v = v * 5 + i;
  return v;
}

/* Stack k: return addresses inside a and b, distinct for each k < 512. */
static void stack_for(int k, uintptr_t *pcs) {
  for (int i = 0; i < DEPTH; i++)
    pcs[i] = (uintptr_t)(i % 2 ? snap_admit_fn_b : snap_admit_fn_a) + 2 +
             (uintptr_t)(i < 3 ? (k >> (3 * i)) & 7 : 0);
}

static bool named_right(const snap_stack_t *s, const uintptr_t *pcs, int n) {
  if (snap_stack_count(s) != n)
    return false;
  for (int i = 0; i < n; i++) {
    const snap_frame_t *f = snap_stack_frame(s, i);
    Dl_info info;
    if (!f || f->pc != pcs[i] || !dladdr((void *)(pcs[i] - 1), &info) ||
        !info.dli_sname || !f->symbol || strcmp(f->symbol, info.dli_sname) ||
        f->symbol_addr != (uintptr_t)info.dli_saddr)
      return false;
  }
  return true;
}

static snap_symbol_cache_stats_t stats(void) {
  snap_symbol_cache_stats_t st = {.size = sizeof st};
  CHECK_EQ(snap_symbol_cache_stats(&st), SNAP_OK);
  return st;
}

static const snap_stack_t *g_cached; /* the table's copy of stack 0 */
static uintptr_t g_pcs[DEPTH];
static int g_found; /* lookups the other thread needed to get g_cached */

static void *other_thread(void *arg) {
  (void)arg;
  for (int i = 1; i <= 2 && !g_found; i++) {
    const snap_stack_t *s = snap_symbolicate(g_pcs, DEPTH, 0);
    CHECK(named_right(s, g_pcs, DEPTH), "forgotten stack, lookup %d", i);
    if (s == g_cached)
      g_found = i;
    snap_stack_release(s);
  }
  return NULL;
}

int main(void) {
  uintptr_t pcs[DEPTH];
  /* Warm up what naming keeps for good (this program's symbols), then
     empty the cache: from here on it counts what naming leaves in it. */
  stack_for(511, pcs);
  snap_stack_release(snap_symbolicate(pcs, DEPTH, 0));
  CHECK_EQ(snap_set_symbol_cache_limit(0), SNAP_OK);
  CHECK_EQ(snap_set_symbol_cache_limit(SNAP_SYMBOL_CACHE_DEFAULT_BYTES),
           SNAP_OK);
  snap_symbol_cache_stats_t a = stats();
  CHECK(a.entries == 0 && a.bytes == 0, "emptied: %llu entries, %llu bytes",
        (unsigned long long)a.entries, (unsigned long long)a.bytes);

  /* One-offs: nothing cached (before: ONE_OFFS entries, ~1 KiB each). */
  int wrong = 0;
  for (int k = 0; k < ONE_OFFS; k++) {
    stack_for(k, pcs);
    const snap_stack_t *s = snap_symbolicate(pcs, DEPTH, 0);
    wrong += !named_right(s, pcs, DEPTH);
    snap_stack_release(s);
  }
  CHECK_EQ(wrong, 0);
  snap_symbol_cache_stats_t b = stats();
  /* The doorkeeper is a Bloom filter: a false "seen" admits a stack as
     before, a few in a thousand here; before, every one was cached. */
  CHECK(b.entries <= ONE_OFFS / 50, "%d one-off stacks left %llu entries",
        ONE_OFFS, (unsigned long long)b.entries);
  /* Nothing counted without an entry; with a few admitted by mistake,
     what the first entry brings along too (the shared names' and the
     stripe's tables, the thread's front block: ~70 KiB). */
  CHECK(b.entries ? b.bytes <= (128u << 10) + b.entries * 4096 : b.bytes == 0,
        "%d one-off stacks left %llu bytes counted for %llu entries", ONE_OFFS,
        (unsigned long long)b.bytes, (unsigned long long)b.entries);
  CHECK(b.misses - a.misses == ONE_OFFS, "%llu misses for %d one-offs",
        (unsigned long long)(b.misses - a.misses), ONE_OFFS);

  /* Stack 0 again: its second sighting is cached, the third a hit. */
  stack_for(0, g_pcs);
  const snap_stack_t *second = snap_symbolicate(g_pcs, DEPTH, 0);
  snap_symbol_cache_stats_t c = stats();
  CHECK(c.entries == b.entries + 1 && c.bytes > b.bytes,
        "second sighting: %llu entries, %llu before",
        (unsigned long long)c.entries, (unsigned long long)b.entries);
  const snap_stack_t *third = snap_symbolicate(g_pcs, DEPTH, 0);
  snap_symbol_cache_stats_t d = stats();
  CHECK(second && third == second, "the third lookup is a hit");
  CHECK(named_right(third, g_pcs, DEPTH), "the hit is named right");
  /* Front hits are counted in blocks of 256: make one. */
  for (int i = 0; i < 256; i++)
    snap_stack_release(snap_symbolicate(g_pcs, DEPTH, 0));
  snap_symbol_cache_stats_t e = stats();
  CHECK(e.hits >= d.hits + 256 && d.misses == c.misses,
        "hits %llu -> %llu, misses %llu -> %llu", (unsigned long long)d.hits,
        (unsigned long long)e.hits, (unsigned long long)c.misses,
        (unsigned long long)d.misses);
  snap_stack_release(third);

  /* Forgotten by the doorkeeper, still in the table: pcs in no image
     (cheap to name) push it past two windows; another thread, whose front
     never held stack 0, is served right and finds the table's copy within
     two lookups (one if the filter still says "seen"). */
  for (int k = 0; k < FORGET; k++) {
    uintptr_t pc = 0x10000 + 16 * (uintptr_t)k;
    snap_stack_release(snap_symbolicate(&pc, 1, 0));
  }
  printf("%llu of %d one-offs admitted by a false \"seen\"\n",
         (unsigned long long)(stats().entries - c.entries), FORGET);
  CHECK(stats().entries <= c.entries + FORGET / 20,
        "%llu of %d one-offs in no image were cached",
        (unsigned long long)(stats().entries - c.entries), FORGET);
  g_cached = second;
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, other_thread, NULL), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
  CHECK(g_found >= 1, "the table's copy was not found again");
  snap_stack_release(second);

  /* A cap of 0 caches nothing, however often. */
  CHECK_EQ(snap_set_symbol_cache_limit(0), SNAP_OK);
  const snap_stack_t *x[3];
  for (int i = 0; i < 3; i++)
    x[i] = snap_symbolicate(g_pcs, DEPTH, 0);
  CHECK(x[0] != x[1] && x[1] != x[2] && x[0] != x[2], "cap 0 cached");
  CHECK(stats().entries == 0 && stats().bytes == 0, "cap 0 holds something");
  for (int i = 0; i < 3; i++) {
    CHECK(named_right(x[i], g_pcs, DEPTH), "cap 0, lookup %d", i);
    snap_stack_release(x[i]);
  }
  snap_set_symbol_cache_limit(SNAP_SYMBOL_CACHE_DEFAULT_BYTES);
  return check_result("test_cache_admit");
}
