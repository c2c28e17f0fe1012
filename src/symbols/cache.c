/*
 * cache.c — the symbolication cache's entry points (cache.h): lookup,
 * insertion, the cap and the counts; and the settings the other parts
 * read (the cap, whether the cache is ready, the test hook's key mask).
 *
 * A lookup asks the calling thread's front first (cache_front.c: no lock, no
 * shared write), then the striped shared table (cache_table.c, one stripe's
 * lock for a probe and an LRU splice); a hit from either is served only once
 * verified (cache_verify.c), outside every lock, and a shared hit refills
 * the front. A front miss of a key the doorkeeper has never seen
 * (cache_admit.c) is not probed further, and its stack is not offered: a
 * stack is cached on its second sighting. An insertion puts a freshly named
 * stack in its stripe (the newer of two equal keys wins; of two equal stacks,
 * the one cached first is handed out), fills the front, then evicts down to the
 * stripe's share and the whole cap. The design of each part, and what the cap
 * counts, is in its file; cache_parts.h lists them.
 *
 * Must not: hold a stripe's lock across a verification or a stack release
 * (a release may free, and freeing takes the shared strings' lock), or be
 * called from the stopped window (it locks and allocates).
 */
#include "symbols/cache.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "platform/platform.h"
#include "symbols/cache_parts.h"
#include "symbols/intern.h"
#include "symbols/stack.h"

atomic_size_t snap__cache_limit = SNAP_SYMBOL_CACHE_DEFAULT_BYTES;
atomic_bool snap__cache_ready;
static atomic_uint_fast64_t g_key_mask = UINT64_MAX;
static _Thread_local uint64_t t_front_misses; /* test hook's count */

static void on_view(size_t bytes) {
  (void)bytes;
  snap__cache_trim_to_cap();
}

__attribute__((constructor)) static void cache_init(void) {
  for (int i = 0; i < STRIPES; i++)
    if (snap__plat_lock_init(&snap__cache_stripes[i].s.lock) != SNAP_OK)
      return; /* not ready: the cache is off, naming still works */
  if (snap__cache_fronts_init() != SNAP_OK)
    return;
  snap__stack_on_view(on_view);
  atomic_store(&snap__cache_ready, true);
}

static bool caching(void) {
  return atomic_load_explicit(&snap__cache_ready, memory_order_acquire) &&
         atomic_load_explicit(&snap__cache_limit, memory_order_relaxed) > 0;
}

bool snap__cache_keeps(void) { return caching(); }

const snap_stack_t *snap__cache_get(uint64_t key, const uintptr_t *pcs, int n,
                                    unsigned flags, bool table_current,
                                    bool *admit) {
  if (!caching()) {
    /* A cap of 0: this thread's front, busy when the cap went down, goes
       now (snap__cache_fronts_flush). */
    snap__cache_front_drop_own();
    return NULL;
  }
  key &= atomic_load_explicit(&g_key_mask, memory_order_relaxed);
  snap_stack_t *hit = snap__cache_front_get(key, pcs, n, flags, table_current);
  if (hit || !table_current)
    return hit;
  t_front_misses++;
  /* The doorkeeper (cache_admit.c): a key never seen is in no stripe, so
     its first sighting skips the probe and is not cached; a key it forgot
     while the table still holds it is found again from its next one. */
  if (!snap__cache_admits(key))
    return NULL;
  if (admit)
    *admit = true;

  stripe_t *st = stripe_of(key);
  snap__plat_lock_lock(&st->lock);
  cache_entry_t *e = snap__cache_find(st, key);
  if (e && same_key(e->stack, pcs, n, flags)) {
    snap__cache_lru_unlink(st, e);
    snap__cache_lru_push(st, e);
    hit = snap__stack_retain(e->stack);
    st->hits++;
  } else {
    st->misses++;
  }
  snap__plat_lock_unlock(&st->lock);
  if (!hit)
    return NULL;

  /* Checked outside the lock: on Apple the check may ask dyld, and a
     thread holding dyld's lock may be waiting for this stripe. */
  if (snap__cache_fresh(hit)) {
    snap__cache_front_fill(key, hit);
    snap__cache_trim_to_cap(); /* the front may have grown */
    return hit;
  }
  snap_stack_t *stale = NULL;
  snap__plat_lock_lock(&st->lock);
  e = snap__cache_find(st, key);
  if (e && e->stack == hit)
    stale = snap__cache_drop(st, e);
  st->hits--; /* it was a miss after all */
  st->misses++;
  snap__plat_lock_unlock(&st->lock);
  snap_stack_release(stale);
  snap_stack_release(hit);
  return NULL;
}

