/*
 * test_clock.h — the test suite's clocks, sleeps and busy loops, one copy.
 *
 * Tests measure their ground truth with their own clocks (the box is shared:
 * wall time alone says little about a loaded machine), so every test reads
 * the same few clocks the same way:
 *   mono_*      CLOCK_MONOTONIC: intervals and deadlines;
 *   unix_*      CLOCK_REALTIME: to compare with the library's timestamps
 *               (reports and traces carry Unix time);
 *   thread_cpu_ns / clock_ns(CLOCK_*_CPUTIME_ID): what this thread (or
 *               process) really ran, which load does not stretch.
 * A sleep sleeps its whole length: the library's sampling signal lands in
 * sleeping test threads, and an interrupted nanosleep resumes with what is
 * left. Two busy loops, because a test means one of two things by "busy":
 *   spin_ms     on the CPU until ms of wall time have passed (a lag of a
 *               known length on the clock);
 *   compute_ns  until this thread has used ns of CPU time (a known amount
 *               of work, however long a loaded box takes to give it).
 * And the run-queue clock: runq_wait_ns, how long a thread has waited for
 * a CPU (Linux's schedstat), the witness of what load took from a test;
 * and the CPUs' steal (cpu_steal_ns), what the hypervisor took from the
 * whole guest, which no thread's schedstat counts.
 * POSIX only (Linux and macOS run the tests that include it).
 */
#ifndef SNAP_TEST_CLOCK_H
#define SNAP_TEST_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline int64_t clock_ns(clockid_t clk) {
  struct timespec t;
  clock_gettime(clk, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Seconds of any clock, for figures printed or compared in seconds. */
static inline double clock_s(clockid_t clk) {
  return (double)clock_ns(clk) / 1e9;
}

static inline int64_t mono_ns(void) { return clock_ns(CLOCK_MONOTONIC); }
static inline int64_t mono_ms(void) { return mono_ns() / 1000000; }
static inline double mono_s(void) { return clock_s(CLOCK_MONOTONIC); }
static inline int64_t unix_ns(void) { return clock_ns(CLOCK_REALTIME); }
static inline int64_t unix_ms(void) { return unix_ns() / 1000000; }
static inline int64_t thread_cpu_ns(void) {
  return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* Sleeps ns, resuming after signals (EINTR) until the whole time is gone. */
static inline void sleep_ns(int64_t ns) {
  if (ns <= 0)
    return;
  struct timespec left = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  while (nanosleep(&left, &left) != 0 && errno == EINTR)
    ;
}

static inline void sleep_ms(int64_t ms) { sleep_ns(ms * 1000000); }

/* Some work the compiler cannot drop; the result feeds a volatile sink. */
static volatile uint64_t test_clock_sink;
static inline void test_clock_work(void) {
  uint64_t x = test_clock_sink | 1;
  for (int i = 0; i < 1000; i++)
    x = x * 6364136223846793005u + 1442695040888963407u;
  test_clock_sink = x;
}

/* On the CPU until ms of wall (monotonic) time have passed. */
static inline void spin_ms(int64_t ms) {
  int64_t end = mono_ns() + ms * 1000000;
  while (mono_ns() < end)
    test_clock_work();
}

/* Computes until this thread has used cpu_ns more CPU time. */
static inline void compute_ns(int64_t cpu_ns) {
  int64_t end = thread_cpu_ns() + cpu_ns;
  while (thread_cpu_ns() < end)
    test_clock_work();
}

static inline void compute_ms(int64_t ms) { compute_ns(ms * 1000000); }

/* How long thread tid (0: the calling thread) has waited for a CPU since
   it started: schedstat's second field, the kernel's run_delay; -1 where
   unknown (no schedstat: not Linux, or a kernel without it). */
static inline int64_t runq_wait_ns(int tid) {
  char path[96];
  if (tid)
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
  else
    snprintf(path, sizeof path, "/proc/thread-self/schedstat");
  FILE *f = fopen(path, "r");
  unsigned long long on_cpu = 0, waited = 0;
  int n = f ? fscanf(f, "%llu %llu", &on_cpu, &waited) : 0;
  if (f)
    fclose(f);
  return n == 2 ? (int64_t)waited : -1;
}

/* Each CPU's steal time so far (ns): the time the hypervisor ran
   something else while the guest wanted that CPU (/proc/stat: the
   eighth number of a "cpuN" line, in USER_HZ ticks). Into out[max]; returns how
   many CPUs were read, 0 where unknown. A thread on a stolen CPU neither
   runs nor waits on a run queue: its schedstat does not show the stall
   (seen beside a CI run: a watchdog asleep 96 ms past its wake with 9 ms
   of run-queue wait, while cpu0 lost 100 ms). */
static inline int cpu_steal_ns(int64_t *out, int max) {
  FILE *f = fopen("/proc/stat", "r");
  char line[512];
  int n = 0;
  long hz = sysconf(_SC_CLK_TCK);
  while (f && n < max && fgets(line, sizeof line, f)) {
    if (strncmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9')
      continue;
    long long v[8];
    if (sscanf(line, "%*s %lld %lld %lld %lld %lld %lld %lld %lld", &v[0],
               &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
      break;
    out[n++] = hz > 0 ? (int64_t)(v[7] * (1000000000 / hz)) : 0;
  }
  if (f)
    fclose(f);
  return n;
}

/* The most any one CPU lost to the hypervisor between two readings of
   cpu_steal_ns (n CPUs each). */
static inline int64_t cpu_steal_max(const int64_t *before, int nb,
                                    const int64_t *after, int na) {
  int64_t most = 0;
  for (int i = 0; i < nb && i < na; i++)
    if (after[i] - before[i] > most)
      most = after[i] - before[i];
  return most;
}

#endif
