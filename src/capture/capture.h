/*
 * capture.h — what capture.c shares beyond the public API: counts of its
 * SNAP_CAPTURE_QUIET path, for tests that must tell a quiet sample from a
 * signalled one (under qemu-user every one is signalled), and the wait
 * capture without the owner's name.
 */
#ifndef SNAP_CAPTURE_CAPTURE_H
#define SNAP_CAPTURE_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "stacksnap.h"

/* Since the process started: quiet walks kept, and quiet requests that
   fell back to the signal (the thread was running, woke during the walk,
   or the platform's registers could not be verified). */
void snap__capture_quiet_counts(uint64_t *kept, uint64_t *signalled);
/* Since the process started: quiet walks that ended short of the thread's
   root for want of fp, in a wait a signal cannot change, and were replaced
   by the signal's longer walk (capture.c, "Restartable waits"). */
uint64_t snap__capture_quiet_completed(void);

/* snap_capture_thread_wait, with the owner's name read (a /proc read on
   Linux, ~6 us) only when name_owner: a caller that names every thread
   of a dump anyway (lag/thread_dump.c) reads each name once. *os_blocked
   (may be NULL): the OS said the thread was blocked in its system call
   (a quiet walk, SNAP__WAIT_REGS_KERNEL); false when a signal stopped it,
   where a system call in its registers may be a short one it was running
   (clock_gettime under qemu, which has no vDSO). */
int snap__capture_thread_wait(snap_thread_t thread, uintptr_t *pcs, int max,
                              unsigned flags, snap_wait_t *wait,
                              bool name_owner, bool *os_blocked);

/* Brings the image table up to date for walks that run where no refresh
   can (a thread's own CPU-time timer handler, trace/self_ring.c): what
   snap_capture_thread does before each sample. [setup] */
void snap__capture_prepare(void);

#endif /* SNAP_CAPTURE_CAPTURE_H */
