/*
 * watchdog.c — the lag watchdog's thread: its scheduling loop. Its
 * lifecycle (snap_lag_start, snap_lag_stop, a forked child) is
 * watchdog_life.c's; how late each wake was, and how much of that the
 * process did not run, wake_accounting.c's (watchdog.h: what they share).
 *
 * Owns: the watchdog thread's loop, the busy stretch it watches, when it
 * wakes and sleeps, and which event each wake gives the lag's state machine
 * (lag_state.c) or the CPU trigger (cpu_trigger.c). Must not: run anything on
 * the main thread (the loop calls only observer.c), decide what a lag is
 * (lag_state.c), assemble a report (report.c), or name stacks or write files
 * while a thread is stopped (main_sample.c and thread_dump.c name only after
 * every capture has returned).
 *
 * The thread's life is a loop of one decision and one sleep:
 *  - loop idle and no busy call since the last wake: park (no wakeups until
 *    the next busy call posts, the CPU window ends, or a failed report
 *    write is due again);
 *  - otherwise sleep until the earliest of: the next point sample, the
 *    moment the busy stretch would become a lag, the next re-check of an
 *    ongoing lag, the next tick (to see a stretch begin and a lag end; a
 *    calm loop's tick is half the threshold), the CPU window's end, the
 *    retry of a report whose write failed (report.c).
 * Detection is therefore on time (a deadline computed from when the stretch
 * began), not up to a polling period late.
 */
#include <stdlib.h>
#include <string.h>

#include "lag/lag.h"
#include "lag/watchdog.h"
#include "report/report.h"

/* Performs the actions of a step (all but those in `skip`) on the lag's
   reports, and answers a new report's write. main: the stack just sampled
   (owned from here), or NULL. */
static void perform(wd_t *w, snap__lag_step_t step, unsigned skip,
                    const snap_stack_t *main, uint64_t now, uint64_t busy) {
  unsigned actions = step.actions & ~skip;
  snap__lag_kind_t kind =
      snap__lag_state_is_hang(w->lag.state) ? SNAP__KIND_HANG : SNAP__KIND_LAG;
  int rc =
      snap__lag_reports_apply(&w->reports, &w->src, actions, kind, main, busy);
  if (actions & SNAP__LAG_DO_WRITE_NEW)
    snap__lag_transition(&w->lag, SNAP__LAG_EV_WRITTEN,
                         (snap__lag_facts_t){.ok = rc == SNAP_OK});
  if (actions & SNAP__LAG_DO_SCHEDULE)
    w->next_check_ns = now + w->threshold_ns * step.check_in;
}

/* A sample of the main thread for the watched stretch, or NULL when the
   stretch ended before the sample was known to be inside it: the loop may
   go idle between the watchdog's look and the sample, and a stack taken
   in the idle loop is not the lag's (m->error says why there is none). */
static const snap_stack_t *sample_in_stretch(wd_t *w) {
  w->main.since_ns = w->stretch.since_ns;
  const snap_stack_t *s = snap__main_sample(&w->main);
  snap__loop_view_t v = w->main.loop; /* read before the naming */
  if (s && !(v.busy && v.seq == w->stretch.seq)) {
    snap_stack_release(s);
    s = NULL;
    w->main.n = w->main.error = SNAP_EENDED;
    snap__plat_wait_none(&w->main.wait); /* the late sample is not its */
  }
  return s;
}

/* Whether the lag of the watched stretch is the previous lag again, by
   what is known of it (snap__lag_identity): main, the stack just sampled,
   else the costliest point stack of its stretch (a lag seen late, or
   whose stretch ended before the sample). The two costliest stacks
   agreeing is enough too: one sample lands in whatever leaf the loop was
   in at that instant (a clock read of the app's own, say), and two runs
   of one lag then differ by that leaf alone (the demo's "repeat", under
   TSan: two reports). */
