/*
 * bench_trace.c — what the sampling trace costs (issue 16's figures):
 *
 *  1. the sampler's CPU time at 1 kHz main-thread sampling while the main
 *     thread spins at depth 40 (goal: <= 1 % of one core), per second and
 *     per sample, and what the main thread loses (its work rate against a
 *     run without the trace, measured in the same process);
 *  2. the same program under `perf record -F 1000 --call-graph fp` (Debian's
 *     linux-perf), in the same run: perf's own CPU time and the program's
 *     loss; "not supported" when the kernel refuses;
 *  3. bytes per sample on that steady workload (goal <= 16);
 *  4. the time to write a 30 s trace (goal <= 100 ms) in each format, the
 *     main thread moving among 8 functions at depth 40 and 4 other threads
 *     running, and the files' sizes;
 *  5. issue 26 goal 3, the floor: the trace's whole cost per sample (its
 *     sampler thread's CPU plus the CPU the sampled thread loses) against a
 *     bare per-thread CPU-time timer signal whose handler walks frame
 *     pointers, in the same run, main thread spinning (goal <= 1.3x the
 *     bare timer; sampler thread <= 1 % of a core) and idle (sampler
 *     thread <= 1 %). The thread's loss per sample is the time the rounds
 *     of its loop took beyond the quickest, summed over rounds slowed by
 *     less than 100 us (a signal, not a preemption), less the base run's
 *     (spin_cost); its work per second of CPU time is printed beside it,
 *     but on a shared VM stolen time swung that by +-100 us a sample. The
 *     same runs are also read at the scheduler's tick (tick_gap_us): the
 *     median interruption at the tick's phase with no timer, the bare
 *     one and the trace's, so the tick's own cost (tens of us on a VM,
 *     paid with or without sampling) is seen apart from the signal's.
 *
 * Usage: bench_trace [--write-seconds S]   (S: the trace's length, 30)
 *        bench_trace --floor [N]           (part 5 alone; N rounds, 9)
 *        bench_trace spin SECONDS          (the workload alone, for perf)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stacksnap.h"

static double now_s(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static volatile uint64_t g_sink;

/* Spins at depth `depth` until `until` (monotonic seconds); returns the
   rounds done. `which` picks one of 8 leaf functions (a moving stack). */
#define LEAF(k)                                                                \
  __attribute__((noinline)) static uint64_t leaf##k(double until) {            \
    uint64_t n = 0, x = g_sink | 1;                                            \
    while (now_s(CLOCK_MONOTONIC) < until) {                                   \
      for (int i = 0; i < 2000; i++)                                           \
        x = x * 6364136223846793005u + (k);                                    \
      n++;                                                                     \
    }                                                                          \
    g_sink = x;                                                                \
    return n;                                                                  \
  }
// clang-format off: macro calls without semicolons, which it cannot settle
LEAF(0)
LEAF(1)
LEAF(2)
LEAF(3)
LEAF(4)
LEAF(5)
LEAF(6)
LEAF(7)
// clang-format on
static uint64_t (*const k_leaves[8])(double) = {leaf0, leaf1, leaf2, leaf3,
                                                leaf4, leaf5, leaf6, leaf7};

__attribute__((noinline)) static uint64_t deep(int depth, int which,
                                               double until) {
  uint64_t n =
      depth <= 1 ? k_leaves[which & 7](until) : deep(depth - 1, which, until);
  __asm__ volatile("" ::: "memory"); /* no tail call: the frames stay */
  return n;
}

/* The workload: depth 40, one leaf, for `seconds`; its rounds per second. */
static double spin_rate(double seconds) {
  double t0 = now_s(CLOCK_MONOTONIC);
  uint64_t n = deep(40, 0, t0 + seconds);
  return (double)n / (now_s(CLOCK_MONOTONIC) - t0);
}

static void *worker(void *arg) {
  double until = *(double *)arg;
  while (now_s(CLOCK_MONOTONIC) < until)
    deep(20, 3, now_s(CLOCK_MONOTONIC) + 0.05);
  return NULL;
}

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <ucontext.h>

