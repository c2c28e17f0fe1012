/*
 * test_cache_bytes.c — the symbol cache's cap counts what the cache holds
 * (issue 26, goal 6: the heap grew 1.3-2.2x what the cache counted for
 * each cached stack — malloc's size classes and headers — and a cap of 0,
 * which "disables caching", still counted bytes held).
 *
 * Names N distinct stacks of depth 32, each twice (so each lands in the
 * cache: it admits a stack on its second sighting, cache_admit.c) from one
 * thread, after a warm-up that leaves what naming keeps for good (the image
 * table, this program's parsed symbols) out of the count. Witness: glibc's
 * allocator (mallinfo2's bytes in use, which include every chunk's header and
 * rounding), not our own count: the heap's growth and the cache's counted
 * growth must agree within 20 % (what differs: the allocator's caches of freed
 * scratch blocks, a front slot counting a stack the table holds too). Then a
 * cap of 0 must count 0 bytes and give the heap back. Sanitizer builds replace
 * the allocator: there only the counts are checked.
 */
#include <malloc.h>
#include <string.h>

#include "check.h"
#include "stacksnap.h"

#define N 2000
#define DEPTH 32

#define FN(k)                                                                  \
  __attribute__((noinline)) int snap_bytes_fn_##k(int x) {                     \
    volatile int v = x;                                                        \
    for (int i = 0; i < 3; i++)                                                \
      v = v * 7 + k + i;                                                       \
    return v;                                                                  \
  }
FN(0)
FN(1)
FN(2)
FN(3)
typedef int (*fn_t)(int);
static const fn_t g_fns[4] = {snap_bytes_fn_0, snap_bytes_fn_1, snap_bytes_fn_2,
                              snap_bytes_fn_3};

/* Stack k: return addresses inside the four functions, made distinct by k
   in the first frames' offsets (each offset < 16, inside the function). */
static void stack_for(int k, uintptr_t *pcs) {
  for (int i = 0; i < DEPTH; i++)
    pcs[i] = (uintptr_t)g_fns[i % 4] + 2 +
             (uintptr_t)(i < 4 ? (k >> (3 * i)) & 7 : i % 3);
}

static size_t counted(void) {
  snap_symbol_cache_stats_t st = {.size = sizeof st};
  CHECK_EQ(snap_symbol_cache_stats(&st), SNAP_OK);
  return (size_t)st.bytes;
}

/* Names n distinct stacks of depth `depth` into an emptied cache and
   compares the heap's growth with the cache's; then a cap of 0. */
static void measure(int n, int depth) {
  uintptr_t pcs[DEPTH];
  snap_set_symbol_cache_limit(0);
  snap_set_symbol_cache_limit(SNAP_SYMBOL_CACHE_DEFAULT_BYTES);
  size_t c0 = counted(), m0 = mallinfo2().uordblks;
  CHECK(c0 == 0, "an emptied cache counts %zu bytes", c0);

  int wrong = 0;
  for (int k = 0; k < n; k++) {
    stack_for(k, pcs);
    for (int twice = 0; twice < 2; twice++) {
      const snap_stack_t *s = snap_symbolicate(pcs, depth, 0);
      wrong += snap_stack_count(s) != depth;
      snap_stack_release(s);
    }
  }
  CHECK_EQ(wrong, 0);
  snap_symbol_cache_stats_t st = {.size = sizeof st};
  CHECK_EQ(snap_symbol_cache_stats(&st), SNAP_OK);
  CHECK(st.entries >= (unsigned long long)n, "only %llu of %d cached",
        (unsigned long long)st.entries, n);
  size_t c1 = (size_t)st.bytes, m1 = mallinfo2().uordblks;

  snap_set_symbol_cache_limit(0);
  size_t c2 = counted(), m2 = mallinfo2().uordblks;
  CHECK(c2 == 0, "a cap of 0 still counts %zu bytes held", c2);

#if !SNAP_TEST_ASAN && !SNAP_TEST_TSAN
  double grown = (double)m1 - (double)m0, count = (double)c1 - (double)c0;
  printf("%llu stacks of depth %d: heap grew %.0f bytes (%.0f a stack), "
         "the cache counted %.0f (%.0f a stack): %.2fx; after a cap of 0 "
         "the heap keeps %ld\n",
         (unsigned long long)st.entries, depth, grown,
         grown / (double)st.entries, count, count / (double)st.entries,
         grown / count, (long)m2 - (long)m0);
  CHECK(grown > 0 && count > 0 && grown / count <= 1.2 &&
            grown / count >= 1 / 1.2,
        "depth %d: the heap grew %.2fx what the cache counted", depth,
        grown / count);
  CHECK((double)m2 - (double)m0 < grown / 4,
        "a cap of 0 kept %ld of the %.0f bytes caching took",
        (long)m2 - (long)m0, grown);
#else
  (void)m0, (void)m1, (void)m2, (void)c1;
#endif
}

int main(void) {
  uintptr_t pcs[DEPTH];
  for (int k = 0; k < 4; k++) { /* warm up what naming keeps for good */
    stack_for(k, pcs);
    snap_stack_release(snap_symbolicate(pcs, DEPTH, 0));
  }
  measure(N, DEPTH);
  snap_set_symbol_cache_limit(SNAP_SYMBOL_CACHE_DEFAULT_BYTES);
  return check_result("test_cache_bytes");
}
