/*
 * cache.c — the bounded, verified symbolication cache: a small per-thread
 * front over a striped shared table.
 *
 * Shared table: uthash tables (Debian's uthash-dev) keyed by the 64-bit
 * stack hash, one per stripe, the stripe chosen by the hash. An entry holds
 * one reference to a named stack, its size, and its place in the stripe's
 * LRU list; the stack itself carries the real key (flags and every pc).
 *
 * Per-thread front: FRONT_SLOTS slots per thread (two candidates per key),
 * each one more reference to a stack. A repeated call site is answered there
 * without touching anything another thread writes — no lock, no LRU
 * splice, no shared counter — which is what lets two threads on two stacks run
 * in parallel (a stripe lock taken on every hit moves its cache line
 * between cores on every call). A front miss goes to the shared table and
 * refills the slot. Slots are released when the thread exits.
 *
 * Verification, on every hit, front or shared:
 *  - the key: n, flags and every pc equal. Two stacks with the same hash
 *    cannot both be in the table (the newer replaces the older), so a
 *    collision costs a miss, never a wrong answer;
 *  - the images: the image table is brought up to date by the caller (the
 *    platform's load/unload stamp, asked on every call: on Linux one
 *    dl_iterate_phdr that stops at the first image, ~30 ns, the loader's
 *    lock held no longer than that), then each image the names
 *    came from must be unchanged in it since the stack was named
 *    (snap__image_t.since: same range, base, path and contents); checked
 *    once per table rebuild, then remembered. So after a dlclose nothing
 *    named for that range is served, a library loaded at the same address
 *    gets its own names, and nothing the loader owns is read unlocked
 *    (reading its record of a library raced with dlclose freeing it).
 *
 * Memory: each stripe holds at most limit / STRIPES bytes (stacks and
 * entries; the uthash bucket arrays add ~16 bytes per entry on top). Past
 * it the least recently used entries go. A stack still held by a user or a
 * thread's front slot stays alive through its reference count: on top of
 * the cap, at most FRONT_SLOTS stacks per thread.
 *
 * Locks: each stripe has a snap__lock_t (a priority-donating
 * os_unfair_lock on Apple), not a semaphore: the main thread's privacy
 * hooks contend here with utility threads, and a semaphore would let the
 * main thread wait behind an owner the scheduler starves. A stripe's lock
 * is held for a probe and a list splice only, never across a call out of
 * the library, and never two at once (fork takes them all: platform.h).
 */
#include "symbols/cache.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "images/images.h"
#include "platform/platform.h"
#include "symbols/stack.h"

/* uthash reports a failed allocation through this hook instead of exiting
   the process (its default), which a library must never do. Only read
   under a stripe's lock, right after the HASH_ADD that may set it. */
#define HASH_NONFATAL_OOM 1
static _Thread_local bool t_hash_oom;
#define uthash_nonfatal_oom(elt) (t_hash_oom = true)
#include <uthash.h>

#define STRIPES 16
#define FRONT_SLOTS 128

typedef struct entry {
  UT_hash_handle hh;
  uint64_t key;
  struct entry *newer, *older; /* LRU list; head = most recent */
  snap_stack_t *stack;         /* one reference */
  size_t bytes;
} entry_t;

typedef struct stripe {
  snap__lock_t lock;
  entry_t *table;
  entry_t *newest, *oldest;
  size_t bytes;
  uint64_t entries, hits, misses, evictions;
} stripe_t;

/* Each stripe on its own cache lines: written by different threads. */
typedef struct {
  _Alignas(128) stripe_t s;
} padded_stripe_t;

static padded_stripe_t g_stripes[STRIPES];
static atomic_size_t g_limit = SNAP_SYMBOL_CACHE_DEFAULT_BYTES;
static atomic_uint_fast64_t g_key_mask = UINT64_MAX;
static atomic_bool g_ready;
static atomic_uint_fast64_t g_front_hits; /* flushed from threads in blocks */

