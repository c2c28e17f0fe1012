/*
 * cache.h — the symbolication cache: named stacks by their pcs.
 *
 * A hit is verified pc by pc against the stack's stored key (two different
 * stacks never share an answer) and against the loaded images (names of an
 * image unloaded since are never served). Bounded by a memory cap with
 * least-recently-used eviction. A stack is cached on the second sighting
 * of its key, not the first (cache_admit.c: most cold stacks are never
 * asked for again, and a cached miss costs 1.5-4x an uncached one).
 *
 * Must not: be used from the stopped window (locks, allocates).
 */
#ifndef SNAP_SYMBOLS_CACHE_H
#define SNAP_SYMBOLS_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "stacksnap.h"

/* The stack named for exactly these pcs and flags, with a reference for the
   caller, or NULL (a miss). key = snap__stack_hash(pcs, n, flags). With
   table_current, the caller has brought the image table up to date during
   its call (snap__images_refresh_if_stale returned SNAP_OK): a hit is
   checked against the table's records. Without it (identity hits only,
   snap__cache_set_identity_hits), only the calling thread's front is
   probed, and a hit is served only if every image its names came from is,
   by the loader's lock-free answer, the one the table recorded; NULL
   means "ask again with the table current".
   admit (may be NULL): on a miss, whether the stack the caller names now
   is to be offered to the cache (snap__cache_put) — its key's second
   sighting — or named with its own strings and not offered (the first:
   the shared table was not even probed, it cannot hold a key never seen).
   Only ever set to true (on an admitted miss): the caller starts it false
   (a store on every hit was 2 of a hit's ~40 instructions here). */
const snap_stack_t *snap__cache_get(uint64_t key, const uintptr_t *pcs, int n,
                                    unsigned flags, bool table_current,
                                    bool *admit);

/* Every miss cached, as before the doorkeeper (on), or the second sighting
   only (off, the default). For the bench and tests that measure both.
   [setup] */
void snap__cache_set_admit_all(bool on);

/* Whether hits may be checked by image identity (lock-free) instead of the
   loader's stamp (a lock): not exact — see symbolicate.c. Off by default.
   [setup] */
void snap__cache_set_identity_hits(bool on);

/* Test hook: how many of the calling thread's lookups its front could not
   answer (each went to the shared table). [setup] */
uint64_t snap__cache_front_misses(void);

/* Offers a freshly named stack (its key filled in by snap__stack_pack).
   Returns the stack the caller should use, with a reference for it: s
   itself, or an equal one another thread cached first (then s is
   released). Consumes the caller's reference to s. */
const snap_stack_t *snap__cache_put(snap_stack_t *s);
/* Whether the cache keeps stacks now (it is ready and its cap is above
   0): a stack named when it does not is packed with its own strings, and
   so is one the cache does not admit (snap__cache_get's admit). */
bool snap__cache_keeps(void);

/* For tests: keep only these bits of every key, to force collisions. */
void snap__cache_set_key_mask(uint64_t mask);

#endif /* SNAP_SYMBOLS_CACHE_H */
