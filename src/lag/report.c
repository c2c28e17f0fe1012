/*
 * report.c — report assembly: what goes into a lag's report at each step
 * of its life (opened, refreshed, dumped, written, finished, kept as the
 * one to anneal with), and the "cpu" report.
 *
 * Owns: the content of the lag's current and previous reports (the
 * previous one is what annealing compares with and counts repeats into).
 * Must not: decide what happens to a lag (lag_state.c answers that with
 * actions; this file performs them, in the order lag.h lists), build JSON
 * text (report_json.c) or name and replace files (report_store.c); the
 * sampling trace beside a report is the trace layer's to write
 * (snap__trace_write_running). Stacks come from main_sample.c and
 * thread_dump.c, named only once every sampled thread runs again.
 *
 * A write can fail (a full disk). The current lag's rewrites need no
 * retry: the next update writes its content anyway. Its final write does
 * (a report left "ongoing" would read as killed), and so does a repeats
 * rewrite of the previous lag (its count would be lost): both are the
 * previous report's, which stays "unsaved" and is written again at the
 * watchdog's wakes (snap__lag_reports_retry), RETRY_FIRST_NS after the
 * failure, then twice as far apart up to RETRY_MAX_NS (a full disk is not
 * written to in a loop), and once more at stop. Its final callbacks fire
 * when that write lands. Only one report can wait so: when another lag
 * ends and takes its place, it gets one last try; should that fail too,
 * the next start of this process finishes it (report_store.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lag/lag.h"
#include "report/report.h"
#include "trace/trace.h"

#define RETRY_FIRST_NS (250 * SNAP__MS)
#define RETRY_MAX_NS (4000 * SNAP__MS)

bool snap__reports_muted(const snap__report_src_t *src) {
  return !src->report_when_traced && snap__plat_is_traced();
}

/* Class keys from the costliest stack, the main stack when no point sample
   was taken: one snapshot may land anywhere (a clock read inside the hot
   loop), the most frequent stack is what groups one lag across runs. */
static void classify(snap__lag_report_t *r) {
  const snap_stack_t *s =
      snap_stack_count(r->costliest.stack) ? r->costliest.stack : r->main_stack;
  snap__classify(s, 2, r->l1, sizeof r->l1);
  snap__classify(s, 4, r->l2, sizeof r->l2);
}

/* The main thread's split over the stretch, [start, end] and nothing
   past it: times from the main thread's own readings at the stretch's
   edges (observer.c), the end being now (the reading `now`, at t) while
   the stretch goes on; context switches and faults from the stretch's
   first point sample to now; samples by state from the ring's points of
   the stretch. A stretch seen only once it had ended still gets its own
   times: the idle call that ended it read them. */
static void main_split(snap__lag_report_t *r, const snap__stretch_t *st,
                       const snap__plat_sched_t *now, uint64_t t) {
  snap__split_t *sp = &r->main_split;
  snap__split_init(sp);
  snap__edge_t from, to;
  uint64_t end = st->ended ? st->end_ns : t;
  bool known;
  if (st->ended) {
    known = snap__loop_stretch_edges(st->seq, &from, &to);
  } else {
    known = snap__loop_start_edge(st->seq, &from);
    to = (snap__edge_t){
        .t_ns = t, .cpu_ns = now->cpu_ns, .runq_ns = now->runq_ns};
  }
  if (known) {
    snap__split_stretch(sp, &from, &to, st->since_ns, end);
  } else {
    sp->wall_ns = end > st->since_ns ? (int64_t)(end - st->since_ns) : 0;
    sp->cpu_ns = sp->runnable_ns = sp->blocked_ns = -1;
  }
  sp->voluntary = sp->involuntary = sp->major_faults = -1;
  if (st->have_first) {
    snap__plat_sched_t first = st->first, last = *now;
    first.cpu_ns = first.runq_ns = last.cpu_ns = last.runq_ns = 0;
    snap__split_t counts;
    snap__split_init(&counts);
    snap__split_add(&counts, &first, &last, 0);
    sp->voluntary = counts.voluntary;
    sp->involuntary = counts.involuntary;
    sp->major_faults = counts.major_faults;
  }
  memcpy(sp->states, r->costliest.all.states, sizeof sp->states);
  memcpy(sp->waits, r->costliest.all.waits, sizeof sp->waits);
  r->main_cpu_ms = sp->cpu_ns < 0 ? -1 : sp->cpu_ns / (int64_t)SNAP__MS;
  r->main_wall_ms = sp->wall_ns / (int64_t)SNAP__MS;
  r->seen_late = st->ended && st->seen_ns >= st->end_ns;
}

