/*
 * blocked_regs.c — reading a blocked thread without stopping it, on Apple:
 * not needed, so not offered (snap__plat_blocked_regs, platform.h).
 *
 * Why Linux has it: there a sample is a signal, and a signal ends
 * nanosleep, poll, kevent-like waits early with EINTR. Here a sample is
 * thread_suspend, which does not interrupt a system call: a thread
 * suspended in mach_msg, __semwait_signal (usleep, nanosleep) or kevent
 * stays in it, and its sleep keeps its length (xnu: thread_suspend marks
 * the thread held; a blocked thread simply is not run again until
 * thread_resume, and its wait is not aborted — thread_abort is the call
 * that would do that, and we never make it). So the ordinary sample
 * already observes without changing the app, and SNAP_CAPTURE_QUIET falls
 * back to it: SNAP_EUNSUPPORTED is the honest answer, not a gap.
 *
 * Must not: pretend (no fake registers).
 */
#include "platform/platform.h"

int snap__plat_blocked_regs(snap_thread_t thread, snap__plat_blocked_t *out) {
  (void)thread, (void)out;
  return SNAP_EUNSUPPORTED;
}

int snap__plat_blocked_still(snap_thread_t thread,
                             const snap__plat_blocked_t *b) {
  (void)thread, (void)b;
  return SNAP_EUNSUPPORTED;
}

int snap__plat_blocked_again(snap_thread_t thread,
                             const snap__plat_blocked_t *before,
                             snap__plat_blocked_t *after) {
  (void)thread, (void)before, (void)after;
  return SNAP_EUNSUPPORTED;
}
