/*
 * test_trace_state.c — the trace's state decisions with Apple's facts
 * (issue 23, "Trace state"; docs/trace.md, "On Apple"), on Linux: the
 * decisions are pure over snap__plat_trace_facts, so the Apple answers are
 * checked here with Apple's facts, and Linux's are checked unchanged.
 *
 * Apple's facts (docs/apple.md, "Contract: a thread's run state" and
 * "Contract: what a blocked thread waits for"): THREAD_BASIC_INFO's CPU
 * time is charged at kernel entries and context switches only, so a main
 * thread that woke and computes without system calls shows the CPU time it
 * had (cpu_moved false) while its run state is TH_STATE_RUNNING
 * (snap__plat_thread_is_running 1); thread_suspend leaves a thread in its
 * call, so a mach_msg in its registers (decoded kind other, and Apple's
 * capture never sets os_blocked) is the run loop's idle wait or a
 * synchronous XPC call: blocked.
 *
 * Before this change the sampler decided "ran" from cpu_moved alone and a
 * capture's state as running for kind other without os_blocked, on every
 * platform: the two Apple cases below gave "did not run" (old idle stack,
 * runnable) and "running" (mach_msg).
 */
#include "check.h"
#include "trace/trace.h"

static const snap__plat_trace_facts_t apple = {.cpu_time_exact = false,
                                               .sample_keeps_call = true};
static const snap__plat_trace_facts_t linux_ = {.cpu_time_exact = true,
                                                .sample_keeps_call = false};

int main(void) {
  /* The main thread woke and computes, no system call since: its CPU time
     has not moved, its run state is RUNNING. */
  CHECK(snap__trace_may_have_run(false, false, 1, apple),
        "apple: running with unmoved CPU time must be captured");
  /* Blocked (WAITING) and its CPU time unmoved: it did not run. */
  CHECK(!snap__trace_may_have_run(false, false, 0, apple),
        "apple: a waiting thread with unmoved CPU time did not run");
  CHECK(!snap__trace_may_have_run(false, false, SNAP_ENOTHREAD, apple),
        "apple: unknown run state and unmoved CPU time: not run");
  CHECK(snap__trace_may_have_run(false, true, 0, apple), "apple: moved");
  CHECK(snap__trace_may_have_run(true, false, 0, apple), "apple: first");
  /* Linux: the CPU-time clock is exact, runnable alone is not "ran". */
  CHECK(!snap__trace_may_have_run(false, false, 1, linux_),
        "linux: unmoved CPU time means it did not run, runnable or not");
  CHECK(snap__trace_may_have_run(false, true, 1, linux_), "linux: moved");
  CHECK(snap__trace_may_have_run(true, false, 0, linux_), "linux: first");

  /* A thread suspended in mach_msg: decoded kind other, no OS flag. */
  CHECK_EQ(snap__trace_capture_state(SNAP_WAIT_OTHER, false, apple),
           SNAP__STATE_BLOCKED);
  CHECK_EQ(snap__trace_capture_state(SNAP_WAIT_POLL, false, apple),
           SNAP__STATE_BLOCKED);
  CHECK_EQ(snap__trace_capture_state(SNAP_WAIT_NONE, false, apple),
           SNAP__STATE_RUNNING);
  /* Linux: a signal took it out of a call that was not a wait (a system
     call under qemu-user): running; the OS's own flag: blocked. */
  CHECK_EQ(snap__trace_capture_state(SNAP_WAIT_OTHER, false, linux_),
           SNAP__STATE_RUNNING);
  CHECK_EQ(snap__trace_capture_state(SNAP_WAIT_OTHER, true, linux_),
           SNAP__STATE_BLOCKED);
  CHECK_EQ(snap__trace_capture_state(SNAP_WAIT_MUTEX, false, linux_),
           SNAP__STATE_BLOCKED);
  CHECK_EQ(snap__trace_capture_state(SNAP_WAIT_NONE, true, linux_),
           SNAP__STATE_RUNNING);
  return check_result("test_trace_state");
}
