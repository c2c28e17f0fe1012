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
/* The lengths of the last stretches to end, slot seq % 16, each tagged
   with its sequence's low 16 bits: (seq << 48) | length (lengths past 2^48
   ns, 78 hours, are cut). One word, so a reader never mixes two stretches;
   a slot is reused 16 stretches later, and a tag repeats only 65536
   stretches later, long after the watchdog (which looks at least once a
   tick while a lag lasts) has read it. */
#define ENDED_SLOTS 16u
static _Atomic uint64_t g_ended[ENDED_SLOTS];
/* The stretch the watchdog watches, and its length in the same form once
   it ended: a lag is followed by any number of short stretches before the
   watchdog looks again (a 60 fps loop runs 9 in a 150 ms tick). */
static _Atomic uint32_t g_watched;
static _Atomic uint64_t g_watched_end;
static _Atomic(snap__sem_t *) g_wake; /* NULL: watchdog not running */

void snap__loop_activate(snap__sem_t *wake) {
  atomic_store(&g_word, 0);
  atomic_store(&g_busy_since, 0);
  atomic_store(&g_idle_since, 0);
  for (unsigned i = 0; i < ENDED_SLOTS; i++)
    atomic_store(&g_ended[i], UINT64_MAX); /* a tag no stretch has at once */
  atomic_store(&g_watched, UINT32_MAX);
  atomic_store(&g_watched_end, UINT64_MAX);
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
  atomic_store_explicit(&g_ended[seq % ENDED_SLOTS], tagged,
                        memory_order_relaxed);
  if (atomic_load_explicit(&g_watched, memory_order_relaxed) == seq)
    atomic_store_explicit(&g_watched_end, tagged, memory_order_relaxed);
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

bool snap__loop_stretch_length(uint32_t seq, uint64_t *len) {
  /* Acquire on the word first: an idle call's slot stores precede its
     release store of the word, so the stretch's slots are in place once
     the word shows the stretch ended (a later sequence, or idle). */
  uint32_t w = atomic_load_explicit(&g_word, memory_order_acquire);
  if ((w >> 2) == seq && (w & SNAP__LOOP_BUSY))
    return false; /* still going */
  uint64_t tag = seq & 0xffffu;
  uint64_t e = atomic_load_explicit(&g_watched_end, memory_order_relaxed);
  if (e >> 48 != tag) /* not watched in time: the recent ones, then */
    e = atomic_load_explicit(&g_ended[seq % ENDED_SLOTS], memory_order_relaxed);
  if (e >> 48 != tag)
    return false; /* overwritten (or never written) */
  *len = e & ((UINT64_C(1) << 48) - 1);
  return true;
}

bool snap__loop_park(uint32_t seq) {
  uint32_t expect = seq << 2; /* idle, not parked, same sequence */
  return atomic_compare_exchange_strong(&g_word, &expect,
                                        expect | SNAP__LOOP_PARKED);
}

void snap__loop_unpark(void) { atomic_fetch_and(&g_word, ~SNAP__LOOP_PARKED); }