static bool same_as_prev(wd_t *w, const snap_stack_t *main) {
  const snap__lag_reports_t *reps = &w->reports;
  if (!reps->have_prev)
    return false;
  const snap_stack_t *prev =
      snap__lag_identity(reps->prev.main_stack, reps->prev.costliest.stack);
  bool have_main = snap_stack_count(main) > 0;
  if (have_main && snap__same_path(main, prev))
    return true; /* the usual answer: the ring's stacks need no naming */
  snap__costliest_t c;
  snap__ring_costliest(&w->ring, w->stretch.seq, w->stretch.since_ns, &c);
  bool same =
      snap__same_path(c.stack, have_main ? reps->prev.costliest.stack : prev);
  snap_stack_release(c.stack);
  return same;
}

/* Gives the lag's state machine event ev, with the facts it needs (a
   sample of the main thread where it compares stacks), and performs the
   actions it answers. busy: the stretch's busy time at the event. */
static void lag_event(wd_t *w, snap__lag_event_t ev, uint64_t now,
                      uint64_t busy) {
  snap__lag_facts_t f = {.hang = busy >= w->hang_ns};
  const snap_stack_t *main = NULL;
  snap__lag_reports_t *reps = &w->reports;
  if (ev == SNAP__LAG_EV_THRESHOLD) {
    /* Traced: not sampled at all (the lag is ignored anyway, and a
       debugger would stop on the sampling signal). */
    f.traced = snap__reports_muted(&w->src);
    if (!f.traced) {
      main = sample_in_stretch(w);
      f.same_as_prev = same_as_prev(w, main);
    }
  } else if (ev == SNAP__LAG_EV_RECHECK) {
    main = sample_in_stretch(w);
    f.moved = main && !snap__same_path(
                          main, snap__lag_identity(reps->cur.main_stack,
                                                   reps->cur.costliest.stack));
  }
  perform(w, snap__lag_transition(&w->lag, ev, f), 0, main, now, busy);
}

/* The stretch went past the threshold unseen: the watchdog waited for a
   CPU (or to be posted) until it was over, so its stack is gone (the main
   thread has moved on) and the other threads' have too. It is a lag all
   the same: reported with its start and length, no new sample and no
   thread dump, the main stack's absence explained (SNAP_EENDED); point
   samples taken while it was watched still make its costliest stack, and
   by that it is matched with the previous lag (annealing). */
static void missed_threshold(wd_t *w, uint64_t now, uint64_t busy) {
  snap__lag_facts_t f = {.hang = busy >= w->hang_ns,
                         .traced = snap__reports_muted(&w->src)};
  w->main.n = w->main.error = SNAP_EENDED;
  f.same_as_prev = !f.traced && same_as_prev(w, NULL);
  perform(w, snap__lag_transition(&w->lag, SNAP__LAG_EV_THRESHOLD, f),
          SNAP__LAG_DO_DUMP, NULL, now, busy);
}

/* When the watched stretch ended, as v shows it at `now`: still busy, now
   (a stop); gone idle, then; another stretch began, when the observer says
   it ended, else (more than 16 stretches later, or it ended by a second
   busy call) when the next began or, idle again, went idle. One rule for
   the loop and the stop. */
static uint64_t stretch_end_ns(const snap__loop_view_t *v,
                               const snap__stretch_t *st, uint64_t now) {
  uint64_t since, len;
  if (v->seq == st->seq)
    return v->busy ? now : v->idle_since_ns;
  if (snap__loop_ended(st->seq, &since, &len))
    return st->since_ns + len; /* exact, however many stretches followed */
  return v->busy ? v->busy_since_ns : v->idle_since_ns;
}

/* Stretches that began and ended since the last wake, never watched (the
   watchdog waited for a CPU meanwhile, or slept through them): the
   observer keeps the last 16, and any that lasted the threshold is a lag,
   reported as one seen too late (missed_threshold). */