/* What signals cost the spinning thread, counted round by round: a round
   of the loop below is a few us of arithmetic, and a round that a signal
   interrupted took longer by the signal's delivery, handler and return.
   The time rounds took beyond the quickest one, summed over rounds slowed
   by SLOW_MIN to SLOW_MAX (a signal, an interrupt; not a preemption or a
   slice the VM stole, which the work-per-CPU rate cannot tell from a cost
   and which swung it by +-100 us a sample on a busy box), per second of
   the thread's CPU time, less the base run's (the interrupts that come
   anyway), over the samples per second of CPU time, is what one sample
   costs the thread. */
#define SLOW_MIN 0.5e-6
#define SLOW_MAX 100e-6

typedef struct spin_cost {
  double cpu;    /* the thread's CPU time over the run */
  double excess; /* seconds lost in rounds slowed by SLOW_MIN..SLOW_MAX */
  double rate;   /* rounds per second of CPU time */
  double wall;   /* its wall time */
} spin_cost_t;

/* Where each slowed round began and what it lost (its time beyond the
   quickest), for the reading at the scheduler's tick (tick_gap_us);
   g_gaps NULL: not kept. */
#define GAPS_MAX 8192
#define FLOOR_ROUNDS_MAX 64 /* --floor N at most */
typedef struct gap_log {
  int n;
  double at[GAPS_MAX];
  double lost[GAPS_MAX];
} gap_log_t;
static gap_log_t *g_gaps;

__attribute__((noinline)) static uint64_t leaf_timed(double until,
                                                     double *excess) {
  uint64_t n = 0, x = g_sink | 1;
  double quick = 1, sum = 0, prev = now_s(CLOCK_MONOTONIC);
  if (g_gaps)
    g_gaps->n = 0;
  for (;;) {
    for (int i = 0; i < 2000; i++)
      x = x * 6364136223846793005u + 1;
    n++;
    double t = now_s(CLOCK_MONOTONIC), dt = t - prev;
    if (dt < quick)
      quick = dt;
    else if (dt - quick >= SLOW_MIN && dt - quick < SLOW_MAX &&
             n > 1000) { /* the quickest known by then */
      sum += dt - quick;
      if (g_gaps && g_gaps->n < GAPS_MAX) {
        g_gaps->at[g_gaps->n] = prev;
        g_gaps->lost[g_gaps->n++] = dt - quick;
      }
    }
    prev = t;
    if (t >= until)
      break;
  }
  g_sink = x;
  *excess = sum;
  return n;
}

__attribute__((noinline)) static uint64_t deep_timed(int depth, double until,
                                                     double *excess) {
  uint64_t n = depth <= 1 ? leaf_timed(until, excess)
                          : deep_timed(depth - 1, until, excess);
  __asm__ volatile("" ::: "memory");
  return n;
}

static spin_cost_t spin_cost(double seconds) {
  spin_cost_t r;
  double c0 = now_s(CLOCK_THREAD_CPUTIME_ID), w0 = now_s(CLOCK_MONOTONIC);
  uint64_t n = deep_timed(40, w0 + seconds, &r.excess);
  r.cpu = now_s(CLOCK_THREAD_CPUTIME_ID) - c0;
  r.wall = now_s(CLOCK_MONOTONIC) - w0;
  r.rate = (double)n / r.cpu;
  return r;
}

/* The floor: a per-thread CPU-time timer whose handler walks frame
   pointers (bounded to the 8 MiB above the handler's frame: the thread's
   own stack) into a static buffer. */
static volatile uint64_t g_bare_ticks, g_bare_frames;
static uintptr_t g_bare_pcs[256];
static void bare_handler(int signo, siginfo_t *si, void *ucp) {
  (void)si;
  ucontext_t *uc = ucp;
#if defined(__x86_64__)
  uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  uintptr_t fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
#elif defined(__aarch64__)
  uintptr_t pc = (uintptr_t)uc->uc_mcontext.pc;
  uintptr_t fp = (uintptr_t)uc->uc_mcontext.regs[29];
#else
  uintptr_t pc = 0, fp = 0;
  (void)uc;
#endif
  uintptr_t lo = (uintptr_t)&signo, hi = lo + (8u << 20);
  int n = 0;
  g_bare_pcs[n++] = pc;
  while (n < 256 && fp > lo && fp < hi && !(fp & 7)) {
    uintptr_t *f = (uintptr_t *)fp;
    g_bare_pcs[n++] = f[1];
    if (f[0] <= fp)
      break;
    fp = f[0];
  }
  g_bare_frames += (uint64_t)n;
  g_bare_ticks++;
}

