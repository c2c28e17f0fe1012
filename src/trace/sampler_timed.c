/*
 * sampler_timed.c — the trace's threads that sample themselves: a
 * per-thread CPU-time timer whose handler walks the thread's own stack
 * into its ring (self_ring.c), and the sampler thread's side of it.
 *
 * Owns: arming a followed thread's timer on its first sight (its ring
 * carved from the trace's ring memory) and stopping it, draining a ring's
 * ticks into the thread's spans, the look at a timed thread between ticks
 * (did it run, sleep, or need a nudge), and choosing per thread between
 * this path and the old one (sampler.c's snap__trace_sample_thread: a
 * signal or a /proc read from the sampler thread). Must not: sample a
 * thread itself (the timer's handler does), decide a sample's state (the
 * judge does, through sampler_parts.h), or hold the trace's lock across a
 * capture.
 *
 * Why a file of its own: the timed path has its own rules (a tick's times
 * are the thread's own, a sleep is dated by its CPU time, a nudge for a
 * thread that woke) that the schedule (schedule.c) and the span merging in
 * sampler.c do not need to know; what both use is in sampler_parts.h.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "blocked/thread_state.h"
#include "platform/platform.h"
#include "trace/sampler_parts.h"
#include "trace/trace.h"

/* ---- Threads that sample themselves (a CPU-time timer, self_ring.c) ----

   Where the platform has per-thread CPU-time timers, a thread the trace
   follows gets one on its first sight: main every main_interval of its
   CPU time, the others every other_interval. While it runs, its samples
   arrive in its ring with their own times, and the sampler only drains
   them: no signal from here, no sampler lock, no /proc read. A tick is
   a sample that ran on the thread; the judge says running, or runnable
   when it waited longer for a CPU than it ran since its previous tick
   (rule 5a, with the wall time between two ticks that the CPU time does
   not explain as that wait: no blocked sample came between).

   When no tick came since the last look, the thread either did not run
   (the judge's rule 3: it is where it was, blocked or waiting for a CPU,
   and its span goes on; a blocked one costs one clock read, no /proc
   read) or ran less than a period: still running (the next tick will say
   where), or gone to sleep, which the sampler reads quietly (a quiet
   capture: /proc, no signal). Such a sleep began about when the thread's
   CPU time stopped: at its last tick plus the CPU time since, which the
   sample is dated to (a sampler held back by a busy machine would
   otherwise date it when it got a CPU, tens of ms late). */

/* th's sampling period in ns of its CPU time. */
static uint64_t period_ns(const snap__trace_t *tr,
                          const snap__trace_thr_t *th) {
  return (uint64_t)(th->is_main ? tr->cfg.main_interval_us
                                : tr->cfg.other_interval_us) *
         1000u;
}

/* Arms th's timer (first sight). The ring comes from the trace's ring
   memory; none left, or no timer on this platform: the old way. */
static void arm(snap__trace_t *tr, snap__trace_thr_t *th) {
  th->timer_tried = true;
  uint32_t cap = th->is_main ? SNAP__SRING_MAIN : SNAP__SRING_OTHER;
  size_t head = (sizeof(snap__trace_timed_t) + 15) & ~(size_t)15;
  size_t need = head + snap__sring_bytes(cap);
  if (tr->srings_used + need > tr->srings_bytes)
    return;
  unsigned flags = snap__plat_has_swift_concurrency() ? SNAP_CAPTURE_ASYNC : 0;
  snap__trace_timed_t *tm = (void *)(tr->srings + tr->srings_used);
  *tm = (snap__trace_timed_t){0};
  snap__sring_t *r =
      snap__sring_init(tr->srings + tr->srings_used + head, cap, flags);
  uint64_t period = period_ns(tr, th);
  if (th->is_main && tr->wake)
    snap__sring_watch(r, tr->wake, SNAP__TRACE_ALARM_NS);
  if (snap__plat_cpu_timer_start(&tm->timer, th->tid, period, snap__sring_tick,
                                 r) != SNAP_OK)
    return;
  tr->srings_used += need;
  tm->ring = r;
  th->timed = tm;
}

/* A baseline for dating th's next tick (trace.h, base_ns): now, with its
   CPU time already in cpu_seen. */
