/*
 * blocked_regs.c — the registers of a thread blocked in a system call,
 * without a signal (snap__plat_blocked_regs, platform.h).
 *
 * Why: a sampling signal ends usleep, nanosleep, poll, epoll_wait... early
 * with EINTR (SA_RESTART does not restart sleeps or waits with timeouts),
 * and most code does not retry them. A thread blocked in the kernel does
 * not need stopping: it cannot run, and the kernel publishes its user sp
 * and pc in /proc/self/task/<tid>/syscall (syscall_file.c).
 *
 * Algorithm:
 *   1. schedstat of the thread: time run, run-queue wait, times scheduled
 *      in (the third counts every arrival on a CPU);
 *   2. the syscall file: it must say "in system call nr", and the 2 bytes
 *      (x86_64: syscall = 0f 05) or 4 (aarch64: svc #0 = d4000001) before
 *      its pc, read through snap__plat_read, must be that instruction.
 *      Under qemu-user the file describes the emulator's host thread (host
 *      syscall numbers, a pc in qemu's code): there is no such instruction
 *      at that address in the guest, or the address does not read, and
 *      the answer is SNAP_EBUSY, so the caller signals as before;
 *   3. the caller walks the stack (capture.c), then snap__plat_blocked_still
 *      reads both files again: any change (the thread was scheduled in,
 *      ran, or returned and blocked elsewhere) means the stack read may mix
 *      two states, and the walk is dropped.
 *   4. after a signal completed a walk (capture.c, restartable waits),
 *      snap__plat_blocked_again reads both files once more: the thread
 *      back in the same call at the same sp and pc, scheduled in exactly
 *      once since step 1 (the signal's delivery: one continuous run of
 *      the handler and the restart, ended by the same wait), has the stack
 *      the handler walked, and keeps it while the files stay as they are.
 * Both files are read whole, so every field compared is from one instant
 * of the kernel's view.
 *
 * What is not published: fp (rbp / x29) and lr. The walk starts with fp 0
 * and recovers fp where a frame saved it (call-frame information); lr is
 * never live at a system call for the walk's purposes (the wrapper's own
 * frame rule says where its return address is).
 *
 * Restartable waits (snap__plat_blocked_t.restartable): without fp a walk
 * can end at an app function reached through a pointer whose prologue it
 * cannot read (capture.c says why); a thread whose wait a signal cannot
 * change may then be signalled
 * for its real registers. Which waits those are, from the kernel's
 * futex code (kernel/futex/waitwake.c, pi.c) and signal delivery
 * (arch/x86/kernel/signal.c, arch/arm64/kernel/signal.c):
 *   FUTEX_WAIT / FUTEX_WAIT_BITSET without a timeout: -ERESTARTSYS, which
 *     a handler installed with SA_RESTART (ours) turns into a restart of
 *     the same call; glibc's mutexes, rwlocks, condition variables,
 *     semaphores and GLib's GMutex/GCond wait this way. If the word
 *     changed meanwhile the restarted call answers EAGAIN, the answer
 *     every futex user already takes for "look again".
 *   FUTEX_LOCK_PI / FUTEX_LOCK_PI2: -ERESTARTNOINTR, restarted always.
 * Not restartable: a futex wait with a timeout (-ERESTART_RESTARTBLOCK
 * becomes EINTR once a handler ran: pthread_mutex_timedlock retries, but
 * sem_timedwait hands EINTR to the program), and sleeps, poll, epoll,
 * select (EINTR whatever SA_RESTART says, signal(7)).
 *
 * Must not: be called from the stopped window (it reads /proc), allocate,
 * or print. Nothing here stops or signals the thread.
 */
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>

#include "platform/linux/linux.h"

#if defined(__SANITIZE_THREAD__)
#define SNAP__LINUX_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SNAP__LINUX_TSAN 1
#endif
#endif

/* The system-call instruction just before the pc the kernel reports. */
#if defined(__x86_64__)
static const unsigned char k_syscall_insn[] = {0x0f, 0x05};
#elif defined(__aarch64__)
static const unsigned char k_syscall_insn[] = {0x01, 0x00, 0x00, 0xd4};
#else
static const unsigned char k_syscall_insn[] = {0};
#define SNAP__NO_SYSCALL_INSN 1
#endif

/* The three numbers of /proc/self/task/<tid>/schedstat into v[0..3). */
static int schedstat(int tid, uint64_t v[3]) {
  char buf[128];
  if (snap__linux_read_task(tid, "schedstat", buf, sizeof buf) < 0)
    return SNAP_ENOTHREAD;
  if (snap__linux_schedstat(buf, v) != SNAP_OK)
    return SNAP_EUNSUPPORTED;
  /* A kernel without scheduler statistics prints zeros: no witness. */
  return v[2] == 0 ? SNAP_EUNSUPPORTED : SNAP_OK;
}

