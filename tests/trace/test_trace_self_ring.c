/*
 * test_trace_self_ring.c — a thread samples itself (platform/linux/
 * cpu_timer.c, trace/self_ring.c), with the kernel as the oracle:
 *
 *  - a thread spinning in spin_here() for 0.5 s of CPU time, its timer at
 *    1 ms, while this thread drains its ring concurrently (TSan checks the
 *    ring's ordering): samples arrive, their times and CPU times only move
 *    forward, their CPU times match the thread's own clock
 *    (CLOCK_THREAD_CPUTIME_ID, read by it after), and frame 1.. of each
 *    walk holds spin_here's caller (the stack the thread was in);
 *  - a thread asleep in nanosleep for 300 ms with the same timer: no
 *    sample, and its sleep was never cut short (nanosleep returned 0 and
 *    the program's clock saw the whole 300 ms): a CPU-time timer never
 *    fires in a blocked thread, even nudged five times meanwhile
 * (snap__plat_cpu_timer_nudge: the trace's "tick soon" for a thread it saw
 * awake, which may be asleep again by then; the signal the first nudges queued
 * ended the sleep);
 *  - stopping a timer while its thread keeps running returns with no
 *    handler inside, and no sample lands in the ring after it;
 *  - a nudge of a running thread whose period is 100 s gives a tick;
 *  - entries take what their pcs need: a thread spinning at depths from 1
 *    to past the trace's 256 frames, in a ring of three of the deepest
 *    entries drained concurrently, wraps the ring many times, and every
 *    entry read is whole (its frames in the recursion, times in order);
 *    the newest entry is the last one drained.
 * Skipped (77) where the platform has no such timer.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "trace/trace.h"

static int check_failures;

static uint64_t ns(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static _Atomic bool g_stop;
static _Atomic int64_t g_tid;
static _Atomic uint64_t g_cpu_end;
static volatile uint64_t g_sink;

__attribute__((noinline)) static void spin_here(void) {
  uint64_t x = g_sink | 1;
  while (!atomic_load(&g_stop))
    for (int i = 0; i < 1000; i++)
      x = x * 6364136223846793005u + 1;
  g_sink = x;
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void *spinner(void *arg) {
  (void)arg;
  /* A capture of its own teaches the thread its stack's bounds (what the
     trace's one signalled sample of a new thread does). */
  uintptr_t pcs[8];
  (void)snap_capture_self(pcs, 8, 0, 0);
  atomic_store(&g_tid, (int64_t)snap_thread_self());
  spin_here();
  atomic_store(&g_cpu_end, ns(CLOCK_THREAD_CPUTIME_ID));
  __asm__ volatile("" ::: "memory");
  return NULL;
}

static _Atomic int g_sleep_rc = -2;
static _Atomic uint64_t g_slept;
static void *sleeper(void *arg) {
  (void)arg;
  atomic_store(&g_tid, (int64_t)snap_thread_self());
  struct timespec d = {0, 300000000};
  uint64_t t0 = ns(CLOCK_MONOTONIC);
  atomic_store(&g_sleep_rc, nanosleep(&d, NULL));
  atomic_store(&g_slept, ns(CLOCK_MONOTONIC) - t0);
  return NULL;
}

static snap__sring_t *make_ring_of(void **mem, uint32_t cap) {
  *mem = aligned_alloc(16, snap__sring_bytes(cap));
  return snap__sring_init(*mem, cap, 0);
}

static snap__sring_t *make_ring(void **mem) {
  return make_ring_of(mem, SNAP__SRING_MAIN);
}

/* Spins about 2 ms of CPU time at each depth from 1 to 300, round and
   round, until told to stop. */
__attribute__((noinline)) static void deep_spin(int depth) {
  if (depth > 1) {
    deep_spin(depth - 1);
  } else {
    uint64_t end = ns(CLOCK_THREAD_CPUTIME_ID) + 2000000u;
    uint64_t x = g_sink | 1;
    while (ns(CLOCK_THREAD_CPUTIME_ID) < end)
      for (int i = 0; i < 1000; i++)
        x = x * 6364136223846793005u + 1;
    g_sink = x;
  }
  __asm__ volatile("" ::: "memory"); /* no tail call: the frames stay */
}

static void *deep_spinner(void *arg) {
  (void)arg;
  uintptr_t pcs[8];
  (void)snap_capture_self(pcs, 8, 0, 0);
  atomic_store(&g_tid, (int64_t)snap_thread_self());
  for (int d = 1; !atomic_load(&g_stop); d = d % 300 + 1) {
    deep_spin(d);
  }
  return NULL;
}

/* Whether pc is a return address inside deep_spin (its body is short). */
static bool in_deep_spin(uintptr_t pc) {
  return pc > (uintptr_t)deep_spin && pc < (uintptr_t)deep_spin + 256;
}

