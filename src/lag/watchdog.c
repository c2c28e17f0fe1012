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
 *    ongoing lag, the next tick (to see the lag end), the CPU window's end,
 *    the retry of a report whose write failed (report.c).
 * Detection is therefore on time (a deadline computed from when the stretch
 * began), not up to a polling period late.
 *
 * A wake later than planned by more than `slack` is either a machine too
 * busy to run the watchdog on time (it waited on a run queue: the app ran
 * or waited meanwhile, and that time is lag) or a process that did not
 * run at all (SIGSTOP, a debugger, a suspended VM: that time is "stolen"
 * and does not count as busy, so a stop never makes a lag). The watchdog
 * thread's own run-queue wait since its last wake tells them apart
 * (snap__stolen_ns); where the OS does not say (Apple), a late wake counts
 * as a stop.
 */
#include <stdlib.h>
#include <string.h>

#include "lag/lag.h"

#define HEARTBEAT_NS (1000 * SNAP__MS)

typedef struct wd {
  snap_lag_config_t cfg;
  snap__lag_store_t store;
  snap__sem_t *wake; /* g_wake */
  snap__plat_thread_t thread;
  _Atomic snap_thread_t tid; /* the watchdog thread, once running */
  _Atomic bool stop;
  snap__ring_t ring;
  uint64_t threshold_ns, hang_ns, interval_ns, tick_ns, slack_ns;

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

  /* The sleep (sleep_until), for the next wake. */
  uint64_t planned_ns; /* when it is due */
  int64_t waited_ns;   /* own run-queue wait at the last wake (< 0: none) */
  bool from_park;      /* it ended a park by a post */
  uint32_t last_seq;   /* the loop's sequence at the last wake */
} wd_t;

static _Atomic int g_state; /* 0 stopped, 1 running, 2 starting/stopping */
static wd_t *g_wd;

/* ---- The thread ---------------------------------------------------------- */

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

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
      main = snap__main_sample(&w->main);
      f.same_as_prev =
          reps->have_prev && snap__same_path(main, reps->prev.main_stack);
    }
  } else if (ev == SNAP__LAG_EV_RECHECK) {
    main = snap__main_sample(&w->main);
    f.moved = main && !snap__same_path(main, reps->cur.main_stack);
  }
  snap__lag_step_t step = snap__lag_transition(&w->lag, ev, f);
  snap__lag_kind_t kind =
      snap__lag_state_is_hang(w->lag.state) ? SNAP__KIND_HANG : SNAP__KIND_LAG;
  int rc = snap__lag_reports_apply(reps, &w->src, step.actions, kind, main,
                                   busy, now);
  if (step.actions & SNAP__LAG_DO_WRITE_NEW)
    snap__lag_transition(&w->lag, SNAP__LAG_EV_WRITTEN,
                         (snap__lag_facts_t){.ok = rc == SNAP_OK});
  if (step.actions & SNAP__LAG_DO_SCHEDULE)
    w->next_check_ns = now + w->threshold_ns * step.check_in;
}

/* When the watched stretch ended, as v shows it at `now`: still busy, now
   (a stop); gone idle, then; another stretch began, when that one began
   (or, idle again, went idle). One rule for the loop and the stop: the
   stop took "now" even when a later stretch was busy, and counted it. */
static uint64_t stretch_end_ns(const snap__loop_view_t *v,
                               const snap__stretch_t *st, uint64_t now) {
  if (v->seq == st->seq)
    return v->busy ? now : v->idle_since_ns;
  return v->busy ? v->busy_since_ns : v->idle_since_ns;
}

/* How long, of this wake's lateness, the process did not run (0: on time,
   or late only because the watchdog waited for a CPU). A park ends with a
   post right after a busy call, so that is when it was due. The CPU
   window does not count the time either. */
