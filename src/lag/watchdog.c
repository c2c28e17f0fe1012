/*
 * watchdog.c — the lag watchdog's thread: its scheduling loop, and its
 * lifecycle (snap_lag_start, snap_lag_stop, a forked child).
 *
 * Owns: the watchdog thread, the busy stretch it watches, when it wakes
 * and sleeps, when the process itself was not running, and which event
 * each wake gives the lag's state machine (lag_state.c) or the CPU
 * trigger (cpu_trigger.c). Must not: run anything on the main thread (the
 * loop calls only observer.c), decide what a lag is (lag_state.c),
 * assemble a report (report.c), or name stacks or write files while a
 * thread is stopped (main_sample.c and thread_dump.c name only after
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
 *
 * A wake later than planned, or work that took longer than the watchdog
 * ran, is either a machine too busy to run the watchdog on time (it waited
 * on a run queue: the app ran or waited meanwhile, and that time is lag)
 * or a process that did not run at all (SIGSTOP, a debugger, a suspended
 * VM: that time is "stolen" and does not count as busy, so a stop never
 * makes a lag). The watchdog thread's own CPU time, run-queue wait,
 * sampling waits and waits on the disk under its report files (an fsync
 * on a busy box: 100 ms and more) since its last wake, the process's CPU
 * time and the main thread's run-queue wait, tell them apart
 * (snap__stolen_ns; past
 * STOP_NOISE_NS); where the OS does not say how long a thread waited for
 * a CPU (Apple), a wake later than `slack` is a stop unless the main
 * thread ran meanwhile. A stretch that went past the threshold while the
 * watchdog waited is reported when it runs (missed_stretches), and a lag
 * ends when the observer says its stretch ended.
 */
#include <stdlib.h>
#include <string.h>

#include "lag/lag.h"
#include "report/report.h"

#define HEARTBEAT_NS (1000 * SNAP__MS)
/* Where the watchdog's own running, run-queue wait, sampling waits and
   report-file waits are known, what they leave unexplained is either a
   stop or the watchdog blocked on something else: a page-in. Those are
   short; 100 ms of it is a stop. (A longer stall while the main thread
   also did not run is taken for one: docs/lag.md.) */
#define STOP_NOISE_NS (100 * SNAP__MS)

typedef struct wd {
  snap_lag_config_t cfg;
  snap__lag_store_t store;
  snap__sem_t *wake; /* g_wake */
  snap__plat_thread_t thread;
  _Atomic snap_thread_t tid; /* the watchdog thread, once running */
  _Atomic bool stop;
  snap__ring_t ring;
  uint64_t threshold_ns, hang_ns, interval_ns, tick_ns, slack_ns;
  uint64_t calm_tick_ns; /* the tick while the loop is calm (below) */
  bool calm;             /* the loop was busy < 10 % of the time since the
                            last wake (calm()) */

  snap__stretch_t stretch;     /* the busy stretch being watched */
  uint64_t next_sample_ns;     /* point samples: at most one per interval
                                  while busy, across stretches (a CPU report of
                                  short iterations needs them too) */
  snap__main_sample_t main;    /* the last sample of the main thread */
  snap__lag_machine_t lag;     /* what the stretch is: busy, a lag ... */
  uint64_t next_check_ns;      /* of the ongoing lag */
  snap__lag_reports_t reports; /* its report, and the previous lag's */
  snap__report_src_t src;      /* what reports are made of (the above) */
  snap__cpu_trigger_t cpu;

  /* The last wake and the sleep after it (sleep_until), for the next. */
  uint64_t wake_ns;      /* the last wake */
  uint64_t prev_wake_ns; /* the one before it */
  int64_t ran_ns;        /* own_ran() then (< 0: unknown) */
  int64_t proc_cpu_ns;   /* the process's CPU time then (< 0: unknown) */
  int64_t main_runq_ns;  /* its run-queue wait then (< 0: unknown) */
  snap__plat_self_sched_t sched; /* this thread's own times, kept open */
  uint64_t slept_ns;             /* when the sleep began */
  uint64_t planned_ns;           /* when it is due */
  bool from_park;                /* it ended a park by a post */
  uint32_t last_seq;             /* the loop's sequence at the last wake */
  uint32_t seen_seq; /* the latest stretch looked at (watched or missed) */
} wd_t;

