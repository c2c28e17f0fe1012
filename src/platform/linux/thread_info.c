/*
 * thread_info.c — what the lag watchdog asks about a thread beyond its
 * stack: CPU time used, time starved of a CPU, name, and whether a debugger
 * traces the process.
 *
 * CPU time: the kernel gives every thread a CPU clock whose id is built
 * from its TID: ((~tid) << 3) | CPUCLOCK_PERTHREAD (4) | CPUCLOCK_SCHED (2)
 * — the value glibc's pthread_getcpuclockid builds from a pthread_t. We
 * build it from the TID directly, since the watchdog knows threads by TID
 * and has no pthread_t for most of them. The kernel accepts a per-thread
 * clock only for threads of the caller's own process (EINVAL otherwise),
 * and answers EINVAL or ESRCH once the thread has exited: both are
 * SNAP_ENOTHREAD. The clock counts user + system time, as scheduled.
 *
 * Scheduler times (the calling thread's): the first two fields of
 * /proc/thread-self/schedstat, the time it ran and the time it was
 * runnable and not running.
 *
 * Name: /proc/self/task/<tid>/comm, 15 bytes at most and a newline.
 * Traced: the TracerPid line of /proc/self/status (0 = none). A tracer is
 * any ptrace attachment — a debugger, strace, or a crash reporter of the
 * kind that ptraces its own parent.
 *
 * Files are read with open/read into stack buffers, paths built by hand:
 * no stdio, no allocation, nothing that can fail by running out of memory
 * on the watchdog thread. Must not: be called from the stopped window
 * (open and read block on /proc), print, or abort.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "platform/linux/linux.h"
#include "platform/process.h"

int64_t snap__plat_thread_cpu_ns(snap_thread_t thread) {
  if (!snap__linux_tid_ok(thread))
    return SNAP_ENOTHREAD;
  /* Built in unsigned arithmetic: shifting a negative int is undefined. */
  clockid_t clk = (clockid_t)((~(unsigned)thread << 3) | 6u);
  struct timespec ts;
  if (clock_gettime(clk, &ts) != 0)
    return errno == EINVAL || errno == ESRCH ? SNAP_ENOTHREAD : SNAP_EIO;
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* CPU-time clocks are brought up to date on every read (the kernel's
   update_curr for a running task); a sample is a signal, which takes the
   thread out of its call to run the handler. */
snap__plat_trace_facts_t snap__plat_trace_facts(void) {
  return (snap__plat_trace_facts_t){.cpu_time_exact = true,
                                    .sample_keeps_call = false};
}

/* The calling thread's own schedstat, kept open: "<ns on a CPU> <ns
   waiting on a run queue> <timeslices>"
   (Documentation/scheduler/sched-stats.rst). The platform's record is the
   kept descriptor's, field by field. */
static snap__linux_kept_t kept_of(const snap__plat_self_sched_t *r) {
  return (snap__linux_kept_t){r->handle, r->id[0], r->id[1]};
}

int snap__plat_self_sched_open(snap__plat_self_sched_t *r) {
  /* thread-self is resolved now, to the caller: the file stays its. */
  snap__linux_kept_t k;
  bool ok = snap__linux_kept_open(&k, "/proc/thread-self/schedstat");
  *r = (snap__plat_self_sched_t){ok ? k.fd : -1, {k.dev, k.ino}};
  return ok ? SNAP_OK : SNAP_EIO;
}

void snap__plat_self_sched_close(snap__plat_self_sched_t *r) {
  snap__linux_kept_t k = kept_of(r);
  snap__linux_kept_close(&k);
  r->handle = -1;
}

int snap__plat_self_sched_times(const snap__plat_self_sched_t *r,
                                int64_t *on_cpu, int64_t *runq) {
  char buf[128];
  /* procfs makes the text afresh for every read from offset 0. */
  snap__linux_kept_t k = kept_of(r);
  ssize_t n = snap__linux_kept_read(&k, buf, sizeof buf);
  if (n <= 0)
    return SNAP_EIO;
  uint64_t field[3];
  if (snap__linux_schedstat(buf, field) != SNAP_OK)
    return SNAP_EIO;
  *on_cpu = (int64_t)field[0];
  *runq = (int64_t)field[1];
  return SNAP_OK;
}

bool snap__plat_thread_name(snap_thread_t thread, char *buf, size_t size) {
  if (!buf || size == 0 || !snap__linux_tid_ok(thread))
    return false;
  char path[64], comm[64];
  snap__linux_task_path(path, (int)thread, "comm");
  ssize_t n = snap__linux_read_small(path, comm, sizeof comm);
  if (n < 0)
    return false;
  size_t len = (size_t)n;
  if (len > 0 && comm[len - 1] == '\n')
    len--;
  if (len > size - 1)
    len = size - 1; /* truncation is an answer, not an error */
  memcpy(buf, comm, len);
  buf[len] = '\0';
  return true;
}

bool snap__plat_is_traced(void) {
  /* TracerPid is the 8th line or so; 4 KiB holds the whole file on every
     kernel we know (its long lines come after). */
  char status[4096];
  if (snap__linux_read_small("/proc/self/status", status, sizeof status) < 0)
    return false;
  const char *p = snap__linux_status_field(status, "TracerPid:");
  return p && *p >= '1' && *p <= '9'; /* "0" when nobody traces */
}
