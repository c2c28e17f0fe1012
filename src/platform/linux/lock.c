/*
 * lock.c — the platform lock on Linux: a pthread_mutex_t stored in the
 * core's opaque snap__lock_t.
 *
 * A priority-inheriting mutex (PTHREAD_PRIO_INHERIT), Linux's counterpart
 * of Apple's os_unfair_lock: the futex word holds the owner's thread id
 * (futex(2), "Priority-inheritance futexes"), so a contended waiter tells
 * the kernel whom it waits for, and the kernel lends the owner the
 * waiter's priority (which matters for real-time threads; SCHED_OTHER
 * threads have none to lend). Uncontended, lock and unlock are one
 * compare-and-swap each in user space, as for a normal mutex. Where the
 * kernel has no PI futexes (pthread_mutex_init says ENOTSUP), a normal
 * mutex. Checked: qemu-user 7.2 (the arm64 test configurations) emulates
 * FUTEX_LOCK_PI/UNLOCK_PI.
 *
 * Fork: posix/lock_fork.c holds every lock across fork() and calls
 * snap__lock_raw_init in the child.
 *
 * Must not: be used from the stopped window (a lock may sleep, and the
 * sampled thread may hold it).
 */
#include <pthread.h>
#include <string.h>

#include "platform/posix/locks.h"

_Static_assert(sizeof(pthread_mutex_t) <= sizeof(snap__lock_t),
               "pthread_mutex_t must fit in snap__lock_t");
_Static_assert(_Alignof(pthread_mutex_t) <= _Alignof(snap__lock_t),
               "snap__lock_t must be aligned for pthread_mutex_t");

static pthread_mutex_t *mutex(snap__lock_t *l) {
  return (pthread_mutex_t *)(void *)l->opaque;
}

/* In the fork child this overwrites a mutex the parent's forking thread
   held: zeroed first, so pthread_mutex_init sees fresh memory. */
void snap__lock_raw_init(snap__lock_t *l) {
  memset(l, 0, sizeof *l);
  pthread_mutexattr_t attr;
  if (pthread_mutexattr_init(&attr) == 0) {
    bool ok = pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT) == 0 &&
              pthread_mutex_init(mutex(l), &attr) == 0;
    pthread_mutexattr_destroy(&attr);
    if (ok)
      return;
  }
  memset(l, 0, sizeof *l);
  pthread_mutex_init(mutex(l), NULL); /* cannot fail for a default mutex */
}

void snap__plat_lock_lock(snap__lock_t *l) { pthread_mutex_lock(mutex(l)); }

bool snap__plat_lock_trylock(snap__lock_t *l) {
  return pthread_mutex_trylock(mutex(l)) == 0;
}

void snap__plat_lock_unlock(snap__lock_t *l) { pthread_mutex_unlock(mutex(l)); }

void snap__plat_lock_destroy(snap__lock_t *l) {
  snap__lock_forget(l);
  pthread_mutex_destroy(mutex(l));
}
