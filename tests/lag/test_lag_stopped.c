/*
 * test_lag_stopped.c — a process stopped (SIGSTOP) while the watchdog is
 * working, not sleeping, makes no lag (issue 13: a stop was seen only as a
 * late wake, so a stop that landed in a sample's wait counted as busy time
 * and a steady loop was reported as a 2 s lag under TSan and qemu).
 *
 * The main thread blocks the sampling signal, so every point sample the
 * watchdog takes (every 10 ms while the loop is busy) waits out the whole
 * sample timeout (100 ms): the watchdog spends nearly all its time in that
 * wait. The loop is steady: busy stretches of 20 ms of the main thread's
 * own CPU time (so a stretch goes on after the stop, for the rest of its
 * work: the watchdog has the time to look at it) and 2 ms idle, far below
 * the 1 s threshold, whatever the load. A child stops and continues the
 * process three times, 1.5 s each. No report may come.
 *
 * A stop inside a sample's wait cannot be told from the wait itself for up
 * to the wait's legitimate length (the timeout, and as much again for the
 * sampler lock): that much of a stop may count as busy, which is why the
 * threshold is well above it.
 *
 * The oracle is each stretch's own busy time: its length by this test's
 * clock less its overlap with the stops (the child reports when it stopped
 * and continued the process). A stop is at most from the SIGSTOP to the
 * SIGCONT, and at least from when the child saw every thread stopped
 * (state T) to the SIGCONT: a thread stops only when it next gets a CPU,
 * and runs or waits for one until then, which the watchdog rightly counts
 * as busy (seen beside 3 busy loops and the suite: a main thread waited
 * 600 ms on a run queue before it stopped). On a quiet box every stretch
 * is short and no report may come; on a loaded one (qemu with every core
 * busy, where a stretch's 20 ms of CPU took 450 ms) a stretch may really
 * outlast the threshold, and then its report is right. So: every report
 * must be of a stretch whose longest own busy time reached the threshold
 * (less 150 ms of margin for the stops' edges), and none may be missing
 * for a stretch whose shortest passed it by as much.
 *
 * Then the control: the same loop with one stretch blocked for 1.5 s (a
 * real lag, the sampling waits going on as before) must be reported, with
 * a duration of at least that: the stop rule must not eat real lags.
 *
 * Then a real lag with stops inside its sampling waits (issue 25: a
 * steady loop beside 3 busy loops, stopped 2 s, got a 250 ms lag report 1
 * run in 3): one stretch of computation, the signal blocked, so the
 * watchdog spends nearly all of it waiting out samples, stopped 6 times
 * for 250 ms. A stop that lands in a sample's wait makes that wait run
 * past its timeout; the wait explains only the time the process ran (or
 * its main thread waited for a CPU), never the stop: the report's
 * duration must be the stretch's own busy time (its length less the
 * stops, each taken as at least the stretch from when the stopper saw
 * every thread stopped (state T: a thread stops only when it next gets a
 * CPU, and runs or waits for one until then) to when it sent SIGCONT)
 * within 20 ms a stop and 20 ms. A wait that counted up to its 120 ms cap of
 * every stop added 20 to 120 ms each: 420 ms in all here. The threshold (2 s of
 * its own) is reached after the last stop, so no report is written while a stop
 * may land: a stop inside a report's fsync is counted whole as the watchdog's
 * wait on the disk, a hole this test leaves out.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "stacksnap.h"

static atomic_int g_reports;

#define MAX_STRETCHES 20000
static uint64_t g_begin[MAX_STRETCHES], g_end[MAX_STRETCHES];
/* [i][0] before the SIGSTOP, [i][1] every thread seen stopped, [i][2]
   before the SIGCONT, [i][3] after it. */
static uint64_t g_stop[3][4];

/* A stretch's busy time: its length less the stops inside it, each the
   widest it can have been (the shortest busy time) or the narrowest. */
static uint64_t own_busy(int i, bool widest) {
  uint64_t len = g_end[i] - g_begin[i];
  for (int k = 0; k < 3; k++) {
    uint64_t from = g_stop[k][widest ? 0 : 1], to = g_stop[k][widest ? 3 : 2];
    uint64_t a = from > g_begin[i] ? from : g_begin[i];
    uint64_t b = to < g_end[i] ? to : g_end[i];
    if (b > a)
      len -= b - a < len ? b - a : len;
  }
  return len;
}
static void on_report(const char *path, void *ctx) {
  (void)path;
  (void)ctx;
  atomic_fetch_add(&g_reports, 1);
}

