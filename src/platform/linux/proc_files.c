/*
 * proc_files.c — reading the small text files of /proc the Linux backend
 * asks about threads (stat, status, comm, schedstat, syscall): a
 * thread's path, one read, and finding a field in a status file.
 *
 * Owns: one open/read-until-EOF/close loop (EINTR retried, the text
 * NUL-terminated) and the "Key:<blanks>value" lookup, so each question is
 * only its parse. Into caller's buffers: no allocation, no stdio. Must
 * not: be called from the stopped window (open and read block on /proc).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "platform/linux/linux.h"

ssize_t snap__linux_read_small(const char *path, char *buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  size_t len = 0;
  while (len + 1 < size) {
    ssize_t r = read(fd, buf + len, size - 1 - len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      int err = errno;
      close(fd);
      errno = err;
      return -1;
    }
    if (r == 0)
      break;
    len += (size_t)r;
  }
  close(fd);
  buf[len] = '\0';
  return (ssize_t)len;
}

const char *snap__linux_status_field(const char *text, const char *key) {
  size_t klen = strlen(key);
  for (const char *p = text; (p = strstr(p, key)) != NULL; p += klen) {
    if (p != text && p[-1] != '\n')
      continue; /* inside another line */
    p += klen;
    while (*p == ' ' || *p == '\t')
      p++;
    return p;
  }
  return NULL;
}

/* "/proc/self/task/<tid>/<leaf>" into path[64]. */
void snap__linux_task_path(char *path, int tid, const char *leaf) {
  static const char head[] = "/proc/self/task/";
  char digits[24];
  int nd = 0;
  unsigned t = (unsigned)tid;
  do
    digits[nd++] = (char)('0' + t % 10);
  while ((t /= 10) != 0);
  char *p = path;
  memcpy(p, head, sizeof head - 1);
  p += sizeof head - 1;
  while (nd > 0)
    *p++ = digits[--nd];
  *p++ = '/';
  size_t n = strlen(leaf);
  if (n > 64 - (size_t)(p - path) - 1)
    n = 64 - (size_t)(p - path) - 1;
  memcpy(p, leaf, n);
  p[n] = '\0';
}
