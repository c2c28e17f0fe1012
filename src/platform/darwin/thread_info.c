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
 * Traced: sysctl(KERN_PROC_PID) for our own pid and its P_TRACED flag —
 * the check Apple's technical Q&A QA1361 gives for "am I being debugged".
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

/* A value a mach port name can have (they are 32-bit). */
static bool port_ok(snap_thread_t thread) {
  return thread != 0 && thread <= (snap_thread_t)UINT32_MAX;
}

int64_t snap__plat_thread_cpu_ns(snap_thread_t thread) {
  if (!port_ok(thread))
    return SNAP_ENOTHREAD;
  thread_basic_info_data_t info;
  mach_msg_type_number_t count = THREAD_BASIC_INFO_COUNT;
  if (thread_info((thread_act_t)thread, THREAD_BASIC_INFO, (thread_info_t)&info,
                  &count) != KERN_SUCCESS)
    return SNAP_ENOTHREAD;
  int64_t us =
      ((int64_t)info.user_time.seconds + (int64_t)info.system_time.seconds) *
          1000000 +
      info.user_time.microseconds + info.system_time.microseconds;
  return us * 1000;
}

/* thread_info's basic and extended records give CPU time and the run
   state now, not time spent runnable: the watchdog keeps its slack rule
   (a late wake is a stop) there. */
int snap__plat_self_sched_times(int64_t *on_cpu, int64_t *runq) {
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