static uint64_t clock_ns(clockid_t clk) {
  struct timespec t;
  clock_gettime(clk, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Busy for ms of this thread's CPU time (not wall time). */
static void compute_ms(unsigned ms) {
  uint64_t end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + ms * 1000000ull;
  while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < end)
    ;
}

static void sleep_ms(unsigned ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};
  while (nanosleep(&t, &t) != 0 && errno == EINTR)
    ;
}

/* The largest "duration_ms" among the reports in dir. */
static long longest_report(const char *dir) {
  long best = -1;
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (!strstr(e->d_name, ".json"))
      continue;
    char path[600], text[8192];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    const char *p = strstr(text, "\"duration_ms\":");
    if (p && atol(p + 14) > best)
      best = atol(p + 14);
  }
  if (d)
    closedir(d);
  return best;
}

/* Whether every thread of process pid is stopped (proc(5): state T). */
static bool all_stopped(pid_t pid) {
  char path[300], text[512];
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  DIR *d = opendir(path);
  struct dirent *e;
  bool all = d != NULL;
  while (all && (e = readdir(d))) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    snprintf(path, sizeof path, "/proc/%d/task/%s/stat", (int)pid, e->d_name);
    FILE *f = fopen(path, "r");
    if (!f)
      continue; /* exited */
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    const char *p = strrchr(text, ')');
    all = p && p[1] == ' ' && p[2] == 'T';
  }
  if (d)
    closedir(d);
  return all;
}

/* A real lag with stops inside it; its report's duration against its own
   busy time. */