/* Fills what every update refreshes: duration, main-thread CPU, class,
   costliest stack. Takes ownership of main (NULL: keep the last one). */
static void refresh(const snap__report_src_t *src, snap__lag_report_t *r,
                    const snap_stack_t *main, uint64_t busy) {
  const snap__stretch_t *st = src->stretch;
  if (main) {
    snap_stack_release(r->main_stack);
    r->main_stack = main;
    r->main_error = SNAP_OK;
  }
  r->updated_unix_ms = snap__plat_unix_ms();
  r->next_write_by_unix_ms =
      r->updated_unix_ms + (int64_t)(src->rewrite_within_ns / SNAP__MS);
  r->duration_ms = busy / SNAP__MS;
  /* Where the main thread is and its counters, then CPU and wall time
     read together, now (sampling took a while): the end of a stretch
     that goes on. */
  snap__plat_sched_t now;
  snap__plat_thread_sched(src->main->tid, &now);
  int64_t cpu = snap__plat_thread_cpu_ns(src->main->tid);
  uint64_t t = snap__plat_now_ns();
  now.cpu_ns = cpu >= 0 ? cpu : -1;
  snap_stack_release(r->costliest.stack);
  snap__ring_costliest(src->ring, st->seq, st->since_ns, &r->costliest);
  main_split(r, st, &now, t);
  classify(r);
}

/* While a sampling trace runs, the first and the final write of a lag or
   hang report write "<start_unix_ms>-trace.pftrace" beside it, the trace
   of the lag and the second before it so far, and name it in the report's
   "trace" (one file per lag, renamed never: a lag that becomes a hang keeps
   it). A trace that cannot be written leaves the report without the field. */
static void trace_beside(const snap__report_src_t *src, snap__lag_report_t *r) {
  if (r->kind != SNAP__KIND_LAG && r->kind != SNAP__KIND_HANG)
    return;
  char name[64];
  snprintf(name, sizeof name, "%" PRId64 "-trace.pftrace", r->start_unix_ms);
  uint64_t since = r->start_unix_ms > 1000
                       ? (uint64_t)(r->start_unix_ms - 1000) * 1000000u
                       : 0;
  if (snap__trace_write_running(src->store->dir, name, since, 0,
                                src->store->mode) == SNAP_OK)
    snprintf(r->trace, sizeof r->trace, "%s/%s", src->store->dir, name);
}

/* final: this write completes the report (on_report_write is told); true
   once per report. */
static int write_report(const snap__report_src_t *src, snap__lag_report_t *r,
                        char name[64], bool is_new, bool final) {
  /* The first write and the one that completes the report: a hang is
     rewritten a dozen times while it lasts, and each trace would be the
     last one again, a little longer. */
  if (is_new || final)
    trace_beside(src, r);
  size_t n;
  char *json = snap__lag_report_json(r, &n);
  if (!json)
    return SNAP_ENOMEM;
  int rc = is_new ? snap__lag_store_add(src->store, r->start_unix_ms, r->kind,
                                        json, n, final, name)
                  : snap__lag_store_update(src->store, name, r->start_unix_ms,
                                           r->kind, json, n, final);
  free(json);
  return rc;
}

/* A lag the daily cap refused (once per lag, however often it tries
   again): counted for the next report written ("dropped_before"), and in
   "<day>-dropped.json" beside the reports, which the cap leaves so that
   the drop is seen even if no report follows that day. */
