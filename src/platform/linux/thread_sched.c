/*
 * thread_sched.c — where a thread's time goes, on Linux: what the kernel
 * says of its run state at one instant (ready, waiting and in what call,
 * stopped) and its cumulative counters (CPU time, run-queue wait, context
 * switches, major faults), for the lag watchdog's point samples. Facts
 * only: whether that makes the thread running, runnable or blocked is
 * src/blocked/thread_state.c's decision.
 *
 * The kernel's files (Documentation/filesystems/proc.rst,
 * Documentation/scheduler/sched-stats.rst), all under
 * /proc/self/task/<tid>/:
 *  - schedstat: "<ns on a CPU> <ns runnable, waiting on a run queue>
 *    <timeslices>"; the wait grows when a wait ends (the thread gets a
 *    CPU), so a wait in progress shows only once it is over. A kernel
 *    without CONFIG_SCHED_INFO prints "0 0 0": unknown.
 *  - stat: field 3 the state letter (R running or runnable; S sleeping,
 *    interruptible; D uninterruptible, disk I/O mostly; T/t stopped or
 *    traced; ...), field 12 majflt. The command name (field 2) is in
 *    parentheses and may hold anything: fields are counted from the last
 *    ')'.
 *  - status: voluntary_ctxt_switches, nonvoluntary_ctxt_switches.
 *  - syscall (syscall_file.c): for a blocked thread, the system call it
 *    waits in, whose number says in what (futex: a lock; nanosleep: a
 *    sleep; poll/epoll/select: a wait for events; read/write/recv...: I/O).
 *
 * CPU time comes from the thread's CPU clock (thread_info.c, the same
 * figure as every other CPU time of the watchdog's), which the kernel
 * brings up to date for a thread on a CPU at the read
 * (task_sched_runtime), so two reads microseconds apart differ exactly
 * when it ran in between.
 *
 * Running or runnable: "R" means either (SNAP__RUN_READY). The CPU clock
 * is read before and after the other files (tens of microseconds apart)
 * and both reads are handed up (cpu_before_ns, cpu_ns): it advanced only
 * if the thread was on a CPU in between, which src/blocked/ weighs with
 * the interval its caller knows.
 *
 * Under an emulator (qemu-user runs our arm64 tests) the syscall file
 * describes the emulator's host thread: host system call numbers, and a pc
 * in the emulator's code, in none of the guest's images. A pc outside
 * every loaded image therefore gives "other", never a guess from numbers
 * of another architecture; the state letters and counters are the host
 * thread's and hold.
 *
 * Must not: be called from the stopped window (open and read block on
 * /proc; dladdr, on a glibc without _dl_find_object, takes the loader's
 * lock), allocate, or print.
 */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>

#include "platform/linux/linux.h"

/* Unsigned decimal at *p (blanks skipped), advancing *p; -1 if none. */
static int64_t decimal(const char **p) {
  const char *s = *p;
  while (*s == ' ' || *s == '\t')
    s++;
  if (*s < '0' || *s > '9')
    return -1;
  uint64_t v = 0;
  for (int n = 0; *s >= '0' && *s <= '9' && n < 19; n++)
    v = v * 10 + (uint64_t)(*s++ - '0');
  *p = s;
  return (int64_t)v;
}

/* schedstat's run-queue wait (its second field), -1 if unknown. */
static int64_t read_runq(int tid) {
  char buf[128];
  if (snap__linux_read_task(tid, "schedstat", buf, sizeof buf) <= 0)
    return -1;
  uint64_t v[3];
  if (snap__linux_schedstat(buf, v) != SNAP_OK || v[0] == 0)
    return -1; /* "0 0 0": not kept by this kernel */
  return (int64_t)v[1];
}

/* stat: the state letter and majflt. SNAP_OK, SNAP_ENOTHREAD, SNAP_EIO. */
static int read_stat(int tid, char *letter, int64_t *majflt) {
  char buf[1024];
  ssize_t n = snap__linux_read_task(tid, "stat", buf, sizeof buf);
  if (n < 0)
    return errno == ENOENT || errno == ESRCH ? SNAP_ENOTHREAD : SNAP_EIO;
  if (n == 0)
    return SNAP_ENOTHREAD; /* it exited between open and read */
  snap__linux_stat_t st;
  if (snap__linux_stat_parse(buf, &st) != SNAP_OK)
    return SNAP_EIO;
  *letter = st.state;
  *majflt = st.majflt > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)st.majflt;
  return SNAP_OK;
}

