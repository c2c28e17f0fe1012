/*
 * test_cache_index.c — the shared table's index (cache_index.c) keeps every
 * entry it holds reachable through growth, shrinking and deletions anywhere in
 * a probe run (open addressing with backward-shift deletion: no tombstones).
 *
 * Oracle: the cache's own stats, from outside the index. K distinct stacks
 * are named with a cap that holds them all; the cap is then lowered (each
 * stripe evicts its least recently used entries: deletions all over the
 * index, and shrinks) and raised again, several times, with rounds of
 * naming in between. After a round that named all K, a second round must
 * find every one: no shared-table miss, and exactly K entries. A key the
 * index lost would miss (the entry is still in the LRU list, so the miss
 * adds a twin: entries > K). About 190 keys a stripe: probe runs of
 * several cells, so deletions shift cells back. Depth-1 stacks of pcs in
 * no image: naming them reads no file.
 */
#include <stdint.h>

#include "check.h"
#include "stacksnap.h"

#define K 3000

static uintptr_t pc_of(int k) { return (uintptr_t)0x1000 + 64u * (unsigned)k; }

static void name_all(int from, int to) {
  for (int k = from; k < to; k++) {
    uintptr_t pc = pc_of(k);
    const snap_stack_t *s = snap_symbolicate(&pc, 1, 0);
    CHECK(s && snap_stack_count(s) == 1 && snap_stack_frame(s, 0)->pc == pc,
          "stack %d", k);
    snap_stack_release(s);
  }
}

static snap_symbol_cache_stats_t stats(void) {
  snap_symbol_cache_stats_t st = {.size = sizeof st};
  CHECK_EQ(snap_symbol_cache_stats(&st), SNAP_OK);
  return st;
}

static void round_trip(const char *what, size_t big) {
  /* Puts back whatever the lower cap evicted: twice, since a stack is
     cached on its second sighting (cache_admit.c). */
  name_all(0, K);
  name_all(0, K);
  snap_symbol_cache_stats_t a = stats();
  name_all(0, K);
  snap_symbol_cache_stats_t b = stats();
  CHECK(b.misses == a.misses, "%s: %llu misses of %d present stacks", what,
        (unsigned long long)(b.misses - a.misses), K);
  CHECK(b.entries == K, "%s: %llu entries, want %d", what,
        (unsigned long long)b.entries, K);
  CHECK(b.bytes <= big, "%s: bytes %llu over the cap", what,
        (unsigned long long)b.bytes);
}

int main(void) {
  const size_t big = (size_t)64 << 20;
  const size_t lower[] = {(size_t)512 << 10, (size_t)128 << 10,
                          (size_t)32 << 10, 0};
  for (int pass = 0; pass < 2; pass++) {
    CHECK_EQ(snap_set_symbol_cache_limit(big), SNAP_OK);
    round_trip("first fill", big);
    for (size_t i = 0; i < sizeof lower / sizeof lower[0]; i++) {
      CHECK_EQ(snap_set_symbol_cache_limit(lower[i]), SNAP_OK);
      snap_symbol_cache_stats_t st = stats();
      CHECK(st.entries < K, "cap %zu evicted nothing", lower[i]);
      /* Half of them named at the lower cap: insertions and evictions
         interleaved, in the same index. */
      name_all(0, K / 2);
      CHECK_EQ(snap_set_symbol_cache_limit(big), SNAP_OK);
      round_trip("after a lower cap", big);
    }
    CHECK_EQ(snap_set_symbol_cache_limit(0), SNAP_OK); /* the index goes */
    CHECK_EQ(stats().entries, 0);
  }
  return check_result("test_cache_index");
}
