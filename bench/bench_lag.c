/*
 * bench_lag.c — the lag watchdog's figures from issue 13, each next to its
 * goal, on a quiet machine and with every core saturated by other
 * processes; plus what the loop observer calls and a real GLib loop pay.
 *
 * Load variants. "quiet": nothing of ours runs beside the bench.
 * "saturated": one plain busy-loop child process per online core (default
 * priority, no affinity), started before the part and killed (SIGKILL,
 * reaped) after it; they also die with this process (PDEATHSIG). Parts 2
 * and 3 run in each variant; parts 1 and 4 only quiet (costs, not
 * behaviour under load).
 *
 * 1. Loop observer calls. snap_lag_loop_busy + snap_lag_loop_idle against
 *    their floor, two clock_gettime(CLOCK_MONOTONIC) reads: in a tight
 *    loop (median of interleaved repeats; the watchdog never parks, busy
 *    never posts), and one pair per sleep of 1 ms (still never parked) and
 *    of 100 ms (parked every time: busy posts; floor of that post: a bare
 *    sem_post waking a thread of ours).
 *
 * 2. Detection latency and reported duration, at thresholds of 300 ms,
 *    1 s and 5 s (one watchdog config each; cpu_percent 0 so no "cpu"
 *    report's dump competes; defaults otherwise). Every lag is one busy
 *    loop iteration 1.5 x the threshold long, in wall time (what a user
 *    feels): "compute" spins on the main thread; "mutex" blocks it in
 *    pthread_mutex_lock on a mutex another thread of ours holds until the
 *    deadline (that holder sleeps to an absolute deadline and retries on
 *    EINTR, so a dump's signal does not shorten the lag). Lags are
 *    interleaved and each one sits at a recursion depth different from the
 *    previous one's (the watchdog anneals — does not report — a lag whose
 *    app call path is the previous lag's). latency = CLOCK_MONOTONIC at the
 *    first on_report_write call for its file - CLOCK_MONOTONIC read just
 *    before snap_lag_loop_busy. Duration error = the final report's
 *    duration_ms (on_report_write with final == true; the file is read and
 *    its one top-level "duration_ms" taken) vs busy -> idle measured on the
 *    main thread. Goals: detection <= threshold + 20 ms at p99, |error| <=
 *    2 % at p99, no lag without a report. A report is matched to the
 *    latest lag that began before the start in its file name (that start
 *    can be late, never early; the offset is printed). Where a late
 *    detection's time went: a probe thread reads the schedstat of the
 *    watchdog, the main thread and the bench's other threads 2 ms before
 *    each deadline, the callback again at the first write; the watchdog
 *    waited for a CPU, ran, or neither (blocked: often on a sampled
 *    thread that waits for a CPU to run its signal handler).
 *
 * 3. The watchdog thread's CPU, its schedstat run time (field 1 of
 *    /proc/self/task/<tid>/schedstat, the thread whose comm is
 *    "stacksnap-lag") over a fixed wall period, for a loop busy most of the
 *    time but under the threshold (40 ms busy / 10 ms idle; threshold
 *    250 ms, point sampling every 50 ms) — goal <= 0.3 % of a core (WeChat
 *    Matrix: 3 %) — and a 60 fps idle loop (1 ms busy per 16.7 ms frame) —
 *    goal <= 0.1 %. Beside it, the floor: a bare thread that only waits
 *    50 ms in a loop (sem_clockwait, as the watchdog's tick does).
 *
 * 4. Overhead on a GLib loop. A 5 ms g_timeout (200 Hz) doing a fixed count
 *    of xorshift steps (~2 ms, calibrated; a fixed count, so time stolen
 *    from the main thread lengthens the handler), watchdog on (defaults,
 *    snap_lag_attach_glib) and off, each phase a child process of this
 *    program (off, on, off, on); the CPU from wait4(), the watchdog thread
 *    by schedstat, a bare 50 ms ticker as floor. Without GLib: n/a.
 *
 * --quick shortens every part (~40 s); the full run takes ~4 min.
 * --load quiet|saturated|both picks the variants (default both). Nothing
 * here is pass/fail: the goal columns say whether this run met them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef SNAP_BENCH_HAVE_GLIB
#include <glib.h>
#define HAVE_GLIB 1
#else
#define HAVE_GLIB 0
#endif

#include "stacksnap.h"

#define MS ((uint64_t)1000000)
#define GOAL_LATE_MS 20.0     /* detection <= threshold + this, p99 */
#define GOAL_DURATION_ERR 2.0 /* |reported - true| / true, %, p99 */
#define GOAL_CPU_BUSY 0.3     /* % of one core, 50 ms sampling, busy loop */
#define GOAL_CPU_IDLE 0.1     /* % of one core, 60 fps idle loop */
#define GOAL_CPU_PERCENT 0.3  /* part 4: the GLib loop (defaults) */
#define GLIB_CHILD_FLAG "--glib-child"
#define N_THRESHOLDS 3
enum { K_COMPUTE, K_BLOCKED, K_KINDS };

typedef struct params {
  bool quick;
  int repeats;     /* part 1: interleaved repeats of the tight loop */
  long pairs;      /* part 1: pairs per repeat */
  int short_iters; /* part 1: iterations with a 1 ms sleep */
  int park_iters;  /* part 1: iterations with a 100 ms sleep */
  /* part 2: lags per [saturated][threshold 300 ms, 1 s, 5 s][kind] */
  int lags[2][N_THRESHOLDS][K_KINDS];
  unsigned cpu_ms;     /* part 3: measured milliseconds per loop */
  unsigned phase_secs; /* part 4: seconds per child phase */
  int phases;          /* part 4: off, on, off, on... */
} params_t;

static const params_t k_full = {
    false, 11, 1000000,
    2000,  30, {{{48, 16}, {8, 4}, {3, 0}}, {{48, 16}, {8, 4}, {3, 0}}},
    6000,  5,  4};
static const params_t k_quick = {
    true, 5,  200000,
    400,  10, {{{5, 2}, {1, 1}, {1, 0}}, {{5, 2}, {1, 1}, {0, 0}}},
    1500, 1,  4};

static char g_dir[PATH_MAX]; /* the report directory (mkdtemp) */
static volatile uint64_t g_sink;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int64_t unix_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ns(uint64_t ns) {
  struct timespec t = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  while (nanosleep(&t, &t) != 0 && errno == EINTR)
    ;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Sorts v and returns its p-th quantile (0..1). */
static uint64_t quantile(uint64_t *v, int n, double p) {
  if (n <= 0)
    return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_u64);
  int i = (int)((double)n * p);
  return v[i < n ? i : n - 1];
}

static void die(const char *what, int rc) {
  fprintf(stderr, "bench_lag: %s: %s\n", what, snap_strerror(rc));
  exit(1);
}

static void start_watchdog(const snap_lag_config_t *cfg) {
  int rc = snap_lag_start(cfg);
  if (rc != SNAP_OK)
    die("snap_lag_start", rc);
}

/* Removes the reports (files only) from g_dir, then g_dir itself. */
static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    char p[PATH_MAX + 256];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    unlink(p);
  }
  if (d)
    closedir(d);
  rmdir(dir);
}

/* ---- 1. The observer calls ------------------------------------------------
 */

/* M_POST only in the sleeping variant: a bare sem_post to a thread of ours
   blocked in sem_wait (the floor of a post that wakes a thread). */
enum { M_CLOCKS, M_OFF, M_ON, M_COUNT, M_POST = M_COUNT, M_ALL };
static const char *const k_method_names[M_COUNT] = {"2 x clock_gettime (floor)",
                                                    "pair, watchdog stopped",
                                                    "pair, watchdog running"};

__attribute__((noinline)) static uint64_t time_pairs(long n) {
  uint64_t t0 = now_ns();
  for (long i = 0; i < n; i++) {
    snap_lag_loop_busy();
    snap_lag_loop_idle();
  }
  return now_ns() - t0;
}

__attribute__((noinline)) static uint64_t time_clocks(long n) {
  struct timespec a, b;
  uint64_t acc = 0;
  uint64_t t0 = now_ns();
  for (long i = 0; i < n; i++) {
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_MONOTONIC, &b);
    acc += (uint64_t)a.tv_nsec + (uint64_t)b.tv_nsec;
  }
  uint64_t t = now_ns() - t0;
  g_sink = acc;
  return t;
}

static sem_t g_post_sem;
static atomic_int g_post_stop;

static void *waiter_main(void *arg) {
  (void)arg;
  while (!atomic_load(&g_post_stop))
    while (sem_wait(&g_post_sem) != 0 && errno == EINTR)
      ;
  return NULL;
}

/* One pair (or two clock reads, or a bare post) after a sleep, with a
   clock read on either side. */