static timer_t bare_start(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = bare_handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGRTMIN + 7, &sa, NULL);
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGRTMIN + 7;
  sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
  timer_t id;
  timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &id);
  struct itimerspec its = {{0, 1000000}, {0, 1000000}};
  timer_settime(id, 0, &its, NULL);
  return id;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return v[n / 2];
}

/* The trace's sampler thread's CPU time so far (ns; -1: not found), from
   /proc: the library's own figure (sampler_cpu_ns) is taken at the stop
   and so includes the start's and the stop's work, once a trace. */
static int64_t sampler_cpu_ns(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d)
    return -1;
  int64_t cpu = -1;
  struct dirent *e;
  while (cpu < 0 && (e = readdir(d))) {
    char path[300], comm[32] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    bool ours = fgets(comm, sizeof comm, f) &&
                strncmp(comm, "stacksnap-trace", 15) == 0;
    fclose(f);
    snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
    unsigned long long ns;
    if (ours && (f = fopen(path, "r"))) {
      if (fscanf(f, "%llu", &ns) == 1)
        cpu = (int64_t)ns;
      fclose(f);
    }
  }
  closedir(d);
  return cpu;
}

/* The reading at the scheduler's tick. A CPU-time timer fires only at a
   tick (CONFIG_HZ), and on a VM the tick itself stops a spinning thread
   for tens of us (its timer is the hypervisor's), with or without a
   timer signal: the interruptions that begin at the tick's phase are the
   tick, or the tick with a signal. The phase is found per run (the gaps'
   start times modulo the period pile up there; other interruptions fall
   anywhere), and the median of those gaps is what one tick cost the
   thread. Returns us; -1 when fewer than 16 gaps were at the tick. */
#define TICK_BIN_NS 20000u
static double g_tick_lost[GAPS_MAX];
static int tick_bin(double at, uint64_t period_ns, int nb) {
  return (int)((uint64_t)(at * 1e9) % period_ns / TICK_BIN_NS) % nb;
}
static double tick_gap_us(const gap_log_t *g, uint64_t period_ns) {
  int nb = (int)(period_ns / TICK_BIN_NS), hist[1024] = {0};
  if (nb < 8 || nb > 1024)
    return -1;
  for (int i = 0; i < g->n; i++)
    hist[tick_bin(g->at[i], period_ns, nb)]++;
  int best = 0, most = -1;
  for (int b = 0; b < nb; b++) {
    int v = hist[b] + hist[(b + 1) % nb] + hist[(b + 2) % nb];
    if (v > most)
      most = v, best = b;
  }
  int k = 0;
  for (int i = 0; i < g->n; i++) {
    int d = (tick_bin(g->at[i], period_ns, nb) - best + nb) % nb;
    if (d <= 3 || d == nb - 1) /* the peak, a bin either side */
      g_tick_lost[k++] = g->lost[i];
  }
  if (k < 16)
    return -1;
  return median(g_tick_lost, k) * 1e6;
}

/* The floor read at the tick (tick_gap_us), per round: the tick alone
   (base), with the bare signal, with the trace's; the signal's own cost is
   the difference, and the whole trace's adds its sampler thread. Printed
   both ways: the marginal ratio (what sampling adds, the tick left out)
   and the ratio all included (the tick counted in both, as a thread's
   loss per sample read by its work rate counts it). */
