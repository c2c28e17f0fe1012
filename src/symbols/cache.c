/*
 * cache.c — the bounded, verified symbolication cache: a small per-thread
 * front over a striped shared table.
 *
 * Shared table: one open-addressed index per stripe (see "A stripe's
 * index" below) keyed by the 64-bit stack hash, the stripe chosen by the
 * hash. An entry
 * holds one reference to a named stack, its size, and its place in the stripe's
 * LRU list; the stack itself carries the real key (flags and every pc).
 *
 * Per-thread front: FRONT_SLOTS slots per thread (FRONT_WAYS candidates
 * per key; a fill replaces the one filled longest ago), each one more
 * reference to a stack. A repeated call site is answered there without
 * touching anything another thread writes — no lock, no LRU splice, no
 * shared counter — which is what lets two threads on two stacks run in
 * parallel (a stripe lock taken on every hit moves its cache line between
 * cores on every call). A front miss goes to the shared table and refills
 * the slot. Fronts are thread-local headers in a registry, their slots a
 * heap block, so that another thread can empty them: the owner marks its
 * front busy (one atomic exchange on its own cache line) while in it; a
 * lower cap bumps an epoch and empties every front not busy at once (a cap
 * of 0 frees their blocks too), and a busy one empties itself on its
 * owner's next call. Slots are released when the thread exits. (What a
 * hit still shares with other threads on Linux is the loader's lock:
 * symbolicate.c.)
 *
 * Verification, on every hit, front or shared:
 *  - the key: n, flags and every pc equal. Two stacks with the same hash
 *    cannot both be in the table (the newer replaces the older), so a
 *    collision costs a miss, never a wrong answer;
 *  - the images: the image table is brought up to date by the caller (the
 *    platform's load/unload stamp, asked on every call: ~30 ns on Linux,
 *    the loader's lock held no longer than that), then each image the names
 *    came from must be unchanged in it since the stack was named
 *    (snap__image_t.since: same range, base, path and contents); checked
 *    once per table rebuild, then remembered. So after a dlclose nothing
 *    named for that range is served, a library loaded at the same address
 *    gets its own names, and nothing the loader owns is read unlocked
 *    (reading its record of a library raced with dlclose freeing it).
 *    With identity hits on (symbolicate.c says why they are off by
 *    default), a front hit is served without the stamp when the loader's
 *    lock-free identity of every such image equals what the table recorded
 *    when the slot was filled (idents_of, idents_live).
 *
 * Memory: the cap counts the table (entries, compact stacks and the index
 * of each stripe), the fronts (each thread's slot block and every
 * stack a slot holds, at its size when filled: also counted when the table
 * holds it too, an upper bound), the shared symbol strings (intern.c) and
 * the stacks' views (frames and lines built when a user asked for them:
 * stack.c). Blocks count at what the allocator really gives them
 * (snap__plat_alloc_size: the size class and glibc's chunk header, not the
 * size asked for — the heap grew 1.3-2.2x what was counted otherwise;
 * tests/symbols/test_cache_bytes.c holds it to glibc's own count). Each
 * stripe holds at most limit / STRIPES bytes, the fronts together at most
 * limit / 16, and after every insertion, view or front fill the least
 * recently used entries go, stripe by stripe, until the total is under
 * the cap. What a user holds stays alive through its reference count,
 * counted while it lives. A cap of 0 holds nothing: the table, the shared
 * strings' tables and every front's slot block go (a front its owner was
 * in at that instant goes on the owner's next call); what stays is each
 * thread's thread-local front header (~64 bytes, no heap of ours).
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
#include "symbols/intern.h"
#include "symbols/stack.h"

#define STRIPES 16
#define FRONT_SLOTS 128

/* Tags are named for this file: with clang modules (SwiftPM and CocoaPods
   builds for Apple) the SDK's Darwin module defines `struct entry`
   (<search.h>), and a different one here would not compile. */
typedef struct cache_entry {
  uint64_t key;
  struct cache_entry *newer, *older; /* LRU list; head = most recent */
  snap_stack_t *stack;               /* one reference */
  size_t bytes;
} cache_entry_t;

/* One cell of a stripe's index: the key beside its entry, so that a probe
   reads the index alone until the key matches (a miss reads no entry). */
