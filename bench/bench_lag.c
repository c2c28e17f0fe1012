/*
 * bench_lag.c — what the lag watchdog costs the app it watches, and how late
 * it reports a lag, each figure next to its floor measured in the same run.
 *
 * 1. Loop observer calls. snap_lag_loop_busy + snap_lag_loop_idle run on
 *    every iteration of the app's main loop. The header promises "a clock
 *    read and an atomic" each, so the floor is two clock_gettime
 *    (CLOCK_MONOTONIC) calls: what any observer that timestamps both edges
 *    must pay. Timed in a tight loop (median of interleaved repeats) with
 *    the watchdog running (report_dir a fresh mkdtemp directory, defaults
 *    otherwise), next to the two clock reads and the pair with the
 *    watchdog stopped (the no-op path). A tight loop never lets the
 *    watchdog park, so busy never posts its semaphore; two more variants
 *    sleep between iterations and time each pair (with a clock read on
 *    either side, included) against two clock reads timed the same way:
 *    1 ms sleeps (the watchdog still never parks: it parks only after a
 *    whole 50 ms tick without a busy call) and 100 ms sleeps (it is parked
 *    every time, so every busy call posts: the p50 is the post). The post
 *    has its own floor in that variant: a bare sem_post to a thread of
 *    ours blocked in sem_wait, timed the same way.
 *
 * 2. Detection latency. Threshold 250 ms (defaults otherwise; a daily cap
 *    of 100000 reports). The main thread goes busy for 300 ms, 1 s and 5 s
 *    (interleaved), each followed by 300 ms idle; on_report records the
 *    CLOCK_MONOTONIC time of the first report of each lag. Latency = that
 *    time - the time read just before snap_lag_loop_busy: what the app's
 *    user waits before the report exists. The comparison is the threshold
 *    itself (goal: within threshold + 10 %, <= 275 ms). Each lag spins at
 *    the bottom of a noinline recursion of its own depth: the watchdog
 *    anneals (does not report) a lag whose call path equals the previous
 *    one's, and the same path every time would measure that instead.
 *
 * 3. Overhead on a real loop. A GLib main loop with a 5 ms timeout (200 Hz)
 *    whose handler does a fixed amount of computation calibrated to take
 *    ~2 ms (a fixed count, not "spin until the clock says 2 ms": time the
 *    watchdog steals from the main thread is then added, not absorbed),
 *    with the watchdog on (defaults, snap_lag_attach_glib(NULL)) and off
 *    (no stacksnap call at all). Each phase is a child process of this
 *    program (fork + exec with a hidden flag), alternating off, on, off,
 *    on to cut drift; its CPU time comes from wait4(). Extra CPU = CPU
 *    share on - CPU share off: the whole cost, but noisy. The precise part
 *    is the watchdog thread's own CPU time, read by the "on" child from
 *    /proc/self/task/<tid>/schedstat (ns; the thread is the one whose comm
 *    is "stacksnap-lag"; stat's utime+stime, in clock ticks, is printed
 *    too). Its floor: a bare thread of this program that only waits 50 ms
 *    in a loop (sem_clockwait, what the watchdog's tick does), run during
 *    the off phases, read the same way: any watchdog that looks at the
 *    loop every 50 ms pays at least those wakeups. Goal: <= 0.3 % of one
 *    core (WeChat Matrix reports 3 %). Without GLib this part says n/a.
 *
 * --quick shortens every part (a smoke run of ~20 s); the default is the
 * full run (~80 s). Nothing here is pass/fail: the "goal" lines say
 * whether the figures of this run met the goals.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#define THRESHOLD_MS 250
#define GOAL_LATENCY_MS 275.0 /* threshold + 10 % */
#define GOAL_CPU_PERCENT 0.3  /* of one core */
#define MAX_LAGS 64
#define GLIB_CHILD_FLAG "--glib-child"

typedef struct params {
  bool quick;
  int repeats;         /* part 1: interleaved repeats of the tight loop */
  long pairs;          /* part 1: pairs per repeat */
  int short_iters;     /* part 1: iterations with a 1 ms sleep */
  int park_iters;      /* part 1: iterations with a 100 ms sleep */
  int lag_count[3];    /* part 2: lags of 300 ms, 1 s, 5 s */
  unsigned phase_secs; /* part 3: seconds per child phase */
  int phases;          /* part 3: off, on, off, on... */
} params_t;

static const params_t k_full = {false, 11, 1000000, 2000, 60, {7, 5, 3}, 10, 4};
static const params_t k_quick = {true, 5, 200000, 400, 10, {2, 1, 1}, 2, 4};

