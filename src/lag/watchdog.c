/*
 * watchdog.c — the lag watchdog: configuration, start/stop, and the thread
 * that turns the loop observer's state into samples and reports.
 *
 * Owns: the watchdog thread and every decision it makes: when to sleep,
 * when to sample, what is a lag, a hang, a CPU report, an annealed repeat,
 * when the process itself was not running. Must not: run anything on the
 * main thread (the loop calls only observer.c), or name stacks or write
 * files while a thread is stopped (every capture is finished, and the
 * thread running again, before its pcs are named).
 *
 * The thread's life is a loop of one decision and one sleep:
 *  - loop idle and no busy call since the last wake: park (no wakeups until
 *    the next busy call posts, or the CPU window ends);
 *  - otherwise sleep until the earliest of: the next point sample, the
 *    moment the busy stretch would become a lag, the next re-check of an
 *    ongoing lag, the next tick (to see the lag end), the CPU window's end.
 * Detection is therefore on time (a deadline computed from when the stretch
 * began), not up to a polling period late.
 *
 * A wake later than planned by more than `slack` means the whole process
 * did not run (SIGSTOP, a debugger, a suspended VM): that time is "stolen"
 * and does not count as busy, so a stop never makes a lag.
 */
#include <stdlib.h>
#include <string.h>

#include "lag/lag.h"

#define MS ((uint64_t)1000000)
#define CAPTURE_DEPTH 256
#define HEARTBEAT_NS (1000 * MS)

typedef struct lag {
  bool active;   /* a lag is going on */
  bool written;  /* it has a report file (else: annealed, or capped) */
  bool annealed; /* same path as the previous lag: no report of its own */
  uint32_t seq;
  char name[64];
  snap__lag_report_t rep;
  snap__backoff_t fib;
  uint64_t next_check_ns;
  uint64_t written_ns; /* last write of its file */
} lag_t;

typedef struct wd {
  snap_lag_config_t cfg;
  snap__lag_store_t store;
  snap__sem_t *wake; /* g_wake */
  snap__plat_thread_t thread;
  _Atomic snap_thread_t tid; /* the watchdog thread, once running */
  _Atomic bool stop;
  snap__ring_t ring;
  snap_thread_t main;
  uint64_t threshold_ns, hang_ns, interval_ns, tick_ns, slack_ns, window_ns;

  /* The busy stretch being watched. */
  bool watching;
  uint32_t seq;
  uint64_t since_ns, stolen_ns;
  uint64_t seen_ns;        /* when the watchdog first saw it ... */
  int64_t seen_cpu;        /* ... and the main thread's CPU time then */
  uint64_t next_sample_ns; /* point samples: at most one per interval
                                while busy, across stretches (a CPU report of
                                short iterations needs them too) */
  bool handled;            /* detection done: reported, annealed or skipped */
  bool main_running;       /* at the last capture_main */
  int main_error;          /* of the last capture_main */
  int main_n;              /* its pcs (or its error) */
  uintptr_t main_pcs[CAPTURE_DEPTH];

  lag_t lag;
  /* The last lag that wrote a report: annealing compares with it, and
     counts its repeats into its file. */
  bool have_prev;
  char prev_name[64];
  snap__lag_report_t prev;

  /* CPU trigger. */
  uint64_t cpu_t0; /* window start, moved by time the process was stopped */
  uint64_t cpu_ring_t0; /* window start as it was: the ring's points since */
  int64_t cpu0;
  bool cpu_hot; /* reported this hot episode already */
} wd_t;

static _Atomic int g_state; /* 0 stopped, 1 running, 2 starting/stopping */
static wd_t *g_wd;

/* ---- Configuration ------------------------------------------------------- */

SNAP_EXPORT void snap_lag_config_default(snap_lag_config_t *cfg) {
  if (!cfg)
    return;
  memset(cfg, 0, sizeof *cfg);
  cfg->threshold_ms = 250;
  cfg->sample_interval_ms = 50;
  cfg->ring_size = 20;
  cfg->hang_ms = 8000;
  cfg->cpu_percent = 80;
  cfg->retention_days = 7;
  cfg->max_reports_per_day = 20;
  cfg->cpu_window_ms = 5000;
  cfg->max_threads = 64;
}

static bool in(unsigned v, unsigned lo, unsigned hi) {
  return v >= lo && v <= hi;
}

