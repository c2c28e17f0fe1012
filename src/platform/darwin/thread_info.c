/*
 * thread_info.c — what the lag watchdog asks about a thread beyond its
 * stack, on Apple: CPU time used, name, and whether a debugger traces the
 * process.
 *
 * CPU time: thread_info(THREAD_BASIC_INFO) on the thread's mach port gives
 * user and system time in seconds + microseconds; their sum, in
 * nanoseconds. A port whose thread has exited (its name dead or reused for
 * something else) fails the call: SNAP_ENOTHREAD. It adds no port
 * reference, so nothing is released.
 * Name: the pthread behind the port (pthread_from_mach_thread_np) and its
 * name; a thread with no pthread (a bare mach thread) has none: "". Both
 * calls take libpthread's thread-list lock and validate the pthread under
 * it, so a thread exiting meanwhile gives an error, not a stale read.
 * Scheduler state (snap__plat_thread_sched): THREAD_BASIC_INFO's
 * run_state, from xnu's thread state bits (osfmk/kern/thread.c,
 * retrieve_thread_basic_info: TH_TERMINATE -> HALTED, else TH_RUN ->
 * RUNNING, else TH_UNINT -> UNINTERRUPTIBLE, else TH_SUSP -> STOPPED, else
 * TH_WAIT -> WAITING; TH_RUN is "running or on runq", osfmk/kern/thread.h).
 * So RUNNING is SNAP__RUN_READY here: on a CPU or waiting for one, xnu
 * does not say which. WAITING and UNINTERRUPTIBLE are SNAP__RUN_WAITING,
 * in a call the record does not name ("other"); STOPPED (suspended, e.g.
 * by a debugger) is SNAP__RUN_STOPPED; src/blocked/ judges them. CPU time is
 * the same record's. Run-queue wait, context switches and faults per thread are
 * in no public interface (proc_pidinfo's PROC_PIDTHREADINFO has none of them,
 * and libproc is not in the iOS SDK): -1. docs/apple.md, "Contract: a thread's
 * run state". Traced: sysctl(KERN_PROC_PID) for our own pid and its P_TRACED
 * flag — the check Apple's technical Q&A QA1361 gives for "am I being
 * debugged".
 *
 * Must not: be called from the stopped window (the pthread calls take the
 * thread-list lock a suspended thread may hold), print, or abort.
 */
#include <mach/mach.h>
#include <pthread.h>
#include <string.h>
#include <sys/sysctl.h>
#include <unistd.h>

#include "platform/darwin/darwin.h"
#include "platform/process.h"

/* A value a mach port name can have (they are 32-bit). */
static bool port_ok(snap_thread_t thread) {
  return thread != 0 && thread <= (snap_thread_t)UINT32_MAX;
}

/* The thread's basic record and its CPU time (user + system) in ns; false
   when the port names no thread. */
static bool basic_info(snap_thread_t thread, thread_basic_info_data_t *info,
                       int64_t *cpu_ns) {
  mach_msg_type_number_t count = THREAD_BASIC_INFO_COUNT;
  if (!port_ok(thread) ||
      thread_info((thread_act_t)thread, THREAD_BASIC_INFO, (thread_info_t)info,
                  &count) != KERN_SUCCESS)
    return false;
  int64_t us =
      ((int64_t)info->user_time.seconds + (int64_t)info->system_time.seconds) *
          1000000 +
      info->user_time.microseconds + info->system_time.microseconds;
  *cpu_ns = us * 1000;
  return true;
}

int64_t snap__plat_thread_cpu_ns(snap_thread_t thread) {
  thread_basic_info_data_t info;
  int64_t cpu;
  return basic_info(thread, &info, &cpu) ? cpu : SNAP_ENOTHREAD;
}

/* xnu's thread timers are charged at kernel entries, exits and context
   switches (THREAD_BASIC_INFO reads them as they were last charged), so a
   thread computing on a CPU without system calls shows no new CPU time;
   thread_suspend does not abort a call (blocked_regs.c). docs/trace.md,
   "On Apple". */
snap__plat_trace_facts_t snap__plat_trace_facts(void) {
  return (snap__plat_trace_facts_t){.cpu_time_exact = false,
                                    .sample_keeps_call = true};
}

int snap__plat_thread_sched(snap_thread_t thread, snap__plat_sched_t *out) {
  *out = snap__plat_sched_unknown();
  thread_basic_info_data_t info;
  if (!basic_info(thread, &info, &out->cpu_ns))
    return SNAP_ENOTHREAD;
  out->cpu_before_ns = out->cpu_ns; /* one read: nothing to compare */
  switch (info.run_state) {
  case TH_STATE_RUNNING: /* TH_RUN: on a CPU or on a run queue */
    out->run = SNAP__RUN_READY;
    break;
  case TH_STATE_WAITING:
  case TH_STATE_UNINTERRUPTIBLE:
    out->run = SNAP__RUN_WAITING;
    out->call_kind = SNAP_WAIT_OTHER; /* thread_info names no call */
    break;
  case TH_STATE_STOPPED: out->run = SNAP__RUN_STOPPED; break;
  default: /* TH_STATE_HALTED (exiting), or a state this file does not know */
    break;
  }
  return SNAP_OK;
}

int64_t snap__plat_thread_runq_ns(snap_thread_t thread) {
  (void)thread;
  return SNAP_EUNSUPPORTED;
}

/* thread_info's basic and extended records give CPU time and the run
   state now, not time spent runnable: the watchdog keeps its slack rule
   (a late wake is a stop) there. */
int snap__plat_self_sched_open(snap__plat_self_sched_t *r) {
  r->handle = -1;
  return SNAP_EUNSUPPORTED;
}

void snap__plat_self_sched_close(snap__plat_self_sched_t *r) { r->handle = -1; }

int snap__plat_self_sched_times(const snap__plat_self_sched_t *r,
                                int64_t *on_cpu, int64_t *runq) {
  (void)r;
  (void)on_cpu;
  (void)runq;
  return SNAP_EUNSUPPORTED;
}

bool snap__plat_thread_name(snap_thread_t thread, char *buf, size_t size) {
  if (!buf || size == 0 || !port_ok(thread))
    return false;
  pthread_t pt = pthread_from_mach_thread_np((mach_port_t)thread);
  if (!pt) {
    buf[0] = '\0'; /* a bare mach thread: no name to have */
    return true;
  }
  if (pthread_getname_np(pt, buf, size) != 0)
    return false;
  buf[size - 1] = '\0';
  return true;
}

bool snap__plat_is_traced(void) {
  int mib[4] = {CTL_KERN, KERN_PROC, KERN_PROC_PID, (int)getpid()};
  struct kinfo_proc info;
  size_t size = sizeof info;
  memset(&info, 0, sizeof info);
  if (sysctl(mib, 4, &info, &size, NULL, 0) != 0 || size == 0)
    return false;
  return (info.kp_proc.p_flag & P_TRACED) != 0;
}