static void missed_stretches(wd_t *w, const snap__loop_view_t *v, uint64_t now,
                             uint64_t late) {
  uint32_t s, n = snap__wd_ended_since_seen(w, v, &s);
  if (n > 16)
    n = 16; /* the last 16: the observer keeps no more */
  snap__stretch_t watched = w->stretch;
  for (; n > 0; n--, s = (s + 1) & SEQ_MASK) {
    uint64_t since, len;
    if (!snap__loop_ended(s, &since, &len))
      continue;
    uint64_t busy = len - snap__wd_stop_within(w, late, since, since + len);
    if (busy < w->threshold_ns)
      continue;
    w->stretch = (snap__stretch_t){.seq = s,
                                   .since_ns = since,
                                   .seen_ns = now,
                                   .seen_cpu = -1,
                                   .seen_runq = -1,
                                   .ended = true,
                                   .end_ns = since + len};
    lag_event(w, SNAP__LAG_EV_BEGIN, now, 0);
    missed_threshold(w, now, busy);
    lag_event(w, SNAP__LAG_EV_END, now, busy);
  }
  w->stretch = watched;
}

/* Follows the loop from one stretch to the next: the watched one ended
   (the loop went idle or moved on), a new one began, stolen time. */
static void follow_stretch(wd_t *w, const snap__loop_view_t *v, uint64_t now,
                           uint64_t late) {
  snap__stretch_t *st = &w->stretch;
  bool current = w->lag.state != SNAP__LAG_IDLE && v->busy && v->seq == st->seq;
  if (w->lag.state != SNAP__LAG_IDLE && !current) {
    uint64_t end = stretch_end_ns(v, st, now);
    /* Its report's split covers [since, end] (the observer's readings),
       however late this look. */
    st->ended = true;
    st->end_ns = end;
    /* The stop came after the last wake, which saw the stretch busy: only
       as much of it as fits before the stretch's end was in the stretch. */
    if (late)
      st->stolen_ns += snap__wd_stop_within(w, late, st->since_ns, end);
    uint64_t busy = snap__stretch_busy_ns(st, end);
    if (w->lag.state == SNAP__LAG_BUSY && busy >= w->threshold_ns)
      missed_threshold(w, now, busy);
    lag_event(w, SNAP__LAG_EV_END, now, busy);
  }
  missed_stretches(w, v, now, late);
  w->seen_seq = v->seq;
  if (current) {
    if (late)
      st->stolen_ns += min_u64(late, now - st->since_ns);
  } else if (v->busy) { /* a new busy stretch */
    snap__loop_watch(v->seq);
    *st = (snap__stretch_t){
        .seq = v->seq,
        .since_ns = v->busy_since_ns,
        .stolen_ns = late ? min_u64(late, now - v->busy_since_ns) : 0,
        .seen_ns = now,
        .seen_cpu = snap__plat_thread_cpu_ns(w->main.tid),
        .seen_runq = snap__plat_thread_runq_ns(w->main.tid)};
    lag_event(w, SNAP__LAG_EV_BEGIN, now, 0);
  }
}

/* The watched stretch is busy: point sample, detection, re-check or
   heartbeat as due. Returns the next deadline; *now is read again after
   the work. */