static const unsigned k_lag_ms[3] = {300, 1000, 5000};

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

/* ---- 2. Detection latency ------------------------------------------------
 */

static atomic_int g_cur_lag = -1;          /* the lag being run, -1 none */
static _Atomic int64_t g_cur_start_ms;     /* its busy start, unix ms */
static _Atomic uint64_t g_first[MAX_LAGS]; /* first report, CLOCK_MONOTONIC */
static atomic_int g_reports, g_lag_reports, g_cpu_reports;

static void on_report_latency(const char *path, void *ctx) {
  (void)ctx;
  uint64_t t = now_ns();
  atomic_fetch_add(&g_reports, 1);
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  char *end;
  long long start_ms = strtoll(base, &end, 10);
  bool is_lag = strcmp(end, "-lag.json") == 0 || strcmp(end, "-hang.json") == 0;
  if (strcmp(end, "-cpu.json") == 0)
    atomic_fetch_add(&g_cpu_reports, 1);
  if (!is_lag)
    return;
  atomic_fetch_add(&g_lag_reports, 1);
  int k = atomic_load(&g_cur_lag);
  /* The file name holds the busy start (unix ms): a later report of an
     earlier lag (its final update) started long before this one. */
  if (k >= 0 && k < MAX_LAGS && start_ms >= atomic_load(&g_cur_start_ms) - 50) {
    uint64_t zero = 0;
    atomic_compare_exchange_strong(&g_first[k], &zero, t);
  }
}

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

/* A call path of its own for every lag: `levels` frames of descend. */
__attribute__((noinline)) static void descend(int levels, uint64_t end) {
  if (levels > 1)
    descend(levels - 1, end);
  else
    spin_until(end);
  __asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays */
}

static void part2(const params_t *p) {
  int order[MAX_LAGS], n = 0;
  for (int round = 0; n < MAX_LAGS; round++) {
    bool any = false;
    for (int d = 0; d < 3 && n < MAX_LAGS; d++)
      if (round < p->lag_count[d]) {
        order[n++] = d;
        any = true;
      }
    if (!any)
      break;
  }
  snap_lag_config_t cfg;
  snap_lag_config_default(&cfg);
  cfg.report_dir = g_dir;
  cfg.threshold_ms = THRESHOLD_MS;
  cfg.max_reports_per_day = 100000;
  cfg.on_report = on_report_latency;
  start_watchdog(&cfg);
  sleep_ns(300 * MS);

  uint64_t lat[MAX_LAGS];
  bool got[MAX_LAGS];
  for (int i = 0; i < n; i++) {
    atomic_store(&g_cur_start_ms, unix_ms());
    atomic_store(&g_cur_lag, i);
    uint64_t t0 = now_ns();
    snap_lag_loop_busy();
    descend(i + 1, t0 + k_lag_ms[order[i]] * MS);
    snap_lag_loop_idle();
    sleep_ns(300 * MS);
    uint64_t first = atomic_load(&g_first[i]);
    got[i] = first != 0;
    lat[i] = got[i] ? first - t0 : 0;
  }
  atomic_store(&g_cur_lag, -1);
  snap_lag_stop();

  printf("2. Detection latency: threshold %d ms, busy stretches spun on the "
         "main thread\n",
         THRESHOLD_MS);
  printf("   (%d lags, interleaved, each followed by 300 ms idle; latency = "
         "first on_report - busy start)\n\n",
         n);
  printf("   %-8s %5s %9s %9s %9s %10s\n", "busy", "lags", "min ms", "p50 ms",
         "max ms", "no report");
  bool goal = true;
  int missing_total = 0;
  for (int d = 0; d < 3; d++) {
    uint64_t v[MAX_LAGS];
    int k = 0, lags = 0, missing = 0;
    for (int i = 0; i < n; i++) {
      if (order[i] != d)
        continue;
      lags++;
      if (got[i])
        v[k++] = lat[i];
      else
        missing++;
    }
    if (lags == 0)
      continue;
    missing_total += missing;
    char label[16];
    snprintf(label, sizeof label, "%u ms", k_lag_ms[d]);
    if (k == 0) {
      printf("   %-8s %5d %9s %9s %9s %10d\n", label, lags, "-", "-", "-",
             missing);
      goal = false;
      continue;
    }
    uint64_t p50 = quantile(v, k, 0.5);
    double mn = (double)v[0] / 1e6, mx = (double)v[k - 1] / 1e6;
    printf("   %-8s %5d %9.1f %9.1f %9.1f %10d\n", label, lags, mn,
           (double)p50 / 1e6, mx, missing);
    if (!(mx <= GOAL_LATENCY_MS))
      goal = false;
  }
  printf("   reports written: %d (lag/hang %d, cpu %d; later updates of a lag "
         "count again)\n",
         atomic_load(&g_reports), atomic_load(&g_lag_reports),
         atomic_load(&g_cpu_reports));
  printf("   lags without a report: %d of %d\n", missing_total, n);
  printf("   goal (every lag reported within threshold + 10 %% = %.0f ms): "
         "%s\n\n",
         GOAL_LATENCY_MS, goal && missing_total == 0 ? "met" : "NOT met");
}

