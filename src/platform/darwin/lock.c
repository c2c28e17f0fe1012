/*
 * lock.c — the platform lock on Apple: an os_unfair_lock stored in the
 * core's opaque snap__lock_t.
 *
 * Why os_unfair_lock (iOS 10, macOS 10.12; our floors are 12 and 10.14):
 * the lock word holds the owner's thread port, so a contended waiter tells
 * the kernel whom it waits for and the kernel runs the owner at the
 * waiter's priority until it unlocks. A main-thread privacy hook blocked
 * on a cache stripe a utility-QoS thread holds thus lends it the main
 * thread's priority. dispatch_semaphore (what this lock replaced) records
 * no owner, so it cannot donate: the main thread waits while
 * medium-priority work keeps the utility owner off the CPU. Evidence in
 * docs/apple.md, "Contract: locks and the stopped window".
 *
 * os_unfair_lock is not recursive and must be unlocked by the thread that
 * locked it (libplatform aborts otherwise): so the fork child re-inits it
 * (the owner port it recorded is the parent's) instead of unlocking it.
 *
 * Must not: be used from the stopped window (a lock may sleep, and the
 * suspended thread may hold it).
 */
#include <os/lock.h>
#include <string.h>

#include "platform/posix/locks.h"

_Static_assert(sizeof(os_unfair_lock) <= sizeof(snap__lock_t),
               "os_unfair_lock must fit in snap__lock_t");
_Static_assert(_Alignof(os_unfair_lock) <= _Alignof(snap__lock_t),
               "snap__lock_t must be aligned for os_unfair_lock");

static os_unfair_lock *unfair(snap__lock_t *l) {
  return (os_unfair_lock *)(void *)l->opaque;
}

void snap__lock_raw_init(snap__lock_t *l) {
  memset(l, 0, sizeof *l);
  *unfair(l) = OS_UNFAIR_LOCK_INIT;
}

void snap__plat_lock_lock(snap__lock_t *l) { os_unfair_lock_lock(unfair(l)); }

bool snap__plat_lock_trylock(snap__lock_t *l) {
  return os_unfair_lock_trylock(unfair(l));
}

void snap__plat_lock_unlock(snap__lock_t *l) {
  os_unfair_lock_unlock(unfair(l));
}

void snap__plat_lock_destroy(snap__lock_t *l) { snap__lock_forget(l); }
