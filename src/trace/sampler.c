/*
 * sampler.c — the trace's sampler: what a sample records, and how
 * samples become spans.
 *
 * Owns: sampling a thread the old way (a signal or a quiet read from the
 * sampler thread), the state of each sample, merging
 * identical consecutive samples into a thread's open span, and keeping the
 * stack table and the ring within their memory (compaction, dropping the
 * oldest). Must not: name anything (snapshot.c does, when a trace is
 * written), allocate, or hold the trace's lock across a capture (the lock
 * is taken after each capture returned and the thread runs again).
 * When each thread is looked at is schedule.c's. A thread with a CPU-time
 * timer samples itself: that path (arming, draining its ring, the look
 * between ticks) is sampler_timed.c's; what the parts share is in
 * sampler_parts.h.
 *
 * What state a sample records is never decided here: every one, a
 * capture's, a tick's, a mark's and that of a sample not taken, is
 * src/blocked/'s answer (snap__state_judge, thread_state.c's table) to the
 * facts the sampler gathered: the thread's CPU time over the interval
 * since the reading before its previous sample, the state that sample was
 * given, its run state when read, its run-queue wait (the main thread),
 * and the capture's decoded wait.
 *
 * A thread the judge says did not run since its previous sample
 * (snap__state_did_not_run, rule 3: its CPU time did not move, where
 * that means it did not run) is not captured again: its stack is the one
 * that sample recorded (a blocked main thread costs a clock read and one
 * /proc read a period, not a walk). The reading must come before the
 * capture: read after, it can include the thread's last steps from where
 * it was sampled into a sleep, and every later sample would repeat the
 * stack it left (seen: 400 ms "in" g_hash_table_insert, blocked, while
 * the loop slept in poll). A signalled sample makes the thread run its
 * handler, so the next sample captures it again. A thread that ran is
 * captured (quietly: a blocked one is read, not interrupted).
 *
 * On Apple (snap__plat_trace_facts) CPU time is charged only at a thread's
 * kernel entries and context switches, and a suspension leaves a thread
 * inside its call; the judge knows both (docs/trace.md, "On Apple").
 */
#include <string.h>

#include "blocked/thread_state.h"
#include "capture/capture.h"
#include "platform/platform.h"
#include "trace/sampler_parts.h"
#include "trace/trace.h"

uint32_t snap__trace_thread_index(snap__trace_t *tr, snap_thread_t tid) {
  for (uint32_t i = 0; i < tr->n_thr; i++)
    if (tr->thr[i].tid == tid && !tr->thr[i].gone)
      return i;
  if (tr->n_thr == SNAP__TRACE_THREADS) {
    atomic_fetch_add(&tr->threads_untracked, 1);
    return SNAP__TRACE_NONE;
  }
  snap__trace_thr_t *th = &tr->thr[tr->n_thr];
  *th = (snap__trace_thr_t){.tid = tid,
                            .is_main = tid == snap__plat_thread_main(),
                            .cpu_seen = -1,
                            .runq = -1,
                            .last_stack = SNAP__TRACE_NONE};
  return tr->n_thr++;
}

void snap__trace_close_span(snap__trace_t *tr, snap__trace_thr_t *th) {
  if (!th->open)
    return;
  (void)snap__span_ring_push(&tr->ring, &th->span);
  th->open = false;
}

/* Compaction: every node a span still holds (the ring's, the open spans',
   each thread's last stack) is kept, the rest dropped, and every holder
   renumbered. */