static void tick_report(double *base, double *bare, double *tr, int n,
                        uint64_t period_ns, double sampler_us) {
  if (n < 3) {
    printf("  at the tick: not read (%d rounds with 16 gaps or more at the "
           "tick's phase)\n",
           n);
    return;
  }
  double d_bare[FLOOR_ROUNDS_MAX], d_tr[FLOOR_ROUNDS_MAX];
  for (int r = 0; r < n; r++) {
    d_bare[r] = bare[r] - base[r];
    d_tr[r] = tr[r] - base[r];
  }
  double lo = base[0], hi = base[0];
  for (int r = 1; r < n; r++) {
    lo = base[r] < lo ? base[r] : lo;
    hi = base[r] > hi ? base[r] : hi;
  }
  double mb = median(base, n), mt = median(bare, n), mx = median(tr, n),
         db = median(d_bare, n), dx = median(d_tr, n);
  printf("  at the tick (every %.2f ms; medians over %d rounds): the tick "
         "alone stops the thread %.1f us (rounds %.1f to %.1f), with the "
         "bare signal %.1f, with the trace's %.1f; so the signal adds %.1f "
         "us, the trace's %.1f, and its sampler thread %.1f\n",
         (double)period_ns / 1e6, n, mb, lo, hi, mt, mx, db, dx, sampler_us);
  if (db > 0)
    printf("  ratio at the tick, marginal (trace + sampler) / bare signal: "
           "%.2fx\n",
           (dx + sampler_us) / db);
  else
    printf("  ratio at the tick, marginal: none (the bare signal's median "
           "%.1f us is inside the tick's spread)\n",
           db);
  printf("  ratio at the tick, all included (tick + trace + sampler) / "
         "(tick + bare signal): %.2fx\n",
         (mx + sampler_us) / mt);
}

/* Alternations of 1 s each (base, bare timer, trace): a busy machine's
   drift hits all three alike, and the medians say what held. */