static uint64_t time_one(int method) {
  uint64_t t0 = now_ns();
  if (method == M_ON) {
    snap_lag_loop_busy();
    snap_lag_loop_idle();
  } else if (method == M_POST) {
    sem_post(&g_post_sem);
  } else {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_MONOTONIC, &b);
    g_sink = (uint64_t)a.tv_nsec + (uint64_t)b.tv_nsec;
  }
  return now_ns() - t0;
}

typedef struct sleepy {
  uint64_t p50[M_ALL], p99[M_ALL];
  int n[M_ALL];
} sleepy_t;

/* iters iterations, each: sleep, then time one method, in turn the running
   pair, the two clock reads and (with_post) the bare post. Watchdog
   running. */
static void run_sleepy(int iters, uint64_t sleep_for, bool with_post,
                       sleepy_t *out) {
  static const int k_turns[3] = {M_ON, M_CLOCKS, M_POST};
  int turns = with_post ? 3 : 2;
  uint64_t *ns[M_ALL] = {NULL};
  for (int m = 0; m < M_ALL; m++) {
    ns[m] = calloc((size_t)iters, sizeof(uint64_t));
    out->n[m] = 0;
    if (!ns[m])
      die("calloc", SNAP_ENOMEM);
  }
  pthread_t waiter;
  if (with_post) {
    atomic_store(&g_post_stop, 0);
    if (sem_init(&g_post_sem, 0, 0) != 0 ||
        pthread_create(&waiter, NULL, waiter_main, NULL) != 0) {
      perror("bench_lag: waiter");
      exit(1);
    }
  }
  for (int i = 0; i < iters; i++) {
    int m = k_turns[i % turns];
    sleep_ns(sleep_for);
    ns[m][out->n[m]++] = time_one(m);
  }
  if (with_post) {
    atomic_store(&g_post_stop, 1);
    sem_post(&g_post_sem);
    pthread_join(waiter, NULL);
    sem_destroy(&g_post_sem);
  }
  for (int m = 0; m < M_ALL; m++) {
    out->p50[m] = quantile(ns[m], out->n[m], 0.5);
    out->p99[m] = quantile(ns[m], out->n[m], 0.99);
    free(ns[m]);
  }
}

static void part1(const params_t *p) {
  snap_lag_config_t cfg;
  snap_lag_config_default(&cfg);
  cfg.report_dir = g_dir;

  double *per[M_COUNT];
  for (int m = 0; m < M_COUNT; m++) {
    per[m] = calloc((size_t)p->repeats, sizeof(double));
    if (!per[m])
      die("calloc", SNAP_ENOMEM);
  }
  time_clocks(p->pairs / 10); /* warm-up */
  time_pairs(p->pairs / 10);
  for (int r = 0; r < p->repeats; r++) {
    for (int k = 0; k < M_COUNT; k++) {
      int m = (k + r) % M_COUNT; /* no method always goes first */
      uint64_t t;
      if (m == M_CLOCKS) {
        t = time_clocks(p->pairs);
      } else if (m == M_OFF) {
        t = time_pairs(p->pairs);
      } else {
        start_watchdog(&cfg);
        sleep_ns(10 * MS); /* let the thread get going */
        time_pairs(p->pairs / 100);
        t = time_pairs(p->pairs);
        snap_lag_stop();
      }
      per[m][r] = (double)t / (double)p->pairs;
    }
  }
  double med[M_COUNT];
  for (int m = 0; m < M_COUNT; m++) {
    uint64_t *v = malloc(sizeof(uint64_t) * (size_t)p->repeats);
    if (!v)
      die("malloc", SNAP_ENOMEM);
    for (int r = 0; r < p->repeats; r++)
      v[r] = (uint64_t)(per[m][r] * 1000.0); /* ps */
    med[m] = (double)quantile(v, p->repeats, 0.5) / 1000.0;
    free(v);
    free(per[m]);
  }

  sleepy_t s1, s100;
  start_watchdog(&cfg);
  run_sleepy(p->short_iters, 1 * MS, false, &s1);
  run_sleepy(p->park_iters, 100 * MS, true, &s100);
  snap_lag_stop();

  printf("1. snap_lag_loop_busy + snap_lag_loop_idle, per loop iteration\n");
  printf("   tight loop: median of %d interleaved repeats of %ld pairs "
         "(the watchdog never parks: busy never posts)\n\n",
         p->repeats, p->pairs);
  printf("   %-28s %9s %11s\n", "method", "ns/pair", "/ 2 clocks");
  for (int m = 0; m < M_COUNT; m++)
    printf("   %-28s %9.2f %10.2fx\n", k_method_names[m], med[m],
           med[m] / med[M_CLOCKS]);
  printf("   the pair with the watchdog running costs %+.2f ns over two "
         "clock reads\n\n",
         med[M_ON] - med[M_CLOCKS]);

  printf("   one iteration per sleep, watchdog running, methods in turn; each "
         "timed with a\n   clock read on either side (included in every "
         "row); ratios to the row marked *\n\n");
  printf("   %-7s %-34s %7s %8s %8s %10s %10s\n", "sleep", "method", "samples",
         "p50 ns", "p99 ns", "p50 ratio", "p99 ratio");
  const struct {
    const char *label;
    const sleepy_t *s;
    const char *pair;
  } rows[2] = {{"1 ms", &s1, "pair, running (never parked)"},
               {"100 ms", &s100, "pair, running (parked: busy posts)"}};
  for (int i = 0; i < 2; i++) {
    const sleepy_t *s = rows[i].s;
    printf("   %-7s %-34s %7d %8llu %8llu %10s %10s\n", rows[i].label,
           "2 x clock_gettime (floor) *", s->n[M_CLOCKS],
           (unsigned long long)s->p50[M_CLOCKS],
           (unsigned long long)s->p99[M_CLOCKS], "", "");
    if (i == 1)
      printf("   %-7s %-34s %7d %8llu %8llu %9.2fx %9.2fx\n", rows[i].label,
             "bare sem_post, waking a thread", s->n[M_POST],
             (unsigned long long)s->p50[M_POST],
             (unsigned long long)s->p99[M_POST],
             (double)s->p50[M_POST] / (double)s->p50[M_CLOCKS],
             (double)s->p99[M_POST] / (double)s->p99[M_CLOCKS]);
    printf("   %-7s %-34s %7d %8llu %8llu %9.2fx %9.2fx\n", rows[i].label,
           rows[i].pair, s->n[M_ON], (unsigned long long)s->p50[M_ON],
           (unsigned long long)s->p99[M_ON],
           (double)s->p50[M_ON] / (double)s->p50[M_CLOCKS],
           (double)s->p99[M_ON] / (double)s->p99[M_CLOCKS]);
  }
  printf("   parked pair / bare sem_post: p50 %.2fx, p99 %.2fx\n\n",
         (double)s100.p50[M_ON] / (double)s100.p50[M_POST],
         (double)s100.p99[M_ON] / (double)s100.p99[M_POST]);
}

/* ---- Threads' CPU time ----------------------------------------------------
 */

/* A thread's CPU time, from /proc/self/task/<tid>: ns, wait_ns (time spent
   runnable on a run queue, not running) and runs (times it was put on a
   CPU: about its wakeups) from schedstat, exact; ticks from stat's
   utime + stime, in clock ticks. */
typedef struct thread_cpu {
  long long ns, wait_ns, runs;
  long ticks;
} thread_cpu_t;

static bool read_thread_cpu(int tid, thread_cpu_t *out) {
  char path[300], buf[512];
  out->ns = out->wait_ns = out->runs = -1;
  out->ticks = -1;
  snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
  FILE *f = fopen(path, "r");
  if (f) {
    if (fscanf(f, "%lld %lld %lld", &out->ns, &out->wait_ns, &out->runs) != 3)
      out->ns = out->wait_ns = out->runs = -1;
    fclose(f);
  }
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  if ((f = fopen(path, "r"))) {
    if (fgets(buf, sizeof buf, f)) {
      const char *s = strrchr(buf, ')');
      unsigned long ut, st;
      if (s &&
          sscanf(s + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
                 &ut, &st) == 2)
        out->ticks = (long)(ut + st);
    }
    fclose(f);
  }
  return out->ns >= 0;
}

/* The watchdog thread (comm "stacksnap-lag") of this process, or 0. It
   names itself once running: look for up to a second. */
static int watchdog_tid(void) {
  for (int tries = 0; tries < 200; tries++) {
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int found = 0;
    while (d && !found && (e = readdir(d))) {
      if (e->d_name[0] == '.')
        continue;
      char path[300], buf[64];
      snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
      FILE *f = fopen(path, "r");
      if (!f)
        continue;
      if (fgets(buf, sizeof buf, f) && strcmp(buf, "stacksnap-lag\n") == 0)
        found = atoi(e->d_name);
      fclose(f);
    }
    if (d)
      closedir(d);
    if (found)
      return found;
    sleep_ns(5 * MS);
  }
  return 0;
}