/* ---- 3. Overhead on a GLib loop -------------------------------------------
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

/* A thread's CPU time, from /proc/self/task/<tid>: ns and runs (times it
   was put on a CPU: about its wakeups) from schedstat, exact; ticks from
   stat's utime + stime, in clock ticks. */
typedef struct thread_cpu {
  long long ns, runs;
  long ticks;
} thread_cpu_t;

static bool read_thread_cpu(const char *tid, thread_cpu_t *out) {
  char path[300], buf[512];
  out->ns = out->runs = -1;
  out->ticks = -1;
  snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", tid);
  FILE *f = fopen(path, "r");
  if (f) {
    long long wait;
    if (fscanf(f, "%lld %lld %lld", &out->ns, &wait, &out->runs) != 3)
      out->ns = out->runs = -1;
    fclose(f);
  }
  snprintf(path, sizeof path, "/proc/self/task/%s/stat", tid);
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

/* The watchdog thread (comm "stacksnap-lag") of this process: its CPU time
   since it started. False if not found. */
static bool watchdog_cpu(thread_cpu_t *out) {
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  bool found = false;
  while (d && !found && (e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char path[300], buf[64];
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    bool match =
        fgets(buf, sizeof buf, f) && strcmp(buf, "stacksnap-lag\n") == 0;
    fclose(f);
    if (match)
      found = read_thread_cpu(e->d_name, out);
  }
  if (d)
    closedir(d);
  return found;
}

/* The floor for the watchdog thread: a thread of this program that only
   waits 50 ms (sem_clockwait, CLOCK_MONOTONIC, what the watchdog's tick
   does) in a loop, run during the off phases. Any watchdog that looks at
   the loop every 50 ms pays at least its wakeups. */
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

/* Stops the ticker; *out: its CPU time. */
static bool ticker_stop(ticker_t *t, thread_cpu_t *out) {
  while (atomic_load(&t->tid) == 0)
    sched_yield();
  char tid[32];
  snprintf(tid, sizeof tid, "%d", atomic_load(&t->tid));
  bool ok = read_thread_cpu(tid, out);
  atomic_store(&t->stop, 1);
  sem_post(&t->stop_sem);
  pthread_join(t->thread, NULL);
  sem_destroy(&t->stop_sem);
  return ok;
}

typedef struct child_state {
  unsigned long iters, ticks;
  uint64_t work_ns;
  GMainLoop *loop;
} child_state_t;

static atomic_int g_child_reports;

static void on_report_count(const char *path, void *ctx) {
  (void)path;
  (void)ctx;
  atomic_fetch_add(&g_child_reports, 1);
}

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
  thread_cpu_t wd = {-1, -1, -1};
  bool found = on && watchdog_cpu(&wd);
  if (on)
    snap_lag_stop();
  g_main_loop_unref(s.loop);
  printf("%lu %llu %llu %d %lld %lld %ld %d %d %d\n", s.ticks,
         (unsigned long long)s.work_ns, (unsigned long long)loop_ns, found,
         wd.ns, wd.runs, wd.ticks, atomic_load(&g_child_reports), start_rc,
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

static void part3(const params_t *p) {
  printf("3. Overhead: a GLib loop, a 5 ms timeout (200 Hz) doing ~2 ms of "
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
  thread_cpu_t wd = {0, 0, 0}, tk = {0, 0, 0};
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
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) {
      p = &k_quick;
    } else {
      fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
      return 2;
    }
  }
  snprintf(g_dir, sizeof g_dir, "%s/bench_lag.XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(g_dir)) {
    perror("bench_lag: mkdtemp");
    return 1;
  }
  printf("stacksnap bench_lag: the lag watchdog's cost and detection "
         "latency%s\n",
         p->quick ? " (--quick)" : "");
  printf("(report_dir %s, removed at the end)\n\n", g_dir);
  fflush(stdout);
  part1(p);
  fflush(stdout);
  part2(p);
  fflush(stdout);
  part3(p);
  remove_dir(g_dir);
  return 0;
}