static int g_floor_rounds = 9; /* --floor N: more, for a steadier median */
static void part_floor(void) {
  printf("== 5. the whole cost per sample against the floor (a bare "
         "per-thread CPU-time timer walking frame pointers), 1 kHz, main "
         "spinning at depth 40; %d alternations of 1 s (base, bare, trace), "
         "medians\n",
         g_floor_rounds);
  double bare_us[FLOOR_ROUNDS_MAX], whole_us[FLOOR_ROUNDS_MAX],
      samp_us[FLOOR_ROUNDS_MAX], lost_us[FLOOR_ROUNDS_MAX],
      samp_pct[FLOOR_ROUNDS_MAX], ratio[FLOOR_ROUNDS_MAX],
      samp_all_us[FLOOR_ROUNDS_MAX], rate_bare[FLOOR_ROUNDS_MAX],
      rate_tr[FLOOR_ROUNDS_MAX], bare_rate_us[FLOOR_ROUNDS_MAX],
      lost_rate_us[FLOOR_ROUNDS_MAX], tick_base[FLOOR_ROUNDS_MAX],
      tick_bare[FLOOR_ROUNDS_MAX], tick_tr[FLOOR_ROUNDS_MAX];
  static gap_log_t gaps[3]; /* base, bare, trace: this round's */
  int n_ratio = 0, n_tick = 0;
  uint64_t period_ns = 0;
  double frames = 0;
  snap_trace_config_t c;
  snap_trace_config_default(&c);
  c.other_interval_us = 0;
  for (int r = 0; r < g_floor_rounds; r++) {
    g_gaps = &gaps[0];
    spin_cost_t base = spin_cost(1.0);
    uint64_t t0 = g_bare_ticks, f0 = g_bare_frames;
    timer_t id = bare_start();
    g_gaps = &gaps[1];
    spin_cost_t bare = spin_cost(1.0);
    timer_delete(id);
    double ticks = (double)(g_bare_ticks - t0);
    if (ticks < 1)
      ticks = 1;
    frames = (double)(g_bare_frames - f0) / ticks;
    rate_bare[r] = ticks / bare.cpu;
    /* Per sample: the short interruptions beyond the base run's, per
       second of CPU time, over the samples per second of CPU time. */
    double base_x = base.excess / base.cpu;
    bare_us[r] = (bare.excess / bare.cpu - base_x) / rate_bare[r] * 1e6;
    bare_rate_us[r] = (1 - bare.rate / base.rate) * bare.cpu / ticks * 1e6;
    if (snap_trace_start(&c) != SNAP_OK) {
      printf("snap_trace_start failed\n");
      return;
    }
    snap_trace_stats_t st = {.size = sizeof st};
    snap_trace_stats(&st);
    uint64_t s0 = st.samples;
    int64_t c0 = sampler_cpu_ns();
    g_gaps = &gaps[2];
    spin_cost_t tr = spin_cost(1.0);
    g_gaps = NULL;
    snap_trace_stats(&st);
    int64_t c1 = sampler_cpu_ns();
    uint64_t s1 = st.samples;
    snap_trace_stop();
    snap_trace_stats(&st);
    double n = (double)(st.samples ? st.samples : 1);
    double sampler = (double)st.sampler_cpu_ns / 1e9;
    rate_tr[r] = n / tr.cpu;
    /* Per sample: while it ran (the start's and the stop's work are once a
       trace; beside them, the whole trace's figure). */
    samp_all_us[r] = sampler / n * 1e6;
    samp_us[r] = c0 >= 0 && c1 >= c0 && s1 > s0
                     ? (double)(c1 - c0) / 1e3 / (double)(s1 - s0)
                     : samp_all_us[r];
    samp_pct[r] =
        c0 >= 0 && c1 >= c0 ? (double)(c1 - c0) / tr.wall / 1e7 : sampler * 100;
    lost_us[r] = (tr.excess / tr.cpu - base_x) / rate_tr[r] * 1e6;
    lost_rate_us[r] = (1 - tr.rate / base.rate) * tr.cpu / n * 1e6;
    whole_us[r] = samp_us[r] + lost_us[r];
    /* A round whose bare floor read <= 0 (noise as large as the floor)
       has no ratio: left out, not counted as 0. */
    if (bare_us[r] > 0)
      ratio[n_ratio++] = whole_us[r] / bare_us[r];
    /* The tick's period: the bare timer fires once a tick (HZ a second
       of CPU time, its 1 ms being no longer than any tick), HZ being
       one of Linux's CONFIG_HZ choices; the nearest is taken, as a tick
       lost to a busy host would otherwise skew the period and smear the
       phase over the run. */
    static const int k_hz[] = {100, 250, 300, 1000};
    for (int i = 0; !period_ns && rate_bare[r] > 50 && i < 4; i++)
      if (i == 3 || rate_bare[r] < (k_hz[i] + k_hz[i + 1]) / 2.0)
        period_ns = 1000000000u / (uint64_t)k_hz[i];
    double tb = tick_gap_us(&gaps[0], period_ns),
           tt = tick_gap_us(&gaps[1], period_ns),
           tx = tick_gap_us(&gaps[2], period_ns);
    if (period_ns && tb >= 0 && tt >= 0 && tx >= 0) {
      tick_base[n_tick] = tb;
      tick_bare[n_tick] = tt;
      tick_tr[n_tick++] = tx;
    }
  }
  double wmin = whole_us[0], wmax = whole_us[0];
  for (int r = 1; r < g_floor_rounds; r++) {
    wmin = whole_us[r] < wmin ? whole_us[r] : wmin;
    wmax = whole_us[r] > wmax ? whole_us[r] : wmax;
  }
  printf("  bare timer: %.0f signals/s of CPU (CPU-time timers fire at "
         "scheduler ticks), %.1f frames each; the thread loses %.1f "
         "us/sample (by its work rate: %.1f)\n",
         median(rate_bare, g_floor_rounds), frames,
         median(bare_us, g_floor_rounds), median(bare_rate_us, g_floor_rounds));
  printf("  trace: %.0f samples/s of CPU; sampler thread while it ran %.2f "
         "%% of a core = %.1f us/sample (%.1f with its start and stop); the "
         "thread loses %.1f us/sample (by its work rate: "
         "%.1f); whole %.1f us/sample (min %.1f, max %.1f); median ratio to "
         "the bare timer %.2fx over the %d rounds whose floor read > 0\n",
         median(rate_tr, g_floor_rounds), median(samp_pct, g_floor_rounds),
         median(samp_us, g_floor_rounds), median(samp_all_us, g_floor_rounds),
         median(lost_us, g_floor_rounds), median(lost_rate_us, g_floor_rounds),
         median(whole_us, g_floor_rounds), wmin, wmax,
         n_ratio ? median(ratio, n_ratio) : 0.0, n_ratio);
  /* Each round's bare figure is a few us read through the box's noise:
     the medians' ratio is the steadier one. */
  double mb = median(bare_us, g_floor_rounds);
  if (mb > 0)
    printf("  ratio of the medians (whole / bare): %.2fx\n",
           median(whole_us, g_floor_rounds) / mb);
  else
    printf("  ratio of the medians: none (the bare floor's median read "
           "%.1f us: the box's noise is larger than the floor)\n",
           mb);
  tick_report(tick_base, tick_bare, tick_tr, n_tick, period_ns,
              median(samp_us, g_floor_rounds));
  /* Idle: the main thread asleep; a CPU-time timer never fires. */
  if (snap_trace_start(&c) != SNAP_OK)
    return;
  struct timespec s3 = {3, 0};
  nanosleep(&s3, NULL);
  snap_trace_stop();
  snap_trace_stats_t st = {.size = sizeof st};
  snap_trace_stats(&st);
  printf("  trace, main idle (nanosleep 3 s): %llu samples; sampler thread "
         "%.1f ms = %.2f %% of a core\n",
         (unsigned long long)st.samples, (double)st.sampler_cpu_ns / 1e6,
         (double)st.sampler_cpu_ns / 3e9 * 100);
}