static void compact(snap__trace_t *tr) {
  snap__stack_table_t *t = &tr->table;
  snap__stack_table_unmark(t);
  snap__span_iter_t it = snap__span_ring_iter(&tr->ring);
  snap__tspan_t s;
  while (snap__span_ring_next(&tr->ring, &it, &s))
    snap__stack_table_mark(t, s.stack);
  for (uint32_t i = 0; i < tr->n_thr; i++) {
    snap__stack_table_mark(t, tr->thr[i].last_stack);
    if (tr->thr[i].open)
      snap__stack_table_mark(t, tr->thr[i].span.stack);
  }
  snap__stack_table_plan(t);
  snap__span_ring_remap(&tr->ring, t);
  for (uint32_t i = 0; i < tr->n_thr; i++) {
    snap__trace_thr_t *th = &tr->thr[i];
    if (th->last_stack != SNAP__TRACE_NONE)
      th->last_stack = snap__stack_table_remap(t, th->last_stack);
    if (th->open && th->span.stack != SNAP__TRACE_NONE)
      th->span.stack = snap__stack_table_remap(t, th->span.stack);
  }
  snap__stack_table_finish(t);
  atomic_fetch_add(&tr->compactions, 1);
}

uint32_t snap__trace_add_stack(snap__trace_t *tr, const uintptr_t *pcs, int n,
                               bool exact0) {
  return snap__trace_add_stack_path(tr, NULL, pcs, n, exact0);
}

static uint32_t table_add(snap__trace_t *tr, snap__stack_path_t *path,
                          const uintptr_t *pcs, int n, bool exact0) {
  return path ? snap__stack_table_add_path(&tr->table, path, pcs, n, exact0)
              : snap__stack_table_add(&tr->table, pcs, n, exact0);
}

uint32_t snap__trace_add_stack_path(snap__trace_t *tr, snap__stack_path_t *path,
                                    const uintptr_t *pcs, int n, bool exact0) {
  if (n <= 0)
    return SNAP__TRACE_NONE;
  uint32_t id = table_add(tr, path, pcs, n, exact0);
  /* Full: drop nodes nobody holds; while that frees less than a quarter,
     drop the oldest quarter of the spans too (the newest are kept). */
  for (int round = 0; id == SNAP__TRACE_NONE && round < 4; round++) {
    compact(tr);
    if (tr->table.n > tr->table.cap / 4 * 3) {
      snap__span_ring_trim(&tr->ring, 0, tr->ring.len / 4 * 3);
      compact(tr);
    }
    id = table_add(tr, path, pcs, n, exact0);
  }
  return id;
}

/* Extends the thread's open span with s when they are alike, else closes
   it and opens one with s. A mark is a span of its own, closed at once. */
void snap__trace_record(snap__trace_t *tr, snap__trace_thr_t *th,
                        const snap__trace_sample_t *s) {
  int64_t cpu_us = s->cpu_ns >= 0 ? s->cpu_ns / 1000 : -1;
  atomic_fetch_add_explicit(&tr->samples, 1, memory_order_relaxed);
  if (s->label) {
    snap__tspan_t m = {.start_us = s->t_us,
                       .end_us = s->t_us,
                       .thread = (uint32_t)(th - tr->thr),
                       .stack = s->stack,
                       .count = 1,
                       .state = s->state,
                       .cpu_us = -1,
                       .label = s->label};
    (void)snap__span_ring_push(&tr->ring, &m);
    return;
  }
  snap__tspan_t *o = &th->span;
  if (th->open && o->stack == s->stack && o->state == s->state &&
      o->wait_kind == s->wait && s->t_us >= o->end_us) {
    o->end_us = s->t_us;
    o->count++;
    o->cpu_us = o->cpu_us >= 0 && cpu_us >= 0 ? o->cpu_us + cpu_us : -1;
    return;
  }
  snap__trace_close_span(tr, th);
  *o = (snap__tspan_t){.start_us = s->t_us,
                       .end_us = s->t_us,
                       .thread = (uint32_t)(th - tr->thr),
                       .stack = s->stack,
                       .count = 1,
                       .state = s->state,
                       .wait_kind = s->wait,
                       .cpu_us = cpu_us};
  th->open = true;
}

/* The facts of a sample to be taken or not (the judge's, thread_state.h):
   th's CPU time from the reading before its previous sample to cpu, the
   state that sample was given (prev), and its run state (os, filled in
   when read). */
