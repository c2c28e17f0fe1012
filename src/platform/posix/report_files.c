/*
 * report_files.c — the OS calls under the library's files: directories
 * made, listed and synced; files created exclusively, opened for reading
 * without following or blocking, synced, renamed, unlinked; random bytes
 * for names. POSIX, so both backends compile it.
 *
 * Owns: the flags. Must not: decide anything (src/report/files.c holds the
 * policy: temp names, the replace sequence, what is refused); print or
 * abort (every failure is a returned code).
 *
 * Why these flags (docs/security.md; issue 24, items 1-5):
 *  - create: O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC. O_EXCL fails on any name
 *    already there, a symlink included (POSIX: "If O_CREAT and O_EXCL are
 *    set ... and the path names a symbolic link, open() shall fail"), so
 *    a link planted by whoever can write the directory is never written
 *    through; O_NOFOLLOW says the same where O_EXCL alone is not trusted.
 *    The mode is set with fchmod afterwards: exact, whatever the umask.
 *  - read: O_RDONLY|O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC, then fstat on the
 *    descriptor. A FIFO named like a report opens at once instead of
 *    waiting for a writer forever, and is then seen for what it is.
 *  - directories: mkdir with the mode, then fchmod through an O_NOFOLLOW
 *    descriptor (a link swapped in after the mkdir is not chmod'ed).
 *
 * Runs on the watchdog thread or the app's thread calling snap_trace_write
 * (never the stopped window): it blocks on the disk and allocates
 * (opendir).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#if defined(__APPLE__)
#include <stdlib.h> /* arc4random_buf */
#else
#include <sys/random.h> /* getentropy */
#endif
#include <sys/stat.h>
#include <unistd.h>

#include "platform/platform.h"

static snap__plat_file_kind_t kind_of(mode_t m) {
  return S_ISREG(m)   ? SNAP__FILE_REGULAR
         : S_ISDIR(m) ? SNAP__FILE_DIR
                      : SNAP__FILE_OTHER;
}

static int open_retry(const char *path, int flags, mode_t mode) {
  int fd;
  while ((fd = open(path, flags, mode)) < 0 && errno == EINTR)
    ;
  return fd;
}

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* mkdir with exactly `mode`; nothing when it exists. */
static void make_one(const char *path, mode_t mode) {
  if (mkdir(path, mode) != 0)
    return; /* EEXIST is fine if it is a directory; the caller checks */
  int fd = open_retry(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
  if (fd >= 0) {
    (void)fchmod(fd, mode); /* the umask took bits the caller asked for */
    close(fd);
  }
}

int snap__plat_dir_make(const char *dir, unsigned mode) {
  if (!dir || !dir[0] || (mode & ~07777u))
    return SNAP_EINVAL;
  char path[PATH_MAX];
  size_t len = strlen(dir);
  if (len >= sizeof path)
    return SNAP_EIO;
  memcpy(path, dir, len + 1);
  if (is_dir(path))
    return SNAP_OK;
  /* Each parent in turn. Their errors are not judged here: a parent that
     exists may still refuse mkdir with EACCES, EPERM or EROFS rather than
     EEXIST (sandboxes, read-only mounts), so only the final check counts. */
  for (size_t i = 1; i < len; i++) {
    if (path[i] != '/' || path[i - 1] == '/')
      continue;
    path[i] = '\0';
    make_one(path, (mode_t)mode);
    path[i] = '/';
  }
  make_one(path, (mode_t)mode);
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

int snap__plat_file_sync(int fd) {
  int r;
  while ((r = fsync(fd)) != 0 && errno == EINTR)
    ;
  return r == 0 ? SNAP_OK : SNAP_EIO;
}

int snap__plat_dir_sync(const char *dir) {
  int fd = open_retry(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (fd < 0)
    return SNAP_EIO;
  int r;
  while ((r = fsync(fd)) != 0 && errno == EINTR)
    ;
  int err = errno;
  close(fd);
  return r == 0 || err == EINVAL ? SNAP_OK : SNAP_EIO;
}

int snap__plat_path_kind(const char *path, snap__plat_file_kind_t *kind) {
  struct stat st;
  if (lstat(path, &st) == 0) {
    *kind = kind_of(st.st_mode);
    return SNAP_OK;
  }
  if (errno == ENOENT) {
    *kind = SNAP__FILE_NONE;
    return SNAP_OK;
  }
  return SNAP_EIO;
}

int snap__plat_file_create(const char *path, unsigned mode, int *fd) {
  if (mode & ~07777u)
    return SNAP_EINVAL;
  *fd = open_retry(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                   (mode_t)mode);
  if (*fd < 0)
    return errno == EEXIST || errno == ELOOP ? SNAP_EBUSY : SNAP_EIO;
  if (fchmod(*fd, (mode_t)mode) != 0) {
    close(*fd);
    unlink(path); /* ours: O_EXCL made it */
    *fd = -1;
    return SNAP_EIO;
  }
  return SNAP_OK;
}

int snap__plat_file_open_read(const char *path, int *fd,
                              snap__plat_file_kind_t *kind, uint64_t *size) {
  *fd = open_retry(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0);
  if (*fd < 0)
    return SNAP_EIO;
  struct stat st;
  if (fstat(*fd, &st) != 0) {
    close(*fd);
    *fd = -1;
    return SNAP_EIO;
  }
  *kind = kind_of(st.st_mode);
  *size = S_ISREG(st.st_mode) && st.st_size > 0 ? (uint64_t)st.st_size : 0;
  return SNAP_OK;
}

long snap__plat_file_read_some(int fd, void *buf, size_t n) {
  ssize_t r;
  while ((r = read(fd, buf, n)) < 0 && errno == EINTR)
    ;
  return r < 0 ? SNAP_EIO : (long)r;
}

int snap__plat_file_close(int fd) {
  return close(fd) == 0 || errno == EINTR ? SNAP_OK : SNAP_EIO;
}

int snap__plat_file_rename(const char *from, const char *to) {
  return rename(from, to) == 0 ? SNAP_OK : SNAP_EIO;
}

int snap__plat_file_unlink(const char *path) {
  return unlink(path) == 0 || errno == ENOENT ? SNAP_OK : SNAP_EIO;
}

int snap__plat_random(void *buf, size_t n) {
#if defined(__APPLE__)
  /* The iOS SDK has no <sys/random.h>; arc4random_buf is the kernel's
     entropy on every Apple OS and cannot fail. */
  arc4random_buf(buf, n);
  return SNAP_OK;
#else
  return n <= 256 && getentropy(buf, n) == 0 ? SNAP_OK : SNAP_EUNSUPPORTED;
#endif
}