static _Atomic int g_state; /* 0 stopped, 1 running, 2 starting/stopping */
static wd_t *g_wd;

/* ---- The thread ---------------------------------------------------------- */

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

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

/* The watchdog thread's own time so far that it spent running, waiting
   for a CPU, waiting on samples or on the disk under its report files (all
   of it time the process ran), or -1 where the OS does not say. */
static int64_t own_ran(const wd_t *w) {
  int64_t cpu, runq;
  if (snap__plat_self_sched_times(&w->sched, &cpu, &runq) != SNAP_OK)
    return -1;
  return cpu + runq + (int64_t)snap__plat_sample_waited_ns() +
         (int64_t)snap__report_waited_ns();
}

/* The clock and the counters a wake compares, read together. */
typedef struct wake_reading {
  uint64_t now;
  int64_t ran, proc_cpu, main_runq;
} wake_reading_t;

/* Reads them so that no time passes between the clock and the counters:
   a preemption (or a block) between the two would put its wall time in
   one window and its run-queue wait in the other, and the window without
   it would look stopped (seen under load: a watchdog preempted for 400 ms
   right after reading the clock, its next window "400 ms of work, none of
   it run or queued", and a 400 ms lag discounted whole). Read again while
   the clock moved more than 1 ms across the counters (three tries). */
static wake_reading_t read_wake(const wd_t *w) {
  wake_reading_t r;
  for (int tries = 0; tries < 3; tries++) {
    uint64_t t0 = snap__plat_now_ns();
    r.ran = own_ran(w);
    r.proc_cpu = snap__plat_process_cpu_ns();
    r.main_runq = snap__plat_thread_runq_ns(w->main.tid);
    r.now = snap__plat_now_ns();
    if (r.now - t0 <= SNAP__MS)
      break;
  }
  return r;
}

/* Remembers what this wake saw, for the next (woken_late). */
static void note_wake(wd_t *w, const wake_reading_t *r) {
  w->prev_wake_ns = w->wake_ns;
  w->wake_ns = r->now;
  w->ran_ns = r->ran;
  w->proc_cpu_ns = r->proc_cpu;
  w->main_runq_ns = r->main_runq;
}

/* How many stretches ended since the last look (seen_seq), as v shows
   them (0 when the sequence went back: a new observer), and in *first the
   oldest of the last 16 of them (the observer keeps no more). */
#define SEQ_MASK ((1u << 30) - 1) /* the loop word's sequence is 30 bits */
static uint32_t ended_since_seen(const wd_t *w, const snap__loop_view_t *v,
                                 uint32_t *first) {
  uint32_t last = (v->busy ? v->seq - 1 : v->seq) & SEQ_MASK;
  uint32_t n = (last - w->seen_seq) & SEQ_MASK;
  if (n > SEQ_MASK / 2)
    n = 0;
  *first = (last - (n < 16 ? n : 16) + 1) & SEQ_MASK;
  return n;
}

/* Whether the loop was calm since the last wake (`window` ago, at now):
   busy for under a tenth of the window, counting the stretches that ended
   meanwhile (at most 16: the observer's record) and the current one's age.
   A calm loop has no hot iterations to point-sample between wakes. */
static bool calm(const wd_t *w, const snap__loop_view_t *v, uint64_t now,
                 uint64_t window) {
  uint32_t s, n = ended_since_seen(w, v, &s);
  if (n > 16)
    return false; /* not known: not calm */
  uint64_t busy =
      v->busy && now > v->busy_since_ns ? now - v->busy_since_ns : 0;
  for (; n > 0; n--, s = (s + 1) & SEQ_MASK) {
    uint64_t since, len;
    if (!snap__loop_ended(s, &since, &len))
      return false; /* not known: not calm */
    busy += len;
  }
  return busy * 10 < window;
}

