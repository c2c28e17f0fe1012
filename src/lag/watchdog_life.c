/*
 * watchdog_life.c — the lag watchdog's life: snap_lag_start (the
 * configuration copied, the ticks derived from it, the ring, the report
 * store, the wake semaphore, the thread started), snap_lag_stop (the
 * thread told, posted and joined) and a forked child, where the thread
 * does not exist.
 *
 * Owns: g_state (stopped, running, starting or stopping: one start or stop
 * at a time, without a lock) and g_wd. Must not: run the watchdog's loop
 * (watchdog.c), or stop from the watchdog thread itself (an on_report
 * callback: it cannot join itself, SNAP_EBUSY).
 */
#include <stdlib.h>
#include <string.h>

#include "lag/lag.h"
#include "lag/watchdog.h"
#include "report/report.h"

static _Atomic int g_state; /* 0 stopped, 1 running, 2 starting/stopping */
static wd_t *g_wd;

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
    fork_hooked = snap__plat_on_fork(SNAP__FORK_LAG, NULL, NULL,
                                     forget_in_child) == SNAP_OK;
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
  rc = snap__plat_thread_start(&w->thread, snap__wd_run, w, "stacksnap-lag");
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
