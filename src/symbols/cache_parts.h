/*
 * cache_parts.h — what the symbol cache's files share: its settings, the
 * shared table's types, and the functions one of them calls in another.
 *
 * The cache (cache.h) is split by job:
 *   cache.c         the entry points: lookup, insertion, the cap, stats;
 *   cache_table.c   the striped shared table: entries in LRU order, the
 *                   bytes they count, eviction down to the cap;
 *   cache_index.c   a stripe's open-addressed index (cache_index.h);
 *   cache_front.c   each thread's front of recent answers;
 *   cache_admit.c   the doorkeeper: a miss is cached on its second sighting;
 *   cache_verify.c  whether a cached stack may still be served.
 *
 * Owns: cache_entry_t, stripe_t and the declarations below. Must not: be
 * included outside those files.
 */
#ifndef SNAP_SYMBOLS_CACHE_PARTS_H
#define SNAP_SYMBOLS_CACHE_PARTS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "platform/platform.h"
#include "symbols/cache_index.h"
#include "symbols/stack.h"

#define STRIPES 16

/* Tags are named for the cache: with clang modules (SwiftPM and CocoaPods
   builds for Apple) the SDK's Darwin module defines `struct entry`
   (<search.h>), and a different one here would not compile. */
typedef struct cache_entry {
  uint64_t key;
  struct cache_entry *newer, *older; /* LRU list; head = most recent */
  snap_stack_t *stack;               /* one reference */
  size_t bytes;
} cache_entry_t;

/* An entry lives in its stack's block (snap__stack_link): it goes with
   the stack's last reference, after the table has let go of it. */
_Static_assert(sizeof(cache_entry_t) <= SNAP__STACK_LINK_BYTES,
               "an entry fits in its stack's link");

typedef struct stripe {
  snap__lock_t lock;
  cache_index_t index;
  cache_entry_t *newest, *oldest;
  size_t bytes;              /* entries, their stacks and index_bytes */
  size_t index_bytes;        /* the index block, as last counted */
  const void *counted_cells; /* the block index_bytes was counted for */
  uint64_t entries, hits, misses, evictions;
} stripe_t;

/* Each stripe on its own cache lines: written by different threads. */
typedef struct {
  _Alignas(128) stripe_t s;
} padded_stripe_t;

/* ---- Settings (cache.c) -------------------------------------------------- */

extern atomic_size_t snap__cache_limit; /* the cap, in bytes */
extern atomic_bool snap__cache_ready;   /* locks made: the cache may run */

/* ---- The shared table (cache_table.c) ------------------------------------ */

extern padded_stripe_t snap__cache_stripes[STRIPES];
extern atomic_size_t snap__cache_table_bytes; /* the stripes' bytes, summed */

static inline stripe_t *stripe_of(uint64_t key) {
  return &snap__cache_stripes[(key ^ (key >> 32) ^ (key >> 60)) % STRIPES].s;
}

/* Under the stripe's lock: */
void snap__cache_lru_unlink(stripe_t *st, cache_entry_t *e);
void snap__cache_lru_push(stripe_t *st, cache_entry_t *e);
void snap__cache_reindex(stripe_t *st);
cache_entry_t *snap__cache_find(const stripe_t *st, uint64_t key);
snap_stack_t *snap__cache_drop(stripe_t *st, cache_entry_t *e);

/* No lock held: */
void snap__cache_trim_to_cap(void);
void snap__cache_trim_stripe(stripe_t *st, size_t cap,
                             const cache_entry_t *keep);

/* What s takes from the allocator (its one block; views count apart). */
static inline size_t stack_bytes(const snap_stack_t *s) {
  return snap__plat_alloc_size(s, s->bytes);
}

static inline void release_all(snap_stack_t **v, int n) {
  for (int i = 0; i < n; i++)
    snap_stack_release(v[i]);
}

/* ---- Per-thread fronts (cache_front.c) ----------------------------------- */

int snap__cache_fronts_init(void);
snap_stack_t *snap__cache_front_get(uint64_t key, const uintptr_t *pcs, int n,
                                    unsigned flags, bool table_current);
void snap__cache_front_fill(uint64_t key, snap_stack_t *s);
void snap__cache_fronts_flush(bool free_blocks);
void snap__cache_front_drop_own(void);
size_t snap__cache_front_bytes(void);
uint64_t snap__cache_front_hits(void);

/* ---- Admission (cache_admit.c) ------------------------------------------ */

/* Whether a missed stack of this key is to be cached: true when the key
   was seen before (or every miss is cached: snap__cache_set_admit_all);
   false on its first sighting, which it records. Lock-free. */
bool snap__cache_admits(uint64_t key);
/* Forgets every key (a cap of 0 holds nothing). */
void snap__cache_admit_forget(void);
/* First sightings so far: misses that never reached the shared table. */
uint64_t snap__cache_admit_refused(void);

/* ---- Verification (cache_verify.c) --------------------------------------- */

/* The key: n, flags and every pc equal. Inline: every hit asks it. */
static inline bool same_key(const snap_stack_t *s, const uintptr_t *pcs, int n,
                            unsigned flags) {
  return s->key.n == n && s->key.flags == flags &&
         (n == 0 || memcmp(s->key.pcs, pcs, (size_t)n * sizeof *pcs) == 0);
}

bool snap__cache_fresh(snap_stack_t *s);
uint64_t snap__cache_idents_of(const snap_stack_t *s);
bool snap__cache_idents_live(const snap_stack_t *s, uint64_t idents);

#endif /* SNAP_SYMBOLS_CACHE_PARTS_H */
