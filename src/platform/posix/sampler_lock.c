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
 * Beside another profiler (Apple). The lock serialises our samplers only.
 * Another profiler's sampler (sentry-cocoa suspends every non-idle thread
 * but its own at 101 Hz) can suspend ours while ours suspends it: each is
 * parked at its next return to user space, neither resumes the other, and
 * whatever ours held stopped (the main thread) stays stopped. Nothing in
 * the sampler itself can prevent it (a parked thread runs nothing), so a
 * third thread that never suspends anything rescues it: the window is
 * published here before the suspend call (snap__sampler_window_open), and
 * snap__sampler_rescue_step, called every few ms by the backend's rescuer
 * while windows open, resumes the target once the window has been open
 * longer than a bound AND its sampler is itself held by someone AND the
 * target's suspend count shows a suspension beyond the one it had before
 * ours. Exactly one of sampler and rescuer resumes (a compare-and-swap on
 * the window's state); a rescued sample is thrown away. A waiter for this
 * lock whose holder is held and rescued gets SNAP_EBUSY instead of waiting
 * for a thread that may never run again (snap__sampler_enter_bounded).
 * The decision is pure over the hooks, so test_sampler_rescue drives it on
 * Linux against a stand-in of xnu's suspension (docs/apple.md, "Contract:
 * beside another profiler").
 *
 * Must not: be taken in the stopped window, or by a thread that holds any
 * other lock of ours.
 */
#include <stdatomic.h>
#include <time.h>

#include "platform/posix/locks.h"

static snap__lock_t g_lock;
static bool g_lock_ok;
static atomic_int g_open; /* windows between enter and leave */
static atomic_int g_peak;

/* The one open window (one at a time: the lock), for the rescuer. The
   state word is the window's sequence number times 4 plus its kind, so
   the rescuer can tell that the fields it read belong to the window whose
   state it then changes (a sequence lock: fields first, state last). */
enum { WIN_NONE, WIN_OPEN, WIN_RESCUED, WIN_KIND = 3 };
static _Atomic uint64_t g_win_state;
static _Atomic snap_thread_t g_win_sampler, g_win_target;
static _Atomic uint64_t g_win_opened_ns;
static atomic_int g_win_base; /* target's suspend count before ours */
static _Atomic uint64_t g_rescues;

/* At load time, before any thread of the app can sample. */
__attribute__((constructor)) static void sampler_lock_init(void) {
  g_lock_ok = snap__plat_lock_init(&g_lock) == SNAP_OK;
}

/* One more window in flight (the lock is held), for the peak. */
static int count_window(void) {
  int now = atomic_fetch_add(&g_open, 1) + 1;
  int peak = atomic_load(&g_peak);
  while (now > peak && !atomic_compare_exchange_weak(&g_peak, &peak, now))
    ;
  return SNAP_OK;
}

int snap__sampler_enter(void) {
  if (!g_lock_ok)
    return SNAP_EUNSUPPORTED; /* never stop a thread unserialised */
  snap__plat_lock_lock(&g_lock);
  return count_window();
}

void snap__sampler_leave(void) {
  atomic_fetch_sub(&g_open, 1);
  snap__plat_lock_unlock(&g_lock);
}

int snap__sampler_windows_peak(void) { return atomic_load(&g_peak); }

/* Whether the holder of the lock is a sampler whose window was rescued:
   it was parked by someone else, and waiting for it may be waiting
   forever (it closes the window when it runs again). */
static bool holder_lost(void) {
  return (atomic_load(&g_win_state) & WIN_KIND) == WIN_RESCUED;
}

int snap__sampler_enter_bounded(void) {
  if (!g_lock_ok)
    return SNAP_EUNSUPPORTED;
  /* Tried, then slept on: a holder that is merely working lets go within
     a window's length (tens of us); one that is parked never may. */
  while (!snap__plat_lock_trylock(&g_lock)) {
    if (holder_lost())
      return SNAP_EBUSY;
    struct timespec ts = {0, 200 * 1000};
    nanosleep(&ts, NULL);
  }
  return count_window();
}

void snap__sampler_window_open(snap_thread_t sampler, snap_thread_t target,
                               int target_count, uint64_t now_ns) {
  atomic_store(&g_win_sampler, sampler);
  atomic_store(&g_win_target, target);
  atomic_store(&g_win_base, target_count);
  atomic_store(&g_win_opened_ns, now_ns);
  uint64_t seq = (atomic_load(&g_win_state) >> 2) + 1;
  atomic_store(&g_win_state, seq << 2 | WIN_OPEN); /* last: see above */
}

bool snap__sampler_window_close(void) {
  uint64_t st = atomic_load(&g_win_state);
  while ((st & WIN_KIND) == WIN_OPEN)
    if (atomic_compare_exchange_weak(&g_win_state, &st,
                                     (st & ~(uint64_t)WIN_KIND) | WIN_NONE)) {
      atomic_store(&g_win_sampler, 0);
      return true;
    }
  /* Rescued: the target was resumed by the rescuer. Seen; now closed. */
  atomic_store(&g_win_state, (st & ~(uint64_t)WIN_KIND) | WIN_NONE);
  atomic_store(&g_win_sampler, 0);
  return false;
}

int snap__sampler_rescue_step(const snap__sampler_ops_t *ops, uint64_t now_ns,
                              uint64_t bound_ns) {
  uint64_t st = atomic_load(&g_win_state);
  if ((st & WIN_KIND) != WIN_OPEN)
    return 0;
  snap_thread_t sampler = atomic_load(&g_win_sampler);
  snap_thread_t target = atomic_load(&g_win_target);
  uint64_t opened = atomic_load(&g_win_opened_ns);
  int base = atomic_load(&g_win_base);
  if (atomic_load(&g_win_state) != st)
    return 0; /* closed (and maybe reopened) while we read: next tick */
  if (now_ns < opened || now_ns - opened < bound_ns)
    return 0; /* young: a sampler that is merely slow finishes */
  if (ops->suspend_count(ops->ctx, sampler) <= 0)
    return 0; /* it runs (or is gone): it will resume its target itself */
  if (ops->suspend_count(ops->ctx, target) <= base)
    return 0; /* our suspension of it has not happened yet */
  if (!atomic_compare_exchange_strong(&g_win_state, &st,
                                      (st & ~(uint64_t)WIN_KIND) | WIN_RESCUED))
    return 0; /* the sampler closed it meanwhile */
  (void)ops->resume(ops->ctx, target);
  atomic_fetch_add(&g_rescues, 1);
  return 1;
}

uint64_t snap__sampler_rescues(void) { return atomic_load(&g_rescues); }