snap__state_facts_t snap__trace_facts_of(const snap__trace_thr_t *th,
                                         int64_t cpu,
                                         const snap__thread_state_t *prev,
                                         const snap__plat_sched_t *os) {
  return (snap__state_facts_t){.cpu0_ns = th->have_last ? th->cpu_seen : -1,
                               .cpu1_ns = cpu,
                               .runq0_ns = -1,
                               .runq1_ns = -1,
                               .os = os,
                               .prev = th->have_last ? prev : NULL,
                               .plat = snap__plat_trace_facts()};
}

/* The state th's previous sample was given (its kind, when blocked). */
snap__thread_state_t snap__trace_prev_of(const snap__trace_thr_t *th) {
  return (snap__thread_state_t){.state = th->last_state,
                                .kind = th->last_wait,
                                .owner_state = SNAP_OWNER_NONE};
}

/* The facts of a capture alone: its decoded wait (NULL: it failed, and a
   failed sample records nothing known). */
snap__state_facts_t snap__trace_facts_of_capture(const snap_wait_t *wait,
                                                 bool os_blocked) {
  return (snap__state_facts_t){.cpu0_ns = -1,
                               .cpu1_ns = -1,
                               .runq0_ns = -1,
                               .runq1_ns = -1,
                               .wait = wait,
                               .wait_from_os = os_blocked,
                               .plat = snap__plat_trace_facts()};
}

/* The wait of a sample that ran on the thread (a tick, a mark: the
   thread took it itself): none. */
snap_wait_t snap__trace_ran_wait(void) {
  snap_wait_t w = {.size = sizeof w};
  snap__plat_wait_none(&w);
  return w;
}

/* The judge's answer into s. */
void snap__trace_judged(snap__trace_sample_t *s, const snap__state_facts_t *f) {
  snap__thread_state_t st = snap__state_judge(f);
  s->state = st.state;
  s->wait = st.state == SNAP__STATE_BLOCKED ? st.kind : SNAP_WAIT_NONE;
}

/* Its run state, as the judge reads it: ready (on a CPU or a run queue),
   or not said. */
void snap__trace_read_run(snap_thread_t tid, snap__plat_sched_t *os) {
  os->run = snap__plat_thread_is_running(tid) == 1 ? SNAP__RUN_READY
                                                   : SNAP__RUN_UNKNOWN;
}

/* The main thread's latest running sample, for the lag watchdog
   (snap__trace_main_latest). Under the lock. */
void snap__trace_publish_main(snap__trace_t *tr, uint64_t t_ns, int64_t cpu_ns,
                              const uintptr_t *pcs, int n) {
  memcpy(tr->main_pcs, pcs, (size_t)n * sizeof *pcs);
  tr->main_n = n;
  tr->main_t_ns = t_ns;
  tr->main_cpu_ns = cpu_ns;
}

/* A capture of th into pcs (SNAP__TRACE_DEPTH), quiet where the thread
   is blocked (a signal would end its sleep or poll early), with its wait
   and whether the OS reported that wait. */
int snap__trace_capture_quiet(const snap__trace_thr_t *th, uintptr_t *pcs,
                              snap_wait_t *wait, bool *os_blocked) {
  return snap__capture_thread_wait(
      th->tid, pcs, SNAP__TRACE_DEPTH,
      SNAP_CAPTURE_QUIET |
          (snap__plat_has_swift_concurrency() ? SNAP_CAPTURE_ASYNC : 0),
      wait, false, os_blocked);
}

/* Samples one thread (its entry th, looked up under the lock by the
   caller, who let the lock go). `others`: a thread that is not the main
   one, sampled only if it runs. Takes the lock to record. */