/* How long, since the last wake, the process did not run (0: it ran, or
   the watchdog was only starved of a CPU): a stop can land in the sleep
   (the wake is late) or in the work before it (sampling, naming, writing:
   the work took longer than the watchdog ran), so both are accounted
   (snap__stolen_ns). A park ends with a post right after a busy call, so
   that is when it was due. The CPU window does not count the time
   either. */
static uint64_t woken_late(wd_t *w, const snap__loop_view_t *v,
                           const wake_reading_t *r) {
  uint64_t now = r->now;
  uint64_t planned = w->from_park && v->busy ? v->busy_since_ns : w->planned_ns;
  int64_t ran_before = w->ran_ns, proc_before = w->proc_cpu_ns;
  int64_t runq_before = w->main_runq_ns;
  snap__wake_facts_t f = {.window = now - w->wake_ns,
                          .work = w->slept_ns - w->wake_ns,
                          .late = now > planned ? now - planned : 0,
                          .ran = -1,
                          .proc_ran = -1,
                          .main_runq = -1};
  note_wake(w, r);
  if (w->ran_ns >= 0 && ran_before >= 0 && w->ran_ns >= ran_before)
    f.ran = w->ran_ns - ran_before;
  if (w->proc_cpu_ns >= 0 && proc_before >= 0 && w->proc_cpu_ns >= proc_before)
    f.proc_ran = w->proc_cpu_ns - proc_before;
  if (w->main_runq_ns >= 0 && runq_before >= 0 &&
      w->main_runq_ns >= runq_before)
    f.main_runq = w->main_runq_ns - runq_before;
  w->calm = calm(w, v, now, f.window);
  uint64_t late = snap__stolen_ns(&f, f.ran >= 0 ? STOP_NOISE_NS : w->slack_ns);
  if (late)
    snap__cpu_trigger_discount(&w->cpu, late);
  return late;
}

/* Of a stop of `late` since the last wake, the part inside [since, end). */
static uint64_t stop_within(const wd_t *w, uint64_t late, uint64_t since,
                            uint64_t end) {
  uint64_t from = since > w->prev_wake_ns ? since : w->prev_wake_ns;
  return min_u64(late, end > from ? end - from : 0);
}

/* Stretches that began and ended since the last wake, never watched (the
   watchdog waited for a CPU meanwhile, or slept through them): the
   observer keeps the last 16, and any that lasted the threshold is a lag,
   reported as one seen too late (missed_threshold). */
