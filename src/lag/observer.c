/*
 * observer.c — the loop observer: snap_lag_loop_busy / snap_lag_loop_idle
 * and the state word the watchdog reads.
 *
 * Owns: the state word, the busy/idle timestamps, the lengths of ended
 * stretches (the watched one's, and the last 16), the park protocol with
 * the watchdog. Must not: lock, allocate or make a syscall on the busy or
 * idle path (they run on every loop iteration of the app's main thread);
 * the one exception is the semaphore post of a busy call that finds the
 * watchdog parked, which happens at most once per park.
 *
 * Why a parked watchdog at all: a watchdog that polls wakes the CPU for
 * nothing while the app sleeps; a parked one costs nothing until the loop
 * wakes. It parks only after a whole tick with no busy call, so a loop that
 * keeps iterating never pays for the post.
 *
 * The timestamps are read seqlock-style (word, timestamps, word again): the
 * main thread is the only writer of the sequence. A timestamp is stored
 * with release after the previous state change and loaded with acquire, so
 * a reader that sees a newer timestamp also sees the newer word, and two
 * equal words mean the timestamps belong to that state.
 */
#include "lag/lag.h"

static _Atomic uint32_t g_word;
static _Atomic uint64_t g_busy_since;
static _Atomic uint64_t g_idle_since;
/* Stretches that ended: the last 16 (slot seq % 16), and the one the
   watchdog watches (a lag is followed by any number of short stretches
   before the watchdog looks again: a 60 fps loop runs 9 in a 150 ms tick;
   and a starved watchdog may see a whole lag only once it is over). Each
   record is the stretch's length tagged with its sequence's low 16 bits,
   (seq << 48) | length (lengths past 2^48 ns, 78 hours, are cut), and its
   end; the main thread is the only writer, and a reader checks that the
   tag did not change while it read the end (a seqlock whose sequence is
   the tag). A tag repeats only 65536 stretches later. */
typedef struct ended {
  _Atomic uint64_t tagged;
  _Atomic uint64_t end_ns;
} ended_t;
#define ENDED_SLOTS 16u
#define NO_TAG UINT64_MAX /* no stretch's: being written, or never */
static ended_t g_ended[ENDED_SLOTS];
static ended_t g_watched_ended;
static _Atomic uint32_t g_watched;
static _Atomic(snap__sem_t *) g_wake; /* NULL: watchdog not running */

void snap__loop_activate(snap__sem_t *wake) {
  atomic_store(&g_word, 0);
  atomic_store(&g_busy_since, 0);
  atomic_store(&g_idle_since, 0);
  for (unsigned i = 0; i < ENDED_SLOTS; i++)
    atomic_store(&g_ended[i].tagged, NO_TAG);
  atomic_store(&g_watched_ended.tagged, NO_TAG);
  atomic_store(&g_watched, UINT32_MAX);
  atomic_store(&g_wake, wake);
}

void snap__loop_deactivate(void) { atomic_store(&g_wake, NULL); }

SNAP_EXPORT void snap_lag_loop_busy(void) {
  snap__sem_t *wake = atomic_load_explicit(&g_wake, memory_order_acquire);
  if (!wake)
    return;
  atomic_store_explicit(&g_busy_since, snap__plat_now_ns(),
                        memory_order_release);
  uint32_t cur = atomic_load_explicit(&g_word, memory_order_relaxed);
  /* The watchdog only ever adds or clears PARKED, never the sequence: a
     stale `cur` still has the right sequence, and the exchange tells
     whether PARKED was set in the meantime. */
  uint32_t next = (((cur >> 2) + 1u) << 2) | SNAP__LOOP_BUSY;
  uint32_t old = atomic_exchange_explicit(&g_word, next, memory_order_release);
  if (old & SNAP__LOOP_PARKED)
    snap__plat_sem_post(wake);
}

/* The writer's side of an ended record: invalidate, write, publish. */
static void record(ended_t *e, uint64_t tagged, uint64_t end) {
  atomic_store_explicit(&e->tagged, NO_TAG, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&e->end_ns, end, memory_order_relaxed);
  atomic_store_explicit(&e->tagged, tagged, memory_order_release);
}

