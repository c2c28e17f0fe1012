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
 * and continued the process). On a quiet box every stretch is short and
 * no report may come; on a loaded one (qemu with every core busy, where a
 * stretch's 20 ms of CPU took 450 ms) a stretch may really outlast the
 * threshold, and then its report is right. So: every report must be of a
 * stretch whose own busy time reached the threshold (less 150 ms of
 * margin for the stops' edges), and none may be missing for a stretch
 * that passed it by as much.
 *
 * Then the control: the same loop with one stretch blocked for 1.5 s (a
 * real lag, the sampling waits going on as before) must be reported, with
 * a duration of at least that: the stop rule must not eat real lags.
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
static uint64_t g_stop[3][2]; /* [i][0] stopped, [i][1] continued */

/* A stretch's busy time: its length less the stops inside it. */
static uint64_t own_busy(int i) {
  uint64_t len = g_end[i] - g_begin[i];
  for (int k = 0; k < 3; k++) {
    uint64_t a = g_stop[k][0] > g_begin[i] ? g_stop[k][0] : g_begin[i];
    uint64_t b = g_stop[k][1] < g_end[i] ? g_stop[k][1] : g_end[i];
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
    uint64_t t[3][2];
    for (int i = 0; i < 3; i++) {
      sleep_ms(500);
      t[i][0] = clock_ns(CLOCK_MONOTONIC);
      kill(parent, SIGSTOP);
      sleep_ms(1500);
      kill(parent, SIGCONT);
      t[i][1] = clock_ns(CLOCK_MONOTONIC);
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
    uint64_t b = own_busy(i);
    may += b + margin >= threshold;
    must += b >= threshold + margin;
    longest_own = b > longest_own ? b : longest_own;
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
  if (getenv("SNAP_KEEP"))
    return check_result("test_lag_stopped");
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    return 1;
  return check_result("test_lag_stopped");
}