/* The syscall file as the fields compared later, into seen[3..12). */
static void pack(const snap__linux_syscall_t *sc, uint64_t *seen) {
  seen[0] = (uint64_t)sc->nr;
  for (int i = 0; i < 6; i++)
    seen[1 + i] = sc->args[i];
  seen[7] = sc->sp;
  seen[8] = sc->pc;
}

/* Whether a signal cannot change the outcome of system call nr with these
   arguments (the head comment's list). */
static bool restartable(int64_t nr, const uint64_t *args) {
#ifdef SNAP__LINUX_TSAN
  /* ThreadSanitizer holds a signal back until the thread leaves the
     interceptor it is in (pthread_mutex_lock's returns only once the lock
     is taken): the sample would wait out its whole timeout. */
  (void)nr, (void)args;
  return false;
#endif
  if (nr != SYS_futex)
    return false;
  int cmd = (int)(args[1] & FUTEX_CMD_MASK);
  switch (cmd) {
  case FUTEX_WAIT:
  case FUTEX_WAIT_BITSET: return args[3] == 0; /* no timeout */
  case FUTEX_LOCK_PI:
#ifdef FUTEX_LOCK_PI2
  case FUTEX_LOCK_PI2:
#endif
    return true;
  default: return false;
  }
}

static int tid_of(snap_thread_t thread) {
  return snap__linux_tid_ok(thread) ? (int)thread : 0;
}

int snap__plat_blocked_regs(snap_thread_t thread, snap__plat_blocked_t *out) {
#ifdef SNAP__NO_SYSCALL_INSN
  (void)thread, (void)out, (void)k_syscall_insn;
  return SNAP_EUNSUPPORTED;
#else
  int tid = tid_of(thread);
  if (!tid)
    return SNAP_ENOTHREAD;
  memset(out, 0, sizeof *out);
  int rc = schedstat(tid, out->seen);
  if (rc != SNAP_OK)
    return rc;
  snap__linux_syscall_t sc;
  if ((rc = snap__linux_syscall_read(tid, &sc)) != SNAP_OK)
    return rc == SNAP_EIO ? SNAP_EBUSY : rc;
  if (sc.state != SNAP__LINUX_SC_IN_SYSCALL)
    return SNAP_EBUSY; /* running, or blocked at a fault: signal it */
  unsigned char insn[sizeof k_syscall_insn];
  if (sc.pc < sizeof insn ||
      !snap__plat_read(sc.pc - sizeof insn, insn, sizeof insn) ||
      memcmp(insn, k_syscall_insn, sizeof insn) != 0)
    return SNAP_EBUSY; /* not our code (qemu-user's host thread) */
  pack(&sc, out->seen + 3);
  out->wait.source = SNAP__WAIT_REGS_KERNEL;
  out->wait.pc = sc.pc;
  out->wait.nr = sc.nr;
  for (int i = 0; i < 6; i++)
    out->wait.args[i] = sc.args[i];
  out->restartable = restartable(sc.nr, out->wait.args);
  out->regs.pc = sc.pc;
  out->regs.sp = sc.sp;
  out->regs.fp = 0;
  out->regs.lr = 0;
  out->regs.lr_valid = false;
  return SNAP_OK;
#endif
}

int snap__plat_blocked_still(snap_thread_t thread,
                             const snap__plat_blocked_t *b) {
  int tid = tid_of(thread);
  if (!tid)
    return SNAP_ENOTHREAD;
  snap__linux_syscall_t sc;
  int rc = snap__linux_syscall_read(tid, &sc);
  if (rc != SNAP_OK)
    return rc == SNAP_EIO ? SNAP_EBUSY : rc;
  uint64_t now[12];
  pack(&sc, now + 3);
  if (sc.state != SNAP__LINUX_SC_IN_SYSCALL ||
      memcmp(now + 3, b->seen + 3, 9 * sizeof *now) != 0)
    return SNAP_EBUSY;
  /* Read last: the thread stayed off every CPU from the first read of
     schedstat to this one, so nothing it did falls between them. */
  if ((rc = schedstat(tid, now)) != SNAP_OK)
    return rc == SNAP_EUNSUPPORTED ? SNAP_EBUSY : rc;
  return memcmp(now, b->seen, 3 * sizeof *now) == 0 ? SNAP_OK : SNAP_EBUSY;
}

int snap__plat_blocked_again(snap_thread_t thread,
                             const snap__plat_blocked_t *before,
                             snap__plat_blocked_t *after) {
  int rc = snap__plat_blocked_regs(thread, after);
  if (rc != SNAP_OK)
    return rc;
  /* seen[2]: times scheduled in (schedstat's third field); the signal's
     delivery is one. More: it ran again, or was preempted in the handler
     (then it is simply not known to be unchanged). */
  if (memcmp(after->seen + 3, before->seen + 3, 9 * sizeof *after->seen) != 0 ||
      after->seen[2] != before->seen[2] + 1)
    return SNAP_EBUSY;
  return SNAP_OK;
}