static uint64_t watch_stretch(wd_t *w, uint64_t *now) {
  snap__stretch_t *st = &w->stretch;
  uint64_t t = *now, next = UINT64_MAX;
  uint64_t due = snap__stretch_busy_until(st, w->threshold_ns);
  bool ongoing = snap__lag_state_ongoing(w->lag.state);
  /* A point sample when one is due, unless the stretch has only just
     begun (a wake by a busy call's post: that would be the loop's own
     dispatch). Wakes are planned only for a stretch that reaches a whole
     interval; wakes that happen anyway (ticks) sample shorter stretches,
     so a hot loop of 40 ms iterations is seen without wakes of its own
     (and without locking onto the loop's phase, which a "not in the first
     10 ms" rule did: every planned wake landed 5 ms into the next
     iteration). */
  if (w->interval_ns && t >= w->next_sample_ns &&
      t - st->since_ns >= SNAP__MS) {
    snap__main_point(w->main.tid, &w->ring, st, t, w->interval_ns);
    w->next_sample_ns = t + w->interval_ns;
  }
  uint64_t busy = snap__stretch_busy_ns(st, t);
  if (w->lag.state == SNAP__LAG_BUSY && t >= due)
    lag_event(w, SNAP__LAG_EV_THRESHOLD, t, busy);
  else if (ongoing && t >= w->next_check_ns)
    lag_event(w, SNAP__LAG_EV_RECHECK, t, busy);
  else if (ongoing && t >= w->reports.written_ns + HEARTBEAT_NS)
    lag_event(w, SNAP__LAG_EV_HEARTBEAT, t, busy);
  *now = t = snap__plat_now_ns();
  /* A calm loop's stretch is almost always over by then: no wake of its
     own for a point sample (at a 60 fps loop's 50 ms, every such wake
     landed in the next frame's work, and the watchdog never calmed); its
     detection deadline stays, and the calm tick samples a stretch that
     goes on. */
  if (w->interval_ns && !w->calm) {
    uint64_t at = st->since_ns + w->interval_ns;
    next = min_u64(next, at > w->next_sample_ns ? at : w->next_sample_ns);
  }
  if (w->lag.state == SNAP__LAG_BUSY)
    next = min_u64(next, due);
  if (snap__lag_state_ongoing(w->lag.state)) {
    if (!snap__lag_state_is_hang(w->lag.state)) /* re-check at hang_ms */
      w->next_check_ns =
          min_u64(w->next_check_ns, snap__stretch_busy_until(st, w->hang_ns));
    next = min_u64(next, min_u64(w->next_check_ns, t + w->tick_ns));
  }
  return next;
}

/* The CPU window ended: a "cpu" report if it begins a hot episode (not
   during a lag, which has its own report). Returns the next deadline. */
static uint64_t check_cpu(wd_t *w, uint64_t now) {
  if (now >= snap__cpu_trigger_due(&w->cpu)) {
    snap__cpu_episode_t e;
    if (snap__cpu_trigger_close(&w->cpu, now,
                                snap__plat_thread_cpu_ns(w->main.tid), &e) &&
        !snap__lag_state_ongoing(w->lag.state) && !snap__reports_muted(&w->src))
      snap__report_cpu(&w->src, &e);
  }
  return snap__cpu_trigger_due(&w->cpu);
}

/* A sleep while the loop is busy, in slices of at most this: see
   sleep_sliced. */
#define SLEEP_SLICE_NS (10 * SNAP__MS)

/* Sleeps until `until` or a post (true). A stop that lands in a sleep and
   ends before the sleep's planned end makes no wake late: nothing the
   watchdog reads at its wake tells it from the sleep (seen under 3 busy
   loops: a stretch that had just begun looked calm, the watchdog slept
   1 s, two stops of 250 ms landed in that sleep and a 3.1 s lag was
   reported as 3.6 s, test_lag_stopped). So while the loop is busy, and
   where the OS says how long the watchdog waited for a CPU (that
   explains a slice's lateness: woken_late subtracts it), the sleep is
   made of slices whose lateness is summed: a stop shows as a slice that
   ended late, less at most a slice. The cost is a wake every slice, and
   only while the loop is busy (as the sampling waits do,
   snap__plat_sample). */
static bool sleep_sliced(wd_t *w, bool busy, uint64_t until) {
  bool slice = busy && w->ran_ns >= 0;
  for (;;) {
    uint64_t now = snap__plat_now_ns();
    uint64_t end = slice && until > now && until - now > SLEEP_SLICE_NS
                       ? now + SLEEP_SLICE_NS
                       : until;
    if (snap__plat_sem_timedwait(w->wake, end) == SNAP_OK)
      return true;
    if (end == until)
      return false;
    /* Lateness up to `until` only: past it, it is the sleep's own
       (woken_late counts it from planned_ns). */
    uint64_t woke = snap__plat_now_ns(), upto = min_u64(woke, until);
    w->slices_late_ns += upto > end ? upto - end : 0;
    if (woke >= until)
      return false;
  }
}

/* Sleeps until `next`, a post (a busy call that found it parked, or a
   stop), or a tick; parks (no deadline but `next`) after a whole tick with
   no busy call. Records when the wake is due, for woken_late. */