#if HAVE_GLIB
/* The watchdog thread's CPU time since it started. False if not found. */
static bool watchdog_cpu(thread_cpu_t *out) {
  int tid = watchdog_tid();
  return tid != 0 && read_thread_cpu(tid, out);
}
#endif

/* The floor for the watchdog thread: a thread of this program that only
   waits 50 ms (sem_clockwait, CLOCK_MONOTONIC, what the watchdog's tick
   does) in a loop. Any watchdog that looks at the loop every 50 ms pays at
   least its wakeups. */
typedef struct ticker {
  pthread_t thread;
  sem_t stop_sem;
  atomic_int stop, tid;
} ticker_t;

static void *ticker_main(void *arg) {
  ticker_t *t = arg;
  atomic_store(&t->tid, (int)gettid());
  while (!atomic_load(&t->stop)) {
    uint64_t d = now_ns() + 50 * MS;
    struct timespec ts = {(time_t)(d / 1000000000u), (long)(d % 1000000000u)};
    sem_clockwait(&t->stop_sem, CLOCK_MONOTONIC, &ts);
  }
  return NULL;
}

static void ticker_start(ticker_t *t) {
  atomic_store(&t->stop, 0);
  atomic_store(&t->tid, 0);
  if (sem_init(&t->stop_sem, 0, 0) != 0 ||
      pthread_create(&t->thread, NULL, ticker_main, t) != 0) {
    perror("bench_lag: ticker");
    exit(1);
  }
}

/* The ticker's CPU time so far. */
static bool ticker_read(ticker_t *t, thread_cpu_t *out) {
  while (atomic_load(&t->tid) == 0)
    sched_yield();
  return read_thread_cpu(atomic_load(&t->tid), out);
}

/* Stops the ticker; *out: its CPU time. */
static bool ticker_stop(ticker_t *t, thread_cpu_t *out) {
  bool ok = ticker_read(t, out);
  atomic_store(&t->stop, 1);
  sem_post(&t->stop_sem);
  pthread_join(t->thread, NULL);
  sem_destroy(&t->stop_sem);
  return ok;
}

/* ---- Load: one busy-loop child process per core ---------------------------
 */

#define MAX_HOGS 256
static pid_t g_hogs[MAX_HOGS];
static int g_nhogs;

/* Kills and reaps the busy children (idempotent: also at exit). */
static void hogs_stop(void) {
  for (int i = 0; i < g_nhogs; i++)
    kill(g_hogs[i], SIGKILL);
  for (int i = 0; i < g_nhogs; i++)
    while (waitpid(g_hogs[i], NULL, 0) < 0 && errno == EINTR)
      ;
  g_nhogs = 0;
}

static void on_fatal_signal(int sig) {
  for (int i = 0; i < g_nhogs; i++)
    kill(g_hogs[i], SIGKILL);
  for (int i = 0; i < g_nhogs; i++) /* kill and waitpid: async-signal-safe */
    while (waitpid(g_hogs[i], NULL, 0) < 0 && errno == EINTR)
      ;
  signal(sig, SIG_DFL);
  raise(sig);
}

/* One plain process per online core (default priority, no affinity), each
   spinning until killed. They die with this process too (PDEATHSIG), so an
   interrupted run leaves none behind. Returns how many run. */
static int hogs_start(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1)
    n = 1;
  if (n > MAX_HOGS)
    n = MAX_HOGS;
  pid_t parent = getpid();
  fflush(stdout);
  fflush(stderr);
  for (long i = 0; i < n; i++) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("bench_lag: fork (load)");
      hogs_stop();
      exit(1);
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent)
        _exit(0);
      volatile uint64_t x = 1;
      for (;;)
        x = x * 6364136223846793005u + 1;
    }
    g_hogs[g_nhogs++] = pid;
  }
  return g_nhogs;
}

/* ---- 2. Detection latency and reported duration ---------------------------
 */

static const char *const k_kind_names[K_KINDS] = {"compute", "mutex"};
static const unsigned k_thresholds[N_THRESHOLDS] = {300, 1000, 5000};
#define MAX_REC 512

/* One lag the bench made. The main thread fills the first part; the
   watchdog's callback the second. */
typedef struct lag_rec {
  int kind;
  unsigned threshold_ms;
  _Atomic int64_t start_unix_ms; /* just before busy (wall clock) */
  uint64_t t_busy, t_idle;       /* CLOCK_MONOTONIC, on the main thread */
  thread_cpu_t wd_probe;         /* the watchdog's schedstat ... */
  thread_cpu_t main_probe;       /* and the main thread's ... */
  long long others_probe;        /* and the holder's + probe's wait_ns */
  uint64_t t_probe;              /* ... read then, just before the deadline */
  atomic_bool probe_done;
  _Atomic uint64_t first_ns; /* first write of its report, 0: none */
  long long name_off_ms;     /* its file name's start - start_unix_ms */
  thread_cpu_t wd_first;     /* the watchdog's schedstat then */
  thread_cpu_t main_first;   /* the main thread's */
  long long others_first;    /* the holder's + probe's wait_ns */
  _Atomic uint64_t final_ns; /* its final write, 0: none */
  char final_path[PATH_MAX]; /* written before final_ns is set */
  int64_t duration_ms;       /* parsed from the final file, -1: none */
} lag_rec_t;

static lag_rec_t g_rec[MAX_REC];
static atomic_int g_nrec;
static atomic_int g_cb_lag_writes, g_cb_other, g_cb_unmatched;

/* The report file name's start (unix ms) and kind. */
static bool parse_report_name(const char *path, long long *start_ms,
                              bool *is_lag) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  char *end;
  *start_ms = strtoll(base, &end, 10);
  if (end == base)
    return false;
  *is_lag = strcmp(end, "-lag.json") == 0 || strcmp(end, "-hang.json") == 0;
  return true;
}

/* The bench's other threads that a whole-process dump samples: the
   mutex holder and the probe (part 2). Their run-queue wait, summed. */
static _Atomic int g_holder_tid, g_probe_tid;

static long long others_wait_ns(void) {
  long long sum = 0;
  int tids[2] = {atomic_load(&g_holder_tid), atomic_load(&g_probe_tid)};
  for (int i = 0; i < 2; i++) {
    thread_cpu_t c;
    if (tids[i] && read_thread_cpu(tids[i], &c))
      sum += c.wait_ns;
  }
  return sum;
}

/* on_report_write: the first write of a lag's report is its detection;
   final == true its last. A report is matched to its lag by the busy start
   in its file name (the lags are >= 450 ms apart; a report's start is
   the watchdog's reading of the same busy call). */
static void on_write(const char *path, bool final, void *ctx) {
  (void)ctx;
  uint64_t t = now_ns();
  long long start_ms;
  bool is_lag;
  if (!parse_report_name(path, &start_ms, &is_lag) || !is_lag) {
    atomic_fetch_add(&g_cb_other, 1);
    return;
  }
  atomic_fetch_add(&g_cb_lag_writes, 1);
  /* The latest lag that began before the name's start (+ 50 ms of clock
     slack): the name's start can be late (see name_off_ms), never early,
     and the next lag begins only after this one's final write. */
  int n = atomic_load(&g_nrec), best = -1;
  for (int i = n - 1; i >= 0 && best < 0; i--)
    if (atomic_load(&g_rec[i].start_unix_ms) <= start_ms + 50)
      best = i;
  if (best < 0) {
    atomic_fetch_add(&g_cb_unmatched, 1);
    return;
  }
  lag_rec_t *r = &g_rec[best];
  if (atomic_load(&r->first_ns) == 0) {
    r->name_off_ms = start_ms - atomic_load(&r->start_unix_ms);
    int tid = (int)gettid(); /* this is the watchdog thread */
    read_thread_cpu(tid, &r->wd_first);
    read_thread_cpu((int)getpid(), &r->main_first);
    r->others_first = others_wait_ns();
    atomic_store(&r->first_ns, t);
  }
  if (final && atomic_load(&r->final_ns) == 0) {
    snprintf(r->final_path, sizeof r->final_path, "%s", path);
    atomic_store(&r->final_ns, t);
  }
}

/* The report's duration_ms, or -1. A report is one JSON object and
   report_json.c writes "duration_ms" once, at its top level; the key is
   looked for as "duration_ms": (a quote inside a JSON string is escaped,
   so that text can only be a key) and must occur exactly once. */
