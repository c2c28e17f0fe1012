/*
 * semaphore.c — the platform semaphore on Apple: a dispatch_semaphore_t,
 * whose pointer is kept in the core's opaque snap__sem_t.
 *
 * Wake-ups only (the lag watchdog's): a dispatch_semaphore records no
 * owner, so a waiter donates no priority to whoever will signal it. Mutual
 * exclusion therefore uses snap__lock_t (lock.c: os_unfair_lock, which
 * does donate). An uncontended wait or signal is one atomic in user space.
 *
 * It is created with a count of 0 and signalled up to the initial value:
 * libdispatch traps ("Semaphore object deallocated while in use") when a
 * semaphore is released with a count below the one it was created with,
 * which a cache destroyed while one of its stripes is held would hit.
 *
 * Timed waits: the deadline is in snap__plat_now_ns's clock
 * (CLOCK_UPTIME_RAW, mach absolute time, not counting sleep). A
 * dispatch_time built from DISPATCH_TIME_NOW counts in that same clock, so
 * the deadline becomes "now + (deadline - now)" with no clock conversion;
 * a deadline already past still polls the semaphore once.
 *
 * Must not: be used from the stopped window (a wait may sleep).
 */
#include <dispatch/dispatch.h>
#include <stdint.h>
#include <string.h>

#include "platform/darwin/darwin.h"

_Static_assert(sizeof(dispatch_semaphore_t) <= sizeof(snap__sem_t),
               "a dispatch_semaphore_t must fit in snap__sem_t");
_Static_assert(_Alignof(dispatch_semaphore_t) <= _Alignof(snap__sem_t),
               "snap__sem_t must be aligned for a dispatch_semaphore_t");

static dispatch_semaphore_t get(const snap__sem_t *s) {
  dispatch_semaphore_t d;
  memcpy(&d, s->opaque, sizeof d);
  return d;
}

int snap__plat_sem_init(snap__sem_t *s, unsigned value) {
  dispatch_semaphore_t d = dispatch_semaphore_create(0);
  if (!d)
    return SNAP_ENOMEM;
  for (unsigned i = 0; i < value; i++)
    dispatch_semaphore_signal(d);
  memset(s->opaque, 0, sizeof s->opaque);
  memcpy(s->opaque, &d, sizeof d);
  return SNAP_OK;
}

void snap__plat_sem_wait(snap__sem_t *s) {
  dispatch_semaphore_wait(get(s), DISPATCH_TIME_FOREVER);
}

void snap__plat_sem_post(snap__sem_t *s) { dispatch_semaphore_signal(get(s)); }

void snap__plat_sem_destroy(snap__sem_t *s) {
  dispatch_semaphore_t d = get(s);
  if (d)
    dispatch_release(d);
  memset(s->opaque, 0, sizeof s->opaque);
}

int snap__plat_sem_timedwait(snap__sem_t *s, uint64_t deadline_ns) {
  uint64_t now = snap__plat_now_ns();
  dispatch_time_t when = DISPATCH_TIME_NOW;
  if (deadline_ns > now) {
    uint64_t delta = deadline_ns - now;
    when = dispatch_time(DISPATCH_TIME_NOW,
                         delta > INT64_MAX ? INT64_MAX : (int64_t)delta);
  }
  return dispatch_semaphore_wait(get(s), when) == 0 ? SNAP_OK : SNAP_ETIMEDOUT;
}