typedef struct index_cell {
  uint64_t key;
  struct cache_entry *e; /* NULL: empty */
} index_cell_t;

typedef struct stripe {
  snap__lock_t lock;
  index_cell_t *index; /* 1 << index_bits cells, or NULL when empty */
  unsigned index_bits;
  size_t used; /* cells holding an entry */
  cache_entry_t *newest, *oldest;
  size_t bytes;       /* entries, their stacks and index_bytes */
  size_t index_bytes; /* the index block, as last counted */
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
static atomic_size_t g_table_bytes;       /* the stripes' bytes, summed */
static atomic_uint g_trim_next;           /* the stripe trimming starts at */

typedef struct front_slot {
  uint64_t key;
  snap_stack_t *stack; /* one reference, or NULL */
  uint32_t bytes;      /* what it counts for in g_front_bytes */
  uint32_t filled;     /* the front's fill count when it was filled */
  uint64_t idents;     /* idents_of the stack's images when filled, or 0 */
} front_slot_t;

/* The thread's own (thread-local, so it lives as long as the thread and
   another thread may take it busy and edit it): on cache lines of its own,
   since the owner writes busy on every call, and two threads' fronts side
   by side on one line would move it between their cores. Its slots are a
   heap block made on the first fill, which a flusher frees when the cap
   goes to 0 (a cap of 0 holds nothing). */
typedef struct front {
  _Alignas(128) atomic_bool busy; /* its owner or a flusher is in it */
  bool listed;                    /* in the registry, exit handler set */
  uint64_t epoch;                 /* g_front_epoch it was last emptied for */
  struct front *newer, *older;    /* the registry, under g_fronts_lock */
  front_slot_t *slot;             /* FRONT_SLOTS of them, or NULL */
  size_t slot_bytes;              /* the block's size in g_front_bytes */
  uint32_t fills;                 /* slots filled so far (wraps) */
} front_t;

static snap__lock_t g_fronts_lock;
static front_t *g_fronts;
static atomic_uint_fast64_t g_front_epoch;
static atomic_size_t g_front_bytes;
static _Thread_local front_t t_front;
/* Hits checked by image identity instead of the loader's stamp
   (snap__cache_set_identity_hits): fronts then record identities. */
static atomic_bool g_identity_hits;
static _Thread_local unsigned t_front_hits;
static _Thread_local uint64_t t_front_misses; /* test hook's count */

static void trim_to_cap(void);
static void on_view(size_t bytes) {
  (void)bytes;
  trim_to_cap();
}

__attribute__((constructor)) static void cache_init(void) {
  for (int i = 0; i < STRIPES; i++)
    if (snap__plat_lock_init(&g_stripes[i].s.lock) != SNAP_OK)
      return; /* g_ready stays false: the cache is off, naming still works */
  if (snap__plat_lock_init(&g_fronts_lock) != SNAP_OK)
    return;
  snap__stack_on_view(on_view);
  atomic_store(&g_ready, true);
}

static stripe_t *stripe_of(uint64_t key) {
  return &g_stripes[(key ^ (key >> 32) ^ (key >> 60)) % STRIPES].s;
}

static bool caching(void) {
  return atomic_load_explicit(&g_ready, memory_order_acquire) &&
         atomic_load_explicit(&g_limit, memory_order_relaxed) > 0;
}

bool snap__cache_keeps(void) { return caching(); }

/* What s takes from the allocator (its one block; views count apart). */
static size_t stack_bytes(const snap_stack_t *s) {
  return snap__plat_alloc_size(s, s->bytes);
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

/* Mixes one image identity into h (never 0 for a real mix: 0 is "none"). */
static uint64_t mix_ident(uint64_t h, uint64_t id) {
  h = (h ^ id) * 0xD6E8FEB86659FD93ull;
  return h ^ (h >> 32);
}

/* The identities (snap__plat_ident_t.id) of the images s's names came
   from, as the image table recorded them under the loader's lock, mixed;
   0 if the table no longer holds them unchanged since s was named, or the
   platform cannot tell identities lock-free. Takes a table reference:
   called when a front slot is filled, not on a hit. */
static uint64_t idents_of(const snap_stack_t *s) {
  const snap__images_t *t = snap__images_acquire();
  uint64_t h = 0x9E3779B97F4A7C15ull;
  if (!unchanged_since(s, t))
    h = 0;
  for (int i = 0; h && i < s->key.n_images; i++) {
    const snap__image_t *img = snap__images_find(t, s->key.images[i].addr);
    uint64_t id = img ? img->ident : SNAP__IDENT_NONE;
    h = id == SNAP__IDENT_UNKNOWN ? 0 : mix_ident(h, id);
  }
  snap__images_release(t);
  return h;
}

/* Whether the images at s's addresses are, now, the ones idents (from
   idents_of) recorded: asked of the loader lock-free (_dl_find_object on
   glibc, ~6 ns an image), no lock and no shared write. */
static bool idents_live(const snap_stack_t *s, uint64_t idents) {
  if (!idents)
    return false;
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < s->key.n_images; i++) {
    snap__plat_ident_t id;
    snap__plat_image_ident(s->key.images[i].addr, &id);
    if (id.id == SNAP__IDENT_UNKNOWN)
      return false;
    h = mix_ident(h, id.id);
  }
  return h == idents;
}

/* ---- Per-thread front ---------------------------------------------------- */

/* Moves f's stacks into out (room for FRONT_SLOTS), emptying it; returns
   how many. The caller holds f (busy) and releases them afterwards. */
static int front_take_all(front_t *f, snap_stack_t **out) {
  int n = 0;
  for (int i = 0; f->slot && i < FRONT_SLOTS; i++)
    if (f->slot[i].stack) {
      out[n++] = f->slot[i].stack;
      atomic_fetch_sub_explicit(&g_front_bytes, f->slot[i].bytes,
                                memory_order_relaxed);
      f->slot[i].stack = NULL;
    }
  return n;
}

static void release_all(snap_stack_t **v, int n) {
  for (int i = 0; i < n; i++)
    snap_stack_release(v[i]);
}

/* Frees f's (empty) slot block. The caller holds f (busy). */
static void front_free_block(front_t *f) {
  free(f->slot);
  f->slot = NULL;
  atomic_fetch_sub_explicit(&g_front_bytes, f->slot_bytes,
                            memory_order_relaxed);
  f->slot_bytes = 0;
}

/* At the thread's exit: out of the registry (so no flusher can be in it
   after), then emptied and its block freed. */
static void front_exit(void *arg) {
  front_t *f = arg;
  snap__plat_lock_lock(&g_fronts_lock);
  if (f->newer)
    f->newer->older = f->older;
  else
    g_fronts = f->older;
  if (f->older)
    f->older->newer = f->newer;
  f->newer = f->older = NULL;
  f->listed = false;
  snap__plat_lock_unlock(&g_fronts_lock);
  snap_stack_t *v[FRONT_SLOTS];
  release_all(v, front_take_all(f, v));
  front_free_block(f);
}

/* The calling thread's front with its slots, marked busy, or NULL (no
   slots yet and create false, none to be had, or a flusher in it right
   now). Emptied first when the cap went down since it was last. Leave
   with front_leave. */
static front_t *front_enter(bool create) {
  front_t *f = &t_front;
  if (!f->listed) {
    if (!create || snap__plat_on_thread_exit(front_exit, f) != SNAP_OK)
      return NULL; /* without cleanup at exit, keep no references */
    f->epoch = atomic_load(&g_front_epoch);
    snap__plat_lock_lock(&g_fronts_lock);
    f->older = g_fronts;
    if (g_fronts)
      g_fronts->newer = f;
    g_fronts = f;
    f->listed = true;
    snap__plat_lock_unlock(&g_fronts_lock);
  }
  if (atomic_exchange_explicit(&f->busy, true, memory_order_acquire))
    return NULL;
  uint64_t epoch = atomic_load_explicit(&g_front_epoch, memory_order_relaxed);
  if (f->epoch != epoch) {
    f->epoch = epoch;
    snap_stack_t *v[FRONT_SLOTS];
    release_all(v, front_take_all(f, v));
  }
  if (!f->slot && create) {
    size_t asked = FRONT_SLOTS * sizeof *f->slot;
    f->slot = calloc(FRONT_SLOTS, sizeof *f->slot);
    f->slot_bytes = snap__plat_alloc_size(f->slot, asked);
    atomic_fetch_add_explicit(&g_front_bytes, f->slot_bytes,
                              memory_order_relaxed);
  }
  if (!f->slot) {
    atomic_store_explicit(&f->busy, false, memory_order_release);
    return NULL;
  }
  return f;
}

static void front_leave(front_t *f) {
  atomic_store_explicit(&f->busy, false, memory_order_release);
}

/* Empties every front no thread is in now; the others empty themselves on
   their owner's next call (the epoch). free_blocks: their slot blocks go
   too (a cap of 0); a front busy now keeps its empty block until its
   owner's next call (snap__cache_get). */
static void fronts_flush(bool free_blocks) {
  uint64_t epoch = atomic_fetch_add(&g_front_epoch, 1) + 1;
  snap__plat_lock_lock(&g_fronts_lock);
  size_t n = 0;
  for (front_t *f = g_fronts; f; f = f->older)
    n++;
  /* Released once the lock is dropped (a release may free and lock). */
  snap_stack_t **v = n ? malloc(n * FRONT_SLOTS * sizeof *v) : NULL;
  size_t nv = 0;
  for (front_t *f = v ? g_fronts : NULL; f; f = f->older) {
    if (atomic_exchange_explicit(&f->busy, true, memory_order_acquire))
      continue;
    f->epoch = epoch;
    nv += (size_t)front_take_all(f, v + nv);
    if (free_blocks)
      front_free_block(f);
    atomic_store_explicit(&f->busy, false, memory_order_release);
  }
  snap__plat_lock_unlock(&g_fronts_lock);
  release_all(v, (int)nv);
  free(v);
}

/* FRONT_WAYS candidate slots per key, from four 16-bit parts of the hash.
   With two, a thread cycling through 64 call sites kept missing in about
   one run in ten (three keys whose slots overlap take turns evicting each
   other; simulated: 45 runs of 400 over 64 misses in 200 rounds); with
   four, none of 400 (at most 6 misses after the first round). A hit
   probes until its key's slot, most often the first. */
#define FRONT_WAYS 4
static front_slot_t *front_slot(front_t *f, uint64_t key, int way) {
  return &f->slot[(key >> (16 * way)) % FRONT_SLOTS];
}

/* Puts a new reference to s into one of the calling thread's slots for key:
   an empty one, else the one filled longest ago, whose occupant goes. (It
   once moved the first slot's occupant to the second, which is not one of
   that key's own slots: it was lost there, and a thread cycling through 64
   call sites missed its front on 5-30 % of calls, each miss a stripe lock
   and an LRU splice on shared lines: tests/symbols/test_front_cycle.c.)
   Not when the fronts hold a sixteenth of the cap already. */
static void front_fill(uint64_t key, snap_stack_t *s) {
  size_t limit = atomic_load_explicit(&g_limit, memory_order_relaxed);
  size_t bytes = stack_bytes(s);
  if (atomic_load_explicit(&g_front_bytes, memory_order_relaxed) + bytes >
      limit / 16)
    return;
  uint64_t idents = atomic_load_explicit(&g_identity_hits, memory_order_relaxed)
                        ? idents_of(s)
                        : 0;
  front_t *f = front_enter(true);
  if (!f)
    return;
  front_slot_t *slot = front_slot(f, key, 0);
  for (int w = 0; w < FRONT_WAYS && slot->stack; w++) {
    front_slot_t *c = front_slot(f, key, w);
    if (!c->stack || (int32_t)(c->filled - slot->filled) < 0)
      slot = c;
  }
  snap_stack_t *gone = slot->stack;
  if (gone)
    atomic_fetch_sub_explicit(&g_front_bytes, slot->bytes,
                              memory_order_relaxed);
  slot->key = key;
  slot->stack = snap__stack_retain(s);
  slot->bytes = (uint32_t)bytes;
  slot->filled = ++f->fills;
  slot->idents = idents;
  atomic_fetch_add_explicit(&g_front_bytes, bytes, memory_order_relaxed);
  front_leave(f);
  snap_stack_release(gone);
}

/* table_current false: the caller has not asked the loader's stamp;
   a hit is served only if its images are still the ones the slot
   recorded (idents_live), else NULL and the caller asks. */
static snap_stack_t *front_get(uint64_t key, const uintptr_t *pcs, int n,
                               unsigned flags, bool table_current) {
  front_t *f = front_enter(false);
  if (!f)
    return NULL;
  front_slot_t *slot = front_slot(f, key, 0);
  for (int w = 1; w < FRONT_WAYS && (!slot->stack || slot->key != key); w++)
    slot = front_slot(f, key, w);
  snap_stack_t *s = slot->stack;
  if (!s || slot->key != key || !same_key(s, pcs, n, flags) ||
      (!table_current && !idents_live(s, slot->idents))) {
    front_leave(f);
    return NULL;
  }
  if (!fresh(s)) {
    slot->stack = NULL;
    atomic_fetch_sub_explicit(&g_front_bytes, slot->bytes,
                              memory_order_relaxed);
    front_leave(f);
    snap_stack_release(s);
    return NULL;
  }
  snap__stack_retain(s);
  front_leave(f);
  if (++t_front_hits == 256) { /* counted in blocks: no shared write each */
    atomic_fetch_add_explicit(&g_front_hits, 256, memory_order_relaxed);
    t_front_hits = 0;
  }
  return s;
}

/* ---- Shared table -------------------------------------------------------- */

static void lru_unlink(stripe_t *st, cache_entry_t *e) {
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

static void lru_push(stripe_t *st, cache_entry_t *e) {
  e->newer = NULL;
  e->older = st->newest;
  if (st->newest)
    st->newest->newer = e;
  st->newest = e;
  if (!st->oldest)
    st->oldest = e;
}

/* ---- A stripe's index: open addressing, linear probing ------------------
   Why not a chained table (the one this replaced, uthash's): it lets a
   chain grow to ten entries before it doubles, and each link is an entry
   of its own, somewhere in the heap; a miss walked the whole chain, twice
   (the probe, then the insertion's), a cache miss a link: 24 % of a cold
   lookup with the cache on. Here a probe reads consecutive cells of one
   block, at most half full. Keys are hashes already (hash.h); the multiply
   spreads the bits the stripe choice used. Deletion shifts the cells after
   the hole back (no tombstones: a table that churns stays as fast). */

static size_t home_of(uint64_t key, unsigned bits) {
  return (size_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

/* The cell holding key, or NULL. */
static index_cell_t *index_find(const stripe_t *st, uint64_t key) {
  if (!st->index)
    return NULL;
  size_t mask = ((size_t)1 << st->index_bits) - 1;
  for (size_t i = home_of(key, st->index_bits);; i = (i + 1) & mask) {
    index_cell_t *c = &st->index[i];
    if (!c->e)
      return NULL;
    if (c->key == key)
      return c;
  }
}

static void index_place(index_cell_t *cells, unsigned bits, uint64_t key,
                        cache_entry_t *e) {
  size_t mask = ((size_t)1 << bits) - 1;
  size_t i = home_of(key, bits);
  while (cells[i].e)
    i = (i + 1) & mask;
  cells[i] = (index_cell_t){key, e};
}

/* Rebuilds st's index with 1 << bits cells (bits 0: none). false: out of
   memory, st unchanged. */
static bool index_resize(stripe_t *st, unsigned bits) {
  index_cell_t *cells = NULL;
  if (bits) {
    cells = calloc((size_t)1 << bits, sizeof *cells);
    if (!cells)
      return false;
    for (size_t i = 0; st->index && i < ((size_t)1 << st->index_bits); i++)
      if (st->index[i].e)
        index_place(cells, bits, st->index[i].key, st->index[i].e);
  }
  free(st->index);
  st->index = cells;
  st->index_bits = bits;
  return true;
}

/* Adds key -> e (key not present). false: out of memory, not added. */
static bool index_add(stripe_t *st, uint64_t key, cache_entry_t *e) {
  if (!st->index || 2 * (st->used + 1) > ((size_t)1 << st->index_bits)) {
    unsigned bits = st->index ? st->index_bits + 1 : 5;
    if (!index_resize(st, bits))
      return false;
  }
  index_place(st->index, st->index_bits, key, e);
  st->used++;
  return true;
}

/* Removes the cell c (of st's index): the cells after it that probed past
   it move back, so that every key stays reachable from its home. The
   index shrinks when an eighth full, and goes with its last entry. */
static void index_remove(stripe_t *st, index_cell_t *c) {
  size_t mask = ((size_t)1 << st->index_bits) - 1;
  size_t hole = (size_t)(c - st->index);
  for (size_t i = (hole + 1) & mask; st->index[i].e; i = (i + 1) & mask) {
    size_t home = home_of(st->index[i].key, st->index_bits);
    /* Movable when its home is not in (hole, i], cyclically. */
    bool stays =
        hole <= i ? (hole < home && home <= i) : (hole < home || home <= i);
    if (!stays) {
      st->index[hole] = st->index[i];
      hole = i;
    }
  }
  st->index[hole] = (index_cell_t){0, NULL};
  st->used--;
  if (st->used == 0)
    (void)index_resize(st, 0);
  else if (st->index_bits > 5 && 8 * st->used < ((size_t)1 << st->index_bits))
    (void)index_resize(st, st->index_bits - 1); /* no memory: stays big */
}

/* Counts what st's index takes now. Under the stripe's lock, after every
   add or delete. */
static void reindex(stripe_t *st) {
  size_t now = st->index ? snap__plat_alloc_size(st->index,
                                                 ((size_t)1 << st->index_bits) *
                                                     sizeof *st->index)
                         : 0;
  st->bytes = st->bytes - st->index_bytes + now;
  if (now >= st->index_bytes)
    atomic_fetch_add_explicit(&g_table_bytes, now - st->index_bytes,
                              memory_order_relaxed);
  else
    atomic_fetch_sub_explicit(&g_table_bytes, st->index_bytes - now,
                              memory_order_relaxed);
  st->index_bytes = now;
}

/* The entry for key in st, or NULL. */
static cache_entry_t *find(const stripe_t *st, uint64_t key) {
  index_cell_t *c = index_find(st, key);
  return c ? c->e : NULL;
}

/* Unlinks e; returns its stack, to be released after the lock is
   dropped (a release may free memory: keep it out of the critical section). */
static snap_stack_t *drop(stripe_t *st, cache_entry_t *e) {
  index_cell_t *c = index_find(st, e->key);
  if (c && c->e == e)
    index_remove(st, c);
  reindex(st);
  lru_unlink(st, e);
  st->bytes -= e->bytes;
  atomic_fetch_sub_explicit(&g_table_bytes, e->bytes, memory_order_relaxed);
  st->entries--;
  snap_stack_t *s = e->stack;
  free(e);
  return s;
}

const snap_stack_t *snap__cache_get(uint64_t key, const uintptr_t *pcs, int n,
                                    unsigned flags, bool table_current) {
  if (!caching()) {
    /* A cap of 0: this thread's front, busy when the cap went down, goes
       now (fronts_flush). */
    if (t_front.slot && atomic_load_explicit(&g_ready, memory_order_acquire) &&
        !atomic_exchange_explicit(&t_front.busy, true, memory_order_acquire)) {
      snap_stack_t *v[FRONT_SLOTS];
      int nv = front_take_all(&t_front, v);
      front_free_block(&t_front);
      atomic_store_explicit(&t_front.busy, false, memory_order_release);
      release_all(v, nv);
    }
    return NULL;
  }
  key &= atomic_load_explicit(&g_key_mask, memory_order_relaxed);
  snap_stack_t *hit = front_get(key, pcs, n, flags, table_current);
  if (hit || !table_current)
    return hit;
  t_front_misses++;

  stripe_t *st = stripe_of(key);
  snap__plat_lock_lock(&st->lock);
  cache_entry_t *e = find(st, key);
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
    trim_to_cap(); /* the front may have grown */
    return hit;
  }
  snap_stack_t *stale = NULL;
  snap__plat_lock_lock(&st->lock);
  e = find(st, key);
  if (e && e->stack == hit)
    stale = drop(st, e);
  st->hits--; /* it was a miss after all */
  st->misses++;
  snap__plat_lock_unlock(&st->lock);
  snap_stack_release(stale);
  snap_stack_release(hit);
  return NULL;
}

/* Everything the cap counts (see the head comment). */
static size_t total_bytes(void) {
  return atomic_load_explicit(&g_table_bytes, memory_order_relaxed) +
         atomic_load_explicit(&g_front_bytes, memory_order_relaxed) +
         snap__intern_bytes() + snap__stack_view_bytes();
}

/* Evicts least recently used entries, one per stripe in turn, until the
   total is under the cap or the table is empty. No lock held on entry;
   one stripe's at a time inside, released before each release. */
static void trim_to_cap(void) {
  if (!atomic_load_explicit(&g_ready, memory_order_acquire))
    return;
  size_t limit = atomic_load_explicit(&g_limit, memory_order_relaxed);
  bool evicted = true;
  /* Nothing to evict when the table is empty (what else the cap counts
     may alone be over a tiny cap): no sweep of every stripe's lock. */
  while (evicted && total_bytes() > limit &&
         atomic_load_explicit(&g_table_bytes, memory_order_relaxed) > 0) {
    evicted = false;
    for (int i = 0; i < STRIPES && total_bytes() > limit; i++) {
      unsigned k =
          atomic_fetch_add_explicit(&g_trim_next, 1, memory_order_relaxed) %
          STRIPES;
      stripe_t *st = &g_stripes[k].s;
      snap_stack_t *victim = NULL;
      snap__plat_lock_lock(&st->lock);
      if (st->oldest) {
        victim = drop(st, st->oldest);
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
static void trim_stripe(stripe_t *st, size_t cap, const cache_entry_t *keep) {
  for (;;) {
    snap_stack_t *out[8];
    int nout = 0;
    snap__plat_lock_lock(&st->lock);
    while (nout < 8 && st->bytes > cap && st->oldest && st->oldest != keep) {
      out[nout++] = drop(st, st->oldest);
      st->evictions++;
    }
    snap__plat_lock_unlock(&st->lock);
    release_all(out, nout);
    if (nout < 8)
      return;
  }
}

const snap_stack_t *snap__cache_put(snap_stack_t *s) {
  size_t cap = atomic_load_explicit(&g_limit, memory_order_relaxed) / STRIPES;
  size_t bytes = sizeof(cache_entry_t) + stack_bytes(s);
  if (!caching() || bytes > cap)
    return s; /* not cached: the caller owns the only reference */
  cache_entry_t *fresh_entry = malloc(sizeof *fresh_entry);
  if (!fresh_entry)
    return s;
  bytes =
      snap__plat_alloc_size(fresh_entry, sizeof *fresh_entry) + stack_bytes(s);
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
  cache_entry_t *e = find(st, key);
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
    bool added_ok = index_add(st, key, fresh_entry);
    reindex(st);
    if (!added_ok) { /* the index could not grow: not cached */
      out[nout++] = fresh_entry->stack;
      free(fresh_entry);
    } else {
      lru_push(st, fresh_entry);
      st->bytes += bytes;
      st->entries++;
      atomic_fetch_add_explicit(&g_table_bytes, bytes, memory_order_relaxed);
      if (st->bytes > cap) /* else no second lock hold to trim */
        added = fresh_entry;
    }
  }
  snap__plat_lock_unlock(&st->lock);
  release_all(out, nout);

  if (added)
    trim_stripe(st, cap, added);
  front_fill(key, result);
  trim_to_cap();
  return result;
}

void snap__cache_set_identity_hits(bool on) {
  atomic_store(&g_identity_hits, on);
  if (atomic_load(&g_ready))
    fronts_flush(false); /* slots filled before record no identities */
}

uint64_t snap__cache_front_misses(void) { return t_front_misses; }

void snap__cache_set_key_mask(uint64_t mask) {
  atomic_store(&g_key_mask, mask);
}

int snap_set_symbol_cache_limit(size_t bytes) {
  atomic_store(&g_limit, bytes);
  /* Shrink now, so memory goes down when the cap does: every thread's
     front first (they count in the cap, and hold stacks the table may have
     dropped), then each stripe to its share, then the whole. */
  if (!atomic_load(&g_ready))
    return SNAP_OK;
  fronts_flush(bytes == 0);
  for (int i = 0; i < STRIPES; i++)
    trim_stripe(&g_stripes[i].s, bytes / STRIPES, NULL);
  trim_to_cap();
  snap__intern_trim(); /* the shared names' tables, if no name is left */
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
  }
  /* What else the cap counts: fronts, shared strings, views. */
  out->bytes += atomic_load(&g_front_bytes) + snap__intern_bytes() +
                snap__stack_view_bytes();
  out->hits += atomic_load(&g_front_hits);
  snap__abi_copy_out(caller, &all, caller->size);
  return SNAP_OK;
}