static void missed_stretches(wd_t *w, const snap__loop_view_t *v, uint64_t now,
                             uint64_t late) {
  uint32_t s, n = ended_since_seen(w, v, &s);
  if (n > 16)
    n = 16; /* the last 16: the observer keeps no more */
  snap__stretch_t watched = w->stretch;
  for (; n > 0; n--, s = (s + 1) & SEQ_MASK) {
    uint64_t since, len;
    if (!snap__loop_ended(s, &since, &len))
      continue;
    uint64_t busy = len - stop_within(w, late, since, since + len);
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
      st->stolen_ns += stop_within(w, late, st->since_ns, end);
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

/* Sleeps until `next`, a post (a busy call that found it parked, or a
   stop), or a tick; parks (no deadline but `next`) after a whole tick with
   no busy call. Records when the wake is due, for woken_late. */
static void sleep_until(wd_t *w, const snap__loop_view_t *v, uint64_t next) {
  w->from_park = false;
  w->slept_ns = snap__plat_now_ns();
  bool quiet = !v->busy && v->seq == w->last_seq; /* idle for a whole tick */
  if (quiet && snap__loop_park(v->seq)) {
    /* Parked: until the next busy call posts (or the CPU window ends). */
    int rc = next == UINT64_MAX ? (snap__plat_sem_wait(w->wake), SNAP_OK)
                                : snap__plat_sem_timedwait(w->wake, next);
    snap__loop_unpark();
    w->from_park = rc == SNAP_OK;
    w->planned_ns = w->from_park ? snap__plat_now_ns() : next;
  } else if (!quiet) {
    uint64_t before = w->slept_ns;
    next = min_u64(next, before + (w->calm ? w->calm_tick_ns : w->tick_ns));
    w->planned_ns = next > before ? next : before;
    if (snap__plat_sem_timedwait(w->wake, next) == SNAP_OK)
      w->planned_ns = snap__plat_now_ns(); /* posted early: not late */
  } else {
    w->planned_ns =
        snap__plat_now_ns(); /* it went busy meanwhile: look again */
  }
  w->last_seq = v->seq;
}

static void run(void *arg) {
  wd_t *w = arg;
  atomic_store(&w->tid, snap_thread_self());
  w->src.self = snap_thread_self();
  /* Warm the symbol tables of what every stack holds (the executable, libc,
     this library) before the first lag needs them. */
  snap_stack_release(snap_callstack_symbols(SNAP_MAX_FRAMES, 0));
  snap__plat_self_sched_open(&w->sched); /* on this thread: its file */
  wake_reading_t first = read_wake(w);
  w->planned_ns = w->slept_ns = first.now;
  note_wake(w, &first);
  snap__cpu_trigger_start(&w->cpu, w->cfg.cpu_percent,
                          w->cfg.cpu_window_ms * SNAP__MS, w->planned_ns,
                          snap__plat_thread_cpu_ns(w->main.tid));
  while (!atomic_load(&w->stop)) {
    wake_reading_t r = read_wake(w);
    uint64_t now = r.now;
    snap__loop_view_t v = snap__loop_read();
    follow_stretch(w, &v, now, woken_late(w, &v, &r));
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
  wake_reading_t r = read_wake(w);
  uint64_t now = r.now;
  snap__loop_view_t v = snap__loop_read();
  follow_stretch(w, &v, now, woken_late(w, &v, &r));
  if (snap__lag_state_ongoing(w->lag.state)) {
    uint64_t end = stretch_end_ns(&v, &w->stretch, now);
    lag_event(w, SNAP__LAG_EV_STOP, end,
              snap__stretch_busy_ns(&w->stretch, end));
  }
  snap__lag_reports_retry(&w->reports, &w->src, snap__plat_now_ns(), true);
  snap__plat_self_sched_close(&w->sched);
}

/* ---- Start and stop ------------------------------------------------------ */

static void destroy(wd_t *w) {
  snap__lag_reports_clear(&w->reports);
  snap__ring_free(&w->ring);
  free(w);
}

/* In a forked child the watchdog thread does not exist: forget it (its
   memory is left alone; the child may start a watchdog of its own). */
static void forget_in_child(void) {
  snap__loop_deactivate();
  snap__loop_forget_in_child();
  if (g_wd) /* the parent's watchdog thread's file: not the child's */
    snap__plat_self_sched_close(&g_wd->sched);
  g_wd = NULL;
  atomic_store(&g_state, 0);
}

SNAP_EXPORT int snap_lag_start(const snap_lag_config_t *caller_cfg) {
  snap_lag_config_t config; /* the caller's, in this library's layout */
  int rc = snap__lag_config_read(caller_cfg, &config);
  if (rc != SNAP_OK)
    return rc;
  const snap_lag_config_t *cfg = &config;
  int expect = 0;
  if (!atomic_compare_exchange_strong(&g_state, &expect, 2))
    return SNAP_EBUSY;
  static bool fork_hooked; /* under g_state == 2 */
  if (!fork_hooked)
    fork_hooked = snap__plat_on_fork_child(forget_in_child) == SNAP_OK;
  wd_t *w = calloc(1, sizeof *w);
  if (!w) {
    atomic_store(&g_state, 0);
    return SNAP_ENOMEM;
  }
  w->sched.handle = -1; /* opened by the watchdog thread itself */
  w->cfg = *cfg;
  w->cfg.report_dir = NULL; /* the app's string is not ours to keep */
  snap__lag_store_t *st = &w->store;
  strcpy(st->dir, cfg->report_dir);
  st->retention_days = cfg->retention_days;
  st->max_per_day = cfg->max_reports_per_day;
  st->mode = cfg->file_mode;
  st->on_report = cfg->on_report;
  st->on_report_write = cfg->on_report_write;
  st->ctx = cfg->ctx;
  w->main.tid = snap_thread_main();
  w->threshold_ns = cfg->threshold_ms * SNAP__MS;
  w->hang_ns = cfg->hang_ms * SNAP__MS;
  w->interval_ns = cfg->sample_interval_ms * SNAP__MS;
  w->src =
      (snap__report_src_t){.store = st,
                           .ring = &w->ring,
                           .stretch = &w->stretch,
                           .main = &w->main,
                           .threshold_ms = cfg->threshold_ms,
                           .max_threads = cfg->max_threads,
                           .dump_budget_ns = cfg->dump_budget_ms * SNAP__MS,
                           .report_when_traced = cfg->report_when_traced};
  /* The tick: how soon the watchdog sees a stretch begin while the loop
     keeps iterating, and a lag end. Never more than the threshold. */
  w->tick_ns = w->interval_ns ? w->interval_ns : w->threshold_ns / 2;
  /* A calm loop (a 60 fps UI idling: 1 ms of work a frame) has nothing
     hot to point-sample between stretches: it is looked at every half
     threshold, which still sees a stretch in time to detect it at its
     deadline (and its end is recorded by the observer), at a third of
     the wakeups. */
  w->calm_tick_ns =
      w->tick_ns > w->threshold_ns / 2 ? w->tick_ns : w->threshold_ns / 2;
  /* An ongoing report is rewritten at its re-checks and a heartbeat after
     its last write, seen at the next tick: a hang_killed report's bound
     on when its process died (report_json.c). */
  w->src.rewrite_within_ns = HEARTBEAT_NS + w->tick_ns;
  /* Where the OS does not say how long the watchdog waited for a CPU
     (Apple), a wake later than this means the process was stopped, not
     the main thread busy: generous, so a loaded machine's scheduling
     delay is not taken for a stop (which hides time from a lag instead
     of adding it). Where it says, the evidence decides, and only noise
     needs a margin (STOP_NOISE_NS). */
  w->slack_ns =
      w->threshold_ns > 100 * SNAP__MS ? w->threshold_ns : 100 * SNAP__MS;
  /* One semaphore for the life of the process, never destroyed: a busy
     call that read the pointer just before a stop may still post to it. A
     post left over from an earlier watchdog is one spurious wake. */
  static snap__sem_t g_wake;
  static bool g_wake_ready; /* under g_state == 2 */
  if (!g_wake_ready) {
    rc = snap__plat_sem_init(&g_wake, 0);
    if (rc != SNAP_OK) {
      free(w);
      atomic_store(&g_state, 0);
      return rc;
    }
    g_wake_ready = true;
  }
  w->wake = &g_wake;
  if ((rc = snap__ring_init(&w->ring,
                            cfg->sample_interval_ms ? cfg->ring_size : 0)) !=
          SNAP_OK ||
      (rc = snap__lag_store_open(st)) != SNAP_OK) {
    destroy(w);
    atomic_store(&g_state, 0);
    return rc;
  }
  snap__loop_activate(w->wake, w->threshold_ns);
  rc = snap__plat_thread_start(&w->thread, run, w, "stacksnap-lag");
  if (rc != SNAP_OK) {
    snap__loop_deactivate();
    destroy(w);
    atomic_store(&g_state, 0);
    return rc;
  }
  g_wd = w;
  atomic_store(&g_state, 1);
  return SNAP_OK;
}

SNAP_EXPORT int snap_lag_stop(void) {
  int expect = 1;
  if (!atomic_compare_exchange_strong(&g_state, &expect, 2))
    return expect == 0 ? SNAP_OK : SNAP_EBUSY;
  wd_t *w = g_wd;
  if (snap_thread_self() ==
      atomic_load(&w->tid)) { /* from on_report: cannot join */
    atomic_store(&g_state, 1);
    return SNAP_EBUSY;
  }
  atomic_store(&w->stop, true);
  snap__plat_sem_post(w->wake);
  snap__plat_thread_join(&w->thread);
  snap__loop_deactivate();
  g_wd = NULL;
  destroy(w);
  atomic_store(&g_state, 0);
  return SNAP_OK;
}