typedef struct front_slot {
  uint64_t key;
  snap_stack_t *stack; /* one reference, or NULL */
} front_slot_t;

/* The default (dynamic) TLS model on purpose: 2 KiB of initial-exec TLS
   could make loading the library at run time fail for want of static TLS
   space. */
static _Thread_local front_slot_t t_front[FRONT_SLOTS];
static _Thread_local bool t_front_registered;
static _Thread_local unsigned t_front_hits;

__attribute__((constructor)) static void cache_init(void) {
  for (int i = 0; i < STRIPES; i++)
    if (snap__plat_lock_init(&g_stripes[i].s.lock) != SNAP_OK)
      return; /* g_ready stays false: the cache is off, naming still works */
  atomic_store(&g_ready, true);
}

static stripe_t *stripe_of(uint64_t key) {
  return &g_stripes[(key ^ (key >> 32) ^ (key >> 60)) % STRIPES].s;
}

static bool caching(void) {
  return atomic_load_explicit(&g_ready, memory_order_acquire) &&
         atomic_load_explicit(&g_limit, memory_order_relaxed) > 0;
}

/* ---- Verification ------------------------------------------------------- */

static bool same_key(const snap_stack_t *s, const uintptr_t *pcs, int n,
                     unsigned flags) {
  return s->key.n == n && s->key.flags == flags &&
         (n == 0 || memcmp(s->key.pcs, pcs, (size_t)n * sizeof *pcs) == 0);
}

/* Every image the names came from is unchanged in table t since the stack
   was named (so app-ness and ranges are as they were). */
static bool unchanged_since(const snap_stack_t *s, const snap__images_t *t) {
  for (int i = 0; i < s->key.n_images; i++) {
    const snap__stack_image_t *r = &s->key.images[i];
    const snap__image_t *img = snap__images_find(t, r->addr);
    if (!r->path ? img != NULL
                 : !img || img->base != r->base || img->path != r->path ||
                       img->since > s->key.generation)
      return false;
  }
  return true;
}

/* Whether s may still be served, by the image table the caller brought up
   to date (cache.h): its own records — each range's "unchanged since"
   generation — say whether every image the names came from is still the
   one they were read from. Nothing the loader owns is read unlocked.
   Writes shared memory only once per table rebuild (to remember the
   check). */
static bool fresh(snap_stack_t *s) {
  uint64_t current = snap__images_current_generation();
  if (atomic_load_explicit(&s->checked_generation, memory_order_relaxed) ==
      current)
    return true;
  const snap__images_t *t = snap__images_acquire();
  bool ok = unchanged_since(s, t);
  if (ok)
    atomic_store_explicit(&s->checked_generation, snap__images_generation(t),
                          memory_order_relaxed);
  snap__images_release(t);
  return ok;
}

/* ---- Per-thread front ---------------------------------------------------- */

static void front_release_all(void *arg) {
  front_slot_t *front = arg;
  for (int i = 0; i < FRONT_SLOTS; i++) {
    snap_stack_release(front[i].stack);
    front[i].stack = NULL;
  }
}

/* Two candidate slots per key (two-choice hashing): a thread cycling
   through a few dozen call sites rarely has two that evict each other. */
static front_slot_t *front_slot(uint64_t key, int way) {
  return &t_front[(way ? key >> 24 : key) % FRONT_SLOTS];
}

/* Puts a new reference to s into one of the calling thread's slots for key:
   an empty one; else the first, after its occupant moves to the second
   (whose occupant goes) — a cheap approximation of least recently filled. */