static int check_config(const snap_lag_config_t *c) {
  if (!c || !c->report_dir || !c->report_dir[0] ||
      strlen(c->report_dir) >= sizeof((snap__lag_store_t *)0)->dir)
    return SNAP_EINVAL;
  if (!in(c->threshold_ms, 10, 60000) ||
      !in(c->hang_ms, c->threshold_ms, 3600000) ||
      (c->sample_interval_ms &&
       !in(c->sample_interval_ms, 1, c->threshold_ms)) ||
      (c->sample_interval_ms && !in(c->ring_size, 1, 1000)) ||
      c->ring_size > 1000 || c->cpu_percent > 100 ||
      !in(c->retention_days, 1, 3650) ||
      !in(c->max_reports_per_day, 1, 100000) ||
      !in(c->cpu_window_ms, 100, 600000) || !in(c->max_threads, 1, 1024))
    return SNAP_EINVAL;
  return SNAP_OK;
}

/* ---- Sampling and naming ------------------------------------------------- */

static const snap_stack_t *name_pcs(const uintptr_t *pcs, int n) {
  return snap_symbolicate(pcs, n, SNAP_SYMBOLICATE_EXACT_PC0);
}

/* Where Swift concurrency runs, a thread's stack below an async function is
   only the executor's machinery: ask for the task's async chain instead. */
static unsigned capture_flags(void) {
  return snap__plat_has_swift_concurrency() ? SNAP_CAPTURE_ASYNC : 0;
}

/* NULL when the main thread could not be sampled (w->main_error says why:
   it did not answer in time, e.g. under TSan, which holds signals back
   while a thread blocks). */
static const snap_stack_t *capture_main(wd_t *w) {
  /* Its state before the sample: right after one it is still on its way
     out of the signal handler, so it would read "running". */
  w->main_running = snap_thread_is_running(w->main) == 1;
  int n =
      snap_capture_thread(w->main, w->main_pcs, CAPTURE_DEPTH, capture_flags());
  w->main_n = n; /* kept for the thread list */
  const snap_stack_t *s =
      n < 0 ? NULL : name_pcs(w->main_pcs, n); /* it runs again */
  w->main_error = n < 0 ? n : s ? SNAP_OK : SNAP_ENOMEM;
  return s;
}

static void take_point(wd_t *w, uint64_t now) {
  snap__point_t *p = snap__ring_next(&w->ring);
  if (!p)
    return;
  int n =
      snap_capture_thread(w->main, p->pcs, SNAP__RING_DEPTH, capture_flags());
  if (n <= 0)
    return;
  p->n = n;
  p->seq = w->seq;
  p->t_ns = now;
  p->cpu_ns = snap__plat_thread_cpu_ns(w->main);
  snap__ring_commit(&w->ring);
  /* A stretch a whole interval old may become a lag: its point is named
     now, once the main thread runs again, so that the first naming of an
     image (tens of ms for libc with its debug file) is not paid between
     detection and the report. Points of short stretches are named only if
     a report needs them: a hot loop's samples cost no naming. */
  if (now - w->since_ns >= w->interval_ns)
    snap_stack_release(name_pcs(p->pcs, n));
}

/* Every thread but the watchdog: main first (its stack as capture_main
   took it), then running ones, then the rest, up to max_threads. Running
   states are read before any of them is sampled (a thread just sampled is
   still leaving the signal handler); all are captured, then named. */