static void part_sampler(void) {
  printf("== 1. the sampler at 1 kHz, main thread spinning at depth 40 "
         "(3 s each)\n");
  double base = spin_rate(3.0);
  snap_trace_config_t c;
  snap_trace_config_default(&c);
  c.other_interval_us = 0; /* the main thread's cost alone */
  if (snap_trace_start(&c) != SNAP_OK) {
    printf("snap_trace_start failed\n");
    return;
  }
  double traced = spin_rate(3.0);
  snap_trace_stats_t st = {.size = sizeof st};
  snap_trace_stats(&st);
  snap_trace_stop();
  snap_trace_stats(&st);
  double cpu_s = (double)st.sampler_cpu_ns / 1e9;
  printf("  samples %llu (missed periods %llu, failed %llu), sampler cpu "
         "%.1f ms = %.2f %% of a core, %.1f us/sample\n",
         (unsigned long long)st.samples, (unsigned long long)st.missed_ticks,
         (unsigned long long)st.failed, cpu_s * 1e3, cpu_s / 3.0 * 100,
         cpu_s / (double)st.samples * 1e6);
  printf("  main thread's work rate: %.0f/s alone, %.0f/s traced (%.2f %% "
         "lost to the sampling signal)\n",
         base, traced, (1 - traced / base) * 100);
  printf("== 3. bytes per sample on that steady workload: %llu bytes for "
         "%llu samples = %.2f (spans %llu, stack nodes %llu)\n",
         (unsigned long long)st.bytes_used, (unsigned long long)st.samples,
         (double)st.bytes_used / (double)st.samples,
         (unsigned long long)st.spans, (unsigned long long)st.stack_nodes);
}

static void part_perf(const char *self) {
  printf("== 2. perf record -F 1000 --call-graph fp on the same workload "
         "(3 s)\n");
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "perf record -F 1000 --call-graph fp -o /tmp/bench_trace.perf "
           "-- '%s' spin 3 2>&1",
           self);
  struct rusage before, after;
  getrusage(RUSAGE_CHILDREN, &before);
  FILE *p = popen(cmd, "r");
  if (!p) {
    printf("  not supported (no perf)\n");
    return;
  }
  char line[512];
  double rate = 0, child_cpu = 0;
  unsigned long long samples = 0;
  bool refused = false;
  while (fgets(line, sizeof line, p)) {
    double r, c;
    const char *at;
    if (sscanf(line, "spin rate %lf cpu %lf", &r, &c) == 2)
      rate = r, child_cpu = c;
    else if ((at = strstr(line, "samples)")) && strchr(line, '(')) {
      const char *open = strrchr(line, '(');
      samples = strtoull(open + 1, NULL, 10);
    } else if (strstr(line, "ermission") || strstr(line, "not supported") ||
               strstr(line, "No permission"))
      refused = true, fputs("  perf: ", stdout), fputs(line, stdout);
  }
  int status = pclose(p);
  getrusage(RUSAGE_CHILDREN, &after);
  double total =
      (double)(after.ru_utime.tv_sec - before.ru_utime.tv_sec) +
      (double)(after.ru_utime.tv_usec - before.ru_utime.tv_usec) / 1e6 +
      (double)(after.ru_stime.tv_sec - before.ru_stime.tv_sec) +
      (double)(after.ru_stime.tv_usec - before.ru_stime.tv_usec) / 1e6;
  if (refused || status != 0 || rate == 0) {
    printf("  not supported here (exit %d)\n", status);
    return;
  }
  double perf_cpu = total - child_cpu;
  printf("  perf: %llu samples, its own cpu %.1f ms = %.2f %% of a core, "
         "%.1f us/sample; the workload ran at %.0f/s\n",
         samples, perf_cpu * 1e3, perf_cpu / 3.0 * 100,
         samples ? perf_cpu / (double)samples * 1e6 : 0.0, rate);
  unlink("/tmp/bench_trace.perf");
}

