/*
 * busy_child.h — a child process that spins on a CPU until it is killed,
 * the load some tests put beside what they measure.
 *
 * It dies with its parent (PR_SET_PDEATHSIG): a test that crashes or is
 * killed by ctest's timeout must not leave its load spinning. Seen here:
 * three trace_lag_phases children spun on for 25 minutes after their
 * parent segfaulted, and a CI run beside them failed. Linux only, as the
 * tests that use it.
 */
#ifndef SNAP_TEST_BUSY_CHILD_H
#define SNAP_TEST_BUSY_CHILD_H

#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <unistd.h>

/* The child's pid (-1: fork failed); cpu >= 0 pins it to that CPU. */
static inline pid_t busy_child(int cpu) {
  pid_t parent = getpid();
  pid_t p = fork();
  if (p != 0)
    return p;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) /* the parent died before the line above */
    _exit(0);
  if (cpu >= 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    sched_setaffinity(0, sizeof one, &one);
  }
  volatile uint64_t x = 1;
  for (;;)
    x = x * 6364136223846793005u + 1;
}

#endif
