/*
 * memory.c — the one primitive that reads memory we have not proven mapped.
 *
 * process_vm_readv on our own pid copies through the kernel, so an unmapped
 * or protected address gives EFAULT instead of a SIGSEGV in the host app.
 * It is a plain system call: async-signal-safe, no lock, no allocation.
 * Where it is forbidden (seccomp sandboxes, some containers: EPERM/ENOSYS)
 * every read fails, which truncates walks instead of crashing them.
 *
 * Must not: fall back to a direct read "because it is probably fine".
 */
#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#include "platform/linux/linux.h"

bool snap__plat_read(uintptr_t addr, void *dst, size_t n) {
  if (n == 0)
    return true;
  if (addr == 0 || addr + n < addr)
    return false;
  struct iovec local = {dst, n};
  struct iovec remote = {(void *)addr, n};
  ssize_t got;
  int saved = errno;
  do
    got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  while (got < 0 && errno == EINTR);
  errno = saved;
  return got == (ssize_t)n;
}
