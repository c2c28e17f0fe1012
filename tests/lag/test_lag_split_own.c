/*
 * test_lag_split_own.c — a lag's time split covers its own stretch and
 * nothing past it, also when the watchdog sees the lag late (issue 25,
 * item 2: a 121 ms compute lag was split over 244 ms and called
 * "blocked"; a late-seen one over 2156 ms).
 *
 * The watchdog is held late on purpose, the same way on a quiet and on a
 * busy machine: a report callback (it runs on the watchdog thread) spins
 * until the test lets it go. Spinning, not blocking: the watchdog's own
 * CPU time says it ran, so the hold is never taken for a stopped process.
 *
 *  1. "end seen late": a compute lag of 150 ms of the main thread's own
 *     CPU time; its detection's callback holds the watchdog while the lag
 *     ends and the main thread then sleeps 600 ms. The watchdog sees the
 *     end only after that sleep.
 *  2. "seen after it ended": a sleep lag's callback holds the watchdog;
 *     meanwhile a second, compute lag (130 ms of CPU) begins and ends, and
 *     the main thread sleeps 600 ms. The watchdog finds the compute lag
 *     only once it is over (seen_late true).
 *
 * Oracles: the main thread's own CLOCK_THREAD_CPUTIME_ID, schedstat and
 * monotonic clock read right next to each busy/idle pair (schedstat, a
 * file read a busy machine may preempt, just outside, with the slack that
 * gives). The report's main_thread split must match them: wall between
 * the clock read just inside the busy/idle calls and the one just outside
 * them, CPU and run-queue wait within 6 ms (the observer's
 * start reading may be up to 4 ms early), blocked likewise; so a compute
 * lag is never blocked, however late the watchdog looked.
 */
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "stacksnap.h"
#include "test_clock.h"

#define MS 1000000LL

static atomic_int g_hold;    /* the next report callback holds */
static atomic_int g_holding; /* a callback is holding */
static atomic_int g_release;
static atomic_int g_finals;

static void on_write(const char *path, bool final, void *ctx) {
  (void)path;
  (void)ctx;
  if (final)
    atomic_fetch_add(&g_finals, 1);
  int one = 1;
  if (!atomic_compare_exchange_strong(&g_hold, &one, 0))
    return;
  atomic_store(&g_holding, 1);
  volatile uint64_t x = 1;
  while (!atomic_load(&g_release))
    for (int i = 0; i < 10000; i++)
      x = x * 6364136223846793005u + 1;
  atomic_store(&g_holding, 0);
}

__attribute__((noinline)) void own_compute(int64_t cpu_ns) {
  compute_ns(cpu_ns);
  __asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays */
}

typedef struct truth {
  int64_t unix_ms, wall, cpu, runq;
  int64_t inner; /* the wall time strictly inside the busy and idle calls */
  int64_t extra; /* how much longer the run-queue reading's interval was */
} truth_t;

/* One busy stretch around fn(arg), measured by this thread: the clocks
   right next to the busy and idle calls; schedstat (a file read, which a
   busy machine may preempt) outside them, and how much longer its
   interval was (`extra`: the run-queue figures' slack). */
static truth_t stretch(void (*fn)(int64_t), int64_t arg) {
  truth_t t;
  int64_t wq0 = clock_ns(CLOCK_MONOTONIC);
  int64_t q0 = runq_wait_ns(0);
  t.unix_ms = clock_ns(CLOCK_REALTIME) / MS;
  int64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  int64_t w0 = clock_ns(CLOCK_MONOTONIC);
  snap_lag_loop_busy();
  int64_t w0b = clock_ns(CLOCK_MONOTONIC);
  fn(arg);
  int64_t w1a = clock_ns(CLOCK_MONOTONIC);
  snap_lag_loop_idle();
  int64_t w1 = clock_ns(CLOCK_MONOTONIC);
  int64_t c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  int64_t q1 = runq_wait_ns(0);
  int64_t wq1 = clock_ns(CLOCK_MONOTONIC);
  t.cpu = c1 - c0;
  t.wall = w1 - w0;
  t.inner = w1a - w0b;
  t.runq = q0 >= 0 && q1 >= 0 ? q1 - q0 : -1;
  t.extra = (wq1 - wq0) - t.wall;
  return t;
}

static void wait_for(atomic_int *v, int want, int64_t max_ns) {
  int64_t end = clock_ns(CLOCK_MONOTONIC) + max_ns;
  while (atomic_load(v) < want && clock_ns(CLOCK_MONOTONIC) < end)
    sleep_ns(2 * MS);
}

/* The number after "key": in s (first occurrence), or -999999. */
static long long num(const char *s, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = s ? strstr(s, pat) : NULL;
  return p ? strtoll(p + strlen(pat), NULL, 10) : -999999;
}

/* The text of the lag report that began within 30 ms of unix_ms (malloc'ed),
   NULL if none. */
