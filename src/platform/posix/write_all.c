/*
 * write_all.c — writing a whole buffer to a file descriptor, for debug
 * printing. POSIX only, so both backends compile it.
 *
 * Must not: buffer or allocate; a short write is retried, EINTR is retried,
 * any other failure is reported (the caller returns SNAP_EIO).
 */
#include <errno.h>
#include <unistd.h>

#include "platform/platform.h"

int snap__plat_write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return SNAP_EIO;
    p += w;
    n -= (size_t)w;
  }
  return SNAP_OK;
}
