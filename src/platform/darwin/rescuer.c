/*
 * rescuer.c — the thread that resumes what our sampler holds when another
 * profiler has parked our sampler (docs/apple.md, "Contract: beside
 * another profiler").
 *
 * Why a thread: xnu's thread_suspend parks its target at its next return
 * to user space. If another profiler's sampler suspends ours while ours
 * suspends it, both park, and the thread ours held stays stopped; a
 * parked thread runs nothing, so the way out has to come from a thread
 * that is not in the cycle. This one never suspends anything (so it can
 * be in no cycle: another profiler may hold it for the length of one of
 * its samples, and then resumes it), and it only ever resumes the open
 * window's target, at most once a window, through the decision in
 * posix/sampler_lock.c (snap__sampler_rescue_step: the window is older
 * than RESCUE_BOUND_NS, our sampler's suspend count is above zero, the
 * target's is above what it was before our suspension).
 *
 * Cost: it polls every RESCUE_TICK_NS while windows open (the trace's and
 * the watchdog's samples), every RESCUE_IDLE_TICK_NS once none has opened
 * for RESCUE_IDLE_NS (no semaphore: those are the watchdog's and trace's
 * wake-ups only, check-darwin holds every other object to that). A window
 * that opens while it idles is looked at within that longer tick: a
 * target stays stopped at most about RESCUE_IDLE_TICK_NS + RESCUE_BOUND_NS.
 *
 * Started by sample.c before its first window (snap__darwin_rescuer_up);
 * a fork child has none until its first sample starts one. If it cannot be
 * started, nothing is sampled (SNAP_EUNSUPPORTED): no thread is stopped
 * without a way out.
 *
 * Every import its loop calls is bound before the thread starts: a first
 * call through a lazy stub takes dyld's lock (docs/apple.md, "Lazy binding
 * in the stopped window"), which a target our parked sampler holds may
 * hold. thread_info and thread_resume are bound by prebind.c already;
 * nanosleep and the clock here.
 *
 * Must not: suspend, lock, or wait on anything a sampler holds.
 */
#include <mach/mach.h>
#include <stdatomic.h>
#include <time.h>

#include "platform/darwin/darwin.h"
#include "platform/posix/locks.h"
#include "platform/process.h"

#define RESCUE_BOUND_NS (50u * 1000u * 1000u) /* a window held this long */
#define RESCUE_TICK_NS (10u * 1000u * 1000u)
#define RESCUE_IDLE_NS (1000u * 1000u * 1000u)
#define RESCUE_IDLE_TICK_NS (250u * 1000u * 1000u)

static atomic_int g_up; /* 0 not started, 1 running, -1 cannot start */
static _Atomic uint64_t g_last_open_ns;
static snap__plat_thread_t g_thread;

int snap__darwin_suspend_count(uint32_t port) {
  thread_basic_info_data_t info;
  mach_msg_type_number_t n = THREAD_BASIC_INFO_COUNT;
  if (thread_info(port, THREAD_BASIC_INFO, (thread_info_t)&info, &n) !=
      KERN_SUCCESS)
    return -1;
  return info.suspend_count; /* xnu: the thread's user_stop_count */
}

static int count_op(void *ctx, snap_thread_t t) {
  (void)ctx;
  return t && t <= UINT32_MAX ? snap__darwin_suspend_count((mach_port_t)t) : -1;
}

static int resume_op(void *ctx, snap_thread_t t) {
  (void)ctx;
  return thread_resume((mach_port_t)t) == KERN_SUCCESS ? SNAP_OK
                                                       : SNAP_ENOTHREAD;
}

static const snap__sampler_ops_t g_ops = {count_op, resume_op, NULL};

static bool recent(void) {
  uint64_t now = snap__plat_now_ns(), last = atomic_load(&g_last_open_ns);
  return last >= now || now - last < RESCUE_IDLE_NS; /* noted after now */
}

static void rescuer_main(void *arg) {
  (void)arg;
  for (;;) {
    struct timespec ts = {0, recent() ? RESCUE_TICK_NS : RESCUE_IDLE_TICK_NS};
    nanosleep(&ts, NULL);
    (void)snap__sampler_rescue_step(&g_ops, snap__plat_now_ns(),
                                    RESCUE_BOUND_NS);
  }
}

static void rescuer_forked(void) { atomic_store(&g_up, 0); }

bool snap__darwin_rescuer_up(void) {
  int up = atomic_load(&g_up);
  if (up != 0)
    return up > 0;
  static atomic_flag starting = ATOMIC_FLAG_INIT;
  if (atomic_flag_test_and_set(&starting)) {
    while ((up = atomic_load(&g_up)) == 0) {
      struct timespec ts = {0, 100 * 1000};
      nanosleep(&ts, NULL);
    }
    return up > 0;
  }
  static bool fork_hooked;
  if (!fork_hooked)
    fork_hooked = snap__plat_on_fork(SNAP__FORK_SAMPLER, NULL, NULL,
                                     rescuer_forked) == SNAP_OK;
  /* Bound now, while nothing is stopped (see the head comment). */
  struct timespec zero = {0, 0};
  nanosleep(&zero, NULL);
  (void)snap__darwin_suspend_count(0);
  atomic_store(&g_last_open_ns, snap__plat_now_ns());
  up = snap__plat_thread_start(&g_thread, rescuer_main, NULL,
                               "stacksnap.rescue") == SNAP_OK
           ? 1
           : -1;
  atomic_store(&g_up, up);
  atomic_flag_clear(&starting);
  return up > 0;
}

void snap__darwin_rescuer_note(void) {
  atomic_store(&g_last_open_ns, snap__plat_now_ns());
}
