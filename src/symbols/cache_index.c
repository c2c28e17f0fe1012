/*
 * cache_index.c — a stripe's index (cache_index.h): 64-bit key to entry,
 * open addressing with linear probing.
 *
 * Why not a chained table (the one this replaced, uthash's): it lets a
 * chain grow to ten entries before it doubles, and each link is an entry
 * of its own, somewhere in the heap; a miss walked the whole chain, twice
 * (the probe, then the insertion's), a cache miss a link: 24 % of a cold
 * lookup with the cache on. Here a probe reads consecutive cells of one
 * block, at most half full (it doubles past half, halves below an eighth,
 * never below 32 cells, and goes with its last entry). Keys are hashes
 * already (hash.h); the multiply spreads the bits the stripe choice used.
 * Deletion shifts the cells after the hole back (no tombstones: a table
 * that churns stays as fast). tests/symbols/test_cache_index.c holds every
 * entry reachable through growth, shrinking and deletions.
 *
 * Owns: the cell block. Must not: lock (the caller holds the stripe's
 * lock), count bytes (cache_table.c counts the block after each change:
 * snap__cache_reindex), or read an entry (a probe compares keys only;
 * the caller checks the entry's stack: cache_verify.c).
 */
#include "symbols/cache_index.h"

#include <stdlib.h>

static size_t home_of(uint64_t key, unsigned bits) {
  return (size_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

/* The cell holding key, or NULL. */
cache_index_cell_t *snap__cache_index_find(const cache_index_t *ix,
                                           uint64_t key) {
  if (!ix->cells)
    return NULL;
  size_t mask = ((size_t)1 << ix->bits) - 1;
  for (size_t i = home_of(key, ix->bits);; i = (i + 1) & mask) {
    cache_index_cell_t *c = &ix->cells[i];
    if (!c->e)
      return NULL;
    if (c->key == key)
      return c;
  }
}

static void index_place(cache_index_cell_t *cells, unsigned bits, uint64_t key,
                        struct cache_entry *e) {
  size_t mask = ((size_t)1 << bits) - 1;
  size_t i = home_of(key, bits);
  while (cells[i].e)
    i = (i + 1) & mask;
  cells[i] = (cache_index_cell_t){key, e};
}

/* Rebuilds ix with 1 << bits cells (bits 0: none). false: out of
   memory, ix unchanged. */
bool snap__cache_index_resize(cache_index_t *ix, unsigned bits) {
  cache_index_cell_t *cells = NULL;
  if (bits) {
    cells = calloc((size_t)1 << bits, sizeof *cells);
    if (!cells)
      return false;
    for (size_t i = 0; ix->cells && i < ((size_t)1 << ix->bits); i++)
      if (ix->cells[i].e)
        index_place(cells, bits, ix->cells[i].key, ix->cells[i].e);
  }
  free(ix->cells);
  ix->cells = cells;
  ix->bits = bits;
  return true;
}

/* Adds key -> e (key not present). false: out of memory, not added. */
bool snap__cache_index_add(cache_index_t *ix, uint64_t key,
                           struct cache_entry *e) {
  if (!ix->cells || 2 * (ix->used + 1) > ((size_t)1 << ix->bits)) {
    unsigned bits = ix->cells ? ix->bits + 1 : 5;
    if (!snap__cache_index_resize(ix, bits))
      return false;
  }
  index_place(ix->cells, ix->bits, key, e);
  ix->used++;
  return true;
}

/* Removes the cell c (of ix): the cells after it that probed past
   it move back, so that every key stays reachable from its home. The
   index shrinks when an eighth full, and goes with its last entry. */
void snap__cache_index_remove(cache_index_t *ix, cache_index_cell_t *c) {
  size_t mask = ((size_t)1 << ix->bits) - 1;
  size_t hole = (size_t)(c - ix->cells);
  for (size_t i = (hole + 1) & mask; ix->cells[i].e; i = (i + 1) & mask) {
    size_t home = home_of(ix->cells[i].key, ix->bits);
    /* Movable when its home is not in (hole, i], cyclically. */
    bool stays =
        hole <= i ? (hole < home && home <= i) : (hole < home || home <= i);
    if (!stays) {
      ix->cells[hole] = ix->cells[i];
      hole = i;
    }
  }
  ix->cells[hole] = (cache_index_cell_t){0, NULL};
  ix->used--;
  if (ix->used == 0)
    (void)snap__cache_index_resize(ix, 0);
  else if (ix->bits > 5 && 8 * ix->used < ((size_t)1 << ix->bits))
    (void)snap__cache_index_resize(ix, ix->bits - 1); /* no memory: stays big */
}
