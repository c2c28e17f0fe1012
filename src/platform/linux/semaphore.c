/*
 * semaphore.c — the platform semaphore on Linux: a POSIX sem_t stored in
 * the core's opaque snap__sem_t.
 *
 * Wake-ups only (the lag watchdog's): mutual exclusion uses snap__lock_t
 * (lock.c). An uncontended sem_wait/sem_post is one atomic each in glibc.
 *
 * Timed waits use sem_clockwait on CLOCK_MONOTONIC (glibc 2.30+), the clock
 * snap__plat_now_ns reads, so a deadline the core computed from that clock
 * means what it says. sem_timedwait would measure against CLOCK_REALTIME,
 * which jumps when the wall clock is set.
 *
 * Must not: be used from the stopped window (sem_wait may sleep).
 */
#include <errno.h>
#include <semaphore.h>
#include <time.h>

#include "platform/linux/linux.h"

_Static_assert(sizeof(sem_t) <= sizeof(snap__sem_t),
               "sem_t must fit in snap__sem_t");
_Static_assert(_Alignof(sem_t) <= _Alignof(snap__sem_t),
               "snap__sem_t must be aligned for sem_t");

static sem_t *sem(snap__sem_t *s) { return (sem_t *)(void *)s->opaque; }

int snap__plat_sem_init(snap__sem_t *s, unsigned value) {
  return sem_init(sem(s), 0, value) == 0 ? SNAP_OK : SNAP_EINVAL;
}

void snap__plat_sem_wait(snap__sem_t *s) {
  while (sem_wait(sem(s)) != 0 && errno == EINTR)
    ;
}

void snap__plat_sem_post(snap__sem_t *s) { sem_post(sem(s)); }

void snap__plat_sem_destroy(snap__sem_t *s) { sem_destroy(sem(s)); }

int snap__plat_sem_timedwait(snap__sem_t *s, uint64_t deadline_ns) {
  struct timespec ts = {.tv_sec = (time_t)(deadline_ns / 1000000000u),
                        .tv_nsec = (long)(deadline_ns % 1000000000u)};
  for (;;) {
    if (sem_clockwait(sem(s), CLOCK_MONOTONIC, &ts) == 0)
      return SNAP_OK;
    if (errno != EINTR)
      return SNAP_ETIMEDOUT; /* ETIMEDOUT; EINVAL only for a bad sem */
  }
}