static uint64_t woken_late(wd_t *w, const snap__loop_view_t *v, uint64_t now) {
  uint64_t planned = w->from_park && v->busy ? v->busy_since_ns : w->planned_ns;
  uint64_t late = now > planned + w->slack_ns ? now - planned : 0;
  int64_t waited = snap__plat_self_runqueue_wait_ns();
  int64_t starved = waited >= 0 && w->waited_ns >= 0 && waited >= w->waited_ns
                        ? waited - w->waited_ns
                        : -1;
  w->waited_ns = waited;
  late = snap__stolen_ns(late, starved, w->slack_ns);
  if (late)
    snap__cpu_trigger_discount(&w->cpu, late);
  return late;
}

/* Follows the loop from one stretch to the next: the watched one ended
   (the loop went idle or moved on), a new one began, stolen time. */
static void follow_stretch(wd_t *w, const snap__loop_view_t *v, uint64_t now,
                           uint64_t late) {
  snap__stretch_t *st = &w->stretch;
  bool current = w->lag.state != SNAP__LAG_IDLE && v->busy && v->seq == st->seq;
  if (w->lag.state != SNAP__LAG_IDLE && !current) {
    if (late && snap__lag_state_ongoing(w->lag.state))
      st->stolen_ns += late; /* it was busy until at least the stop */
    uint64_t end = stretch_end_ns(v, st, now);
    lag_event(w, SNAP__LAG_EV_END, now, snap__stretch_busy_ns(st, end));
  }
  if (current) {
    if (late)
      st->stolen_ns += min_u64(late, now - st->since_ns);
  } else if (v->busy) { /* a new busy stretch */
    *st = (snap__stretch_t){
        .seq = v->seq,
        .since_ns = v->busy_since_ns,
        .stolen_ns = late ? min_u64(late, now - v->busy_since_ns) : 0,
        .seen_ns = now,
        .seen_cpu = snap__plat_thread_cpu_ns(w->main.tid)};
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
  if (w->interval_ns) {
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
  bool quiet = !v->busy && v->seq == w->last_seq; /* idle for a whole tick */
  if (quiet && snap__loop_park(v->seq)) {
    /* Parked: until the next busy call posts (or the CPU window ends). */
    int rc = next == UINT64_MAX ? (snap__plat_sem_wait(w->wake), SNAP_OK)
                                : snap__plat_sem_timedwait(w->wake, next);
    snap__loop_unpark();
    w->from_park = rc == SNAP_OK;
    w->planned_ns = w->from_park ? snap__plat_now_ns() : next;
  } else if (!quiet) {
    uint64_t before = snap__plat_now_ns();
    next = min_u64(next, before + w->tick_ns);
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
  w->planned_ns = snap__plat_now_ns();
  w->waited_ns = snap__plat_self_runqueue_wait_ns();
  snap__cpu_trigger_start(&w->cpu, w->cfg.cpu_percent,
                          w->cfg.cpu_window_ms * SNAP__MS, w->planned_ns,
                          snap__plat_thread_cpu_ns(w->main.tid));
  while (!atomic_load(&w->stop)) {
    uint64_t now = snap__plat_now_ns();
    snap__loop_view_t v = snap__loop_read();
    follow_stretch(w, &v, now, woken_late(w, &v, now));
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
  /* Stopping: an ongoing lag's report gets its duration so far. */
  if (snap__lag_state_ongoing(w->lag.state)) {
    snap__loop_view_t v = snap__loop_read();
    uint64_t end = stretch_end_ns(&v, &w->stretch, snap__plat_now_ns());
    lag_event(w, SNAP__LAG_EV_STOP, end,
              snap__stretch_busy_ns(&w->stretch, end));
  }
  snap__lag_reports_retry(&w->reports, &w->src, snap__plat_now_ns(), true);
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
  w->cfg = *cfg;
  w->cfg.report_dir = NULL; /* the app's string is not ours to keep */
  snap__lag_store_t *st = &w->store;
  strcpy(st->dir, cfg->report_dir);
  st->retention_days = cfg->retention_days;
  st->max_per_day = cfg->max_reports_per_day;
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
  /* Later than this and the process was stopped, not the main thread
     busy; generous, so a loaded machine's scheduling delay is not taken
     for a stop (which hides time from a lag instead of adding it). */
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
  snap__loop_activate(w->wake);
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
