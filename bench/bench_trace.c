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
 *     running, and the files' sizes.
 *
 * Usage: bench_trace [--write-seconds S]   (S: the trace's length, 30)
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

#include <pthread.h>

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
  part_sampler();
  part_perf(argv[0]);
  part_write(write_s);
  return 0;
}