/* The reader's side: true when e holds stretch `tag` whole. */
static bool read_record(ended_t *e, uint64_t tag, uint64_t *len,
                        uint64_t *end) {
  uint64_t t1 = atomic_load_explicit(&e->tagged, memory_order_acquire);
  if (t1 == NO_TAG || t1 >> 48 != tag)
    return false;
  *end = atomic_load_explicit(&e->end_ns, memory_order_relaxed);
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&e->tagged, memory_order_relaxed) != t1)
    return false; /* rewritten meanwhile */
  *len = t1 & ((UINT64_C(1) << 48) - 1);
  return true;
}

SNAP_EXPORT void snap_lag_loop_idle(void) {
  if (!atomic_load_explicit(&g_wake, memory_order_relaxed))
    return;
  uint32_t cur = atomic_load_explicit(&g_word, memory_order_relaxed);
  if (!(cur & SNAP__LOOP_BUSY))
    return; /* idle already: keep the state (and a parked watchdog's flag) */
  uint64_t now = snap__plat_now_ns();
  uint32_t seq = cur >> 2;
  /* This thread wrote busy_since: its own last value, no ordering needed. */
  uint64_t len =
      now - atomic_load_explicit(&g_busy_since, memory_order_relaxed);
  if (len >> 48)
    len = (UINT64_C(1) << 48) - 1;
  uint64_t tagged = (uint64_t)(seq & 0xffffu) << 48 | len;
  record(&g_ended[seq % ENDED_SLOTS], tagged, now);
  if (atomic_load_explicit(&g_watched, memory_order_relaxed) == seq)
    record(&g_watched_ended, tagged, now);
  atomic_store_explicit(&g_idle_since, now, memory_order_release);
  /* A plain store, no read-modify-write: while the loop is busy the
     watchdog never sets PARKED (it parks only from idle), so `cur` is the
     whole state. */
  atomic_store_explicit(&g_word, cur & ~SNAP__LOOP_BUSY, memory_order_release);
}

snap__loop_view_t snap__loop_read(void) {
  snap__loop_view_t v;
  for (;;) {
    uint32_t w1 = atomic_load_explicit(&g_word, memory_order_acquire);
    uint64_t busy = atomic_load_explicit(&g_busy_since, memory_order_acquire);
    uint64_t idle = atomic_load_explicit(&g_idle_since, memory_order_acquire);
    uint32_t w2 = atomic_load_explicit(&g_word, memory_order_relaxed);
    if ((w1 & ~SNAP__LOOP_PARKED) != (w2 & ~SNAP__LOOP_PARKED))
      continue; /* the main thread moved on while we read: read again */
    v.seq = w1 >> 2;
    v.busy = (w1 & SNAP__LOOP_BUSY) != 0;
    v.busy_since_ns = busy;
    v.idle_since_ns = idle;
    return v;
  }
}

void snap__loop_watch(uint32_t seq) {
  atomic_store_explicit(&g_watched, seq, memory_order_relaxed);
}

bool snap__loop_ended(uint32_t seq, uint64_t *since, uint64_t *len) {
  /* Acquire on the word first: an idle call's records precede its release
     store of the word, so the stretch's records are in place once the
     word shows the stretch ended (a later sequence, or idle). */
  uint32_t w = atomic_load_explicit(&g_word, memory_order_acquire);
  if ((w >> 2) == seq && (w & SNAP__LOOP_BUSY))
    return false; /* still going */
  uint64_t tag = seq & 0xffffu, end;
  if (!read_record(&g_watched_ended, tag, len, &end) &&
      !read_record(&g_ended[seq % ENDED_SLOTS], tag, len, &end))
    return false; /* not watched in time, and overwritten (or never
                     written: a stretch ended by a second busy call) */
  *since = end - *len;
  return true;
}

bool snap__loop_park(uint32_t seq) {
  uint32_t expect = seq << 2; /* idle, not parked, same sequence */
  return atomic_compare_exchange_strong(&g_word, &expect,
                                        expect | SNAP__LOOP_PARKED);
}

void snap__loop_unpark(void) { atomic_fetch_and(&g_word, ~SNAP__LOOP_PARKED); }