#define DAY_MS INT64_C(86400000)
static void count_dropped(snap__lag_reports_t *reps,
                          const snap__report_src_t *src,
                          const snap__lag_report_t *r) {
  if (reps->cur_dropped)
    return;
  reps->cur_dropped = true;
  reps->dropped++;
  int64_t now = snap__plat_unix_ms();
  int64_t day = now - now % DAY_MS;
  if (day != reps->dropped_day) {
    reps->dropped_day = day;
    reps->dropped_today = 0;
  }
  reps->dropped_today++;
  char name[64], text[256];
  snprintf(name, sizeof name, "%" PRId64 "-dropped.json", day);
  int n = snprintf(
      text, sizeof text,
      "{\"schema\":\"stacksnap.lag-dropped/1\",\"day_unix_ms\":%" PRId64
      ",\"dropped\":%u,\"last_start_unix_ms\":%" PRId64
      ",\"max_reports_per_day\":%u,\"pid\":%" PRId64 "}\n",
      day, reps->dropped_today, r->start_unix_ms, src->store->max_per_day,
      snap__plat_process_id());
  if (n > 0 && (size_t)n < sizeof text)
    (void)snap__report_replace(src->store->dir, name, text, (size_t)n,
                               src->store->mode);
}

/* Writes the lag's new file, saying how many lags the cap dropped since
   the last one; counts this one if the cap drops it. */
static int write_new(snap__lag_reports_t *reps, const snap__report_src_t *src,
                     snap__lag_report_t *r) {
  /* Itself not counted: a lag the cap refused may be written at a later
     re-check (a new day). */
  r->dropped_before = reps->dropped - (reps->cur_dropped ? 1u : 0u);
  int rc = write_report(src, r, reps->cur_name, true, false);
  if (rc == SNAP_OK)
    reps->dropped = 0;
  else if (rc == SNAP_EBUSY)
    count_dropped(reps, src, r);
  return rc;
}

/* Writes the previous report again: its final write until one lands.
   True when it is saved. */
static bool save_prev(snap__lag_reports_t *reps,
                      const snap__report_src_t *src) {
  if (write_report(src, &reps->prev, reps->prev_name, false,
                   !reps->prev_final_told) != SNAP_OK)
    return false;
  reps->prev_unsaved = false;
  reps->prev_final_told = true;
  return true;
}

/* The previous report has just become unsaved: the first retry soon. */
static void retry_soon(snap__lag_reports_t *reps) {
  reps->retry_gap_ns = RETRY_FIRST_NS;
  reps->retry_ns = snap__plat_now_ns() + RETRY_FIRST_NS;
}

uint64_t snap__lag_reports_retry(snap__lag_reports_t *reps,
                                 const snap__report_src_t *src, uint64_t now,
                                 bool force) {
  if (!reps->have_prev || !reps->prev_unsaved)
    return UINT64_MAX;
  if (!force && now < reps->retry_ns)
    return reps->retry_ns;
  if (save_prev(reps, src))
    return UINT64_MAX;
  reps->retry_gap_ns = reps->retry_gap_ns * 2 < RETRY_MAX_NS
                           ? reps->retry_gap_ns * 2
                           : RETRY_MAX_NS;
  reps->retry_ns = now + reps->retry_gap_ns;
  return reps->retry_ns;
}

/* When the waits of the stretch's thread dump began, at the latest
   (snap__wait_since_t): for the main thread, its sample (the wait was
   under way then), or earlier, the first reading of the stretch (its
   first look, then each point) after which its CPU time did not move
   before the sample: it did not run from then on, so it was already in
   the wait its sample found. A bound from the other side (the last
   reading before it ran) would not do: a thread begun between that
   reading and the wait, the lock's true holder, would be refused as
   begun after the wait (a three-thread deadlock begun inside the stall
   lost its owner so, in CI). */