#define STOPS 6
static void stops_inside_a_lag(void) {
  char dir[] = "/tmp/snap_lag_stopped_in.XXXXXX";
  if (!mkdtemp(dir))
    return;
  snap_lag_config_t c;
  snap_lag_config_default(&c);
  c.report_dir = dir;
  c.threshold_ms = 2000; /* detected, and written, after the stops */
  c.hang_ms = 600000;
  c.sample_interval_ms = 10;
  c.cpu_percent = 0;
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  int times[2];
  if (pipe(times) != 0)
    return;
  pid_t parent = getpid();
  uint64_t begin = clock_ns(CLOCK_MONOTONIC);
  snap_lag_loop_busy();
  pid_t child = fork();
  if (child == 0) {
    /* [i][0..1] around the SIGSTOP, [i][2..3] around the SIGCONT. */
    uint64_t t[STOPS][4];
    for (int i = 0; i < STOPS; i++) {
      sleep_ms(150);
      t[i][0] = clock_ns(CLOCK_MONOTONIC);
      kill(parent, SIGSTOP);
      /* Stopped once every thread is: a thread stops when it next gets
         a CPU (on a busy box, tens of ms later), and runs or waits for
         a CPU until then. */
      for (int k = 0; k < 2000 && !all_stopped(parent); k++)
        sleep_ms(1);
      t[i][1] = clock_ns(CLOCK_MONOTONIC);
      sleep_ms(250);
      t[i][2] = clock_ns(CLOCK_MONOTONIC);
      kill(parent, SIGCONT);
      t[i][3] = clock_ns(CLOCK_MONOTONIC);
    }
    _exit(write(times[1], t, sizeof t) == sizeof t ? 0 : 1);
  }
  int status;
  while (waitpid(child, &status, WNOHANG) == 0)
    compute_ms(5);
  compute_ms(1500);
  snap_lag_loop_idle();
  uint64_t end = clock_ns(CLOCK_MONOTONIC);
  uint64_t t[STOPS][4];
  CHECK(read(times[0], t, sizeof t) == sizeof t, "the stopper's times");
  close(times[0]);
  close(times[1]);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  uint64_t surely = 0, at_most = 0; /* stopped */
  for (int i = 0; i < STOPS; i++) {
    surely += t[i][2] > t[i][1] ? t[i][2] - t[i][1] : 0;
    at_most += t[i][3] - t[i][0];
  }
  long own_max = (long)((end - begin - surely) / 1000000u);
  long own_min = (long)((end - begin - at_most) / 1000000u);
  long got = longest_report(dir);
  printf("a lag of %ld to %ld ms of its own, stopped %d times: reported as "
         "%ld ms\n",
         own_min, own_max, STOPS, got);
  CHECK(got >= 0, "the lag was not reported");
  CHECK(got <= own_max + 20 * STOPS + 20,
        "stops inside sampling waits counted as busy: reported %ld ms, its "
        "own busy time at most %ld ms",
        got, own_max);
  CHECK(got + 150 >= own_min,
        "the lag's own time discounted: reported %ld ms, its own at least "
        "%ld ms",
        got, own_min);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (check_failures == 0 && !getenv("SNAP_KEEP") && system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
}

int main(void) {
  char dir[] = "/tmp/snap_lag_stopped.XXXXXX";
  if (!mkdtemp(dir))
    return 1;
  /* The sampling signal is a real-time one; block them all here (the
     watchdog's thread starts with every signal blocked anyway). */
  sigset_t rt;
  sigemptyset(&rt);
  for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
    sigaddset(&rt, s);
  pthread_sigmask(SIG_BLOCK, &rt, NULL);
  CHECK_EQ(snap_set_sample_timeout_ms(100), SNAP_OK);

  snap_lag_config_t c;
  snap_lag_config_default(&c);
  c.report_dir = dir;
  c.threshold_ms = 1000;
  c.sample_interval_ms = 10;
  c.cpu_percent = 0;
  c.on_report = on_report;
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);

  int times[2];
  if (pipe(times) != 0)
    return 1;
  pid_t parent = getpid(), child = fork();
  if (child == 0) {
    uint64_t t[3][4];
    for (int i = 0; i < 3; i++) {
      sleep_ms(500);
      t[i][0] = clock_ns(CLOCK_MONOTONIC);
      kill(parent, SIGSTOP);
      for (int k = 0; k < 2000 && !all_stopped(parent); k++)
        sleep_ms(1);
      t[i][1] = clock_ns(CLOCK_MONOTONIC);
      sleep_ms(1500);
      t[i][2] = clock_ns(CLOCK_MONOTONIC);
      kill(parent, SIGCONT);
      t[i][3] = clock_ns(CLOCK_MONOTONIC);
    }
    _exit(write(times[1], t, sizeof t) == sizeof t ? 0 : 1);
  }
  int status, n = 0;
  while (waitpid(child, &status, WNOHANG) == 0 && n < MAX_STRETCHES) {
    g_begin[n] = clock_ns(CLOCK_MONOTONIC);
    snap_lag_loop_busy();
    compute_ms(20);
    snap_lag_loop_idle();
    g_end[n++] = clock_ns(CLOCK_MONOTONIC);
    sleep_ms(2);
  }
  CHECK(read(times[0], g_stop, sizeof g_stop) == sizeof g_stop,
        "the stopper's times");
  sleep_ms(300); /* let the watchdog see the last stretch end */
  int stopped_reports = atomic_load(&g_reports);
  const uint64_t threshold = 1000 * 1000000ull, margin = 150 * 1000000ull;
  int may = 0, must = 0;
  uint64_t longest_own = 0;
  for (int i = 0; i < n; i++) {
    uint64_t most = own_busy(i, false), least = own_busy(i, true);
    may += most + margin >= threshold;
    must += least >= threshold + margin;
    longest_own = most > longest_own ? most : longest_own;
  }
  printf("3 stops of 1.5 s over %d steady stretches (longest %llu ms of "
         "its own): %d report(s), %d to %d due\n",
         n, (unsigned long long)(longest_own / 1000000u), stopped_reports, must,
         may);
  CHECK(stopped_reports <= may,
        "a stop during the watchdog's sampling made %d lag report(s) where "
        "%d stretch(es) were that busy, longest report %ld ms",
        stopped_reports, may, longest_report(dir));
  CHECK(stopped_reports >= must, "%d report(s) for %d real lag(s)",
        stopped_reports, must);

  /* Control: a real 1.5 s lag, under the same sampling waits. */
  snap_lag_loop_busy();
  compute_ms(5);
  sleep_ms(1500);
  snap_lag_loop_idle();
  for (int i = 0; i < 1000 && atomic_load(&g_reports) == stopped_reports; i++)
    sleep_ms(10);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  long longest = longest_report(dir);
  printf("control lag: %d report(s), longest %ld ms\n",
         atomic_load(&g_reports) - stopped_reports, longest);
  CHECK(atomic_load(&g_reports) > stopped_reports, "a real 1.5 s lag not seen");
  CHECK(longest >= 1500, "the real lag reported as %ld ms", longest);
  stops_inside_a_lag();
  if (getenv("SNAP_KEEP"))
    return check_result("test_lag_stopped");
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    return 1;
  return check_result("test_lag_stopped");
}