static void set_base(snap__trace_thr_t *th) {
  th->timed->base_ns = snap__plat_now_ns();
  th->timed->woke_ns = 0;
}

static void clear_base(snap__trace_thr_t *th) {
  th->timed->base_ns = 0;
  th->timed->woke_ns = 0;
}

/* The earliest a dated start may be: when the baseline was taken, and
   not inside the span already recorded (its last sample). */
static uint64_t base_floor(const snap__trace_t *tr,
                           const snap__trace_thr_t *th) {
  uint64_t span_end = th->open ? tr->t0_ns + th->span.end_us * 1000u : 0;
  return th->timed->base_ns > span_end ? th->timed->base_ns : span_end;
}

/* The ticks in th's ring taken up to until_ns, into its spans. Under the
   lock. Returns how many; *learn: a tick could not walk (the thread's
   stack is not known to it yet). */
static int drain(snap__trace_t *tr, snap__trace_thr_t *th, uint64_t until_ns,
                 bool *learn) {
  const snap__sring_entry_t *e;
  int got = 0;
  while ((e = snap__sring_peek(th->timed->ring)) && e->t_ns <= until_ns) {
    if (e->n < 0) {
      *learn = true;
      snap__sring_pop(th->timed->ring);
      continue;
    }
    snap__trace_sample_t s = {.t_us = snap__trace_us_of(tr, e->t_ns),
                              .cpu_ns = -1};
    if (th->have_last && th->cpu_seen >= 0 && e->cpu_ns >= th->cpu_seen)
      s.cpu_ns = e->cpu_ns - th->cpu_seen;
    if (th->timed->base_ns && s.cpu_ns > 0) {
      /* The first tick since it was seen not ticking (blocked, or when
         its timer was armed): it began to run no later than the CPU time
         it used since then before this tick (a timer ticks only at a
         scheduler tick that finds it on a CPU: on a busy machine, tens of
         ms late), or than a look dated it (woke_at); never before it was
         seen so. Never early: the CPU time was used after it began. */
      uint64_t back = e->t_ns - (uint64_t)s.cpu_ns;
      if (th->timed->woke_ns && th->timed->woke_ns < back)
        back = th->timed->woke_ns;
      uint64_t floor = base_floor(tr, th);
      s.t_us = snap__trace_us_of(tr, back > floor ? back : floor);
    }
    /* A tick ran on the thread. Between two ticks it did not block (a
       blocked sample resets last_tick_ns): the wall time between them
       that its CPU time does not explain, it waited for a CPU. */
    snap_wait_t none = snap__trace_ran_wait();
    snap__state_facts_t f = snap__trace_facts_of_capture(&none, false);
    if (th->timed->last_tick_ns && e->t_ns > th->timed->last_tick_ns &&
        s.cpu_ns >= 0) {
      f.cpu0_ns = th->cpu_seen;
      f.cpu1_ns = e->cpu_ns;
      f.runq0_ns = 0;
      f.runq1_ns = (int64_t)(e->t_ns - th->timed->last_tick_ns) - s.cpu_ns;
    }
    snap__trace_judged(&s, &f);
    s.stack = snap__trace_add_stack_path(
        tr, th->is_main ? &tr->main_path : NULL, e->pcs, e->n, true);
    if (th->is_main && e->n > 0)
      snap__trace_publish_main(tr, e->t_ns, e->cpu_ns, e->pcs, e->n);
    snap__trace_record(tr, th, &s);
    th->last_stack = s.stack;
    th->last_state = s.state;
    th->last_wait = 0;
    th->cpu_seen = e->cpu_ns;
    th->have_last = true;
    th->timed->last_tick_ns = e->t_ns;
    clear_base(th);
    snap__sring_pop(th->timed->ring);
    got++;
  }
  return got;
}

/* When the main thread, seen not ticking at base_ns and awake now with no
   tick yet, began to run: no later than now less the CPU time it used
   since (read before the clock, so never more than it was then). Not its
   run-queue wait as well: the wait between its wake and its first
   instruction belongs to the sleep, not to what follows it, and
   schedstat does not tell it from the waits that came later (seen under
   qemu on a loaded machine: a 78 ms wait after a 100 ms sleep drew the
   next phase 98.6 ms before it began). So a wake is dated late by the
   waits after it, never early. Not before base_floor. 0: not known (it
   has not run since: a look between its wake and its first instruction
   must not date it there). */
