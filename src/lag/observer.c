/*
 * observer.c — the loop observer: snap_lag_loop_busy / snap_lag_loop_idle
 * and the state word the watchdog reads.
 *
 * Owns: the state word, the busy/idle timestamps, the lengths of ended
 * stretches (the watched one's, and the last 16), the main thread's own
 * readings of its CPU time and run-queue wait at the stretches' edges,
 * the park protocol with the watchdog. Must not: lock or allocate on the
 * busy or idle path (they run on every loop iteration of the app's main
 * thread), or make a syscall there on every iteration: the semaphore post
 * of a busy call that finds the watchdog parked happens at most once per
 * park, and the edge readings (below) at most once per EDGE_READ_NS and
 * once per stretch as long as a lag.
 *
 * Why the main thread reads its own times at the edges: a lag's time split
 * (CPU, run-queue wait, blocked) must cover the stretch and nothing else,
 * and only the main thread is there at its edges; the watchdog reads them
 * when it runs, which on a busy machine is long after the lag ended (a
 * 121 ms compute lag was split over 244 ms and called blocked; a late-seen
 * one over 2156 ms). A reading is the thread's CPU clock and its
 * schedstat run-queue wait: ~4 us on the 2-core CI VM (CPU clock 1.4 us,
 * pread of the kept schedstat 2 us), against ~27 ns for the rest of a
 * busy/idle pair (bench/bench_lag part 1, tight loop, readings included;
 * docs/lag.md "Where the time went"), so not every edge can pay it. A busy call
 * reads only when the last reading is EDGE_READ_NS old; the idle call that ends
 * a stretch of at least the lag threshold always reads, and records both
 * readings for the watchdog. The start reading is then at most EDGE_READ_NS
 * before the stretch's start: CPU time and run-queue wait that end inside
 * [reading, start] are at most that long (the main thread was running at the
 * reading, so a run-queue wait that ends after it also began after it), which
 * bounds the split's error by EDGE_READ_NS, at most 250 readings a second (~0.1
 * % of a CPU) for a loop that iterates without pause.
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

/* The edge readings (see the head comment). g_start: the latest busy-edge
   reading, and the sequence of the stretch it was taken at (it serves
   that stretch and the following ones until the next reading); g_long:
   the start and end readings of the last 16 stretches at least g_long_ns
   long, slot seq % 16, tagged with the full sequence. The main thread is
   the only writer of both; readers use the generation (odd while written)
   or the tag (NO_TAG while written) as a seqlock. */
#define EDGE_READ_NS (4 * SNAP__MS)
typedef struct reading {
  _Atomic uint64_t t_ns;
  _Atomic int64_t cpu_ns, runq_ns;
} reading_t;
static struct {
  _Atomic uint32_t gen;
  _Atomic uint32_t seq;
  reading_t r;
} g_start;
typedef struct long_rec {
  _Atomic uint64_t tag;
  reading_t from, to;
} long_rec_t;
static long_rec_t g_long[ENDED_SLOTS];
static _Atomic uint64_t g_long_ns;
static uint64_t g_last_read_ns; /* main thread's own: when it last read */
/* The main thread's schedstat, opened by it at its first reading and kept
   for the process (one descriptor; only the main thread uses it, so a
   stop never closes it under a read); forgotten in a forked child. */
static snap__plat_self_sched_t g_sched = {.handle = -1};
static int g_sched_state; /* 0 not tried, 1 open, -1 failed */

void snap__loop_activate(snap__sem_t *wake, uint64_t long_ns) {
  atomic_store(&g_word, 0);
  atomic_store(&g_long_ns, long_ns);
  atomic_store(&g_start.seq, 0);
  atomic_store(&g_start.r.t_ns, 0); /* no reading yet */
  for (unsigned i = 0; i < ENDED_SLOTS; i++)
    atomic_store(&g_long[i].tag, NO_TAG);
  atomic_store(&g_busy_since, 0);
  atomic_store(&g_idle_since, 0);
  for (unsigned i = 0; i < ENDED_SLOTS; i++)
    atomic_store(&g_ended[i].tagged, NO_TAG);
  atomic_store(&g_watched_ended.tagged, NO_TAG);
  atomic_store(&g_watched, UINT32_MAX);
  atomic_store(&g_wake, wake);
}

void snap__loop_deactivate(void) { atomic_store(&g_wake, NULL); }

void snap__loop_forget_in_child(void) {
  /* The descriptor names the parent's main thread's file: not ours. */
  if (g_sched_state == 1)
    snap__plat_self_sched_close(&g_sched);
  g_sched_state = 0;
  g_last_read_ns = 0;
}

/* The calling (main) thread's CPU time and run-queue wait, now: the CPU
   clock first (it also brings the kernel's running total up to date),
   then schedstat. -1 where unknown. */