static char *report_of(const char *dir, int64_t unix_ms) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char *found = NULL;
  while (d && !found && (e = readdir(d))) {
    long long start;
    char kind[16];
    if (sscanf(e->d_name, "%lld-%15[a-z_].json", &start, kind) != 2 ||
        llabs(start - unix_ms) > 30)
      continue;
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    found = calloc(1, 1 << 20);
    size_t n = fread(found, 1, (1 << 20) - 1, f);
    found[n] = 0;
    fclose(f);
  }
  if (d)
    closedir(d);
  return found;
}

static void check_split(const char *dir, const char *what, const truth_t *t,
                        bool compute, int seen_late) {
  char *r = report_of(dir, t->unix_ms);
  CHECK(r != NULL, "%s: no report", what);
  if (!r)
    return;
  const char *m = strstr(r, "\"main_thread\":");
  long long wall = num(m, "wall_ms"), cpu = num(m, "cpu_ms"),
            runq = num(m, "runnable_ms"), blocked = num(m, "blocked_ms"),
            late = strstr(m ? m : "", "\"seen_late\":true") ? 1 : 0;
  long long twall = t->wall / MS, tcpu = t->cpu / MS,
            trunq = t->runq >= 0 ? t->runq / MS : -1, extra = t->extra / MS;
  long long tblocked = trunq >= 0 ? twall - tcpu - trunq : -1;
  printf("%s: report wall %lld cpu %lld runnable %lld blocked %lld late %lld; "
         "own wall %lld cpu %lld runq %lld blocked %lld (+%lld ms around)\n",
         what, wall, cpu, runq, blocked, late, twall, tcpu, trunq, tblocked,
         extra);
  /* The library dates the stretch inside the busy and idle calls, so
     its wall lies between the inner and the outer readings; a busy
     machine may preempt the thread inside either call (seen: 4 ms under
     qemu), so the lower bound is the inner one, not a fixed slack. */
  long long tinner = t->inner / MS;
  CHECK(wall <= twall + 1 && wall >= tinner - 1,
        "%s: wall %lld ms, the stretch %lld ms (%lld inside the calls)", what,
        wall, twall, tinner);
  CHECK(cpu >= tcpu - 6 && cpu <= tcpu + 6, "%s: cpu %lld ms, own %lld ms",
        what, cpu, tcpu);
  if (trunq >= 0) {
    /* The own run-queue figure may hold up to `extra` more (its reads
       lie outside the stretch), so blocked may be that much less. */
    CHECK(runq >= trunq - extra - 6 && runq <= trunq + 6,
          "%s: runnable %lld ms, own run-queue wait %lld ms", what, runq,
          trunq);
    CHECK(blocked <= tblocked + extra + 8 && blocked >= tblocked - 8,
          "%s: blocked %lld ms, own %lld ms", what, blocked, tblocked);
  }
  if (compute)
    CHECK(cpu + runq >= blocked,
          "%s: a compute lag reads blocked (cpu %lld + runnable %lld < "
          "blocked %lld)",
          what, cpu, runq, blocked);
  if (seen_late >= 0)
    CHECK(late == seen_late, "%s: seen_late %lld, expected %d", what, late,
          seen_late);
  free(r);
}

int main(void) {
  char dir[] = "/tmp/snap-split-own-XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  snap_lag_config_t c;
  snap_lag_config_default(&c);
  c.report_dir = dir;
  c.threshold_ms = 100;
  c.sample_interval_ms = 20;
  c.cpu_percent = 0;
  c.max_reports_per_day = 1000;
  c.on_report_write = on_write;
  int rc = snap_lag_start(&c);
  CHECK(rc == SNAP_OK, "snap_lag_start: %d", rc);
  if (rc != SNAP_OK)
    return check_result("test_lag_split_own");
  sleep_ns(100 * MS);

  /* 1: the end seen late. */
  atomic_store(&g_hold, 1);
  truth_t a = stretch(own_compute, 150 * MS);
  sleep_ns(600 * MS); /* blocked, while the watchdog is held */
  atomic_store(&g_release, 1);
  wait_for(&g_finals, 1, 10000 * MS);
  sleep_ns(100 * MS);
  check_split(dir, "end seen late", &a, true, -1);

  /* 2: a lag seen only after it ended. */
  atomic_store(&g_release, 0);
  int finals = atomic_load(&g_finals);
  atomic_store(&g_hold, 1);
  snap_lag_loop_busy();
  wait_for(&g_holding, 1, 10000 * MS); /* a sleep lag, detected: held */
  snap_lag_loop_idle();
  CHECK(atomic_load(&g_holding) == 1, "the watchdog was never held");
  truth_t b = stretch(own_compute, 130 * MS);
  sleep_ns(600 * MS);
  atomic_store(&g_release, 1);
  wait_for(&g_finals, finals + 2, 10000 * MS);
  sleep_ns(100 * MS);
  check_split(dir, "seen after it ended", &b, true, 1);

  snap_lag_stop();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
  return check_result("test_lag_split_own");
}