static uint64_t woke_at(const snap__trace_t *tr, const snap__trace_thr_t *th) {
  if (!th->is_main)
    return 0;
  int64_t cpu = snap__plat_thread_cpu_ns(th->tid);
  uint64_t now = snap__plat_now_ns();
  if (cpu <= th->cpu_seen)
    return 0;
  uint64_t ran = (uint64_t)(cpu - th->cpu_seen);
  uint64_t floor = base_floor(tr, th);
  return ran < now && now - ran > floor ? now - ran : floor;
}

void snap__trace_disarm(snap__trace_t *tr, snap__lock_t *lock,
                        snap__trace_thr_t *th) {
  if (th->timed) {
    snap__plat_cpu_timer_stop(&th->timed->timer);
    /* The ticks since the last look, which may be 10 ms of them (the
       loop's spaced looks): the end of the thread's last span. */
    bool learn = false;
    snap__plat_lock_lock(lock);
    (void)drain(tr, th, UINT64_MAX, &learn);
    snap__plat_lock_unlock(lock);
    /* Ticks its full ring had to drop: periods missed. */
    atomic_fetch_add_explicit(&tr->missed_ticks,
                              snap__sring_lost(th->timed->ring),
                              memory_order_relaxed);
  }
  th->timed = NULL;
}

/* Whether the main thread ran on since the previous look (ticked: this
   look drained fresh ticks, and so did that one): its CPU time and its
   waits for a CPU together kept up with the wall time (nine tenths), so
   it did not sleep between, busy machine or not. Then the loop lets the
   ring's alarm wake it (schedule.c); a thread that sleeps now and then is
   looked at every DRAIN_NS, or its short sleeps would go unseen. The
   wait is the kernel's (schedstat); where it is not kept, the CPU time
   alone. */
static void note_steady(snap__trace_timed_t *tm, snap_thread_t tid,
                        bool ticked) {
  uint64_t now = snap__plat_now_ns();
  int64_t cpu = ticked ? snap__plat_thread_cpu_ns(tid) : -1;
  int64_t runq = ticked ? snap__plat_thread_runq_ns(tid) : -1;
  bool steady = false;
  if (ticked && tm->look_ns && now > tm->look_ns && cpu >= tm->look_cpu &&
      tm->look_cpu >= 0) {
    int64_t used = cpu - tm->look_cpu;
    if (runq >= tm->look_runq && tm->look_runq >= 0)
      used += runq - tm->look_runq;
    steady = (uint64_t)used * 10 >= (now - tm->look_ns) * 9;
  }
  if (!steady)
    tm->steady = 0;
  else if (tm->steady < UINT8_MAX)
    tm->steady++;
  tm->look_ns = ticked ? now : 0;
  tm->look_cpu = cpu;
  tm->look_runq = runq;
}

/* One look at a timed thread. `others`: not the main thread (then a
   thread that ticked no more is idle: its span ends with its last tick,
   as for a thread the old way finds not running). */