static void front_fill(uint64_t key, snap_stack_t *s) {
  if (!t_front_registered) {
    if (snap__plat_on_thread_exit(front_release_all, t_front) != SNAP_OK)
      return; /* without cleanup at exit, keep no references */
    t_front_registered = true;
  }
  front_slot_t *a = front_slot(key, 0), *b = front_slot(key, 1);
  front_slot_t *slot = !a->stack ? a : !b->stack ? b : a;
  if (slot == a && a->stack && a != b) { /* a's occupant to b, b's out */
    snap_stack_release(b->stack);
    *b = *a;
    a->stack = NULL;
  }
  snap_stack_t *old = slot->stack;
  slot->key = key;
  slot->stack = snap__stack_retain(s);
  snap_stack_release(old);
}

static snap_stack_t *front_get(uint64_t key, const uintptr_t *pcs, int n,
                               unsigned flags) {
  front_slot_t *slot = front_slot(key, 0);
  if (!slot->stack || slot->key != key)
    slot = front_slot(key, 1);
  snap_stack_t *s = slot->stack;
  if (!s || slot->key != key || !same_key(s, pcs, n, flags))
    return NULL;
  if (!fresh(s)) {
    slot->stack = NULL;
    snap_stack_release(s);
    return NULL;
  }
  if (++t_front_hits == 256) { /* counted in blocks: no shared write each */
    atomic_fetch_add_explicit(&g_front_hits, 256, memory_order_relaxed);
    t_front_hits = 0;
  }
  return snap__stack_retain(s);
}

/* ---- Shared table -------------------------------------------------------- */

