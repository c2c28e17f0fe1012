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

/* Test hook: the most stopped windows ever open at once in this process
   (counted between snap__sampler_enter and snap__sampler_leave, inside the
   lock). The contract is that it never exceeds 1. [setup] */
int snap__sampler_windows_peak(void);

#endif /* SNAP_PLATFORM_POSIX_LOCKS_H */
