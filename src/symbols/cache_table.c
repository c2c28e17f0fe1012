/*
 * cache_table.c — the symbol cache's shared table: its stripes, their
 * entries in least-recently-used order, the bytes they count, and
 * eviction down to the cap.
 *
 * STRIPES stripes, the stripe chosen by the 64-bit stack hash (stripe_of),
 * each with its own lock, index (cache_index.c) and LRU list. An entry
 * holds one reference to a named stack, its size, and its place in the
 * stripe's LRU list, and lives in that stack's block (snap__stack_link:
 * one allocation a kept stack, not two); the stack itself carries the real key
 * (flags and every pc), checked on every hit (cache_verify.c).
 *
 * Memory: the cap counts the table (entries, compact stacks and the index
 * of each stripe), the fronts (cache_front.c), the shared symbol strings
 * (intern.c) and the stacks' views (frames and lines built when a user
 * asked for them: stack.c). Blocks count at what the allocator really
 * gives them (snap__plat_alloc_size: the size class and glibc's chunk
 * header, not the size asked for — the heap grew 1.3-2.2x what was
 * counted otherwise; tests/symbols/test_cache_bytes.c holds it to glibc's
 * own count). Each stripe holds at most limit / STRIPES bytes, the fronts
 * together at most limit / 16, and after every insertion, view or front
 * fill the least recently used entries go, stripe by stripe, until the
 * total is under the cap. What a user holds stays alive through its
 * reference count, counted while it lives. A cap of 0 holds nothing: the
 * table, the shared strings' tables and every front's slot block go (a
 * front its owner was in at that instant goes on the owner's next call);
 * what stays is each thread's thread-local front header (~64 bytes, no
 * heap of ours).
 *
 * Locks: each stripe has a snap__lock_t (a priority-donating
 * os_unfair_lock on Apple), not a semaphore: the main thread's privacy
 * hooks contend here with utility threads, and a semaphore would let the
 * main thread wait behind an owner the scheduler starves. A stripe's lock
 * is held for a probe and a list splice only, never across a call out of
 * the library (a stack is released after the lock is dropped), and never
 * two at once (fork takes them all: platform.h).
 *
 * Owns: the stripes and snap__cache_table_bytes. Must not: verify a
 * stack (cache_verify.c, outside the lock) or touch a thread's front.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "platform/platform.h"
#include "symbols/cache_parts.h"
#include "symbols/intern.h"
#include "symbols/stack.h"

padded_stripe_t snap__cache_stripes[STRIPES];
atomic_size_t snap__cache_table_bytes;
static atomic_uint g_trim_next; /* the stripe trimming starts at */

void snap__cache_lru_unlink(stripe_t *st, cache_entry_t *e) {
  if (e->newer)
    e->newer->older = e->older;
  else
    st->newest = e->older;
  if (e->older)
    e->older->newer = e->newer;
  else
    st->oldest = e->newer;
  e->newer = e->older = NULL;
}

void snap__cache_lru_push(stripe_t *st, cache_entry_t *e) {
  e->newer = NULL;
  e->older = st->newest;
  if (st->newest)
    st->newest->newer = e;
  st->newest = e;
  if (!st->oldest)
    st->oldest = e;
}

/* Counts what st's index takes now. Under the stripe's lock, after every
   add or delete; asks the allocator only when the index has a new block
   (it resizes, or goes: an add or delete that kept the block left its
   size as it was). */
void snap__cache_reindex(stripe_t *st) {
  if (st->index.cells == st->counted_cells)
    return;
  st->counted_cells = st->index.cells;
  size_t now = st->index.cells
                   ? snap__plat_alloc_size(st->index.cells,
                                           ((size_t)1 << st->index.bits) *
                                               sizeof *st->index.cells)
                   : 0;
  st->bytes = st->bytes - st->index_bytes + now;
  if (now >= st->index_bytes)
    atomic_fetch_add_explicit(&snap__cache_table_bytes, now - st->index_bytes,
                              memory_order_relaxed);
  else
    atomic_fetch_sub_explicit(&snap__cache_table_bytes, st->index_bytes - now,
                              memory_order_relaxed);
  st->index_bytes = now;
}

/* The entry for key in st, or NULL. */
cache_entry_t *snap__cache_find(const stripe_t *st, uint64_t key) {
  cache_index_cell_t *c = snap__cache_index_find(&st->index, key);
  return c ? c->e : NULL;
}

/* Unlinks e; returns its stack, to be released after the lock is
   dropped (a release may free memory: keep it out of the critical section). */
snap_stack_t *snap__cache_drop(stripe_t *st, cache_entry_t *e) {
  cache_index_cell_t *c = snap__cache_index_find(&st->index, e->key);
  if (c && c->e == e)
    snap__cache_index_remove(&st->index, c);
  snap__cache_reindex(st);
  snap__cache_lru_unlink(st, e);
  st->bytes -= e->bytes;
  atomic_fetch_sub_explicit(&snap__cache_table_bytes, e->bytes,
                            memory_order_relaxed);
  st->entries--;
  return e->stack; /* e lives in its block: it goes with the stack */
}

/* Everything the cap counts (see the head comment). */
static size_t total_bytes(void) {
  return atomic_load_explicit(&snap__cache_table_bytes, memory_order_relaxed) +
         snap__cache_front_bytes() + snap__intern_bytes() +
         snap__stack_view_bytes();
}

/* Evicts least recently used entries, one per stripe in turn, until the
   total is under the cap or the table is empty. No lock held on entry;
   one stripe's at a time inside, released before each release. */
void snap__cache_trim_to_cap(void) {
  if (!atomic_load_explicit(&snap__cache_ready, memory_order_acquire))
    return;
  size_t limit = atomic_load_explicit(&snap__cache_limit, memory_order_relaxed);
  bool evicted = true;
  /* Nothing to evict when the table is empty (what else the cap counts
     may alone be over a tiny cap): no sweep of every stripe's lock. */
  while (evicted && total_bytes() > limit &&
         atomic_load_explicit(&snap__cache_table_bytes, memory_order_relaxed) >
             0) {
    evicted = false;
    for (int i = 0; i < STRIPES && total_bytes() > limit; i++) {
      unsigned k =
          atomic_fetch_add_explicit(&g_trim_next, 1, memory_order_relaxed) %
          STRIPES;
      stripe_t *st = &snap__cache_stripes[k].s;
      snap_stack_t *victim = NULL;
      snap__plat_lock_lock(&st->lock);
      if (st->oldest) {
        victim = snap__cache_drop(st, st->oldest);
        st->evictions++;
      }
      snap__plat_lock_unlock(&st->lock);
      if (victim) {
        evicted = true;
        snap_stack_release(victim);
      }
    }
  }
}

/* Evicts st's least recently used entries (never keep) while st holds more
   than cap bytes, a few per lock hold; releases them unlocked. */
void snap__cache_trim_stripe(stripe_t *st, size_t cap,
                             const cache_entry_t *keep) {
  for (;;) {
    snap_stack_t *out[8];
    int nout = 0;
    snap__plat_lock_lock(&st->lock);
    while (nout < 8 && st->bytes > cap && st->oldest && st->oldest != keep) {
      out[nout++] = snap__cache_drop(st, st->oldest);
      st->evictions++;
    }
    snap__plat_lock_unlock(&st->lock);
    release_all(out, nout);
    if (nout < 8)
      return;
  }
}
