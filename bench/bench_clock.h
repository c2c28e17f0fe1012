/*
 * bench_clock.h — what the benchmarks time with and how they summarise
 * repeats: the monotonic clock and the thread's CPU clock in ns, and the
 * median of a few runs (a
 * shared VM's outliers move a mean, not a median). Header-only: each
 * bench is one program.
 */
#ifndef STACKSNAP_BENCH_CLOCK_H
#define STACKSNAP_BENCH_CLOCK_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static inline uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The calling thread's CPU time in ns: what a timed loop itself cost. On
   a shared machine a loop of a millisecond is often preempted for tens of
   them (2 cores, a load of 15: a pass of 1 000 cold lookups in libLLVM
   read 1 us a lookup on some passes and 20 us on others, the difference
   all time off the CPU); time spent in the kernel for the loop (page
   faults, reads) is still counted. */
static inline uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median of n values (sorts them). */
static inline double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