/* status: the two context-switch counts. */
static void read_switches(int tid, int64_t *vol, int64_t *invol) {
  char buf[4096]; /* the whole file; the counts come last */
  if (snap__linux_read_task(tid, "status", buf, sizeof buf) <= 0)
    return;
  const char *v = snap__linux_status_field(buf, "voluntary_ctxt_switches:");
  const char *i = snap__linux_status_field(buf, "nonvoluntary_ctxt_switches:");
  if (v)
    *vol = decimal(&v);
  if (i)
    *invol = decimal(&i);
}

unsigned snap__linux_wait_of_syscall(long nr) {
  switch (nr) {
#ifdef SYS_futex
  case SYS_futex:
#endif
#ifdef SYS_futex_waitv
  case SYS_futex_waitv:
#endif
#ifdef SYS_flock
  case SYS_flock:
#endif
    return SNAP_WAIT_FUTEX;
#ifdef SYS_nanosleep
  case SYS_nanosleep:
#endif
#ifdef SYS_clock_nanosleep
  case SYS_clock_nanosleep:
#endif
#ifdef SYS_pause
  case SYS_pause:
#endif
    return SNAP_WAIT_SLEEP;
#ifdef SYS_poll
  case SYS_poll:
#endif
#ifdef SYS_ppoll
  case SYS_ppoll:
#endif
#ifdef SYS_select
  case SYS_select:
#endif
#ifdef SYS_pselect6
  case SYS_pselect6:
#endif
#ifdef SYS_epoll_wait
  case SYS_epoll_wait:
#endif
#ifdef SYS_epoll_pwait
  case SYS_epoll_pwait:
#endif
#ifdef SYS_epoll_pwait2
  case SYS_epoll_pwait2:
#endif
#ifdef SYS_rt_sigsuspend
  case SYS_rt_sigsuspend:
#endif
#ifdef SYS_rt_sigtimedwait
  case SYS_rt_sigtimedwait:
#endif
#ifdef SYS_wait4
  case SYS_wait4:
#endif
#ifdef SYS_waitid
  case SYS_waitid:
#endif
    return SNAP_WAIT_POLL;
#ifdef SYS_read
  case SYS_read:
#endif
#ifdef SYS_write
  case SYS_write:
#endif
#ifdef SYS_readv
  case SYS_readv:
#endif
#ifdef SYS_writev
  case SYS_writev:
#endif
#ifdef SYS_pread64
  case SYS_pread64:
#endif
#ifdef SYS_pwrite64
  case SYS_pwrite64:
#endif
#ifdef SYS_preadv
  case SYS_preadv:
#endif
#ifdef SYS_pwritev
  case SYS_pwritev:
#endif
#ifdef SYS_recvfrom
  case SYS_recvfrom:
#endif
#ifdef SYS_recvmsg
  case SYS_recvmsg:
#endif
#ifdef SYS_sendto
  case SYS_sendto:
#endif
#ifdef SYS_sendmsg
  case SYS_sendmsg:
#endif
#ifdef SYS_accept
  case SYS_accept:
#endif
#ifdef SYS_accept4
  case SYS_accept4:
#endif
#ifdef SYS_connect
  case SYS_connect:
#endif
#ifdef SYS_openat
  case SYS_openat:
#endif
#ifdef SYS_open
  case SYS_open:
#endif
#ifdef SYS_fsync
  case SYS_fsync:
#endif
#ifdef SYS_fdatasync
  case SYS_fdatasync:
#endif
#ifdef SYS_sendfile
  case SYS_sendfile:
#endif
#ifdef SYS_splice
  case SYS_splice:
#endif
#ifdef SYS_io_getevents
  case SYS_io_getevents:
#endif
#ifdef SYS_io_uring_enter
  case SYS_io_uring_enter:
#endif
    return SNAP_WAIT_IO;
  default: return SNAP_WAIT_OTHER;
  }
}