static void capture_threads(wd_t *w, snap__lag_report_t *r) {
  int cap = 4096, max = (int)w->cfg.max_threads;
  snap_thread_t *all = malloc(sizeof *all * (size_t)cap);
  bool *running = malloc(sizeof *running * (size_t)cap);
  snap__lag_thread_t *ts = calloc((size_t)max, sizeof *ts);
  uintptr_t(*pcs)[CAPTURE_DEPTH] = malloc(sizeof *pcs * (size_t)max);
  int *npcs = calloc((size_t)max, sizeof *npcs);
  int total = all ? snap_thread_list(all, cap) : SNAP_ENOMEM;
  if (!running || !ts || !pcs || !npcs || total < 0) {
    free(all);
    free(running);
    free(ts);
    free(pcs);
    free(npcs);
    return;
  }
  int n = total < cap ? total : cap;
  snap_thread_t self = atomic_load(&w->tid);
  r->threads_total = total;
  for (int i = 0; i < n; i++) {
    if (all[i] == self) { /* not the app's */
      r->threads_total--;
      all[i] = 0;
    }
    running[i] = all[i] == w->main
                     ? w->main_running
                     : all[i] && snap_thread_is_running(all[i]) == 1;
  }
  unsigned flags = capture_flags();
  int k = 0;
  for (int pass = 0; pass < 3 && k < max; pass++) {
    for (int i = 0; i < n && k < max; i++) {
      bool is_main = all[i] == w->main;
      if (!all[i] || (pass == 0) != is_main || (pass == 1 && !running[i]))
        continue;
      ts[k] = (snap__lag_thread_t){
          .tid = all[i], .main = is_main, .running = running[i]};
      all[i] = 0;          /* taken */
      int got = w->main_n; /* a count, or why there is none */
      if (is_main && got > 0)
        memcpy(pcs[k], w->main_pcs, sizeof(uintptr_t) * (size_t)got);
      else if (!is_main)
        got = snap_capture_thread(ts[k].tid, pcs[k], CAPTURE_DEPTH, flags);
      ts[k].error = got < 0 ? got : SNAP_OK;
      npcs[k] = got < 0 ? 0 : got;
      k++;
    }
  }
  /* Every thread runs again: name them now. */
  for (int i = 0; i < k; i++) {
    if (!snap__plat_thread_name(ts[i].tid, ts[i].name, sizeof ts[i].name))
      ts[i].name[0] = '\0';
    if (ts[i].error == SNAP_OK) {
      ts[i].stack = name_pcs(pcs[i], npcs[i]);
      if (!ts[i].stack)
        ts[i].error = SNAP_ENOMEM;
    }
  }
  r->threads = ts;
  r->nthreads = k;
  free(pcs);
  free(npcs);
  free(running);
  free(all);
}

static void drop_threads(snap__lag_report_t *r) {
  for (int i = 0; i < r->nthreads; i++)
    snap_stack_release(r->threads[i].stack);
  free(r->threads);
  r->threads = NULL;
  r->nthreads = 0;
}

/* ---- Reports ------------------------------------------------------------- */

/* When the watched stretch will have been busy for d (stolen time does not
   count). */
static uint64_t busy_until(const wd_t *w, uint64_t d) {
  return w->since_ns + w->stolen_ns + d;
}