static int64_t report_duration_ms(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (!buf)
      break;
    if (len + 1 >= cap) {
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t r = fread(buf + len, 1, cap - 1 - len, f);
    if (r == 0)
      break;
    len += r;
  }
  fclose(f);
  if (!buf)
    return -1;
  buf[len] = 0;
  static const char key[] = "\"duration_ms\":";
  int64_t v = -1;
  char *a = strstr(buf, key);
  if (a && !strstr(a + 1, key)) {
    a += sizeof key - 1;
    while (*a == ' ' || *a == '\t' || *a == '\n' || *a == '\r')
      a++;
    if (*a >= '0' && *a <= '9')
      v = strtoll(a, NULL, 10);
  }
  free(buf);
  return v;
}

/* The lag's busy work, at the bottom of a recursion `levels` deep: the
   watchdog anneals (counts without reporting) a lag whose app call path
   is the previous lag's, so consecutive lags get different depths. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static void spin_until(uint64_t end) {
  uint64_t x = 88172645463325252u;
  while (now_ns() < end) {
    for (int i = 0; i < 1000; i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
    }
  }
  g_sink = x;
}

__attribute__((noinline)) static void descend(int levels, int kind,
                                              uint64_t end) {
  if (levels > 1) {
    descend(levels - 1, kind, end);
  } else if (kind == K_COMPUTE) {
    spin_until(end);
  } else {
    pthread_mutex_lock(&g_lock); /* held by the holder until `end` */
    pthread_mutex_unlock(&g_lock);
  }
  __asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays */
}

/* The holder: takes g_lock when asked and keeps it until a deadline. It
   sleeps with an absolute deadline and retries on EINTR: the whole-process
   dump signals it, and the lag must not end early because of that. */
static sem_t g_hold_go, g_hold_held;
static _Atomic uint64_t g_hold_until; /* 0: quit */

