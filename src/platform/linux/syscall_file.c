/*
 * syscall_file.c — what the kernel publishes about a thread blocked in a
 * system call: /proc/self/task/<tid>/syscall.
 *
 * The file (proc(5), fs/proc/base.c proc_pid_syscall) holds one line:
 *   "running"                        the thread is on a CPU (or runnable);
 *   "-1 <sp> <pc>"                   blocked, but not in a system call
 *                                    (e.g. a page fault being served);
 *   "<nr> <a0>..<a5> <sp> <pc>"      blocked in system call nr, its six
 *                                    arguments, the user stack pointer and
 *                                    the user pc (right after the syscall
 *                                    instruction).
 * nr is decimal, the rest hexadecimal with "0x". The kernel takes the
 * values from the thread's saved user registers, so they are exact while
 * the thread stays blocked; it may wake the instant after, which is why a
 * caller that relies on them reads the file again afterwards.
 *
 * Under an emulator (qemu-user runs our arm64 tests) the file describes
 * the emulator's host thread, not the guest's registers: callers must
 * check pc against the guest's own code before trusting it.
 *
 * Owns: the path and the parse. Must not: be called from the stopped
 * window (open and read block on /proc), allocate, or print.
 */
#include <string.h>

#include "platform/linux/linux.h"

/* One number at *p (blanks skipped): decimal, "-1", or "0x" hexadecimal.
   Advances *p; false when there is none. */
static bool number(const char **p, int64_t *out) {
  const char *s = *p;
  while (*s == ' ')
    s++;
  bool neg = *s == '-';
  if (neg)
    s++;
  uint64_t v = 0;
  int digits = 0;
  if (s[0] == '0' && s[1] == 'x') {
    for (s += 2;; s++, digits++) {
      int d = *s >= '0' && *s <= '9'   ? *s - '0'
              : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
                                       : -1;
      if (d < 0 || digits >= 16)
        break;
      v = v << 4 | (uint64_t)d;
    }
  } else {
    for (; *s >= '0' && *s <= '9' && digits < 19; s++, digits++)
      v = v * 10 + (uint64_t)(*s - '0');
  }
  if (digits == 0 || (*s != ' ' && *s != '\n' && *s != '\0'))
    return false;
  *out = neg ? -(int64_t)v : (int64_t)v;
  *p = s;
  return true;
}

int snap__linux_syscall_read(int tid, snap__linux_syscall_t *out) {
  char buf[256];
  if (snap__linux_read_task(tid, "syscall", buf, sizeof buf) < 0)
    return SNAP_ENOTHREAD; /* gone (or never ours) */
  memset(out, 0, sizeof *out);
  if (strncmp(buf, "running", 7) == 0) {
    out->state = SNAP__LINUX_SC_RUNNING;
    return SNAP_OK;
  }
  const char *p = buf;
  int64_t v[9];
  int n = 0;
  while (n < 9 && number(&p, &v[n]))
    n++;
  if (n == 3 && v[0] == -1) {
    out->state = SNAP__LINUX_SC_BLOCKED;
    out->nr = -1;
  } else if (n == 9 && v[0] >= 0) {
    out->state = SNAP__LINUX_SC_IN_SYSCALL;
    out->nr = v[0];
    for (int i = 0; i < 6; i++)
      out->args[i] = (uintptr_t)v[1 + i];
  } else {
    return SNAP_EIO; /* a format this parser does not know */
  }
  out->sp = (uintptr_t)v[n - 2];
  out->pc = (uintptr_t)v[n - 1];
  return SNAP_OK;
}
