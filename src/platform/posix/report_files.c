/*
 * report_files.c — the lag watchdog's report directory: create it, list
 * it, and read, replace and remove the files in it. POSIX, so both
 * backends compile it.
 *
 * Replacing is the one part with a promise (design rule 5, "nothing
 * lost"): a kill at any instant leaves dir/name holding either its old
 * content or the new one, never a mix or nothing.
 *  1. write the whole content to dir/.NAME.tmp (O_TRUNC: a stale temporary
 *     left by an earlier kill is simply overwritten);
 *  2. fsync it, so the data reaches the disk before the name does;
 *  3. rename it over dir/name — atomic on every POSIX file system;
 *  4. fsync the directory, so the rename itself survives a power cut.
 * A failure in 1–3 unlinks the temporary and returns SNAP_EIO; dir/name is
 * untouched. Step 4 comes after the point of no return: if it fails the new
 * content is already in place (only its durability is unconfirmed) and
 * SNAP_EIO is still returned, so the caller may write it again. File
 * systems that cannot sync a directory at all (EINVAL) count as success.
 * (On Apple, fsync orders writes but does not force the drive's cache;
 * F_FULLFSYNC would, at a cost far above a report's worth.)
 * Temporaries are dot-files, so listers skip them by their leading '.'.
 *
 * Paths are dir + "/" + name. A name must be one path component (not
 * empty, no '/', not "." or ".."): SNAP_EINVAL otherwise, so a report name
 * can never reach outside its directory. Paths of PATH_MAX bytes or more
 * are SNAP_EIO (they could not be opened anyway).
 *
 * Runs on the watchdog thread only (never the main thread, never the
 * stopped window): it blocks on the disk and allocates (opendir, the read
 * buffer). Must not: abort or print; every failure is a returned code.
 *
 * Each call but the listing (whose callback may make the others) adds its
 * wall time to its thread's snap__plat_file_waited_ns:
 * an fsync on a busy disk waits for a journal commit that holds everyone
 * else's writes too (100 ms and more), and a watchdog that cannot tell
 * that wait from a stopped process would take it out of a lag.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/platform.h"

static bool name_ok(const char *name) {
  return name && name[0] && !strchr(name, '/') && strcmp(name, ".") != 0 &&
         strcmp(name, "..") != 0;
}

/* dir + "/" + prefix + name + suffix into buf[PATH_MAX]: SNAP_OK,
   SNAP_EINVAL (bad dir or name) or SNAP_EIO (too long). */
static int join(char *buf, const char *dir, const char *prefix,
                const char *name, const char *suffix) {
  if (!dir || !dir[0] || !name_ok(name))
    return SNAP_EINVAL;
  int len = snprintf(buf, PATH_MAX, "%s/%s%s%s", dir, prefix, name, suffix);
  return len < 0 || len >= PATH_MAX ? SNAP_EIO : SNAP_OK;
}

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int dir_make(const char *dir) {
  if (!dir || !dir[0])
    return SNAP_EINVAL;
  char path[PATH_MAX];
  size_t len = strlen(dir);
  if (len >= sizeof path)
    return SNAP_EIO;
  memcpy(path, dir, len + 1);
  /* Each parent in turn. Their errors are not judged here: a parent that
     exists may still refuse mkdir with EACCES, EPERM or EROFS rather than
     EEXIST (sandboxes, read-only mounts), so only the final check counts. */
  for (size_t i = 1; i < len; i++) {
    if (path[i] != '/' || path[i - 1] == '/')
      continue;
    path[i] = '\0';
    (void)mkdir(path, 0755);
    path[i] = '/';
  }
  (void)mkdir(path, 0755); /* EEXIST is fine if it is a directory */
  return is_dir(path) ? SNAP_OK : SNAP_EIO;
}

int snap__plat_dir_list(const char *dir,
                        void (*cb)(const char *name, void *ctx), void *ctx) {
  if (!dir || !dir[0] || !cb)
    return SNAP_EINVAL;
  DIR *d = opendir(dir);
  if (!d)
    return SNAP_EIO;
  int rc = SNAP_OK;
  for (;;) {
    errno = 0;
    struct dirent *e = readdir(d);
    if (!e) {
      if (errno != 0)
        rc = SNAP_EIO;
      break;
    }
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    cb(e->d_name, ctx); /* may remove entries: readdir tolerates that */
  }
  closedir(d);
  return rc;
}

static int fsync_retry(int fd) {
  int r;
  while ((r = fsync(fd)) != 0 && errno == EINTR)
    ;
  return r;
}

