/*
 * locks.h — lock plumbing the Linux and Apple backends share, and nothing
 * else: never included from the core (which sees only platform.h's
 * snap__lock_t) except by tests.
 *
 *  - the fork registry (lock_fork.c): every snap__lock_t is held across
 *    fork() and initialised afresh in the child;
 *  - the sampler lock (sampler_lock.c): at most one stopped window in the
 *    process at any instant.
 */
#ifndef SNAP_PLATFORM_POSIX_LOCKS_H
#define SNAP_PLATFORM_POSIX_LOCKS_H

#include <stdbool.h>

#include "platform/platform.h"

/* ---- Backend primitives (lock.c of each backend) ---------------------- */

/* Makes l an unheld lock, registering nothing; also how the fork child
   resets a lock the forking thread held (never "unlock": on Apple the
   owner recorded in an os_unfair_lock is a thread port of the parent).
   [setup] */
void snap__lock_raw_init(snap__lock_t *l);

/* ---- Fork registry (lock_fork.c) -------------------------------------- */

/* Adds l to the locks fork() holds: false when the registry is full. The
   first call installs the fork handlers. [setup] */
bool snap__lock_register(snap__lock_t *l);
/* Removes l (snap__plat_lock_destroy). [setup] */
void snap__lock_forget(snap__lock_t *l);

/* ---- Fork gate (lock_fork.c) ------------------------------------------ */

/* For short calls into a library whose own lock a forked child could
   inherit held (Linux: dl_iterate_phdr, and our own dlopen calls, hold
   glibc's dl_load_write_lock, which glibc 2.36 does not renew in the
   child). fork() waits until no
   thread is between enter and leave, and holds new ones at enter, so it
   never copies that lock held by one of our threads. A pass writes only
   the calling thread's own mark (lock_fork.c): passers never wait for each
   other nor share a written cache line (a lock here made two naming
   threads 4-8x slower than one; a shared counter, 1.2x slower). Must not
   be entered twice by one thread, nor while the thread runs code that can
   fork. [setup] */
void snap__fork_gate_enter(void);
void snap__fork_gate_leave(void);

/* ---- Sampler lock (sampler_lock.c) ------------------------------------ */

/* Taken by snap__plat_sample before it stops a thread (Apple: before
   thread_suspend; Linux: before the signal is queued) and released once the
   thread runs free again or the sample is abandoned: two samplers can never
   stop each other. SNAP_OK, or SNAP_EUNSUPPORTED if the lock could not be
   created at load time. The holder must not be a thread another sampler
   waits on: it is always a sampler, and a thread never samples itself.
   [setup] */
int snap__sampler_enter(void);
void snap__sampler_leave(void); /* [setup] */

/* ---- Beside another profiler (sampler_lock.c, Apple's sample.c) ------ */

/* What the rescue asks of the backend (xnu: thread_info's suspend_count,
   thread_resume; test_sampler_rescue: a stand-in). suspend_count: how
   many suspensions hold the thread now (>0: it is held, or will park at
   its next return to user space), negative when it is gone. */
typedef struct snap__sampler_ops {
  int (*suspend_count)(void *ctx, snap_thread_t thread);
  int (*resume)(void *ctx, snap_thread_t thread);
  void *ctx;
} snap__sampler_ops_t;

/* snap__sampler_enter for a backend whose holder can be parked by another
   profiler: SNAP_EBUSY, instead of waiting, once the holder's window has
   been rescued (the holder is parked and may never run again); until then
   it waits, as long as the rescue's bound at most. [setup] */
int snap__sampler_enter_bounded(void);

/* Publishes the window, inside the lock, BEFORE the suspend call (a
   sampler parked by another profiler parks on its way out of that call and
   never runs again to say so): the sampler, the target, the target's
   suspend count before ours, now. [setup] */
void snap__sampler_window_open(snap_thread_t sampler, snap_thread_t target,
                               int target_count, uint64_t now_ns);

/* Closes it, before leave: true when the caller still owns the target's
   resume; false when the rescuer resumed it (the sample is void: the target
   ran during it). [signal-safe] */
bool snap__sampler_window_close(void);

/* The rescuer's step: resumes the open window's target (and returns 1)
   when the window is older than bound_ns, its sampler is held, and the
   target's suspend count is above what it was before our suspension;
   otherwise 0. Never suspends anything. [setup] */
int snap__sampler_rescue_step(const snap__sampler_ops_t *ops, uint64_t now_ns,
                              uint64_t bound_ns);

/* Windows rescued since the process started (test hook, statistics). */
uint64_t snap__sampler_rescues(void);

/* Test hook: the most stopped windows ever open at once in this process
   (counted between snap__sampler_enter and snap__sampler_leave, inside the
   lock). The contract is that it never exceeds 1. [setup] */
int snap__sampler_windows_peak(void);

#endif /* SNAP_PLATFORM_POSIX_LOCKS_H */
