/*
 * process_start.c — which process a pid names, on Apple: a token that
 * tells a live process from one that died and left its pid to another.
 *
 * Owns: snap__plat_process_start. The token is the process's start time,
 * "<seconds>.<microseconds>" of kp_proc.p_starttime from
 * sysctl(CTL_KERN, KERN_PROC, KERN_PROC_PID, pid) — wall-clock time, so
 * unique across reboots too. A pid the sysctl does not know comes back
 * with no record (length 0, no error): that is either no such process or
 * a sandbox that hides other processes (iOS hides them from apps), so
 * kill(pid, 0) decides: ESRCH is gone, anything else (EPERM: it exists,
 * not ours to signal) is "cannot tell". A zombie (SZOMB) is gone.
 *
 * Must not: be called from the stopped window (sysctl takes kernel locks
 * and may block), print, or abort.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/sysctl.h>
#include <sys/types.h>

#include "platform/darwin/darwin.h"
#include "platform/process.h"

int snap__plat_process_start(int64_t pid, char *buf, size_t size) {
  if (pid <= 0 || pid > 0x7fffffff || !buf || size == 0)
    return SNAP_EINVAL;
  buf[0] = '\0';
  struct kinfo_proc kp;
  size_t len = sizeof kp;
  int mib[4] = {CTL_KERN, KERN_PROC, KERN_PROC_PID, (int)pid};
  if (sysctl(mib, 4, &kp, &len, NULL, 0) != 0)
    return SNAP_EIO;
  if (len < sizeof kp) {
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
      return SNAP_ENOTHREAD;
    return SNAP_EUNSUPPORTED; /* hidden from us: it may well live */
  }
  if (kp.kp_proc.p_stat == SZOMB)
    return SNAP_ENOTHREAD;
  int n =
      snprintf(buf, size, "%lld.%06d", (long long)kp.kp_proc.p_starttime.tv_sec,
               (int)kp.kp_proc.p_starttime.tv_usec);
  if (n < 0 || (size_t)n >= size) {
    buf[0] = '\0';
    return SNAP_EINVAL;
  }
  return SNAP_OK;
}