/* Step 4: the directory's own fsync. */
static int sync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return SNAP_EIO;
  int r = fsync_retry(fd);
  int err = errno;
  close(fd);
  return r == 0 || err == EINVAL ? SNAP_OK : SNAP_EIO;
}

static int file_replace(const char *dir, const char *name, const void *data,
                        size_t n) {
  char tmp[PATH_MAX], dst[PATH_MAX];
  int rc = join(tmp, dir, ".", name, ".tmp");
  if (rc == SNAP_OK)
    rc = join(dst, dir, "", name, "");
  if (rc != SNAP_OK)
    return rc;
  if (n > 0 && !data)
    return SNAP_EINVAL;

  int fd;
  while ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0 &&
         errno == EINTR)
    ;
  if (fd < 0)
    return SNAP_EIO;
  bool ok =
      snap__plat_write_all(fd, data, n) == SNAP_OK && fsync_retry(fd) == 0;
  /* close's own error counts (NFS reports deferred write errors there);
     EINTR leaves the descriptor closed on Linux, so it is never retried. */
  if (close(fd) != 0 && errno != EINTR)
    ok = false;
  if (!ok || rename(tmp, dst) != 0) {
    unlink(tmp);
    return SNAP_EIO;
  }
  return sync_dir(dir);
}

static int file_read(const char *dir, const char *name, size_t max, char **data,
                     size_t *n) {
  if (!data || !n)
    return SNAP_EINVAL;
  *data = NULL;
  *n = 0;
  char path[PATH_MAX];
  int rc = join(path, dir, "", name, "");
  if (rc != SNAP_OK)
    return rc;
  int fd;
  while ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 && errno == EINTR)
    ;
  if (fd < 0)
    return SNAP_EIO;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
      (unsigned long long)st.st_size > max) {
    close(fd);
    return SNAP_EIO;
  }
  /* The size is a first guess: the file may grow while it is read. The
     buffer grows with it up to max bytes; one byte more is an error. */
  size_t cap = (size_t)st.st_size + 1, len = 0;
  char *buf = malloc(cap);
  rc = buf ? SNAP_OK : SNAP_ENOMEM;
  while (rc == SNAP_OK) {
    if (len + 1 == cap) { /* full but for the NUL: grow or give up */
      if (len >= max) {
        char probe;
        ssize_t r;
        while ((r = read(fd, &probe, 1)) < 0 && errno == EINTR)
          ;
        if (r != 0)
          rc = SNAP_EIO; /* more than max bytes, or a read error */
        break;
      }
      size_t grown = cap - 1 > max / 2 ? max + 1 : 2 * cap;
      char *b = realloc(buf, grown);
      if (!b) {
        rc = SNAP_ENOMEM;
        break;
      }
      buf = b;
      cap = grown;
    }
    ssize_t r = read(fd, buf + len, cap - 1 - len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      rc = SNAP_EIO;
    if (r <= 0)
      break;
    len += (size_t)r;
  }
  close(fd);
  if (rc != SNAP_OK) {
    free(buf);
    return rc;
  }
  buf[len] = '\0';
  *data = buf;
  *n = len;
  return SNAP_OK;
}

static int file_remove(const char *dir, const char *name) {
  char path[PATH_MAX];
  int rc = join(path, dir, "", name, "");
  if (rc != SNAP_OK)
    return rc;
  return unlink(path) == 0 || errno == ENOENT ? SNAP_OK : SNAP_EIO;
}

/* ---- The exported calls, timed ---------------------------------------- */

static _Thread_local uint64_t t_waited_ns;

static int timed(uint64_t since, int rc) {
  t_waited_ns += snap__plat_now_ns() - since;
  return rc;
}

uint64_t snap__plat_file_waited_ns(void) { return t_waited_ns; }

int snap__plat_dir_make(const char *dir) {
  uint64_t t0 = snap__plat_now_ns();
  return timed(t0, dir_make(dir));
}

int snap__plat_file_replace(const char *dir, const char *name, const void *data,
                            size_t n) {
  uint64_t t0 = snap__plat_now_ns();
  return timed(t0, file_replace(dir, name, data, n));
}

int snap__plat_file_read(const char *dir, const char *name, size_t max,
                         char **data, size_t *n) {
  uint64_t t0 = snap__plat_now_ns();
  return timed(t0, file_read(dir, name, max, data, n));
}

int snap__plat_file_remove(const char *dir, const char *name) {
  uint64_t t0 = snap__plat_now_ns();
  return timed(t0, file_remove(dir, name));
}
