/*
 * sampler_lock.c — one stopped window at a time, process-wide, on both
 * backends.
 *
 * Why: on Apple two samplers that suspend each other never wake. The lag
 * watchdog samples every thread while an app thread (a privacy hook
 * calling snap_capture_thread) samples the watchdog: A suspends B, B —
 * already past its own check — suspends A, and each waits for a Mach call
 * the other's suspension holds up; the app hangs for good (docs/apple.md,
 * "Contract: locks and the stopped window"). So snap__plat_sample takes
 * this lock before it stops anything (thread_suspend on Apple, the signal
 * on Linux) and drops it after the target runs free again (thread_resume)
 * or the sample is complete or abandoned (Linux's timeout).
 *
 * Why that cannot deadlock: the holder is a sampler, waiting only for its
 * target. A thread blocked on this lock is no sampler yet; if it is the
 * target, it is suspended (Apple) or runs the signal handler inside its
 * wait (Linux: futex waits are interrupted for handlers, then restarted),
 * and the holder's sample completes. A thread never samples itself
 * (refused before the lock is taken).
 *
 * One lock for both backends, taken inside snap__plat_sample rather than
 * by the core around it: only the backend knows where its window starts
 * and ends, and every caller of the seam (the capture API, the watchdog,
 * tests) is covered without having to remember.
 *
 * The windows-in-flight counter is the test hook that proves the contract
 * on Linux, where two mutual samplers do not deadlock (signals are
 * cooperative) and so cannot show the bug by hanging.
 *
 * Must not: be taken in the stopped window, or by a thread that holds any
 * other lock of ours.
 */
#include <stdatomic.h>

#include "platform/posix/locks.h"

static snap__lock_t g_lock;
static bool g_lock_ok;
static atomic_int g_open; /* windows between enter and leave */
static atomic_int g_peak;

/* At load time, before any thread of the app can sample. */
__attribute__((constructor)) static void sampler_lock_init(void) {
  g_lock_ok = snap__plat_lock_init(&g_lock) == SNAP_OK;
}

int snap__sampler_enter(void) {
  if (!g_lock_ok)
    return SNAP_EUNSUPPORTED; /* never stop a thread unserialised */
  snap__plat_lock_lock(&g_lock);
  int now = atomic_fetch_add(&g_open, 1) + 1;
  int peak = atomic_load(&g_peak);
  while (now > peak && !atomic_compare_exchange_weak(&g_peak, &peak, now))
    ;
  return SNAP_OK;
}

void snap__sampler_leave(void) {
  atomic_fetch_sub(&g_open, 1);
  snap__plat_lock_unlock(&g_lock);
}

int snap__sampler_windows_peak(void) { return atomic_load(&g_peak); }