static uint64_t busy_ns(const wd_t *w, uint64_t now) {
  uint64_t age = now > w->since_ns ? now - w->since_ns : 0;
  return age > w->stolen_ns ? age - w->stolen_ns : 0;
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

/* Fills what every update refreshes: duration, main-thread CPU, class,
   costliest stack. Takes ownership of main_stack. */
static void refresh(wd_t *w, snap__lag_report_t *r, const snap_stack_t *main,
                    uint64_t busy) {
  if (main) {
    snap_stack_release(r->main_stack);
    r->main_stack = main;
  }
  r->updated_unix_ms = snap__plat_unix_ms();
  r->duration_ms = busy / MS;
  /* CPU and wall time read together, now (sampling took a while). */
  int64_t cpu = snap__plat_thread_cpu_ns(w->main);
  uint64_t t = snap__plat_now_ns();
  if (cpu >= 0 && w->seen_cpu >= 0) {
    r->main_cpu_ms = (cpu - w->seen_cpu) / (int64_t)MS;
    r->main_wall_ms = (int64_t)((t - w->seen_ns) / MS);
  }
  snap_stack_release(r->costliest.stack);
  snap__ring_costliest(&w->ring, w->seq, w->since_ns, &r->costliest);
  classify(r);
}

static int write_report(wd_t *w, snap__lag_report_t *r, char name[64],
                        bool is_new) {
  size_t n;
  char *json = snap__lag_report_json(r, &n);
  if (!json)
    return SNAP_ENOMEM;
  int rc = is_new ? snap__lag_store_add(&w->store, r->start_unix_ms, r->kind,
                                        json, n, name)
                  : snap__lag_store_update(&w->store, name, r->start_unix_ms,
                                           r->kind, json, n);
  free(json);
  return rc;
}

static bool skip_traced(const wd_t *w) {
  return !w->cfg.report_when_traced && snap__plat_is_traced();
}

/* The busy stretch outlived the threshold. */
static void detect(wd_t *w, uint64_t now) {
  w->handled = true;
  if (skip_traced(w))
    return;
  /* A main thread that cannot be sampled still lags: the report says
     why its stack is missing. */
  const snap_stack_t *main = capture_main(w);
  lag_t *l = &w->lag;
  memset(l, 0, sizeof *l);
  l->active = true;
  l->seq = w->seq;
  snap__backoff_reset(&l->fib);
  l->next_check_ns = now + w->threshold_ns * snap__backoff_next(&l->fib);
  snap__lag_report_t *r = &l->rep;
  uint64_t busy = busy_ns(w, now);
  r->kind = busy >= w->hang_ns ? SNAP__KIND_HANG : SNAP__KIND_LAG;
  r->ongoing = true;
  r->threshold_ms = w->cfg.threshold_ms;
  r->main_tid = w->main;
  r->start_unix_ms = snap__plat_unix_ms() - (int64_t)((now - w->since_ns) / MS);
  refresh(w, r, main, busy);
  r->main_error = main ? SNAP_OK : w->main_error;
  if (w->have_prev && r->kind == SNAP__KIND_LAG &&
      snap__same_path(r->main_stack, w->prev.main_stack)) {
    l->annealed = true; /* the same lag again: counted, not written */
    return;
  }
  capture_threads(w, r);
  l->written = write_report(w, r, l->name, true) == SNAP_OK;
  l->written_ns = snap__plat_now_ns();
}

/* A re-check of an ongoing lag (Fibonacci-spaced), or its turn into a hang. */
static void recheck(wd_t *w, uint64_t now) {
  lag_t *l = &w->lag;
  uint64_t busy = busy_ns(w, now);
  const snap_stack_t *main = capture_main(w);
  if (main && !snap__same_path(main, l->rep.main_stack)) {
    snap__backoff_reset(&l->fib); /* it moved: look again soon */
    if (l->annealed) {
      l->annealed = false; /* no longer the previous lag: report it */
      l->written = false;
    }
  }
  bool becomes_hang = busy >= w->hang_ns && l->rep.kind == SNAP__KIND_LAG;
  if (becomes_hang) {
    l->rep.kind = SNAP__KIND_HANG;
    l->annealed = false; /* a hang is always worth its own report */
  }
  refresh(w, &l->rep, main, busy);
  if (main)
    l->rep.main_error = SNAP_OK;
  if (!l->annealed) {
    if (!l->written) {
      drop_threads(&l->rep);
      capture_threads(w, &l->rep);
      l->written = write_report(w, &l->rep, l->name, true) == SNAP_OK;
      l->written_ns = snap__plat_now_ns();
    } else {
      if (becomes_hang) { /* a hang shows every thread as it is now */
        drop_threads(&l->rep);
        capture_threads(w, &l->rep);
      }
      write_report(w, &l->rep, l->name, false);
      l->written_ns = snap__plat_now_ns();
    }
  }
  uint64_t step = w->threshold_ns * snap__backoff_next(&l->fib);
  l->next_check_ns = now + step;
}

/* Between re-checks, which grow apart, an ongoing report's duration is
   rewritten every HEARTBEAT_NS (no new sample): a process killed in a long
   hang leaves a hang_killed report at most that stale. */
static void heartbeat(wd_t *w, uint64_t now) {
  lag_t *l = &w->lag;
  refresh(w, &l->rep, NULL, busy_ns(w, now));
  write_report(w, &l->rep, l->name, false);
  l->written_ns = snap__plat_now_ns();
}

/* The lag ended at end_ns (the loop went idle or moved on). */
static void end_lag(wd_t *w, uint64_t end_ns) {
  lag_t *l = &w->lag;
  uint64_t busy = busy_ns(w, end_ns);
  if (l->annealed && w->have_prev) {
    w->prev.repeats++;
    w->prev.updated_unix_ms = snap__plat_unix_ms();
    write_report(w, &w->prev, w->prev_name, false);
    snap__lag_report_clear(&l->rep);
  } else if (l->written) {
    /* Final figures: duration, CPU and the ring up to the end; the stacks
       stay those of the last check (the main thread has moved on). */
    refresh(w, &l->rep, NULL, busy);
    l->rep.ongoing = false;
    write_report(w, &l->rep, l->name, false);
    snap__lag_report_clear(&w->prev);
    w->prev = l->rep;
    memcpy(w->prev_name, l->name, sizeof w->prev_name);
    w->have_prev = true;
    memset(&l->rep, 0, sizeof l->rep);
  } else {
    snap__lag_report_clear(&l->rep);
  }
  l->active = false;
}

/* Main thread above cpu_percent of a core over the window: one report per
   hot episode (the CPU must drop below before the next). */
static void check_cpu(wd_t *w, uint64_t now) {
  int64_t cpu = snap__plat_thread_cpu_ns(w->main);
  uint64_t wall = now - w->cpu_t0;
  bool hot = false;
  unsigned pct = 0;
  if (cpu >= 0 && w->cpu0 >= 0 && wall > 0) {
    pct = (unsigned)((uint64_t)(cpu - w->cpu0) * 100 / wall);
    hot = pct >= w->cfg.cpu_percent;
  }
  if (hot && !w->cpu_hot && !w->lag.active && !skip_traced(w)) {
    snap__lag_report_t r = {0};
    r.kind = SNAP__KIND_CPU;
    r.threshold_ms = w->cfg.threshold_ms;
    r.main_tid = w->main;
    r.cpu_percent = pct;
    r.cpu_window_ms = (unsigned)(wall / MS);
    r.start_unix_ms = snap__plat_unix_ms() - (int64_t)(wall / MS);
    r.updated_unix_ms = snap__plat_unix_ms();
    r.duration_ms = wall / MS;
    r.main_cpu_ms = (cpu - w->cpu0) / (int64_t)MS;
    r.main_wall_ms = (int64_t)(wall / MS);
    r.main_stack = capture_main(w);
    r.main_error = r.main_stack ? SNAP_OK : w->main_error;
    snap__ring_costliest(&w->ring, 0, w->cpu_ring_t0, &r.costliest);
    classify(&r);
    capture_threads(w, &r);
    char name[64];
    write_report(w, &r, name, true);
    snap__lag_report_clear(&r);
  }
  w->cpu_hot = hot;
  w->cpu_t0 = now;
  w->cpu_ring_t0 = now;
  w->cpu0 = cpu;
}

/* ---- The thread ---------------------------------------------------------- */

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

static void run(void *arg) {
  wd_t *w = arg;
  atomic_store(&w->tid, snap_thread_self());
  /* Warm the symbol tables of what every stack holds (the executable, libc,
     this library) before the first lag needs them. */
  snap_stack_release(snap_callstack_symbols(SNAP_MAX_FRAMES, 0));
  uint32_t last_seq = 0;
  uint64_t planned = snap__plat_now_ns();
  bool from_park = false;
  w->cpu_t0 = w->cpu_ring_t0 = planned;
  w->cpu0 = snap__plat_thread_cpu_ns(w->main);
  while (!atomic_load(&w->stop)) {
    uint64_t now = snap__plat_now_ns();
    snap__loop_view_t v = snap__loop_read();

    /* Woken late: the process did not run for that long (a park ends with
       a post right after a busy call, so that is when it was due). */
    if (from_park && v.busy)
      planned = v.busy_since_ns;
    uint64_t late = now > planned + w->slack_ns ? now - planned : 0;
    if (late)
      w->cpu_t0 += late; /* the CPU window does not count it either */

    /* The lag being reported ended? */
    if (w->lag.active && !(v.busy && v.seq == w->lag.seq)) {
      if (late) /* it was busy until at least the stop */
        w->stolen_ns += late;
      end_lag(w, v.seq == w->lag.seq ? v.idle_since_ns
                 : v.busy            ? v.busy_since_ns
                                     : v.idle_since_ns);
    }
    if (v.busy && w->watching && v.seq == w->seq) {
      if (late)
        w->stolen_ns += min_u64(late, now - w->since_ns);
    } else if (v.busy) { /* a new busy stretch */
      w->watching = true;
      w->seq = v.seq;
      w->since_ns = v.busy_since_ns;
      w->stolen_ns = late ? min_u64(late, now - w->since_ns) : 0;
      w->seen_ns = now;
      w->seen_cpu = snap__plat_thread_cpu_ns(w->main);
      w->handled = false;
    }

    uint64_t next = UINT64_MAX;
    if (v.busy && v.seq == w->seq) {
      uint64_t due = busy_until(w, w->threshold_ns);
      /* A point sample when one is due, unless the stretch has only just
         begun (a wake by a busy call's post: that would be the loop's own
         dispatch). Wakes are planned only for a stretch that reaches a
         whole interval; wakes that happen anyway (ticks) sample shorter
         stretches, so a hot loop of 40 ms iterations is seen without wakes
         of its own (and without locking onto the loop's phase, which a
         "not in the first 10 ms" rule did: every planned wake landed 5 ms
         into the next iteration). */
      if (w->interval_ns && now >= w->next_sample_ns &&
          now - w->since_ns >= MS) {
        take_point(w, now);
        w->next_sample_ns = now + w->interval_ns;
      }
      if (!w->handled && now >= due)
        detect(w, now);
      else if (w->lag.active && now >= w->lag.next_check_ns)
        recheck(w, now);
      else if (w->lag.active && w->lag.written && !w->lag.annealed &&
               now >= w->lag.written_ns + HEARTBEAT_NS)
        heartbeat(w, now);
      now = snap__plat_now_ns();
      if (w->interval_ns) {
        uint64_t at = w->since_ns + w->interval_ns;
        next = min_u64(next, at > w->next_sample_ns ? at : w->next_sample_ns);
      }
      if (!w->handled)
        next = min_u64(next, due);
      if (w->lag.active) {
        if (w->lag.rep.kind == SNAP__KIND_LAG) /* set by detect() */
          w->lag.next_check_ns =
              min_u64(w->lag.next_check_ns, busy_until(w, w->hang_ns));
        next = min_u64(next, min_u64(w->lag.next_check_ns, now + w->tick_ns));
      }
    }
    if (w->cfg.cpu_percent) {
      if (now >= w->cpu_t0 + w->window_ns)
        check_cpu(w, now);
      next = min_u64(next, w->cpu_t0 + w->window_ns);
    }

    /* Sleep. */
    from_park = false;
    bool quiet = !v.busy && v.seq == last_seq; /* idle for a whole tick */
    if (quiet && snap__loop_park(v.seq)) {
      /* Parked: until the next busy call posts (or the CPU window ends). */
      int rc = next == UINT64_MAX ? (snap__plat_sem_wait(w->wake), SNAP_OK)
                                  : snap__plat_sem_timedwait(w->wake, next);
      snap__loop_unpark();
      from_park = rc == SNAP_OK;
      planned = from_park ? snap__plat_now_ns() : next;
    } else if (!quiet) {
      uint64_t before = snap__plat_now_ns();
      next = min_u64(next, before + w->tick_ns);
      planned = next > before ? next : before;
      if (snap__plat_sem_timedwait(w->wake, next) == SNAP_OK)
        planned = snap__plat_now_ns(); /* posted early: not late */
    } else {
      planned = snap__plat_now_ns(); /* it went busy meanwhile: look again */
    }
    last_seq = v.seq;
  }
  /* Stopping: an ongoing lag's report gets its duration so far. */
  if (w->lag.active) {
    snap__loop_view_t v = snap__loop_read();
    end_lag(w, v.busy ? snap__plat_now_ns() : v.idle_since_ns);
  }
}

/* ---- Start and stop ------------------------------------------------------ */

static void destroy(wd_t *w) {
  snap__lag_report_clear(&w->lag.rep);
  snap__lag_report_clear(&w->prev);
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

SNAP_EXPORT int snap_lag_start(const snap_lag_config_t *cfg) {
  int rc = check_config(cfg);
  if (rc != SNAP_OK)
    return rc;
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
  st->ctx = cfg->ctx;
  w->main = snap_thread_main();
  w->threshold_ns = cfg->threshold_ms * MS;
  w->hang_ns = cfg->hang_ms * MS;
  w->interval_ns = cfg->sample_interval_ms * MS;
  w->window_ns = cfg->cpu_window_ms * MS;
  /* The tick: how soon the watchdog sees a stretch begin while the loop
     keeps iterating, and a lag end. Never more than the threshold. */
  w->tick_ns = w->interval_ns ? w->interval_ns : w->threshold_ns / 2;
  /* Later than this and the process was stopped, not the main thread
     busy; generous, so a loaded machine's scheduling delay is not taken
     for a stop (which hides time from a lag instead of adding it). */
  w->slack_ns = w->threshold_ns > 100 * MS ? w->threshold_ns : 100 * MS;
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