static void *holder_main(void *arg) {
  (void)arg;
  atomic_store(&g_holder_tid, (int)gettid());
  for (;;) {
    while (sem_wait(&g_hold_go) != 0 && errno == EINTR)
      ;
    uint64_t until = atomic_load(&g_hold_until);
    if (until == 0)
      return NULL;
    pthread_mutex_lock(&g_lock);
    sem_post(&g_hold_held);
    while (sem_wait(&g_hold_go) != 0 && errno == EINTR)
      ; /* the main thread sets the deadline once the lock is held */
    until = atomic_load(&g_hold_until);
    struct timespec ts = {(time_t)(until / 1000000000u),
                          (long)(until % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
      ;
    pthread_mutex_unlock(&g_lock);
  }
}

/* The probe: reads the watchdog thread's schedstat PROBE_EARLY before a
   lag's detection deadline, so that what the watchdog did from then to
   its first write (run on a CPU, wait on a run queue, or neither:
   blocked or asleep) can be told apart. Its own thread, asleep until
   then: the main thread is busy (or blocked) at that moment. It reads a
   little early so as not to wake at the watchdog's own instant. */
#define PROBE_EARLY (2 * MS)
static sem_t g_probe_go;
static _Atomic uint64_t g_probe_at; /* 0: quit */
static _Atomic int g_probe_wd;      /* the watchdog's tid */
static lag_rec_t *_Atomic g_probe_rec;

static void *probe_main(void *arg) {
  (void)arg;
  atomic_store(&g_probe_tid, (int)gettid());
  for (;;) {
    while (sem_wait(&g_probe_go) != 0 && errno == EINTR)
      ;
    uint64_t at = atomic_load(&g_probe_at);
    if (at == 0)
      return NULL;
    struct timespec ts = {(time_t)(at / 1000000000u), (long)(at % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
      ;
    lag_rec_t *r = atomic_load(&g_probe_rec);
    int wd = atomic_load(&g_probe_wd);
    if (wd && read_thread_cpu(wd, &r->wd_probe) &&
        read_thread_cpu((int)getpid(), &r->main_probe)) {
      r->others_probe = others_wait_ns();
      r->t_probe = now_ns();
      atomic_store(&r->probe_done, true);
    }
  }
}

/* Per (threshold, kind): the figures of one load variant. */
typedef struct det_row {
  unsigned threshold_ms;
  int kind, lags, missing, no_duration;
  double lat_p50, lat_p99, lat_max; /* ms */
  double err_p50, err_p99, err_max; /* |error| in % */
  double busy_min, busy_max;        /* true busy, ms */
  bool lat_ok, err_ok;
} det_row_t;

typedef struct variant {
  const char *name;
  int hogs;
  det_row_t rows[N_THRESHOLDS * K_KINDS];
  int nrows;
  double cpu_sampling, cpu_fps, floor_sampling, floor_fps; /* % of a core */
  double wakes_sampling, wakes_fps;
  double fwakes_sampling, fwakes_fps; /* the floor's */
  double schedstat_us;       /* one open + read + close of a schedstat file */
  double schedstat_pread_us; /* one pread of it, kept open */
  int reports_sampling, reports_fps;
  bool cpu_ok;
} variant_t;

static double quantile_d(double *v, int n, double p) {
  if (n <= 0)
    return 0;
  uint64_t *u = malloc(sizeof(uint64_t) * (size_t)n);
  if (!u)
    die("malloc", SNAP_ENOMEM);
  for (int i = 0; i < n; i++)
    u[i] = (uint64_t)(v[i] * 1e6); /* v >= 0 */
  double q = (double)quantile(u, n, p) / 1e6;
  free(u);
  return q;
}

/* Runs one watchdog config (threshold) with counts[kind] lags of each kind,
   interleaved, each busy 1.5 x the threshold; fills rows. */
static void detect_threshold(unsigned threshold_ms, const int counts[K_KINDS],
                             variant_t *v) {
  int order[MAX_REC], n = 0;
  for (int round = 0; n < MAX_REC; round++) {
    bool any = false;
    for (int k = 0; k < K_KINDS && n < MAX_REC; k++)
      if (round < counts[k]) {
        order[n++] = k;
        any = true;
      }
    if (!any)
      break;
  }
  if (n == 0)
    return;
  snap_lag_config_t cfg;
  snap_lag_config_default(&cfg);
  cfg.report_dir = g_dir;
  cfg.threshold_ms = threshold_ms;
  cfg.max_reports_per_day = 100000;
  cfg.cpu_percent = 0; /* lags only: no "cpu" report's dump in the way */
  cfg.on_report_write = on_write;
  atomic_store(&g_nrec, 0);
  start_watchdog(&cfg);
  int wd = watchdog_tid();
  atomic_store(&g_probe_wd, wd);
  sleep_ns(200 * MS);

  uint64_t busy_ns = (uint64_t)threshold_ms * MS * 3 / 2;
  for (int i = 0; i < n; i++) {
    lag_rec_t *r = &g_rec[i];
    memset(r, 0, sizeof *r);
    r->kind = order[i];
    r->threshold_ms = threshold_ms;
    r->duration_ms = -1;
    if (r->kind == K_BLOCKED) {
      sem_post(&g_hold_go); /* take the lock */
      while (sem_wait(&g_hold_held) != 0 && errno == EINTR)
        ;
      atomic_store(&g_hold_until, now_ns() + busy_ns);
      sem_post(&g_hold_go); /* and keep it until then */
    }
    atomic_store(&g_probe_rec, r);
    atomic_store(&g_probe_at,
                 now_ns() + (uint64_t)threshold_ms * MS - PROBE_EARLY);
    sem_post(&g_probe_go);
    atomic_store(&r->start_unix_ms, unix_ms());
    atomic_store(&g_nrec, i + 1);
    r->t_busy = now_ns();
    snap_lag_loop_busy();
    /* blocked: the holder lets go at g_hold_until (set just above) */
    descend(1 + i % 3, r->kind, r->t_busy + busy_ns);
    r->t_idle = now_ns();
    snap_lag_loop_idle();
    /* Idle until the final write is in (at least 200 ms, at most 5 s). */
    uint64_t idle0 = now_ns();
    do
      sleep_ns(10 * MS);
    while (now_ns() - idle0 < 200 * MS ||
           (atomic_load(&r->final_ns) == 0 && now_ns() - idle0 < 5000 * MS));
  }
  snap_lag_stop();

  for (int k = 0; k < K_KINDS; k++) {
    double lat[MAX_REC], err[MAX_REC];
    int nl = 0, ne = 0, lags = 0, missing = 0, nodur = 0;
    double bmin = 1e18, bmax = 0;
    for (int i = 0; i < n; i++) {
      lag_rec_t *r = &g_rec[i];
      if (r->kind != k)
        continue;
      lags++;
      double busy = (double)(r->t_idle - r->t_busy) / 1e6;
      bmin = busy < bmin ? busy : bmin;
      bmax = busy > bmax ? busy : bmax;
      uint64_t first = atomic_load(&r->first_ns);
      if (!first) {
        missing++;
        continue;
      }
      lat[nl++] = (double)(first - r->t_busy) / 1e6;
      if (atomic_load(&r->final_ns))
        r->duration_ms = report_duration_ms(r->final_path);
      if (r->duration_ms < 0) {
        nodur++;
        continue;
      }
      double e = ((double)r->duration_ms - busy) / busy * 100.0;
      err[ne++] = e < 0 ? -e : e;
    }
    if (lags == 0)
      continue;
    det_row_t *row = &v->rows[v->nrows++];
    memset(row, 0, sizeof *row);
    row->threshold_ms = threshold_ms;
    row->kind = k;
    row->lags = lags;
    row->missing = missing;
    row->no_duration = nodur;
    row->busy_min = bmin;
    row->busy_max = bmax;
    row->lat_p50 = quantile_d(lat, nl, 0.5);
    row->lat_p99 = quantile_d(lat, nl, 0.99);
    row->lat_max = quantile_d(lat, nl, 1.0);
    row->err_p50 = quantile_d(err, ne, 0.5);
    row->err_p99 = quantile_d(err, ne, 0.99);
    row->err_max = quantile_d(err, ne, 1.0);
    row->lat_ok = missing == 0 && nl > 0 &&
                  row->lat_p99 <= (double)threshold_ms + GOAL_LATE_MS;
    row->err_ok = missing == 0 && nodur == 0 && ne > 0 &&
                  row->err_p99 <= GOAL_DURATION_ERR;
  }

  /* For reading: how late past the threshold, and what the watchdog
     thread did from the probe (PROBE_EARLY before the deadline) to its
     first write: ran (CPU), waited for a CPU (run-queue wait), or neither
     (blocked: I/O, fsync, a page fault, a sample it waited for; or
     asleep). The three latest, and the sum over every lag later than the
     goal. */
  int late[MAX_REC], nlate = 0;
  for (int i = 0; i < n; i++)
    if (atomic_load(&g_rec[i].first_ns))
      late[nlate++] = i;
  for (int a = 0; a < nlate; a++) /* sort by latency, descending */
    for (int b = a + 1; b < nlate; b++)
      if (g_rec[late[b]].first_ns - g_rec[late[b]].t_busy >
          g_rec[late[a]].first_ns - g_rec[late[a]].t_busy) {
        int t = late[a];
        late[a] = late[b];
        late[b] = t;
      }
  printf("   threshold %u ms, %d lags: latest detections\n", threshold_ms, n);
  double sum_late = 0, sum_wait = 0, sum_cpu = 0, sum_other = 0, sum_mwait = 0,
         sum_owait = 0;
  int over = 0, over_probed = 0;
  for (int a = 0; a < nlate; a++) {
    lag_rec_t *r = &g_rec[late[a]];
    double late_ms =
        (double)(r->first_ns - r->t_busy) / 1e6 - (double)threshold_ms;
    bool probed = atomic_load(&r->probe_done) && r->wd_first.ns >= 0 &&
                  r->t_probe < r->first_ns;
    double span = 0, wait = 0, cpu = 0, other = 0, probe_at = 0, mwait = 0,
           owait = 0;
    if (probed) {
      span = (double)(r->first_ns - r->t_probe) / 1e6;
      wait = (double)(r->wd_first.wait_ns - r->wd_probe.wait_ns) / 1e6;
      cpu = (double)(r->wd_first.ns - r->wd_probe.ns) / 1e6;
      other = span - wait - cpu;
      mwait = (double)(r->main_first.wait_ns - r->main_probe.wait_ns) / 1e6;
      owait = (double)(r->others_first - r->others_probe) / 1e6;
      probe_at = (double)(r->t_probe - r->t_busy) / 1e6 - (double)threshold_ms;
    }
    if (late_ms > GOAL_LATE_MS) {
      over++;
      if (probed) {
        over_probed++;
        sum_late += span;
        sum_wait += wait;
        sum_cpu += cpu;
        sum_other += other;
        sum_mwait += mwait;
        sum_owait += owait;
      }
    }
    if (a >= 3)
      continue;
    if (probed)
      printf("     #%-3d %-7s late %+6.1f | probe at %+5.1f, then %6.1f ms: "
             "wait %5.1f, ran %4.1f, neither %5.1f | main %5.1f, others "
             "%5.1f\n",
             late[a], k_kind_names[r->kind], late_ms, probe_at, span, wait, cpu,
             other, mwait, owait);
    else
      printf("     #%-3d %-7s late %+7.1f ms | (no probe reading before the "
             "write)\n",
             late[a], k_kind_names[r->kind], late_ms);
  }
  if (over)
    printf("     %d lag(s) later than threshold + %.0f ms; over the %d probed, "
           "from probe to write\n     %.1f ms in all: waited for a CPU %.0f "
           "%%, ran %.0f %%, neither %.0f %%;\n     the main thread "
           "meanwhile waited for a CPU %.1f ms, the bench's other two "
           "threads %.1f ms\n",
           over, GOAL_LATE_MS, over_probed, sum_late,
           sum_late > 0 ? 100 * sum_wait / sum_late : 0,
           sum_late > 0 ? 100 * sum_cpu / sum_late : 0,
           sum_late > 0 ? 100 * sum_other / sum_late : 0, sum_mwait, sum_owait);
  /* The report's start (its file name, start_unix_ms) against the busy
     start read on the main thread (both wall clock): the watchdog derives
     it when it opens the report. */
  double off[MAX_REC];
  int noff = 0;
  for (int i = 0; i < n; i++)
    if (atomic_load(&g_rec[i].first_ns))
      off[noff++] = (double)g_rec[i].name_off_ms;
  if (noff) {
    double mn = off[0];
    for (int i = 1; i < noff; i++)
      mn = off[i] < mn ? off[i] : mn;
    if (mn < 0)
      mn = -mn;
    for (int i = 0; i < noff; i++)
      off[i] += mn; /* quantile_d takes values >= 0 */
    printf("     report start_unix_ms - busy start (wall clock, ms): min "
           "%+.0f, p50 %+.0f, max %+.0f\n",
           quantile_d(off, noff, 0.0) - mn, quantile_d(off, noff, 0.5) - mn,
           quantile_d(off, noff, 1.0) - mn);
  }
  for (int i = 0; i < n; i++)
    if (!atomic_load(&g_rec[i].first_ns))
      printf("     #%-3d %-7s NO report (busy %.1f ms)\n", i,
             k_kind_names[g_rec[i].kind],
             (double)(g_rec[i].t_idle - g_rec[i].t_busy) / 1e6);
}

/* What writing a small report costs the disk under report_dir, the way
   docs/lag.md says reports are written: a 4 KiB temporary file, fsync,
   rename, fsync of the directory. Median and max of 20, in ms: a part of
   a detection's latency that is neither CPU nor run-queue wait. */
static void fsync_floor(double *med, double *mx) {
  uint64_t v[20];
  char tmp[PATH_MAX + 32], dst[PATH_MAX + 32], buf[4096];
  memset(buf, 'x', sizeof buf);
  snprintf(tmp, sizeof tmp, "%s/.floor.tmp", g_dir);
  snprintf(dst, sizeof dst, "%s/floor.bin", g_dir);
  int dfd = open(g_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  for (int i = 0; i < 20; i++) {
    uint64_t t0 = now_ns();
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      g_sink += (uint64_t)write(fd, buf, sizeof buf);
      fsync(fd);
      close(fd);
      rename(tmp, dst);
      if (dfd >= 0)
        fsync(dfd);
    }
    v[i] = now_ns() - t0;
  }
  if (dfd >= 0)
    close(dfd);
  unlink(dst);
  *med = (double)quantile(v, 20, 0.5) / 1e6;
  *mx = (double)quantile(v, 20, 1.0) / 1e6;
}

static void part_detect(const params_t *p, variant_t *v) {
  pthread_t holder, probe;
  atomic_store(&g_hold_until, 1);
  atomic_store(&g_probe_at, 1);
  if (sem_init(&g_hold_go, 0, 0) != 0 || sem_init(&g_hold_held, 0, 0) != 0 ||
      sem_init(&g_probe_go, 0, 0) != 0 ||
      pthread_create(&holder, NULL, holder_main, NULL) != 0 ||
      pthread_create(&probe, NULL, probe_main, NULL) != 0) {
    perror("bench_lag: holder");
    exit(1);
  }
  printf("2. Detection latency and reported duration [%s]\n", v->name);
  printf("   each lag busy 1.5 x the threshold: compute = the main thread "
         "spins; mutex = it waits\n   in pthread_mutex_lock on a mutex "
         "another thread holds. latency = first\n   on_report_write - busy "
         "start; duration error = final report's duration_ms vs the\n   "
         "busy time measured on the main thread (busy -> idle).\n"
         "   Per threshold, its latest detections: late = latency - "
         "threshold; from the probe\n   (%.0f ms before the deadline) to "
         "the first write, the watchdog thread: waited for a\n   CPU, ran, "
         "neither (blocked or asleep); then the run-queue wait meanwhile of "
         "the main\n   thread and of the bench's two other threads (holder, "
         "probe): sampling a thread, alone\n   or in the dump, waits until "
         "it runs its signal handler. In ms; probe at = when the\n   probe "
         "read, from the deadline\n",
         (double)PROBE_EARLY / 1e6);
  double fs_med, fs_max;
  fsync_floor(&fs_med, &fs_max);
  printf("   a 4 KiB write + fsync + rename + directory fsync in report_dir: "
         "median %.2f ms, max %.2f ms (of 20)\n",
         fs_med, fs_max);
  v->nrows = 0;
  for (int t = 0; t < N_THRESHOLDS; t++)
    detect_threshold(k_thresholds[t], p->lags[v->hogs > 0][t], v);
  atomic_store(&g_hold_until, 0);
  sem_post(&g_hold_go);
  pthread_join(holder, NULL);
  atomic_store(&g_probe_at, 0);
  sem_post(&g_probe_go);
  pthread_join(probe, NULL);
  sem_destroy(&g_probe_go);
  sem_destroy(&g_hold_go);
  sem_destroy(&g_hold_held);

  printf("\n   %-9s %-7s %4s %4s %8s | %8s %8s %8s %6s | %6s %6s %6s %5s\n",
         "threshold", "kind", "lags", "miss", "busy ms", "lat p50", "p99",
         "max", "goal", "err%50", "p99", "max", "goal");
  for (int i = 0; i < v->nrows; i++) {
    const det_row_t *r = &v->rows[i];
    char th[16];
    snprintf(th, sizeof th, "%u ms", r->threshold_ms);
    printf("   %-9s %-7s %4d %4d %8.0f | %8.1f %8.1f %8.1f %6s | %6.2f %6.2f "
           "%6.2f %5s\n",
           th, k_kind_names[r->kind], r->lags, r->missing, r->busy_max,
           r->lat_p50, r->lat_p99, r->lat_max, r->lat_ok ? "met" : "MISS",
           r->err_p50, r->err_p99, r->err_max, r->err_ok ? "met" : "MISS");
    if (r->no_duration)
      printf("   %-9s %-7s %d final report(s) without a readable "
             "duration_ms\n",
             "", "", r->no_duration);
  }
  printf("   goals: detection <= threshold + %.0f ms at p99, |duration error| "
         "<= %.0f %% at p99,\n   no lag without a report. With fewer than 100 "
         "lags in a row, p99 is its max.\n",
         GOAL_LATE_MS, GOAL_DURATION_ERR);
  printf("   callbacks: %d lag/hang writes, %d others, %d not matched to a "
         "lag\n\n",
         atomic_load(&g_cb_lag_writes), atomic_load(&g_cb_other),
         atomic_load(&g_cb_unmatched));
  atomic_store(&g_cb_lag_writes, 0);
  atomic_store(&g_cb_other, 0);
  atomic_store(&g_cb_unmatched, 0);
}

/* ---- 3. The watchdog's own CPU --------------------------------------------
 */

static atomic_int g_reports_seen;

static void on_report_count(const char *path, void *ctx) {
  (void)path;
  (void)ctx;
  atomic_fetch_add(&g_reports_seen, 1);
}

/* Runs a loop for `ms` with the watchdog on (threshold 250 ms, point
   sampling every 50 ms) and a bare 50 ms ticker beside it; *wd_pct and
   *tk_pct: their CPU over the loop's wall time, in % of one core. fps:
   a 60 fps loop (1 ms busy every 16.7 ms, by an absolute schedule); else
   40 ms busy, 10 ms idle. */
static void cpu_loop(bool fps, unsigned ms, double *wd_pct, double *tk_pct,
                     double *wakes, double *tk_wakes, int *reports) {
  snap_lag_config_t cfg;
  snap_lag_config_default(&cfg);
  cfg.report_dir = g_dir;
  cfg.threshold_ms = 250;
  cfg.sample_interval_ms = 50;
  cfg.cpu_percent = 0; /* the 40/10 loop is 80 % busy: no "cpu" report */
  cfg.on_report = on_report_count;
  atomic_store(&g_reports_seen, 0);
  start_watchdog(&cfg);
  int wd = watchdog_tid();
  ticker_t tk;
  ticker_start(&tk);
  thread_cpu_t w0 = {-1, -1, -1, -1}, w1 = w0, k0 = w0, k1 = w0;
  uint64_t period = fps ? 16666667u : 50 * MS;
  uint64_t busy = fps ? 1 * MS : 40 * MS;
  uint64_t t0 = 0, next = now_ns();
  /* 300 ms of warm-up, then the measured stretch. */
  uint64_t warm_end = next + 300 * MS, end = warm_end + (uint64_t)ms * MS;
  bool measuring = false;
  for (;;) {
    uint64_t t = now_ns();
    if (!measuring && t >= warm_end) {
      measuring = true;
      t0 = now_ns();
      if (wd)
        read_thread_cpu(wd, &w0);
      ticker_read(&tk, &k0);
    }
    if (t >= end)
      break;
    snap_lag_loop_busy();
    spin_until(t + busy);
    snap_lag_loop_idle();
    next += period;
    if (next < now_ns()) /* fell behind (a loaded box): no catch-up burst */
      next = now_ns();
    struct timespec ts = {(time_t)(next / 1000000000u),
                          (long)(next % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
      ;
  }
  uint64_t wall = now_ns() - t0;
  bool ok = wd && read_thread_cpu(wd, &w1) && w0.ns >= 0;
  bool tok = ticker_stop(&tk, &k1) && k0.ns >= 0;
  snap_lag_stop();
  *wd_pct = ok ? 100.0 * (double)(w1.ns - w0.ns) / (double)wall : -1;
  *wakes = ok ? (double)(w1.runs - w0.runs) / ((double)wall / 1e9) : -1;
  *tk_pct = tok ? 100.0 * (double)(k1.ns - k0.ns) / (double)wall : -1;
  *tk_wakes = tok ? (double)(k1.runs - k0.runs) / ((double)wall / 1e9) : -1;
  *reports = atomic_load(&g_reports_seen);
}

/* What one read of this thread's schedstat file costs, median of 200, in
   us: open + read + close (what the watchdog does on every wake, to tell
   a starved wake from a stopped process), and, for comparison, pread on a
   descriptor kept open (procfs regenerates the text at each read from
   offset 0). */
static void schedstat_read_us(double *open_us, double *pread_us) {
  uint64_t v[200];
  char buf[128];
  const char *path = "/proc/thread-self/schedstat";
  for (int i = 0; i < 200; i++) {
    uint64_t t0 = now_ns();
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      g_sink += (uint64_t)read(fd, buf, sizeof buf);
      close(fd);
    }
    v[i] = now_ns() - t0;
  }
  *open_us = (double)quantile(v, 200, 0.5) / 1e3;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  *pread_us = -1;
  if (fd < 0)
    return;
  for (int i = 0; i < 200; i++) {
    uint64_t t0 = now_ns();
    g_sink += (uint64_t)pread(fd, buf, sizeof buf, 0);
    v[i] = now_ns() - t0;
  }
  close(fd);
  *pread_us = (double)quantile(v, 200, 0.5) / 1e3;
}

static void part_cpu(const params_t *p, variant_t *v) {
  printf("3. The watchdog thread's CPU [%s]: its schedstat run time over "
         "%.1f s of loop (after\n   300 ms of warm-up); threshold 250 ms, "
         "point sampling every 50 ms; a bare 50 ms ticker\n   thread runs "
         "beside it (the floor: wakeups alone)\n\n",
         v->name, (double)p->cpu_ms / 1e3);
  cpu_loop(false, p->cpu_ms, &v->cpu_sampling, &v->floor_sampling,
           &v->wakes_sampling, &v->fwakes_sampling, &v->reports_sampling);
  cpu_loop(true, p->cpu_ms, &v->cpu_fps, &v->floor_fps, &v->wakes_fps,
           &v->fwakes_fps, &v->reports_fps);
  schedstat_read_us(&v->schedstat_us, &v->schedstat_pread_us);
  printf("   %-36s %9s %7s %7s | %9s %7s %7s | %7s %5s\n", "loop", "watchdog",
         "wakes/s", "us/wake", "floor", "wakes/s", "us/wake", "reports",
         "goal");
  bool g1 = v->cpu_sampling >= 0 && v->cpu_sampling <= GOAL_CPU_BUSY;
  bool g2 = v->cpu_fps >= 0 && v->cpu_fps <= GOAL_CPU_IDLE;
  const struct {
    const char *name;
    double pct, wakes, fpct, fwakes;
    int reports;
    bool ok;
  } rows[2] = {{"40 ms busy / 10 ms idle (sampling)", v->cpu_sampling,
                v->wakes_sampling, v->floor_sampling, v->fwakes_sampling,
                v->reports_sampling, g1},
               {"60 fps, 1 ms busy per 16.7 ms frame", v->cpu_fps, v->wakes_fps,
                v->floor_fps, v->fwakes_fps, v->reports_fps, g2}};
  for (int i = 0; i < 2; i++)
    printf("   %-36s %8.3f%% %7.1f %7.1f | %8.3f%% %7.1f %7.1f | %7d %5s\n",
           rows[i].name, rows[i].pct, rows[i].wakes,
           rows[i].wakes > 0 ? rows[i].pct / 100.0 * 1e6 / rows[i].wakes : 0.0,
           rows[i].fpct, rows[i].fwakes,
           rows[i].fwakes > 0 ? rows[i].fpct / 100.0 * 1e6 / rows[i].fwakes
                              : 0.0,
           rows[i].reports, rows[i].ok ? "met" : "MISS");
  printf("   /proc/thread-self/schedstat, median of 200: open + read + close "
         "(the watchdog reads\n   its own so on every wake) %.1f us; pread "
         "on a descriptor kept open %.1f us\n",
         v->schedstat_us, v->schedstat_pread_us);
  printf("   goals: <= %.1f %% of one core while busy with 50 ms sampling, "
         "<= %.1f %% on a 60 fps\n   idle loop (reference: WeChat Matrix "
         "reports 3 %% for its own watchdog)\n\n",
         GOAL_CPU_BUSY, GOAL_CPU_IDLE);
  v->cpu_ok = g1 && g2;
}

/* ---- 4. Overhead on a GLib loop -------------------------------------------
 */

#if HAVE_GLIB
/* The app's computation: n xorshift steps. Its result goes to a volatile,
   inside: a function without side effects could be moved across the clock
   reads that time it. */
__attribute__((noinline)) static void work(unsigned long n) {
  uint64_t x = 0x9E3779B97F4A7C15u;
  for (unsigned long i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  g_sink = x;
}

/* Iterations of work() that take target_ns (best of 5 timings). */
static unsigned long calibrate_work(uint64_t target_ns) {
  unsigned long n = 100000;
  uint64_t best = UINT64_MAX;
  for (;;) {
    uint64_t t0 = now_ns();
    work(n);
    uint64_t t = now_ns() - t0;
    if (t >= target_ns / 4)
      break;
    n *= 2;
  }
  for (int i = 0; i < 5; i++) {
    uint64_t t0 = now_ns();
    work(n);
    uint64_t t = now_ns() - t0;
    if (t < best)
      best = t;
  }
  double per = (double)best / (double)n;
  return (unsigned long)((double)target_ns / per);
}

typedef struct child_state {
  unsigned long iters, ticks;
  uint64_t work_ns;
  GMainLoop *loop;
} child_state_t;

static gboolean on_tick(gpointer data) {
  child_state_t *s = data;
  uint64_t t0 = now_ns();
  work(s->iters);
  s->work_ns += now_ns() - t0;
  s->ticks++;
  return G_SOURCE_CONTINUE;
}

static gboolean on_end(gpointer data) {
  g_main_loop_quit(((child_state_t *)data)->loop);
  return G_SOURCE_REMOVE;
}

/* The child: one phase of the GLib app. Prints one line for the parent:
   ticks work_ns loop_ns watchdog_found watchdog_ns watchdog_runs
   watchdog_ticks reports start_rc attach_rc. */
static int glib_child(bool on, unsigned secs, unsigned long iters,
                      const char *dir) {
  int start_rc = 0, attach_rc = 0;
  if (on) {
    snap_lag_config_t cfg;
    snap_lag_config_default(&cfg);
    cfg.report_dir = dir;
    cfg.on_report = on_report_count;
    start_rc = snap_lag_start(&cfg);
    attach_rc = snap_lag_attach_glib(NULL);
  }
  child_state_t s = {iters, 0, 0, g_main_loop_new(NULL, FALSE)};
  g_timeout_add(5, on_tick, &s);
  g_timeout_add(secs * 1000u, on_end, &s);
  uint64_t t0 = now_ns();
  g_main_loop_run(s.loop);
  uint64_t loop_ns = now_ns() - t0;
  thread_cpu_t wd = {-1, -1, -1, -1};
  bool found = on && watchdog_cpu(&wd);
  if (on)
    snap_lag_stop();
  g_main_loop_unref(s.loop);
  printf("%lu %llu %llu %d %lld %lld %ld %d %d %d\n", s.ticks,
         (unsigned long long)s.work_ns, (unsigned long long)loop_ns, found,
         wd.ns, wd.runs, wd.ticks, atomic_load(&g_reports_seen), start_rc,
         attach_rc);
  return 0;
}

typedef struct phase {
  bool on;
  unsigned long ticks;
  uint64_t work_ns, loop_ns, wall_ns, cpu_ns;
  int found, reports, start_rc, attach_rc;
  thread_cpu_t wd;     /* on: the watchdog thread */
  thread_cpu_t ticker; /* off: the bare ticker, in this process */
  bool ticker_ok;
} phase_t;

static void run_phase(const char *self, phase_t *ph, unsigned secs,
                      unsigned long iters) {
  int fds[2];
  if (pipe(fds) != 0) {
    perror("bench_lag: pipe");
    exit(1);
  }
  char a_secs[32], a_iters[32];
  snprintf(a_secs, sizeof a_secs, "%u", secs);
  snprintf(a_iters, sizeof a_iters, "%lu", iters);
  fflush(stdout);
  ticker_t ticker;
  if (!ph->on)
    ticker_start(&ticker);
  uint64_t t0 = now_ns();
  pid_t pid = fork();
  if (pid < 0) {
    perror("bench_lag: fork");
    exit(1);
  }
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl(self, self, GLIB_CHILD_FLAG, ph->on ? "on" : "off", a_secs, a_iters,
          g_dir, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  char buf[512];
  size_t len = 0;
  for (;;) {
    ssize_t r = read(fds[0], buf + len, sizeof buf - 1 - len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    len += (size_t)r;
    if (len == sizeof buf - 1)
      break;
  }
  buf[len] = 0;
  close(fds[0]);
  int status;
  struct rusage ru;
  while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
    ;
  ph->wall_ns = now_ns() - t0;
  if (!ph->on)
    ph->ticker_ok = ticker_stop(&ticker, &ph->ticker);
  ph->cpu_ns =
      ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) *
          1000000000u +
      ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
  unsigned long long work_ns, loop_ns;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      sscanf(buf, "%lu %llu %llu %d %lld %lld %ld %d %d %d", &ph->ticks,
             &work_ns, &loop_ns, &ph->found, &ph->wd.ns, &ph->wd.runs,
             &ph->wd.ticks, &ph->reports, &ph->start_rc,
             &ph->attach_rc) != 10) {
    fprintf(stderr, "bench_lag: the %s phase failed (status %d): %s\n",
            ph->on ? "on" : "off", status, buf);
    exit(1);
  }
  ph->work_ns = work_ns;
  ph->loop_ns = loop_ns;
}
#endif

static void part4(const params_t *p) {
  printf("4. Overhead [quiet]: a GLib loop, a 5 ms timeout (200 Hz) doing ~2 "
         "ms of "
         "work, watchdog on vs off\n");
#if !HAVE_GLIB
  (void)p;
  printf("   n/a (no GLib)\n");
#else
  char self[PATH_MAX];
  ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
  if (sl <= 0) {
    perror("bench_lag: readlink /proc/self/exe");
    exit(1);
  }
  self[sl] = 0;
  unsigned long iters = calibrate_work(2 * MS);
  phase_t ph[16];
  int n = p->phases < 16 ? p->phases : 16;
  for (int i = 0; i < n; i++) {
    memset(&ph[i], 0, sizeof ph[i]);
    ph[i].on = i % 2 == 1;
    run_phase(self, &ph[i], p->phase_secs, iters);
  }
  printf("   (%d child processes of %u s, alternating off and on; work per "
         "tick: %lu iterations,\n   calibrated to 2.00 ms; on = defaults "
         "(sampling every 50 ms, threshold 250 ms),\n   "
         "snap_lag_attach_glib(NULL); off = no stacksnap call)\n\n",
         n, p->phase_secs, iters);
  printf("   %-5s %-8s %7s %8s %8s %8s %8s %10s\n", "phase", "watchdog",
         "ticks", "ticks/s", "work ms", "wall s", "CPU s", "CPU %core");
  uint64_t cpu[2] = {0, 0}, wall[2] = {0, 0}, loop_on = 0, wall_off = 0;
  thread_cpu_t wd = {0, 0, 0, 0}, tk = {0, 0, 0, 0};
  int reports = 0;
  bool wd_ok = true, tk_ok = true, started = true;
  for (int i = 0; i < n; i++) {
    const phase_t *q = &ph[i];
    printf("   %-5d %-8s %7lu %8.1f %8.3f %8.2f %8.3f %9.2f%%\n", i + 1,
           q->on ? "on" : "off", q->ticks,
           (double)q->ticks / ((double)q->loop_ns / 1e9),
           q->ticks ? (double)q->work_ns / (double)q->ticks / 1e6 : 0.0,
           (double)q->wall_ns / 1e9, (double)q->cpu_ns / 1e9,
           100.0 * (double)q->cpu_ns / (double)q->wall_ns);
    cpu[q->on] += q->cpu_ns;
    wall[q->on] += q->wall_ns;
    if (q->on) {
      loop_on += q->loop_ns;
      reports += q->reports;
      if (!q->found || q->wd.ns < 0 || q->wd.runs < 0) {
        wd_ok = false;
      } else {
        wd.ns += q->wd.ns;
        wd.runs += q->wd.runs;
        wd.ticks += q->wd.ticks;
      }
      if (q->start_rc != SNAP_OK || q->attach_rc != SNAP_OK)
        started = false;
    } else {
      wall_off += q->wall_ns;
      if (!q->ticker_ok) {
        tk_ok = false;
      } else {
        tk.ns += q->ticker.ns;
        tk.runs += q->ticker.runs;
      }
    }
  }
  double share_off = 100.0 * (double)cpu[0] / (double)wall[0];
  double share_on = 100.0 * (double)cpu[1] / (double)wall[1];
  double extra = share_on - share_off;
  printf("\n   process CPU, on - off (the noisy total): %.3f%% - %.3f%% = "
         "%+.3f%% of one core\n\n",
         share_on, share_off, extra);
  printf("   %-38s %8s %10s %8s %8s\n", "thread (schedstat)", "CPU ms",
         "% of core", "wakes/s", "us/wake");
  double wd_share = -1;
  if (wd_ok) {
    double secs = (double)loop_on / 1e9;
    wd_share = 100.0 * (double)wd.ns / (double)loop_on;
    printf("   %-38s %8.2f %9.4f%% %8.1f %8.1f\n",
           "watchdog (stacksnap-lag), on phases", (double)wd.ns / 1e6, wd_share,
           (double)wd.runs / secs,
           wd.runs ? (double)wd.ns / (double)wd.runs / 1e3 : 0.0);
  } else {
    printf("   %-38s NOT found in /proc/self/task\n",
           "watchdog (stacksnap-lag)");
  }
  double tk_share = -1;
  if (tk_ok) {
    double secs = (double)wall_off / 1e9;
    tk_share = 100.0 * (double)tk.ns / (double)wall_off;
    printf("   %-38s %8.2f %9.4f%% %8.1f %8.1f\n",
           "bare 50 ms ticker, off phases (floor)", (double)tk.ns / 1e6,
           tk_share, (double)tk.runs / secs,
           tk.runs ? (double)tk.ns / (double)tk.runs / 1e3 : 0.0);
  }
  if (wd_ok && tk_ok && tk_share > 0)
    printf("   watchdog / ticker: %.2fx (stat utime+stime of the watchdog: "
           "%ld ticks of %ld ms)\n",
           wd_share / tk_share, wd.ticks, 1000 / sysconf(_SC_CLK_TCK));
  if (!started)
    printf("   WARNING: snap_lag_start or snap_lag_attach_glib failed in an "
           "\"on\" phase\n");
  printf("   reports written by the on phases: %d\n", reports);
  printf("   goal (watchdog thread <= %.1f %% of one core; Matrix reports "
         "3 %%): %s\n",
         GOAL_CPU_PERCENT,
         wd_ok && started && wd_share <= GOAL_CPU_PERCENT ? "met" : "NOT met");
  printf("   goal on the process delta (noisy): %s\n",
         started && extra <= GOAL_CPU_PERCENT ? "met" : "NOT met");
#endif
}

/* ---- main ------------------------------------------------------------------
 */

/* The machine's load average (1, 5, 15 min), as text: the box may be
   shared, and "quiet" means only that nothing of ours runs beside us. */
static void print_loadavg(const char *when) {
  char buf[128] = "?";
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (!fgets(buf, sizeof buf, f))
      snprintf(buf, sizeof buf, "?\n");
    fclose(f);
  }
  char *nl = strchr(buf, '\n');
  if (nl)
    *nl = 0;
  printf("   (/proc/loadavg %s: %s)\n", when, buf);
}

static void summary(const variant_t *v, int nv) {
  printf("Summary: figures beside their goals (issue 13)\n");
  for (int i = 0; i < nv; i++) {
    printf("  [%s]\n", v[i].name);
    for (int r = 0; r < v[i].nrows; r++) {
      const det_row_t *d = &v[i].rows[r];
      printf("   %5u ms %-7s (%2d lags%s): detection p99 %7.1f ms (goal <= "
             "%4.0f) %-4s  |duration err| p99 %5.2f %% (goal <= 2) %s\n",
             d->threshold_ms, k_kind_names[d->kind], d->lags,
             d->missing ? ", SOME UNREPORTED" : "", d->lat_p99,
             (double)d->threshold_ms + GOAL_LATE_MS, d->lat_ok ? "met" : "MISS",
             d->err_p99, d->err_ok ? "met" : "MISS");
    }
    printf("   watchdog CPU, 40/10 ms busy loop, 50 ms sampling: %.3f %% of a "
           "core (goal <= %.1f; Matrix 3 %%) %s\n",
           v[i].cpu_sampling, GOAL_CPU_BUSY,
           v[i].cpu_sampling >= 0 && v[i].cpu_sampling <= GOAL_CPU_BUSY
               ? "met"
               : "MISS");
    printf("   watchdog CPU, 60 fps idle loop: %.3f %% of a core (goal <= "
           "%.1f) %s\n",
           v[i].cpu_fps, GOAL_CPU_IDLE,
           v[i].cpu_fps >= 0 && v[i].cpu_fps <= GOAL_CPU_IDLE ? "met" : "MISS");
  }
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], GLIB_CHILD_FLAG) == 0) {
#if HAVE_GLIB
    if (argc != 6)
      return 2;
    return glib_child(strcmp(argv[2], "on") == 0,
                      (unsigned)strtoul(argv[3], NULL, 10),
                      strtoul(argv[4], NULL, 10), argv[5]);
#else
    return 2;
#endif
  }
  const params_t *p = &k_full;
  bool want[2] = {true, true}; /* quiet, saturated */
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) {
      p = &k_quick;
    } else if (strcmp(argv[i], "--load") == 0 && i + 1 < argc) {
      const char *l = argv[++i];
      want[0] = strcmp(l, "quiet") == 0 || strcmp(l, "both") == 0;
      want[1] = strcmp(l, "saturated") == 0 || strcmp(l, "both") == 0;
      if (!want[0] && !want[1]) {
        fprintf(stderr, "bench_lag: --load quiet|saturated|both\n");
        return 2;
      }
    } else {
      fprintf(stderr, "usage: %s [--quick] [--load quiet|saturated|both]\n",
              argv[0]);
      return 2;
    }
  }
  atexit(hogs_stop);
  signal(SIGINT, on_fatal_signal);
  signal(SIGTERM, on_fatal_signal);
  snprintf(g_dir, sizeof g_dir, "%s/bench_lag.XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(g_dir)) {
    perror("bench_lag: mkdtemp");
    return 1;
  }
  printf("stacksnap bench_lag: the lag watchdog's figures (issue 13)%s\n",
         p->quick ? " (--quick)" : "");
  printf("(%ld online cores; report_dir %s, removed at the end)\n\n",
         sysconf(_SC_NPROCESSORS_ONLN), g_dir);
  fflush(stdout);
  if (want[0])
    part1(p);
  fflush(stdout);
  variant_t v[2];
  int nv = 0;
  for (int s = 0; s < 2; s++) {
    if (!want[s])
      continue;
    variant_t *cur = &v[nv++];
    memset(cur, 0, sizeof *cur);
    cur->name = s ? "saturated" : "quiet";
    if (s) {
      print_loadavg("before the load");
      cur->hogs = hogs_start();
      printf("== saturated: %d busy-loop child processes (one per core) ==\n\n",
             cur->hogs);
      sleep_ns(300 * MS);
    } else {
      printf("== quiet: no load of ours ==\n");
      print_loadavg("before");
      printf("\n");
    }
    fflush(stdout);
    part_detect(p, cur);
    fflush(stdout);
    part_cpu(p, cur);
    print_loadavg("after");
    printf("\n");
    fflush(stdout);
    hogs_stop();
  }
  if (want[0])
    part4(p);
  printf("\n");
  summary(v, nv);
  remove_dir(g_dir);
  return 0;
}