static void read_own(uint64_t now, int64_t *cpu, int64_t *runq) {
  if (g_sched_state == 0)
    g_sched_state = snap__plat_self_sched_open(&g_sched) == SNAP_OK ? 1 : -1;
  int64_t c = snap__plat_thread_cpu_ns(snap_thread_self());
  int64_t on_cpu, q = -1;
  if (g_sched_state != 1 ||
      snap__plat_self_sched_times(&g_sched, &on_cpu, &q) != SNAP_OK)
    q = -1;
  *cpu = c >= 0 ? c : -1;
  *runq = q;
  g_last_read_ns = now;
}

static void store_reading(reading_t *r, uint64_t t, int64_t cpu, int64_t runq) {
  atomic_store_explicit(&r->t_ns, t, memory_order_relaxed);
  atomic_store_explicit(&r->cpu_ns, cpu, memory_order_relaxed);
  atomic_store_explicit(&r->runq_ns, runq, memory_order_relaxed);
}

static void load_reading(const reading_t *r, snap__edge_t *e) {
  e->t_ns = atomic_load_explicit(&r->t_ns, memory_order_relaxed);
  e->cpu_ns = atomic_load_explicit(&r->cpu_ns, memory_order_relaxed);
  e->runq_ns = atomic_load_explicit(&r->runq_ns, memory_order_relaxed);
}

/* A busy call's reading, when the last is EDGE_READ_NS old; seq: the
   stretch it begins. */
static void busy_reading(uint64_t now, uint32_t seq) {
  if (g_last_read_ns && now - g_last_read_ns < EDGE_READ_NS)
    return;
  int64_t cpu, runq;
  read_own(now, &cpu, &runq);
  uint32_t gen = atomic_load_explicit(&g_start.gen, memory_order_relaxed);
  atomic_store_explicit(&g_start.gen, gen + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&g_start.seq, seq, memory_order_relaxed);
  store_reading(&g_start.r, now, cpu, runq);
  atomic_store_explicit(&g_start.gen, gen + 2, memory_order_release);
}

/* The idle call's reading of a stretch at least g_long_ns long: both
   edges, for the watchdog (the main thread wrote g_start: plain reads). */
static void long_reading(uint32_t seq, uint64_t now, uint64_t len) {
  uint64_t min = atomic_load_explicit(&g_long_ns, memory_order_relaxed);
  if (!min || len < min)
    return;
  snap__edge_t from;
  load_reading(&g_start.r, &from);
  if (!from.t_ns)
    return; /* no reading yet: unknown */
  int64_t cpu, runq;
  read_own(now, &cpu, &runq);
  long_rec_t *l = &g_long[seq % ENDED_SLOTS];
  atomic_store_explicit(&l->tag, NO_TAG, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  store_reading(&l->from, from.t_ns, from.cpu_ns, from.runq_ns);
  store_reading(&l->to, now, cpu, runq);
  atomic_store_explicit(&l->tag, seq, memory_order_release);
}

bool snap__loop_start_edge(uint32_t seq, snap__edge_t *out) {
  for (int tries = 0; tries < 100; tries++) {
    uint32_t g1 = atomic_load_explicit(&g_start.gen, memory_order_acquire);
    if (g1 & 1)
      continue;
    uint32_t s = atomic_load_explicit(&g_start.seq, memory_order_relaxed);
    load_reading(&g_start.r, out);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&g_start.gen, memory_order_relaxed) != g1)
      continue;
    /* Taken at stretch s <= seq (30-bit sequence arithmetic): the latest
       reading at or before seq's start, since a newer one would have
       replaced it. */
    return out->t_ns != 0 && ((seq - s) & ((1u << 30) - 1)) < (1u << 29);
  }
  return false;
}

bool snap__loop_stretch_edges(uint32_t seq, snap__edge_t *from,
                              snap__edge_t *to) {
  long_rec_t *l = &g_long[seq % ENDED_SLOTS];
  uint64_t t1 = atomic_load_explicit(&l->tag, memory_order_acquire);
  if (t1 != seq)
    return false;
  load_reading(&l->from, from);
  load_reading(&l->to, to);
  atomic_thread_fence(memory_order_acquire);
  return atomic_load_explicit(&l->tag, memory_order_relaxed) == t1;
}

SNAP_EXPORT void snap_lag_loop_busy(void) {
  snap__sem_t *wake = atomic_load_explicit(&g_wake, memory_order_acquire);
  if (!wake)
    return;
  uint64_t now = snap__plat_now_ns();
  uint32_t cur = atomic_load_explicit(&g_word, memory_order_relaxed);
  /* Before the stretch is published: a reader that sees it sees the
     reading that serves it. */
  busy_reading(now, ((cur >> 2) + 1u) & ((1u << 30) - 1));
  atomic_store_explicit(&g_busy_since, now, memory_order_release);
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
  long_reading(seq, now, len);
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