static void sample_timed(snap__trace_t *tr, snap__lock_t *lock, uint32_t idx,
                         bool others) {
  snap__trace_thr_t *th = &tr->thr[idx];
  bool learn = false;
  snap__plat_lock_lock(lock);
  int got = drain(tr, th, UINT64_MAX, &learn);
  snap__plat_lock_unlock(lock);
  /* The main thread runs on if its last tick is recent: the sampler
     sleeps while it ticks, so ticks drained now may be all it did before
     it slept (the ring's alarm woke us half an alarm or more after the
     last one): then it is looked at as one that did not tick. */
  uint64_t since_tick = snap__plat_now_ns() - th->timed->last_tick_ns;
  bool fresh = got > 0 && (others || since_tick < SNAP__TRACE_ALARM_NS / 2);
  if (!others)
    note_steady(th->timed, th->tid, fresh && !learn);
  if (got)
    th->timed->nudged = false; /* answered (or ticked anyway) */
  if (got >= 2)
    th->timed->starved = false; /* a nudge brings one tick: it ticks */
  if (learn) {
    /* One sample the old way: the thread learns its own stack in that
       window (platform/linux/sample.c), and walks itself from then on. */
    th->timed->last_tick_ns = 0;
    clear_base(th);
    snap__trace_sample_thread(tr, lock, idx, false);
    return;
  }
  if (fresh)
    return;
  if (others) {
    snap__plat_lock_lock(lock);
    snap__trace_close_span(tr, th);
    snap__plat_lock_unlock(lock);
    return;
  }
  uint64_t now = snap__plat_now_ns();
  int64_t cpu = snap__plat_thread_cpu_ns(th->tid);
  if (cpu < 0) { /* gone */
    snap__trace_disarm(tr, lock, th);
    snap__plat_lock_lock(lock);
    snap__trace_close_span(tr, th);
    th->gone = true;
    snap__plat_lock_unlock(lock);
    return;
  }
  snap__thread_state_t prev = snap__trace_prev_of(th);
  snap__plat_sched_t os = snap__plat_sched_unknown();
  snap__state_facts_t f = snap__trace_facts_of(th, cpu, &prev, &os);
  /* Blocked and did not run since: where it was, without a look (it
     cannot have run: its CPU time would have moved; no /proc read).
     Otherwise its run state is read. */
  bool still = snap__state_did_not_run(&f);
  if (!still || prev.state != SNAP__STATE_BLOCKED) {
    snap__trace_read_run(th->tid, &os);
    still = snap__state_did_not_run(&f);
  }
  if (still) {
    /* It did not run: where it was (runnable: preempted, or woken). */
    snap__trace_sample_t s = {.t_us = snap__trace_us_of(tr, now),
                              .stack = th->last_stack,
                              .cpu_ns = 0};
    snap__trace_judged(&s, &f);
    if (s.state == SNAP__STATE_BLOCKED && prev.state != SNAP__STATE_BLOCKED)
      goto look; /* blocked right after its tick: on what, the look says */
    snap__plat_lock_lock(lock);
    snap__trace_record(tr, th, &s);
    th->last_state = s.state;
    th->last_wait = s.wait;
    snap__plat_lock_unlock(lock);
    return;
  }
  if (th->have_last && os.run == SNAP__RUN_READY) {
    /* Running or waiting for a CPU, and no tick since the last look: it
       had not gone to sleep by now. Nudged, for one tick as soon as it
       runs: a CPU-time timer fires only at a scheduler tick that finds
       the thread on a CPU, so a thread that just woke, or one starved by
       a busy machine, would show its new work only tens of ms later (a
       thread that keeps running ticks by itself between looks and is
       never nudged). How (cpu_timer.c): one on a CPU now (its clock moved
       since this look's first reading, a /proc read ago) gets its timer
       re-armed, which never interrupts a sleep it begins meanwhile; one
       waiting for a CPU gets the tick queued, taken on its return to user
       mode, before it can begin one. One nudge at a time, unless the
       re-armed timer did not tick although the thread ran a period since:
       then the scheduler's ticks do not find it on a CPU, and its tick is
       queued. (Beside busy loops, this kernel's scheduler ran such a
       thread in 1.5 ms slices its 4 ms ticks seldom found: its CPU-time timer
       fired 0-7 times in 150 ms of CPU time, where 37 were due; so did
       setitimer's ITIMER_PROF. The old way's signal is as likely to meet
       a thread on its way into a sleep as the queued tick.) */
    int64_t cpu2 = snap__plat_thread_cpu_ns(th->tid);
    bool missed = th->timed->nudged && cpu2 >= th->timed->nudge_cpu &&
                  (uint64_t)(cpu2 - th->timed->nudge_cpu) >= period_ns(tr, th);
    if (missed)
      th->timed->starved = true;
    if (!th->timed->nudged || missed) {
      bool queue = cpu2 == cpu || th->timed->starved;
      th->timed->nudged = snap__plat_cpu_timer_nudge(&th->timed->timer, th->tid,
                                                     queue) == SNAP_OK;
      th->timed->nudge_cpu = cpu2;
    }
    /* Its first tick may come tens of ms after its wake on a busy machine:
       the wake is dated now, from its clocks (woke_at), and the tick's
       span starts there if that is earlier than the tick's own dating
       (it is by the waits for a CPU between this look and the tick). */
    if (th->timed->base_ns && !th->timed->woke_ns)
      th->timed->woke_ns = woke_at(tr, th);
    th->timed->seen_running_ns = now;
    return;
  }
look:;
  /* It ran, and sleeps now: read quietly where (no signal: a blocked
     thread's registers come from /proc). */
  uintptr_t pcs[SNAP__TRACE_DEPTH];
  snap_wait_t wait = {.size = sizeof wait};
  bool os_blocked;
  uint64_t t = snap__plat_now_ns();
  int n = snap__trace_capture_quiet(th, pcs, &wait, &os_blocked);
  /* Ticks its handler took after the drain above and before it slept
     came before the sleep: into its spans first (left in the ring, they
     were drawn after the sleep, as the phase before it coming back; seen
     beside busy loops). Those taken after t stay: it may have woken. */
  bool late_learn = false;
  snap__plat_lock_lock(lock);
  (void)drain(tr, th, t, &late_learn);
  snap__plat_lock_unlock(lock);
  int64_t cpu_now = snap__plat_thread_cpu_ns(th->tid);
  if (cpu_now >= cpu)
    cpu = cpu_now;
  /* Dated to when its CPU time stopped, when its last sample was a tick:
     its CPU time since the tick, as if it had run all along; on a busy
     machine it also waited for a CPU meanwhile, and it was still awake at
     the last look that found it so. */
  if (th->timed->last_tick_ns && cpu >= th->cpu_seen) {
    uint64_t est = th->timed->last_tick_ns + (uint64_t)(cpu - th->cpu_seen);
    if (th->timed->seen_running_ns > est)
      est = th->timed->seen_running_ns;
    if (est < t)
      t = est;
  }
  th->timed->seen_running_ns = 0;
  th->timed->nudged = false;
  snap__trace_sample_t s = {.t_us = snap__trace_us_of(tr, t),
                            .stack = SNAP__TRACE_NONE};
  s.cpu_ns = th->have_last && cpu >= th->cpu_seen ? cpu - th->cpu_seen : -1;
  if (n < 0)
    atomic_fetch_add_explicit(&tr->failed, 1, memory_order_relaxed);
  snap__state_facts_t fc =
      snap__trace_facts_of_capture(n < 0 ? NULL : &wait, os_blocked);
  snap__trace_judged(&s, &fc);
  snap__plat_lock_lock(lock);
  s.stack = n > 0 ? snap__trace_add_stack(tr, pcs, n, true) : SNAP__TRACE_NONE;
  if (n > 0 && s.state != SNAP__STATE_BLOCKED)
    snap__trace_publish_main(tr, now, cpu, pcs, n);
  snap__trace_record(tr, th, &s);
  th->last_stack = s.stack;
  th->last_state = s.state;
  th->last_wait = s.wait;
  th->timed->last_tick_ns = 0;
  snap__plat_lock_unlock(lock);
  th->cpu_seen = cpu;
  th->have_last = true;
  /* The baseline its wake is dated from (woke_at): one read a sleep. */
  if (s.state == SNAP__STATE_BLOCKED)
    set_base(th);
  else
    clear_base(th);
}

/* A thread the trace follows: by its timer when it has one (armed on
   first sight), else the old way. */
void snap__trace_sample_any(snap__trace_t *tr, snap__lock_t *lock, uint32_t idx,
                            bool others) {
  snap__trace_thr_t *th = &tr->thr[idx];
  if (!th->timer_tried) {
    arm(tr, th); /* the fields it sets are the sampler's own: no lock */
    if (th->timed) {
      char name[sizeof th->name] = "";
      (void)snap__plat_thread_name(th->tid, name, sizeof name);
      snap__plat_lock_lock(lock);
      memcpy(th->name, name, sizeof name);
      if (th->is_main)
        tr->main_ring = th->timed->ring;
      snap__plat_lock_unlock(lock);
      th->cpu_seen = snap__plat_thread_cpu_ns(th->tid);
      th->have_last = th->cpu_seen >= 0;
      if (th->have_last)
        set_base(th); /* its first tick is dated back to here at most */
    }
  }
  if (th->timed)
    sample_timed(tr, lock, idx, others);
  else
    snap__trace_sample_thread(tr, lock, idx, others);
}