static snap__wait_since_t stretch_waits(const snap__report_src_t *src) {
  const snap__stretch_t *st = src->stretch;
  const snap__main_sample_t *m = src->main;
  snap__wait_since_t since = {m->t_ns, st->since_ns};
  if (m->cpu_ns < 0 || m->t_ns < st->since_ns)
    return since;
  if (st->seen_cpu >= m->cpu_ns && st->seen_ns < since.main_ns)
    since.main_ns = st->seen_ns;
  uint64_t p = snap__ring_still_since(src->ring, st->seq, st->since_ns, m->t_ns,
                                      m->cpu_ns);
  if (p && p < since.main_ns)
    since.main_ns = p;
  return since;
}

/* A new report for the stretch that outlived the threshold. A main thread
   that cannot be sampled still lags: the report says why its stack is
   missing. */
static void open_report(snap__lag_reports_t *reps,
                        const snap__report_src_t *src, snap__lag_kind_t kind) {
  snap__lag_report_clear(&reps->cur);
  memset(reps->cur_name, 0, sizeof reps->cur_name);
  reps->written_ns = 0;
  snap__lag_report_t *r = &reps->cur;
  r->kind = kind;
  r->ongoing = true;
  r->threshold_ms = src->threshold_ms;
  r->main_tid = src->main->tid;
  /* The two clocks read together: `now` is older by the main thread's
     sample (a TSan run's took 200 ms), and the wall clock read after it
     would move the start by that much. */
  uint64_t mono = snap__plat_now_ns();
  r->start_unix_ms = snap__plat_unix_ms() -
                     (int64_t)((mono - src->stretch->since_ns) / SNAP__MS);
  r->main_error = src->main->error;
}

int snap__lag_reports_apply(snap__lag_reports_t *reps,
                            const snap__report_src_t *src, unsigned a,
                            snap__lag_kind_t kind, const snap_stack_t *main,
                            uint64_t busy) {
  snap__lag_report_t *r = &reps->cur;
  int rc = SNAP_OK;
  const unsigned asked = a;
  if (a & SNAP__LAG_DO_OPEN) {
    open_report(reps, src, kind);
    reps->cur_dropped = false;
  }
  if (a & SNAP__LAG_DO_HANG)
    r->kind = SNAP__KIND_HANG;
  if (a & SNAP__LAG_DO_REFRESH) {
    refresh(src, r, main, busy);
    main = NULL; /* the report's now */
  }
  /* A new file is written before the thread dump, then again with it:
     the report exists when the lag is detected (on a loaded machine the
     dump may take its whole budget), and holds every thread a moment
     later. Without a file (the daily cap, a failed write) there is no
     dump either: the state machine asks for both again. */
  if ((a & SNAP__LAG_DO_DUMP) && (a & SNAP__LAG_DO_WRITE_NEW)) {
    rc = write_new(reps, src, r);
    reps->written_ns = snap__plat_now_ns();
    a &= ~(unsigned)SNAP__LAG_DO_WRITE_NEW;
    a = rc == SNAP_OK ? a | SNAP__LAG_DO_WRITE_UPDATE
                      : a & ~(unsigned)SNAP__LAG_DO_DUMP;
  }
  if (a & SNAP__LAG_DO_DUMP) {
    snap__thread_dump_drop(r);
    snap__wait_since_t since = stretch_waits(src);
    snap__thread_dump(r, src->main, src->self, src->max_threads,
                      src->dump_budget_ns, &since);
  }
  if (a & (SNAP__LAG_DO_WRITE_NEW | SNAP__LAG_DO_WRITE_UPDATE)) {
    int w = (a & SNAP__LAG_DO_WRITE_NEW)
                ? write_new(reps, src, r)
                : write_report(src, r, reps->cur_name, false, false);
    if (a & SNAP__LAG_DO_WRITE_NEW)
      rc = w;
    reps->written_ns = snap__plat_now_ns();
  }
  bool final_failed = false;
  if (a & SNAP__LAG_DO_WRITE_FINAL) {
    r->ongoing = false;
    final_failed = write_report(src, r, reps->cur_name, false, true) != SNAP_OK;
  }
  if (a & SNAP__LAG_DO_REPEAT && reps->have_prev) {
    reps->prev.repeats++;
    reps->prev.updated_unix_ms = snap__plat_unix_ms();
    /* Only its repeat count changes (this write is final only if its own
       final write is still due). Failed: retried, the count not lost. */
    bool was_unsaved = reps->prev_unsaved;
    reps->prev_unsaved = true;
    if (!save_prev(reps, src) && !was_unsaved)
      retry_soon(reps);
  }
  /* A lag known by no stack (seen only once it ended, no point sampled
     in it) matches nothing: it does not take the previous lag's place,
     or the next lag, the same as that one, would be "new" too. Unless its
     final write failed and needs the retries. */
  if ((a & SNAP__LAG_DO_KEEP) && reps->have_prev && !final_failed &&
      !snap__lag_identity(r->main_stack, r->costliest.stack)) {
    a &= ~(unsigned)SNAP__LAG_DO_KEEP;
    a |= SNAP__LAG_DO_DISCARD;
  }
  if (a & SNAP__LAG_DO_KEEP) {
    if (reps->have_prev && reps->prev_unsaved)
      save_prev(reps, src); /* a last try: its place is taken */
    snap__lag_report_clear(&reps->prev);
    reps->prev = *r;
    memcpy(reps->prev_name, reps->cur_name, sizeof reps->prev_name);
    reps->have_prev = true;
    reps->prev_unsaved = final_failed;
    reps->prev_final_told = !final_failed;
    if (final_failed)
      retry_soon(reps);
    memset(r, 0, sizeof *r);
  }
  if (a & SNAP__LAG_DO_DISCARD)
    snap__lag_report_clear(r);
  snap_stack_release(main); /* taken for nothing */
  return (asked & SNAP__LAG_DO_WRITE_NEW) ? rc : SNAP_OK;
}