static void lru_unlink(stripe_t *st, entry_t *e) {
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

static void lru_push(stripe_t *st, entry_t *e) {
  e->newer = NULL;
  e->older = st->newest;
  if (st->newest)
    st->newest->newer = e;
  st->newest = e;
  if (!st->oldest)
    st->oldest = e;
}

/* Unlinks e; returns its stack, to be released after the lock is
   dropped (a release may free memory: keep it out of the critical section). */
static snap_stack_t *drop(stripe_t *st, entry_t *e) {
  HASH_DELETE(hh, st->table, e);
  lru_unlink(st, e);
  st->bytes -= e->bytes;
  st->entries--;
  snap_stack_t *s = e->stack;
  free(e);
  return s;
}

const snap_stack_t *snap__cache_get(uint64_t key, const uintptr_t *pcs, int n,
                                    unsigned flags) {
  if (!caching())
    return NULL;
  key &= atomic_load_explicit(&g_key_mask, memory_order_relaxed);
  snap_stack_t *hit = front_get(key, pcs, n, flags);
  if (hit)
    return hit;

  stripe_t *st = stripe_of(key);
  snap__plat_lock_lock(&st->lock);
  entry_t *e;
  HASH_FIND(hh, st->table, &key, sizeof key, e);
  if (e && same_key(e->stack, pcs, n, flags)) {
    lru_unlink(st, e);
    lru_push(st, e);
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
  if (fresh(hit)) {
    front_fill(key, hit);
    return hit;
  }
  snap_stack_t *stale = NULL;
  snap__plat_lock_lock(&st->lock);
  HASH_FIND(hh, st->table, &key, sizeof key, e);
  if (e && e->stack == hit)
    stale = drop(st, e);
  st->hits--; /* it was a miss after all */
  st->misses++;
  snap__plat_lock_unlock(&st->lock);
  snap_stack_release(stale);
  snap_stack_release(hit);
  return NULL;
}

const snap_stack_t *snap__cache_put(snap_stack_t *s) {
  size_t cap = atomic_load_explicit(&g_limit, memory_order_relaxed) / STRIPES;
  size_t bytes = sizeof(entry_t) + s->bytes;
  if (!caching() || bytes > cap)
    return s; /* not cached: the caller owns the only reference */
  entry_t *fresh_entry = malloc(sizeof *fresh_entry);
  if (!fresh_entry)
    return s;
  uint64_t key =
      s->key.hash & atomic_load_explicit(&g_key_mask, memory_order_relaxed);
  memset(fresh_entry, 0, sizeof *fresh_entry);
  fresh_entry->key = key;
  fresh_entry->stack = snap__stack_retain(s); /* the table's reference */
  fresh_entry->bytes = bytes;

  /* Stacks to release once the lock is dropped (a release may free):
     a replaced or evicted entry each, plus ours when another thread won the
     race. Past the first few, evictions release under the lock. */
  snap_stack_t *out[8];
  int nout = 0;
  snap_stack_t *result = s;

  stripe_t *st = stripe_of(key);
  snap__plat_lock_lock(&st->lock);
  entry_t *e;
  HASH_FIND(hh, st->table, &key, sizeof key, e);
  if (e && same_key(e->stack, s->key.pcs, s->key.n, s->key.flags) &&
      e->stack->key.generation == s->key.generation) {
    /* Another thread named the same stack first: hand out its copy. */
    result = snap__stack_retain(e->stack);
    out[nout++] = fresh_entry->stack;
    out[nout++] = s;
    free(fresh_entry);
  } else {
    if (e) /* a collision or a stale twin: the newer answer wins */
      out[nout++] = drop(st, e);
    t_hash_oom = false;
    HASH_ADD(hh, st->table, key, sizeof key, fresh_entry);
    if (t_hash_oom) { /* uthash could not grow its index: not cached */
      out[nout++] = fresh_entry->stack;
      free(fresh_entry);
    } else {
      lru_push(st, fresh_entry);
      st->bytes += bytes;
      st->entries++;
      while (st->bytes > cap && st->oldest != fresh_entry) {
        snap_stack_t *victim = drop(st, st->oldest);
        st->evictions++;
        if (nout < (int)(sizeof out / sizeof *out))
          out[nout++] = victim;
        else
          snap_stack_release(victim);
      }
    }
  }
  snap__plat_lock_unlock(&st->lock);

  for (int i = 0; i < nout; i++)
    snap_stack_release(out[i]);
  front_fill(key, result);
  return result;
}

void snap__cache_set_key_mask(uint64_t mask) {
  atomic_store(&g_key_mask, mask);
}

int snap_set_symbol_cache_limit(size_t bytes) {
  atomic_store(&g_limit, bytes);
  /* Shrink now, so memory goes down when the cap does. */
  if (!atomic_load(&g_ready))
    return SNAP_OK;
  size_t cap = bytes / STRIPES;
  for (int i = 0; i < STRIPES; i++) {
    stripe_t *st = &g_stripes[i].s;
    for (;;) {
      snap_stack_t *victim = NULL;
      snap__plat_lock_lock(&st->lock);
      if (st->bytes > cap && st->oldest) {
        victim = drop(st, st->oldest);
        st->evictions++;
      }
      snap__plat_lock_unlock(&st->lock);
      if (!victim)
        break;
      snap_stack_release(victim);
    }
  }
  /* The calling thread's own front goes too (other threads' fronts hold at
     most FRONT_SLOTS stacks each, released as they are replaced). */
  front_release_all(t_front);
  return SNAP_OK;
}

int snap_symbol_cache_stats(snap_symbol_cache_stats_t *caller) {
  if (!caller || !snap__abi_size_known(caller->size, SNAP__CACHE_STATS_SIZES))
    return SNAP_EINVAL;
  snap_symbol_cache_stats_t all = {0}, *out = &all;
  if (atomic_load(&g_ready)) {
    for (int i = 0; i < STRIPES; i++) {
      stripe_t *st = &g_stripes[i].s;
      snap__plat_lock_lock(&st->lock);
      out->hits += st->hits;
      out->misses += st->misses;
      out->evictions += st->evictions;
      out->entries += st->entries;
      out->bytes += st->bytes;
      snap__plat_lock_unlock(&st->lock);
    }
    out->hits += atomic_load(&g_front_hits);
  }
  snap__abi_copy_out(caller, &all, caller->size);
  return SNAP_OK;
}
