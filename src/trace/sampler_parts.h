/*
 * sampler_parts.h — what the parts of the trace's sampler share:
 * schedule.c (the sampler thread's loop: when each thread is looked at,
 * marks, the window), sampler.c (the old way of sampling a thread from
 * the sampler thread, spans) and sampler_timed.c (threads that sample
 * themselves by a CPU-time timer).
 *
 * Owns: a sample's facts before they meet a span, and the steps both
 * parts take with one: gathering the judge's facts, asking the judge,
 * recording into the thread's span, publishing the main thread's latest
 * running sample, a quiet capture. Must not: be included outside the
 * sampler's parts (trace.h is the trace's own header). Everything here
 * runs on the sampler thread; "under the lock" is the trace's lock.
 */
#ifndef SNAP_TRACE_SAMPLER_PARTS_H
#define SNAP_TRACE_SAMPLER_PARTS_H

#include <stdbool.h>
#include <stdint.h>

#include "blocked/thread_state.h"
#include "platform/platform.h"
#include "trace/trace.h"

/* One sample's facts, before they meet the thread's open span. */
typedef struct snap__trace_sample {
  uint64_t t_us;
  uint32_t stack;
  uint8_t state, wait;
  int64_t cpu_ns; /* since the thread's previous sample; -1 unknown */
  uint32_t label; /* a mark's label id + 1 */
} snap__trace_sample_t;

/* A monotonic time as the spans count it: us since the trace's start. */
static inline uint64_t snap__trace_us_of(const snap__trace_t *tr,
                                         uint64_t mono_ns) {
  return mono_ns > tr->t0_ns ? (mono_ns - tr->t0_ns) / 1000u : 0;
}

/* Extends th's open span with s, or closes it and opens one. Under the
   lock. */
void snap__trace_record(snap__trace_t *tr, snap__trace_thr_t *th,
                        const snap__trace_sample_t *s);
/* The judge's facts of a sample of th (CPU time from the reading before
   its previous sample to cpu, that sample's state prev, run state os). */
snap__state_facts_t snap__trace_facts_of(const snap__trace_thr_t *th,
                                         int64_t cpu,
                                         const snap__thread_state_t *prev,
                                         const snap__plat_sched_t *os);
/* The state th's previous sample was given. */
snap__thread_state_t snap__trace_prev_of(const snap__trace_thr_t *th);
/* The facts of a capture alone (wait NULL: it failed). */
snap__state_facts_t snap__trace_facts_of_capture(const snap_wait_t *wait,
                                                 bool os_blocked);
/* The wait of a sample that ran on the thread: none. */
snap_wait_t snap__trace_ran_wait(void);
/* The judge's answer to f, into s's state and wait. */
void snap__trace_judged(snap__trace_sample_t *s, const snap__state_facts_t *f);
/* tid's run state, as the judge reads it, into os. */
void snap__trace_read_run(snap_thread_t tid, snap__plat_sched_t *os);
/* The main thread's latest running sample, for the lag watchdog. Under
   the lock. */
void snap__trace_publish_main(snap__trace_t *tr, uint64_t t_ns, int64_t cpu_ns,
                              const uintptr_t *pcs, int n);
/* A quiet capture of th into pcs (SNAP__TRACE_DEPTH), with its wait. */
int snap__trace_capture_quiet(const snap__trace_thr_t *th, uintptr_t *pcs,
                              snap_wait_t *wait, bool *os_blocked);
/* sampler.c: samples thread idx the old way (from the sampler thread).
   Takes the lock to record. */
void snap__trace_sample_thread(snap__trace_t *tr, snap__lock_t *lock,
                               uint32_t idx, bool others);

/* sampler_timed.c: a thread the trace follows, by its timer when it has
   one (armed on first sight), else the old way; and stopping its timer
   (the ticks left in its ring recorded, taking the lock; the ticks its
   ring lost counted as missed). */
void snap__trace_sample_any(snap__trace_t *tr, snap__lock_t *lock, uint32_t idx,
                            bool others);
void snap__trace_disarm(snap__trace_t *tr, snap__lock_t *lock,
                        snap__trace_thr_t *th);

#endif