void snap__lag_reports_clear(snap__lag_reports_t *reps) {
  snap__lag_report_clear(&reps->cur);
  snap__lag_report_clear(&reps->prev);
  reps->have_prev = false;
  reps->prev_unsaved = false;
}

/* Main thread above cpu_percent of a core over the window. */
void snap__report_cpu(const snap__report_src_t *src,
                      const snap__cpu_episode_t *e) {
  snap__lag_report_t r = {0};
  r.kind = SNAP__KIND_CPU;
  r.threshold_ms = src->threshold_ms;
  r.main_tid = src->main->tid;
  r.cpu_percent = e->percent;
  r.cpu_window_ms = (unsigned)(e->wall_ns / SNAP__MS);
  r.start_unix_ms = snap__plat_unix_ms() - (int64_t)(e->wall_ns / SNAP__MS);
  r.updated_unix_ms = snap__plat_unix_ms();
  r.duration_ms = e->wall_ns / SNAP__MS;
  r.main_cpu_ms = e->cpu_ns / (int64_t)SNAP__MS;
  r.main_wall_ms = (int64_t)(e->wall_ns / SNAP__MS);
  r.main_stack = snap__main_sample(src->main);
  r.main_error = r.main_stack ? SNAP_OK : src->main->error;
  snap__ring_costliest(src->ring, 0, e->ring_since_ns, &r.costliest);
  /* The window has no baseline of the other counters: its CPU time only,
     and its points by state. */
  r.main_split = r.costliest.all;
  r.main_split.wall_ns = (int64_t)e->wall_ns;
  r.main_split.cpu_ns = e->cpu_ns;
  r.main_split.runnable_ns = r.main_split.blocked_ns = -1;
  r.main_split.voluntary = r.main_split.involuntary = -1;
  r.main_split.major_faults = -1;
  classify(&r);
  /* No stall: the window's start stands for it. */
  snap__wait_since_t since = {e->ring_since_ns, e->ring_since_ns};
  snap__thread_dump(&r, src->main, src->self, src->max_threads,
                    src->dump_budget_ns, &since);
  char name[64];
  write_report(src, &r, name, true, true); /* written once */
  snap__lag_report_clear(&r);
}