bool snap__linux_syscall_has_fd(long nr) {
  switch (nr) {
#ifdef SYS_open
  case SYS_open:
#endif
#ifdef SYS_openat
  case SYS_openat: /* its first argument is a directory */
#endif
#ifdef SYS_io_getevents
  case SYS_io_getevents: /* an AIO context */
#endif
    return false;
  default: return snap__linux_wait_of_syscall(nr) == SNAP_WAIT_IO;
  }
}

/* Whether pc lies in a loaded image: _dl_find_object (lock-free) where
   glibc has it, dladdr (the loader's lock, a symbol search) otherwise. */
static bool in_an_image(uintptr_t pc) {
  snap__plat_ident_t id;
  snap__plat_image_ident(pc, &id);
  if (id.id != SNAP__IDENT_UNKNOWN)
    return id.id != SNAP__IDENT_NONE;
  Dl_info info;
  return dladdr((void *)pc, &info) != 0;
}

/* The SNAP_WAIT_* kind of the call a thread whose state letter is S or D
   waits in. */
static unsigned blocked_in(int tid, char letter) {
  unsigned fallback = letter == 'D' ? SNAP_WAIT_IO : SNAP_WAIT_OTHER;
  snap__linux_syscall_t sc;
  if (snap__linux_syscall_read(tid, &sc) != SNAP_OK ||
      sc.state != SNAP__LINUX_SC_IN_SYSCALL)
    return fallback; /* woke meanwhile, or blocked outside a call (a
                        page fault: D, I/O) */
  /* The pc right after the system call instruction is in libc (or the
     app) for a thread of ours; elsewhere the file speaks of another
     thread than the one we run as (an emulator's host thread). */
  if (!in_an_image(sc.pc))
    return fallback;
  unsigned w = snap__linux_wait_of_syscall(sc.nr);
  return w == SNAP_WAIT_OTHER ? fallback : w;
}

/* The counters, and the state letter in *letter ('\0' unknown). */
static int counters(int tid, snap__plat_sched_t *out, char *letter) {
  *out = snap__plat_sched_unknown();
  *letter = '\0';
  int rc = read_stat(tid, letter, &out->major_faults);
  if (rc == SNAP_ENOTHREAD)
    return rc;
  out->runq_ns = read_runq(tid);
  read_switches(tid, &out->voluntary, &out->involuntary);
  return SNAP_OK;
}

int64_t snap__plat_thread_runq_ns(snap_thread_t thread) {
  if (!snap__linux_tid_ok(thread))
    return SNAP_ENOTHREAD;
  int64_t runq = read_runq((int)thread);
  return runq >= 0 ? runq : SNAP_EIO;
}

int snap__plat_thread_sched(snap_thread_t thread, snap__plat_sched_t *out) {
  char letter;
  if (!snap__linux_tid_ok(thread)) {
    *out = snap__plat_sched_unknown();
    return SNAP_ENOTHREAD;
  }
  int tid = (int)thread;
  int64_t cpu0 = snap__plat_thread_cpu_ns(thread);
  int rc = counters(tid, out, &letter);
  if (rc != SNAP_OK)
    return rc;
  int64_t cpu1 = snap__plat_thread_cpu_ns(thread);
  /* Both clock reads are kept: whether the clock moved across the stat
     read says whether an 'R' thread was on a CPU meanwhile; src/blocked/
     judges it. */
  out->cpu_before_ns = cpu0 >= 0 ? cpu0 : -1;
  out->cpu_ns = cpu1 >= 0 ? cpu1 : -1;
  switch (letter) {
  case 'R': out->run = SNAP__RUN_READY; break;
  case 'S':
  case 'D':
    out->run = SNAP__RUN_WAITING;
    out->call_kind = (uint8_t)blocked_in(tid, letter);
    break;
  case 'Z':
  case 'X': /* exited, not yet reaped (pthread_join returns before the
               kernel drops the task): gone all the same */
    *out = snap__plat_sched_unknown();
    return SNAP_ENOTHREAD;
  case '\0': break; /* unknown */
  default:          /* T, t (stopped, traced), W, P, I ...: not running */
    out->run = SNAP__RUN_STOPPED;
    break;
  }
  return SNAP_OK;
}