static void sleep_until(wd_t *w, const snap__loop_view_t *v, uint64_t next) {
  w->from_park = false;
  w->slices_late_ns = 0;
  w->slept_ns = snap__plat_now_ns();
  bool quiet = !v->busy && v->seq == w->last_seq; /* idle for a whole tick */
  if (quiet && snap__loop_park(v->seq)) {
    /* Parked: until the next busy call posts (or the CPU window ends). */
    int rc = next == UINT64_MAX ? (snap__plat_sem_wait(w->wake), SNAP_OK)
                                : snap__plat_sem_timedwait(w->wake, next);
    snap__loop_unpark();
    /* Ended by a busy call, whether or not its post was seen: a stop
       that caught the busy call between its store and its post (or the
       watchdog between the post and its wake) let the park run out at
       `next`, inside the stop, and only the stop's part after `next` was
       taken as late (seen under qemu-user: 580 ms of a 2 s stop counted
       busy, a steady loop reported as a 677 ms lag). */
    w->from_park = rc == SNAP_OK || snap__loop_read().seq != v->seq;
    w->park_seq = v->seq;
    w->planned_ns = w->from_park ? snap__plat_now_ns() : next;
  } else if (!quiet) {
    uint64_t before = w->slept_ns;
    next = min_u64(next, before + (w->calm ? w->calm_tick_ns : w->tick_ns));
    w->planned_ns = next > before ? next : before;
    if (sleep_sliced(w, v->busy, next))
      w->planned_ns = snap__plat_now_ns(); /* posted early: not late */
  } else {
    w->planned_ns =
        snap__plat_now_ns(); /* it went busy meanwhile: look again */
  }
  w->last_seq = v->seq;
}

void snap__wd_run(void *arg) {
  wd_t *w = arg;
  atomic_store(&w->tid, snap_thread_self());
  w->src.self = snap_thread_self();
  /* Warm the symbol tables of what every stack holds (the executable, libc,
     this library) before the first lag needs them. */
  snap_stack_release(snap_callstack_symbols(SNAP_MAX_FRAMES, 0));
  snap__plat_self_sched_open(&w->sched); /* on this thread: its file */
  wake_reading_t first = snap__wd_read_wake(w);
  w->planned_ns = w->slept_ns = first.now;
  snap__wd_note_wake(w, &first);
  snap__cpu_trigger_start(&w->cpu, w->cfg.cpu_percent,
                          w->cfg.cpu_window_ms * SNAP__MS, w->planned_ns,
                          snap__plat_thread_cpu_ns(w->main.tid));
  while (!atomic_load(&w->stop)) {
    wake_reading_t r = snap__wd_read_wake(w);
    uint64_t now = r.now;
    snap__loop_view_t v = snap__loop_read();
    follow_stretch(w, &v, now, snap__wd_woken_late(w, &v, &r));
    uint64_t next = UINT64_MAX;
    if (v.busy && v.seq == w->stretch.seq) /* the watched stretch */
      next = watch_stretch(w, &now);
    next = min_u64(next, check_cpu(w, now));
    /* A report whose last write failed: retried, and the wake (or park)
       bounded by when. */
    next = min_u64(next,
                   snap__lag_reports_retry(&w->reports, &w->src, now, false));
    sleep_until(w, &v, next);
  }
  /* Stopping: one last look (a lag that ended since the last wake, or
     that ended unseen, is reported), then an ongoing lag's report gets its
     duration so far. */
  wake_reading_t r = snap__wd_read_wake(w);
  uint64_t now = r.now;
  snap__loop_view_t v = snap__loop_read();
  follow_stretch(w, &v, now, snap__wd_woken_late(w, &v, &r));
  if (snap__lag_state_ongoing(w->lag.state)) {
    uint64_t end = stretch_end_ns(&v, &w->stretch, now);
    lag_event(w, SNAP__LAG_EV_STOP, end,
              snap__stretch_busy_ns(&w->stretch, end));
  }
  snap__lag_reports_retry(&w->reports, &w->src, snap__plat_now_ns(), true);
  snap__plat_self_sched_close(&w->sched);
}
