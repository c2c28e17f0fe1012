/*
 * proc_files.c — reading the small text files of /proc the Linux backend
 * asks about threads (stat, status, comm, schedstat), and finding a field
 * in a status file.
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
