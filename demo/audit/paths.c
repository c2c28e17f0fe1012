/*
 * paths.c — the absolute form of a path a program passed, and whether
 * the audit watches it.
 *
 * Owns: joining a relative path to its directory (the working directory,
 * or for the *at calls the directory a descriptor names, as
 * /proc/self/fd/<n> tells), and resolving ".", ".." and repeated slashes
 * by name, so "cd /etc; open("passwd")" and "/tmp/../etc/passwd" are both
 * /etc/passwd when matched against the prefixes.
 * Must not: follow links or touch the file (a stat of a probe must not
 * become two), or call anything that is not async-signal-safe (it runs
 * on every watched call, in signal handlers too): system calls only.
 */
#include "audit.h"

#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The directory dirfd names into out; false if it names none. */
static bool dir_of(int dirfd, char *out, size_t size) {
  if (dirfd == AT_FDCWD) /* the system call: getcwd() may allocate */
    return syscall(SYS_getcwd, out, size) > 0 && out[0] == '/';
  if (dirfd < 0)
    return false;
  char link[40] = "/proc/self/fd/";
  snap__dec_u64(link + strlen(link), (uint64_t)dirfd);
  ssize_t len = readlink(link, out, size - 1);
  if (len <= 0 || (size_t)len >= size - 1 || out[0] != '/')
    return false; /* a socket, a pipe, or too long */
  out[len] = '\0';
  return true;
}

/* Resolves ".", ".." and "//" in the absolute path p, in place. */
static void normalize(char *p) {
  size_t w = 0; /* written: p[0..w) is the result so far, without a
                   trailing slash (but for the root) */
  const char *r = p;
  while (*r) {
    while (*r == '/')
      r++;
    const char *c = r;
    while (*r && *r != '/')
      r++;
    size_t len = (size_t)(r - c);
    if (len == 0 || (len == 1 && c[0] == '.'))
      continue;
    if (len == 2 && c[0] == '.' && c[1] == '.') {
      while (w > 0 && p[w - 1] != '/')
        w--;
      if (w > 0)
        w--; /* the slash before the dropped component */
      continue;
    }
    p[w++] = '/';
    memmove(p + w, c, len); /* c >= p + w: never overwrites unread text */
    w += len;
  }
  if (w == 0)
    p[w++] = '/';
  p[w] = '\0';
}

bool audit_absolute(int dirfd, const char *path, char *out, size_t size) {
  if (!path || size < 2)
    return false;
  size_t plen = strlen(path);
  if (path[0] == '/') {
    if (plen >= size)
      return false;
    memcpy(out, path, plen + 1);
  } else {
    if (!dir_of(dirfd, out, size))
      return false;
    size_t dlen = strlen(out);
    if (dlen + 1 + plen >= size)
      return false;
    out[dlen] = '/';
    memcpy(out + dlen + 1, path, plen + 1);
  }
  normalize(out);
  return true;
}

bool audit_watched(const char *path) {
  for (int i = 0; i < audit_cfg.nprefixes; i++)
    if (strncmp(path, audit_cfg.prefix[i], audit_cfg.prefix_len[i]) == 0)
      return true;
  return false;
}
