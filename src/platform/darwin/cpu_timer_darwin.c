/*
 * cpu_timer_darwin.c — per-thread CPU-time sampling timers on Apple: none.
 *
 * Owns: the seam's answer that xnu delivers no signal to a thread when it
 * has used a period of CPU time (there is no SIGEV_THREAD_ID, and
 * ITIMER_PROF is process-wide), so the trace keeps sampling with
 * thread_suspend from its sampler thread (sample.c), as before. Must not:
 * pretend to sample.
 */
#include "platform/platform.h"
#include "platform/thread_facts.h"

int snap__plat_cpu_timer_start(snap__plat_cpu_timer_t *t, snap_thread_t thread,
                               uint64_t period_ns, snap__cpu_tick_fn fn,
                               void *ctx) {
  (void)t;
  (void)thread;
  (void)period_ns;
  (void)fn;
  (void)ctx;
  return SNAP_EUNSUPPORTED;
}

void snap__plat_cpu_timer_stop(snap__plat_cpu_timer_t *t) { (void)t; }

int snap__plat_cpu_timer_nudge(snap__plat_cpu_timer_t *t, snap_thread_t thread,
                               bool waiting) {
  (void)t;
  (void)thread;
  (void)waiting;
  return SNAP_EUNSUPPORTED;
}

int64_t snap__plat_self_cpu_ns(void) {
  return snap__plat_thread_cpu_ns(snap__plat_thread_self());
}