int main(void) {
  void *mem;
  snap__sring_t *r = make_ring(&mem);
  snap__plat_cpu_timer_t t;
  /* 1. A spinning thread. */
  pthread_t th;
  atomic_store(&g_tid, 0);
  pthread_create(&th, NULL, spinner, NULL);
  while (!atomic_load(&g_tid))
    ;
  int rc = snap__plat_cpu_timer_start(&t, (snap_thread_t)atomic_load(&g_tid),
                                      1000000u, snap__sring_tick, r);
  if (rc == SNAP_EUNSUPPORTED) {
    atomic_store(&g_stop, true);
    pthread_join(th, NULL);
    printf("test_trace_self_ring: skipped (no CPU-time timer here)\n");
    return 77;
  }
  CHECK_EQ(rc, SNAP_OK);
  int got = 0, walked = 0, in_spinner = 0, unwalkable = 0;
  uint64_t last_t = 0;
  int64_t last_cpu = -1;
  uint64_t until = ns(CLOCK_MONOTONIC) + 3000000000u;
  while (got < 100 && ns(CLOCK_MONOTONIC) < until) {
    const snap__sring_entry_t *e;
    while ((e = snap__sring_peek(r))) {
      got++;
      CHECK(e->t_ns >= last_t, "sample times go back");
      CHECK(e->cpu_ns >= last_cpu, "CPU times go back");
      last_t = e->t_ns;
      last_cpu = e->cpu_ns;
      if (e->n < 0) {
        unwalkable++; /* the thread's stack not known to it yet */
      } else {
        walked++;
        for (int i = 1; i < e->n; i++)
          if (e->pcs[i] > (uintptr_t)spinner &&
              e->pcs[i] < (uintptr_t)spinner + 256)
            in_spinner++, i = e->n;
      }
      snap__sring_pop(r);
    }
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  snap__plat_cpu_timer_stop(&t);
  /* The newest entry, read as the lag monitor reads it, is the last one
     the drain finds. */
  const snap__sring_entry_t *newest = snap__sring_newest(r), *e;
  uint64_t newest_t = newest ? newest->t_ns : 0, last_drained = 0;
  uint64_t head_after = 0;
  while ((e = snap__sring_peek(r)))
    last_drained = e->t_ns, snap__sring_pop(r), head_after++;
  CHECK(!newest || newest_t == last_drained,
        "the newest entry (t %llu) is not the last drained (t %llu)",
        (unsigned long long)newest_t, (unsigned long long)last_drained);
  /* Nothing after the stop: the spinner runs on for 50 ms more. */
  struct timespec d50 = {0, 50000000};
  nanosleep(&d50, NULL);
  CHECK(snap__sring_peek(r) == NULL, "a sample after the timer stopped");
  atomic_store(&g_stop, true);
  pthread_join(th, NULL);
  printf("spinner: %d samples (%d walked, %d in spinner's frame, %d "
         "unwalkable), last CPU %.1f ms, thread's own CPU %.1f ms\n",
         got, walked, in_spinner, unwalkable, (double)last_cpu / 1e6,
         (double)atomic_load(&g_cpu_end) / 1e6);
  CHECK(got >= 20, "only %d samples of a spinning thread", got);
  CHECK(last_cpu <= (int64_t)atomic_load(&g_cpu_end),
        "a sample's CPU time is past the thread's");
  CHECK(unwalkable == 0, "%d samples could not walk", unwalkable);
  CHECK(walked > 0 && in_spinner * 10 >= walked * 9,
        "%d of %d walks lack spinner's frame", walked - in_spinner, walked);

  /* 2. A sleeping thread: no sample, its sleep whole. */
  free(mem);
  r = make_ring(&mem);
  atomic_store(&g_tid, 0);
  pthread_create(&th, NULL, sleeper, NULL);
  while (!atomic_load(&g_tid))
    ;
  rc = snap__plat_cpu_timer_start(&t, (snap_thread_t)atomic_load(&g_tid),
                                  1000000u, snap__sring_tick, r);
  CHECK_EQ(rc, SNAP_OK);
  /* Nudged while it sleeps (the trace nudges a thread it saw awake, which
     may be asleep again by then): still no interruption. */
  int nudged = 0;
  for (int i = 0; i < 5; i++) {
    struct timespec ms20 = {0, 20000000};
    nanosleep(&ms20, NULL);
    nudged += snap__plat_cpu_timer_nudge(&t, (snap_thread_t)atomic_load(&g_tid),
                                         false) == SNAP_OK;
  }
  CHECK_EQ(nudged, 5);
  pthread_join(th, NULL);
  snap__plat_cpu_timer_stop(&t);
  int slept_samples = 0;
  while (snap__sring_peek(r))
    snap__sring_pop(r), slept_samples++;
  printf("sleeper: %d samples, nanosleep %d after %.1f ms\n", slept_samples,
         atomic_load(&g_sleep_rc), (double)atomic_load(&g_slept) / 1e6);
  CHECK(slept_samples <= 1, "%d samples of a sleeping thread", slept_samples);
  CHECK_EQ(atomic_load(&g_sleep_rc), 0);
  CHECK(atomic_load(&g_slept) >= 300000000u, "the sleep was cut short");

  /* 3. A nudge of a running thread whose period is far off: a tick soon
     (at a scheduler tick that finds it running), not after the period. */
  free(mem);
  r = make_ring(&mem);
  atomic_store(&g_tid, 0);
  atomic_store(&g_stop, false);
  pthread_create(&th, NULL, spinner, NULL);
  while (!atomic_load(&g_tid))
    ;
  rc = snap__plat_cpu_timer_start(&t, (snap_thread_t)atomic_load(&g_tid),
                                  100000000000u /* 100 s */, snap__sring_tick,
                                  r);
  CHECK_EQ(rc, SNAP_OK);
  CHECK_EQ(
      snap__plat_cpu_timer_nudge(&t, (snap_thread_t)atomic_load(&g_tid), false),
      SNAP_OK);
  uint64_t waited = ns(CLOCK_MONOTONIC);
  until = waited + 5000000000u;
  while (!snap__sring_peek(r) && ns(CLOCK_MONOTONIC) < until) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  waited = ns(CLOCK_MONOTONIC) - waited;
  bool ticked = snap__sring_peek(r) != NULL;
  snap__plat_cpu_timer_stop(&t);
  atomic_store(&g_stop, true);
  pthread_join(th, NULL);
  printf("nudged spinner: %s after %.1f ms\n", ticked ? "a tick" : "no tick",
         (double)waited / 1e6);
  CHECK(ticked, "%s", "a nudge gave no tick in 5 s");
  free(mem);

  /* 4. Entries of every size through a small ring, drained as they come. */
  uint32_t small = (uint32_t)(3 * SNAP__SRING_ENTRY_MAX + 200);
  r = make_ring_of(&mem, small);
  atomic_store(&g_tid, 0);
  atomic_store(&g_stop, false);
  pthread_create(&th, NULL, deep_spinner, NULL);
  while (!atomic_load(&g_tid))
    ;
  rc = snap__plat_cpu_timer_start(&t, (snap_thread_t)atomic_load(&g_tid),
                                  1000000u, snap__sring_tick, r);
  CHECK_EQ(rc, SNAP_OK);
  int entries = 0, torn = 0, min_n = SNAP__TRACE_DEPTH_SELF + 1, max_n = 0;
  uint64_t bytes = 0;
  last_t = 0;
  /* Until entries of shallow and of the deepest stacks came and the ring
     went round itself several times (the spinner's CPU time, not the
     clock's, says when: a busy machine only makes it slower), or 20 s. */
  until = ns(CLOCK_MONOTONIC) + 20000000000u;
  while ((min_n > 20 || max_n < SNAP__TRACE_DEPTH_SELF ||
          bytes < 8 * (uint64_t)small) &&
         ns(CLOCK_MONOTONIC) < until) {
    while ((e = snap__sring_peek(r))) {
      entries++;
      bytes += e->bytes;
      CHECK(e->t_ns >= last_t, "sample times go back");
      last_t = e->t_ns;
      if (e->n > 0) {
        min_n = e->n < min_n ? e->n : min_n;
        max_n = e->n > max_n ? e->n : max_n;
        /* Frame 1.. below the leaf: deep_spin's own return addresses,
           one a level, until the thread's outer frames. */
        int in = 0;
        for (int i = 1; i < e->n; i++)
          in += in_deep_spin(e->pcs[i]);
        torn += e->n > SNAP__TRACE_DEPTH_SELF ||
                e->bytes != sizeof *e + (size_t)e->n * sizeof(uintptr_t) ||
                (e->n >= 8 && in < e->n - 8);
      }
      snap__sring_pop(r);
    }
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  snap__plat_cpu_timer_stop(&t);
  atomic_store(&g_stop, true);
  pthread_join(th, NULL);
  printf("deep spinner: %d entries, %llu bytes through a ring of %u, "
         "depths %d to %d, %llu dropped, %d torn\n",
         entries, (unsigned long long)bytes, small, min_n, max_n,
         (unsigned long long)snap__sring_lost(r), torn);
  CHECK_EQ(torn, 0);
  CHECK(bytes >= 8 * (uint64_t)small, "the ring went round only %.1f times",
        (double)bytes / small);
  CHECK(max_n == SNAP__TRACE_DEPTH_SELF && min_n <= 20,
        "depths %d to %d: not the whole range", min_n, max_n);
  free(mem);
  return check_result("test_trace_self_ring");
}