void snap__trace_sample_thread(snap__trace_t *tr, snap__lock_t *lock,
                               uint32_t idx, bool others) {
  snap__trace_thr_t *th = &tr->thr[idx]; /* fields read here are the
                                            sampler's own: no lock */
  uint64_t now = snap__plat_now_ns();
  int64_t cpu = snap__plat_thread_cpu_ns(th->tid);
  if (cpu < 0) { /* gone */
    snap__plat_lock_lock(lock);
    snap__trace_close_span(tr, th);
    th->gone = true;
    snap__plat_lock_unlock(lock);
    return;
  }
  if (!th->have_last) { /* first sight: its name, while it lives */
    char name[sizeof th->name] = "";
    (void)snap__plat_thread_name(th->tid, name, sizeof name);
    snap__plat_lock_lock(lock);
    memcpy(th->name, name, sizeof name);
    snap__plat_lock_unlock(lock);
  }
  snap__trace_sample_t s = {.t_us = snap__trace_us_of(tr, now),
                            .stack = SNAP__TRACE_NONE,
                            .cpu_ns = -1};
  snap__thread_state_t prev = snap__trace_prev_of(th);
  snap__plat_sched_t os = snap__plat_sched_unknown();
  snap__state_facts_t f = snap__trace_facts_of(th, cpu, &prev, &os);
  /* Its run state is read (once) when its CPU time did not move (then it
     tells whether it may have run, where the clock is not exact, and
     runnable from blocked) and for the other threads, sampled only while
     they run. */
  if (th->have_last && (others || cpu == th->cpu_seen))
    snap__trace_read_run(th->tid, &os);
  bool ran = !snap__state_did_not_run(&f);
  if (others && (!th->have_last || !ran || os.run != SNAP__RUN_READY)) {
    /* Idle (or first seen, or no longer on a CPU): not sampled; its
       span ends with its last sample. */
    snap__plat_lock_lock(lock);
    snap__trace_close_span(tr, th);
    snap__plat_lock_unlock(lock);
    th->cpu_seen = cpu;
    th->have_last = true;
    return;
  }
  if (!ran) {
    /* It did not run: the stack it had, in the state the judge says
       (runnable, or where it was). */
    s.stack = th->last_stack;
    s.cpu_ns = 0;
    snap__trace_judged(&s, &f);
  } else {
    uintptr_t pcs[SNAP__TRACE_DEPTH];
    snap_wait_t wait = {.size = sizeof wait};
    int64_t runq0 = th->runq;
    bool os_blocked;
    int n = snap__trace_capture_quiet(th, pcs, &wait, &os_blocked);
    if (th->is_main)
      th->runq = snap__plat_thread_runq_ns(th->tid);
    if (n < 0) {
      atomic_fetch_add_explicit(&tr->failed, 1, memory_order_relaxed);
      f = snap__trace_facts_of_capture(NULL, false);
    } else {
      /* The capture's wait, and (the main thread) its run-queue wait over
         the interval: one that waited more than it ran is runnable. */
      f.wait = &wait;
      f.wait_from_os = os_blocked;
      f.runq0_ns = runq0;
      f.runq1_ns = th->runq;
    }
    snap__trace_judged(&s, &f);
    if (th->have_last && th->cpu_seen >= 0 && cpu >= th->cpu_seen)
      s.cpu_ns = cpu - th->cpu_seen;
    snap__plat_lock_lock(lock);
    s.stack =
        n > 0 ? snap__trace_add_stack(tr, pcs, n, true) : SNAP__TRACE_NONE;
    if (th->is_main && n > 0 &&
        (s.state == SNAP__STATE_RUNNING || s.state == SNAP__STATE_RUNNABLE))
      snap__trace_publish_main(tr, now, cpu, pcs, n);
    if (th->timed)
      th->timed->last_tick_ns = 0;
    snap__trace_record(tr, th, &s);
    th->last_stack = s.stack;
    th->last_state = s.state;
    th->last_wait = s.wait;
    snap__plat_lock_unlock(lock);
    th->cpu_seen = cpu; /* read before the capture: see the head comment */
    th->have_last = true;
    return;
  }
  snap__plat_lock_lock(lock);
  snap__trace_record(tr, th, &s);
  th->last_state = s.state;
  th->last_wait = s.wait;
  snap__plat_lock_unlock(lock);
  th->have_last = true;
}