const snap_stack_t *snap__cache_put(snap_stack_t *s) {
  size_t cap =
      atomic_load_explicit(&snap__cache_limit, memory_order_relaxed) / STRIPES;
  if (!caching())
    return s; /* not cached: the caller owns the only reference */
  /* The entry is in the stack's block; a stack named with its own strings
     (the cache was off when it was named) has none and is not kept. */
  cache_entry_t *fresh_entry = snap__stack_link(s);
  size_t bytes = stack_bytes(s);
  if (!fresh_entry || bytes > cap)
    return s;
  uint64_t key =
      s->key.hash & atomic_load_explicit(&g_key_mask, memory_order_relaxed);
  memset(fresh_entry, 0, sizeof *fresh_entry);
  fresh_entry->key = key;
  fresh_entry->stack = snap__stack_retain(s); /* the table's reference */
  fresh_entry->bytes = bytes;

  /* Stacks to release once the lock is dropped (a release may free, and
     freeing takes the shared strings' lock): a replaced entry, or ours
     when another thread won the race. */
  snap_stack_t *out[2];
  int nout = 0;
  snap_stack_t *result = s;
  const cache_entry_t *added =
      NULL; /* ours, when its stripe is over its share */

  stripe_t *st = stripe_of(key);
  snap__plat_lock_lock(&st->lock);
  cache_entry_t *e = snap__cache_find(st, key);
  if (e && same_key(e->stack, s->key.pcs, s->key.n, s->key.flags) &&
      e->stack->key.generation == s->key.generation) {
    /* Another thread named the same stack first: hand out its copy. */
    result = snap__stack_retain(e->stack);
    out[nout++] = fresh_entry->stack;
    out[nout++] = s;
  } else {
    if (e) /* a collision or a stale twin: the newer answer wins */
      out[nout++] = snap__cache_drop(st, e);
    bool added_ok = snap__cache_index_add(&st->index, key, fresh_entry);
    snap__cache_reindex(st);
    if (!added_ok) { /* the index could not grow: not cached */
      out[nout++] = fresh_entry->stack;
    } else {
      snap__cache_lru_push(st, fresh_entry);
      st->bytes += bytes;
      st->entries++;
      atomic_fetch_add_explicit(&snap__cache_table_bytes, bytes,
                                memory_order_relaxed);
      if (st->bytes > cap) /* else no second lock hold to trim */
        added = fresh_entry;
    }
  }
  snap__plat_lock_unlock(&st->lock);
  release_all(out, nout);

  if (added)
    snap__cache_trim_stripe(st, cap, added);
  snap__cache_front_fill(key, result);
  snap__cache_trim_to_cap();
  return result;
}

uint64_t snap__cache_front_misses(void) { return t_front_misses; }

void snap__cache_set_key_mask(uint64_t mask) {
  atomic_store(&g_key_mask, mask);
}

int snap_set_symbol_cache_limit(size_t bytes) {
  atomic_store(&snap__cache_limit, bytes);
  /* Shrink now, so memory goes down when the cap does: every thread's
     front first (they count in the cap, and hold stacks the table may have
     dropped), then each stripe to its share, then the whole. */
  if (!atomic_load(&snap__cache_ready))
    return SNAP_OK;
  snap__cache_fronts_flush(bytes == 0);
  if (bytes == 0)
    snap__cache_admit_forget();
  for (int i = 0; i < STRIPES; i++)
    snap__cache_trim_stripe(&snap__cache_stripes[i].s, bytes / STRIPES, NULL);
  snap__cache_trim_to_cap();
  snap__intern_trim(); /* the shared names' tables, if no name is left */
  return SNAP_OK;
}

int snap_symbol_cache_stats(snap_symbol_cache_stats_t *caller) {
  if (!caller || !snap__abi_size_known(caller->size, SNAP__CACHE_STATS_SIZES))
    return SNAP_EINVAL;
  snap_symbol_cache_stats_t all = {0}, *out = &all;
  if (atomic_load(&snap__cache_ready)) {
    for (int i = 0; i < STRIPES; i++) {
      stripe_t *st = &snap__cache_stripes[i].s;
      snap__plat_lock_lock(&st->lock);
      out->hits += st->hits;
      out->misses += st->misses;
      out->evictions += st->evictions;
      out->entries += st->entries;
      out->bytes += st->bytes;
      snap__plat_lock_unlock(&st->lock);
    }
  }
  /* What else the cap counts: fronts, shared strings, views. */
  out->bytes += snap__cache_front_bytes() + snap__intern_bytes() +
                snap__stack_view_bytes();
  out->hits += snap__cache_front_hits();
  out->misses += snap__cache_admit_refused(); /* first sightings */
  snap__abi_copy_out(caller, &all, caller->size);
  return SNAP_OK;
}
