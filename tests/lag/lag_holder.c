/*
 * lag_holder.c — a child process for test_lag_liveness (liveness.py): one
 * lag that lasts as long as the test says, or one start and stop.
 *
 *   lag_holder DIR hold    start; the loop goes busy and waits for a line
 *                          on stdin (blocking: the lag lasts until the
 *                          test ends it); prints the report's path once
 *                          its file is written (ongoing); then idle, stop
 *   lag_holder DIR start   start and stop (what a start does to the
 *                          reports another process left ongoing)
 *
 * Every path on_report announces is printed on stdout, one a line.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "stacksnap.h"

static void on_report(const char *path, void *ctx) {
  (void)ctx;
  char line[1200];
  int n = snprintf(line, sizeof line, "%s\n", path);
  if (n > 0 && (size_t)n < sizeof line && write(1, line, (size_t)n) < 0)
    _exit(3);
}

int main(int argc, char **argv) {
  if (argc != 3)
    return 2;
  bool hold = strcmp(argv[2], "hold") == 0;
  snap_lag_config_t c;
  snap_lag_config_default(&c);
  c.report_dir = argv[1];
  c.threshold_ms = 50;
  c.sample_interval_ms = 10;
  c.hang_ms = 3600000; /* the held lag stays a "lag" */
  c.cpu_percent = 0;
  c.max_threads = 4;
  c.on_report = on_report;
  int rc = snap_lag_start(&c);
  if (rc != SNAP_OK) {
    fprintf(stderr, "lag_holder: snap_lag_start: %s\n", snap_strerror(rc));
    return 1;
  }
  if (hold) {
    snap_lag_loop_busy();
    char b;
    ssize_t r;
    while ((r = read(0, &b, 1)) < 0 && errno == EINTR)
      ;
    snap_lag_loop_idle();
  }
  return snap_lag_stop() == SNAP_OK ? 0 : 1;
}
