/*
 * cache_index.h — a stripe's index: 64-bit key to entry, open addressing
 * with linear probing (cache_index.c says why).
 *
 * Owns: the cell block and its load (cache_index_t). Must not: know what
 * an entry holds, count bytes against the cap (the table does:
 * cache_table.c), lock (its stripe's lock is held around every call), or
 * be included outside the symbol cache's files.
 */
#ifndef SNAP_SYMBOLS_CACHE_INDEX_H
#define SNAP_SYMBOLS_CACHE_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cache_entry;

/* One cell of a stripe's index: the key beside its entry, so that a probe
   reads the index alone until the key matches (a miss reads no entry). */
typedef struct cache_index_cell {
  uint64_t key;
  struct cache_entry *e; /* NULL: empty */
} cache_index_cell_t;

typedef struct cache_index {
  cache_index_cell_t *cells; /* 1 << bits cells, or NULL when empty */
  unsigned bits;
  size_t used; /* cells holding an entry */
} cache_index_t;

/* The cell holding key, or NULL. */
cache_index_cell_t *snap__cache_index_find(const cache_index_t *ix,
                                           uint64_t key);

/* Rebuilds ix with 1 << bits cells (bits 0: none). false: out of memory,
   ix unchanged. */
bool snap__cache_index_resize(cache_index_t *ix, unsigned bits);

/* Adds key -> e (key not present). false: out of memory, not added. */
bool snap__cache_index_add(cache_index_t *ix, uint64_t key,
                           struct cache_entry *e);

/* Removes the cell c (of ix), keeping every other key reachable; shrinks
   ix when an eighth full, frees it with its last entry. */
void snap__cache_index_remove(cache_index_t *ix, cache_index_cell_t *c);

#endif /* SNAP_SYMBOLS_CACHE_INDEX_H */
