/*
 * memory.c — the one primitive that reads memory we have not proven mapped.
 *
 * First choice: process_vm_readv on our own pid. The kernel copies, so an
 * unmapped or protected address gives EFAULT instead of a SIGSEGV in the
 * host app. A plain system call: async-signal-safe, no lock, no allocation.
 *
 * Where it is missing (seccomp sandboxes and some containers answer EPERM or
 * ENOSYS; so does qemu-user, which runs our arm64 tests) we let write(2)
 * check the address instead: writing from a bad pointer into a pipe fails
 * with EFAULT, and a good one is read straight back. A pipe carries bytes
 * from anyone who writes to it, so each read borrows one of a few private
 * pipes, taken with a compare-and-swap and returned empty; when all are
 * busy the read fails (the walk truncates), it never waits. The pipes are
 * made at load time, only if process_vm_readv does not work, and made anew
 * in a forked child so parent and child never share one.
 *
 * Must not: fall back to a direct read "because it is probably fine".
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/uio.h>
#include <unistd.h>

#include "platform/linux/linux.h"

#define PIPES 4

static atomic_bool g_use_pipes;
static int g_pipe[PIPES][2];
static atomic_bool g_pipe_busy[PIPES];

static bool vm_read(uintptr_t addr, void *dst, size_t n) {
  struct iovec local = {dst, n};
  struct iovec remote = {(void *)addr, n};
  ssize_t got;
  do
    got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  while (got < 0 && errno == EINTR);
  return got == (ssize_t)n;
}

static ssize_t retry(ssize_t (*io)(int, void *, size_t), int fd, void *buf,
                     size_t n) {
  ssize_t r;
  do
    r = io(fd, buf, n);
  while (r < 0 && errno == EINTR);
  return r;
}

static ssize_t write_(int fd, void *buf, size_t n) { return write(fd, buf, n); }

static bool pipe_read(uintptr_t addr, void *dst, size_t n) {
  for (int i = 0; i < PIPES; i++) {
    bool expected = false;
    if (!atomic_compare_exchange_strong(&g_pipe_busy[i], &expected, true))
      continue;
    bool ok = false;
    /* A pipe holds 64 KiB; we never ask for more than a few words. */
    ssize_t w = retry(write_, g_pipe[i][1], (void *)addr, n);
    if (w > 0) {
      ssize_t r = retry(read, g_pipe[i][0], dst, (size_t)w);
      ok = w == (ssize_t)n && r == w;
    }
    atomic_store(&g_pipe_busy[i], false);
    return ok;
  }
  return false;
}

bool snap__plat_read(uintptr_t addr, void *dst, size_t n) {
  if (n == 0)
    return true;
  if (addr == 0 || addr + n < addr || n > 4096)
    return false;
  int saved = errno;
  bool ok = atomic_load_explicit(&g_use_pipes, memory_order_relaxed)
                ? pipe_read(addr, dst, n)
                : vm_read(addr, dst, n);
  errno = saved;
  return ok;
}

bool snap__linux_read_bulk(uintptr_t addr, void *dst, size_t n) {
  if (n == 0)
    return true;
  if (addr == 0 || addr + n < addr)
    return false;
  if (!atomic_load_explicit(&g_use_pipes, memory_order_relaxed)) {
    int saved = errno;
    bool ok = vm_read(addr, dst, n);
    errno = saved;
    return ok;
  }
  for (size_t off = 0; off < n; off += 4096) /* a pipe's read: 4 KiB */
    if (!snap__plat_read(addr + off, (char *)dst + off,
                         n - off < 4096 ? n - off : 4096))
      return false;
  return true;
}

static void open_pipes(void) {
  for (int i = 0; i < PIPES; i++)
    if (pipe2(g_pipe[i], O_CLOEXEC | O_NONBLOCK) != 0)
      g_pipe[i][0] = g_pipe[i][1] = -1, atomic_store(&g_pipe_busy[i], true);
}

static void reopen_pipes_in_child(void) {
  for (int i = 0; i < PIPES; i++) {
    if (g_pipe[i][0] >= 0) {
      close(g_pipe[i][0]);
      close(g_pipe[i][1]);
    }
    atomic_store(&g_pipe_busy[i], false);
  }
  open_pipes();
}

__attribute__((constructor)) static void memory_init(void) {
  uintptr_t probe = 42, copy = 0;
  if (vm_read((uintptr_t)&probe, &copy, sizeof copy) && copy == 42)
    return;
  open_pipes();
  atomic_store(&g_use_pipes, true);
  (void)snap__plat_on_fork(SNAP__FORK_MEMORY, NULL, NULL,
                           reopen_pipes_in_child);
}
