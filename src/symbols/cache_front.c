/*
 * cache_front.c — each thread's front of the symbol cache: its recent
 * answers, kept where only it looks.
 *
 * FRONT_SLOTS slots per thread (FRONT_WAYS candidates per key; a fill
 * replaces the one filled longest ago), each one more reference to a stack.
 * A repeated call site is answered there without touching anything another
 * thread writes — no lock, no LRU splice, no shared counter — which is what
 * lets two threads on two stacks run in parallel (a stripe lock taken on
 * every hit moves its cache line between cores on every call). A front miss
 * goes to the shared table (cache_table.c); a hit found there, or a stack
 * just named and cached, fills a slot. Fronts are thread-local headers in a
 * registry, their slots a heap block, so that another thread can empty them:
 * the owner marks its front busy (one atomic exchange on its own cache line)
 * while in it; a lower cap bumps an epoch and empties every front not busy
 * at once (a cap of 0 frees their blocks too), and a busy one empties itself
 * on its owner's next call. Slots are released when the thread exits. (What
 * a hit still shares with other threads on Linux is the loader's lock:
 * symbolicate.c.)
 *
 * The fronts count in the cap (each slot block and every stack a slot
 * holds, at its size when filled: also counted when the table holds it
 * too, an upper bound), together at most a sixteenth of it.
 *
 * Owns: the fronts, their registry and g_front_bytes. Must not: take a
 * stripe's lock, or hold g_fronts_lock across a stack release (a release
 * may free, and freeing takes the shared strings' lock).
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "platform/platform.h"
#include "symbols/cache.h"
#include "symbols/cache_parts.h"
#include "symbols/stack.h"

#define FRONT_SLOTS 128

typedef struct front_slot {
  uint64_t key;
  snap_stack_t *stack; /* one reference, or NULL */
  uint32_t bytes;      /* what it counts for in g_front_bytes */
  uint32_t filled;     /* the front's fill count when it was filled */
  uint64_t idents;     /* its images' snap__cache_idents_of when filled */
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
static atomic_uint_fast64_t g_front_hits; /* flushed from threads in blocks */

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
void snap__cache_fronts_flush(bool free_blocks) {
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
void snap__cache_front_fill(uint64_t key, snap_stack_t *s) {
  size_t limit = atomic_load_explicit(&snap__cache_limit, memory_order_relaxed);
  size_t bytes = stack_bytes(s);
  if (atomic_load_explicit(&g_front_bytes, memory_order_relaxed) + bytes >
      limit / 16)
    return;
  uint64_t idents = atomic_load_explicit(&g_identity_hits, memory_order_relaxed)
                        ? snap__cache_idents_of(s)
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
   recorded (snap__cache_idents_live), else NULL and the caller asks. */
snap_stack_t *snap__cache_front_get(uint64_t key, const uintptr_t *pcs, int n,
                                    unsigned flags, bool table_current) {
  front_t *f = front_enter(false);
  if (!f)
    return NULL;
  front_slot_t *slot = front_slot(f, key, 0);
  for (int w = 1; w < FRONT_WAYS && (!slot->stack || slot->key != key); w++)
    slot = front_slot(f, key, w);
  snap_stack_t *s = slot->stack;
  if (!s || slot->key != key || !same_key(s, pcs, n, flags) ||
      (!table_current && !snap__cache_idents_live(s, slot->idents))) {
    front_leave(f);
    return NULL;
  }
  if (!snap__cache_fresh(s)) {
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

int snap__cache_fronts_init(void) {
  return snap__plat_lock_init(&g_fronts_lock);
}

/* With a cap of 0: the calling thread's front, busy when the cap went
   down, goes now (snap__cache_fronts_flush). */
void snap__cache_front_drop_own(void) {
  if (t_front.slot &&
      atomic_load_explicit(&snap__cache_ready, memory_order_acquire) &&
      !atomic_exchange_explicit(&t_front.busy, true, memory_order_acquire)) {
    snap_stack_t *v[FRONT_SLOTS];
    int nv = front_take_all(&t_front, v);
    front_free_block(&t_front);
    atomic_store_explicit(&t_front.busy, false, memory_order_release);
    release_all(v, nv);
  }
}

/* What the fronts count in the cap now. */
size_t snap__cache_front_bytes(void) { return atomic_load(&g_front_bytes); }

/* Front hits, as flushed from threads in blocks of 256. */
uint64_t snap__cache_front_hits(void) { return atomic_load(&g_front_hits); }

void snap__cache_set_identity_hits(bool on) {
  atomic_store(&g_identity_hits, on);
  /* Slots filled before record no identities. */
  if (atomic_load(&snap__cache_ready))
    snap__cache_fronts_flush(false);
}
