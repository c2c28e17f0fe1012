/*
 * lag_churn.c — a child process for test_lag_kills: a manual event loop
 * whose iterations are lags, hangs and short stretches in three different
 * functions, so the watchdog writes, updates, renames and converts report
 * files all the time; the test kills it at random instants.
 *
 *   lag_churn DIR LOG SECONDS
 *
 * Every path on_report announces is appended to LOG (after the rename, so
 * each logged file was in place). SECONDS 0: start, stop, exit (the start
 * turns what a killed run left ongoing into hang_killed reports).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../test_clock.h"
#include "stacksnap.h"

static int g_log = -1;

static void on_report(const char *path, void *ctx) {
  (void)ctx;
  char line[1200];
  int n = snprintf(line, sizeof line, "%s\n", path);
  if (n > 0 && write(g_log, line, (size_t)n) < 0)
    _exit(3);
}

/* Three call paths, so annealing does not fold them into one. */
#define CHURN(name)                                                            \
  void name(double s);                                                         \
  __attribute__((noinline)) void name(double s) {                              \
    volatile unsigned x = 1;                                                   \
    double end = mono_s() + s;                                                 \
    while (mono_s() < end)                                                     \
      for (int i = 0; i < 1000; i++)                                           \
        x = x * 1103515245u + 12345u;                                          \
  }
CHURN(churn_a)
CHURN(churn_b)
CHURN(churn_c)

int main(int argc, char **argv) {
  if (argc != 4)
    return 2;
  g_log = open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (g_log < 0)
    return 2;
  snap_lag_config_t c;
  snap_lag_config_default(&c);
  c.report_dir = argv[1];
  c.threshold_ms = 20;
  c.sample_interval_ms = 5;
  c.hang_ms = 100;
  c.max_reports_per_day = 100000;
  c.cpu_percent = 0;
  c.max_threads = 4;
  c.on_report = on_report;
  int rc = snap_lag_start(&c);
  if (rc != SNAP_OK) {
    fprintf(stderr, "lag_churn: snap_lag_start: %s\n", snap_strerror(rc));
    return 1;
  }
  /* The test times its kills from here. */
  fputs("ready\n", stdout);
  fflush(stdout);
  double seconds = atof(argv[3]);
  double end = mono_s() + seconds;
  unsigned seed = (unsigned)getpid();
  void (*const work[])(double) = {churn_a, churn_b, churn_c};
  for (int i = 0; mono_s() < end; i++) {
    snap_lag_loop_busy();
    work[i % 3]((double)(rand_r(&seed) % 150) / 1000.0); /* 0..150 ms */
    snap_lag_loop_idle();
    struct timespec t = {0, 5000000};
    nanosleep(&t, NULL);
  }
  return snap_lag_stop() == SNAP_OK ? 0 : 1;
}