static void part_write(double seconds) {
  printf("== 4. writing a %.0f s trace (main thread among 8 functions at "
         "depth 40, 4 other threads running)\n",
         seconds);
  snap_trace_config_t c;
  snap_trace_config_default(&c);
  c.window_seconds = (unsigned)seconds + 5;
  snap_trace_start(&c);
  double until = now_s(CLOCK_MONOTONIC) + seconds;
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    pthread_create(&t[i], NULL, worker, &until);
  for (int k = 0; now_s(CLOCK_MONOTONIC) < until; k++)
    deep(40, k, now_s(CLOCK_MONOTONIC) + 0.003 * (1 + k % 5));
  for (int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  snap_trace_stop();
  snap_trace_stats_t st = {.size = sizeof st};
  snap_trace_stats(&st);
  printf("  %llu samples, %llu spans, %llu bytes (%.2f bytes/sample), %llu "
         "stack nodes\n",
         (unsigned long long)st.samples, (unsigned long long)st.spans,
         (unsigned long long)st.bytes_used,
         (double)st.bytes_used / (double)st.samples,
         (unsigned long long)st.stack_nodes);
  static const struct {
    const char *name;
    unsigned format;
  } f[] = {{"perfetto", SNAP_TRACE_PERFETTO},
           {"chrome json", SNAP_TRACE_CHROME_JSON},
           {"folded", SNAP_TRACE_FOLDED}};
  for (size_t i = 0; i < 3; i++) {
    double best = 1e9;
    char path[64];
    snprintf(path, sizeof path, "/tmp/bench_trace.%zu", i);
    for (int r = 0; r < 3; r++) {
      double t0 = now_s(CLOCK_MONOTONIC);
      int rc = snap_trace_write(path, f[i].format, 0, 0);
      double dt = now_s(CLOCK_MONOTONIC) - t0;
      if (rc != SNAP_OK)
        printf("  %s: %s\n", f[i].name, snap_strerror(rc));
      if (dt < best)
        best = dt;
    }
    FILE *fp = fopen(path, "rb");
    long size = 0;
    if (fp) {
      fseek(fp, 0, SEEK_END);
      size = ftell(fp);
      fclose(fp);
    }
    printf("  %-12s %.1f ms (best of 3, file %ld KiB)\n", f[i].name, best * 1e3,
           size / 1024);
    unlink(path);
  }
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "spin") == 0) {
    double c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
    double r = spin_rate(atof(argv[2]));
    printf("spin rate %.0f cpu %.3f\n", r,
           now_s(CLOCK_PROCESS_CPUTIME_ID) - c0);
    return 0;
  }
  double write_s = 30;
  if (argc == 3 && strcmp(argv[1], "--write-seconds") == 0)
    write_s = atof(argv[2]);
  if ((argc == 2 || argc == 3) && strcmp(argv[1], "--floor") == 0) {
    int n = argc == 3 ? atoi(argv[2]) : 9;
    g_floor_rounds = n < 3 ? 3 : n > FLOOR_ROUNDS_MAX ? FLOOR_ROUNDS_MAX : n;
    part_floor();
    return 0;
  }
  part_sampler();
  part_perf(argv[0]);
  part_floor();
  part_write(write_s);
  return 0;
}
