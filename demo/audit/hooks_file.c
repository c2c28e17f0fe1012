/*
 * hooks_file.c — the interposed file functions: every glibc entry point a
 * program opens, creates or probes a path through (docs/audit.md lists
 * them), FORTIFY's __open_2 family and the pre-2.33 __xstat family
 * included, since programs built against them call nothing else.
 *
 * Each hook takes the real function (looked up at load), calls it
 * outside the guard (a callback inside it is the program's call too),
 * then, unless the library itself made the call, makes the path absolute
 * and records the call when the path is watched: its result is "ok" or
 * the errno the call left. All of it async-signal-safe: open, stat and
 * access are, and programs call them from signal handlers.
 * Must not: change the call's result or errno; record a call the library
 * itself made. A missing real function fails with ENOSYS, never crashes.
 */
#include "audit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

struct open_how;

/* Declared here: glibc declares these only in some configurations (the
   __open_2 family with _FORTIFY_SOURCE; the __xstat family before 2.33;
   openat2 not at all), and the program calls them anyway. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
int openat2(int dirfd, const char *path, struct open_how *how, size_t size);
int __xstat(int ver, const char *path, struct stat *buf);
int __xstat64(int ver, const char *path, struct stat64 *buf);
int __lxstat(int ver, const char *path, struct stat *buf);
int __lxstat64(int ver, const char *path, struct stat64 *buf);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *buf,
               int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *buf,
                 int flags);

/* After the real call: records it when path (seen from dirfd) is watched.
   failed: the call failed, and errno says why. */
static void after(bool mine, int fn, int dirfd, const char *path, bool failed) {
  int err = errno;
  if (!mine || !path ||
      !atomic_load_explicit(&audit_ready, memory_order_acquire))
    return;
  audit_check_process();
  int prev = audit_enter();
  char abs[PATH_MAX];
  if (audit_absolute(dirfd, path, abs, sizeof abs) && audit_watched(abs))
    audit_record_call(fn, abs, strcmp(abs, path) != 0 ? path : NULL,
                      failed ? err : 0, 0);
  audit_leave(prev);
  errno = err;
}

/* The real function (mine: the program made this call, not the
   library). */
#define LOOKUP(name)                                                           \
  bool mine = audit_mine();                                                    \
  name##_fn real = real_##name();

#define MISSING(ret)                                                           \
  if (!real) {                                                                 \
    errno = ENOSYS;                                                            \
    return ret;                                                                \
  }

/* open's mode argument exists only with O_CREAT or O_TMPFILE. */
#define OPEN_MODE(flags)                                                       \
  mode_t mode = 0;                                                             \
  if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {                 \
    va_list ap;                                                                \
    va_start(ap, flags);                                                       \
    mode = va_arg(ap, mode_t);                                                 \
    va_end(ap);                                                                \
  }

/* ---- open -------------------------------------------------------------- */

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*open_2_fn)(const char *, int);
typedef int (*openat_2_fn)(int, const char *, int);
typedef int (*openat2_fn)(int, const char *, struct open_how *, size_t);
typedef int (*creat_fn)(const char *, mode_t);
typedef open_fn open64_fn;
typedef openat_fn openat64_fn;
typedef open_2_fn __open_2_fn, __open64_2_fn;
typedef openat_2_fn __openat_2_fn, __openat64_2_fn;
typedef creat_fn creat64_fn;
AUDIT_REAL(open_fn, open)
AUDIT_REAL(open64_fn, open64)
AUDIT_REAL(openat_fn, openat)
AUDIT_REAL(openat64_fn, openat64)
AUDIT_REAL(__open_2_fn, __open_2)
AUDIT_REAL(__open64_2_fn, __open64_2)
AUDIT_REAL(__openat_2_fn, __openat_2)
AUDIT_REAL(__openat64_2_fn, __openat64_2)
AUDIT_REAL(openat2_fn, openat2)
AUDIT_REAL(creat_fn, creat)
AUDIT_REAL(creat64_fn, creat64)

#define HOOK_OPEN(name)                                                        \
  AUDIT_EXPORT int name(const char *path, int flags, ...) {                    \
    OPEN_MODE(flags)                                                           \
    LOOKUP(name)                                                               \
    MISSING(-1)                                                                \
    int rc = real(path, flags, mode);                                          \
    after(mine, FN_##name, AT_FDCWD, path, rc < 0);                            \
    return rc;                                                                 \
  }

#define HOOK_OPENAT(name)                                                      \
  AUDIT_EXPORT int name(int dirfd, const char *path, int flags, ...) {         \
    OPEN_MODE(flags)                                                           \
    LOOKUP(name)                                                               \
    MISSING(-1)                                                                \
    int rc = real(dirfd, path, flags, mode);                                   \
    after(mine, FN_##name, dirfd, path, rc < 0);                               \
    return rc;                                                                 \
  }

#define HOOK_OPEN_2(name)                                                      \
  AUDIT_EXPORT int name(const char *path, int flags) {                         \
    LOOKUP(name)                                                               \
    MISSING(-1)                                                                \
    int rc = real(path, flags);                                                \
    after(mine, FN_##name, AT_FDCWD, path, rc < 0);                            \
    return rc;                                                                 \
  }

#define HOOK_OPENAT_2(name)                                                    \
  AUDIT_EXPORT int name(int dirfd, const char *path, int flags) {              \
    LOOKUP(name)                                                               \
    MISSING(-1)                                                                \
    int rc = real(dirfd, path, flags);                                         \
    after(mine, FN_##name, dirfd, path, rc < 0);                               \
    return rc;                                                                 \
  }

#define HOOK_CREAT(name)                                                       \
  AUDIT_EXPORT int name(const char *path, mode_t mode) {                       \
    LOOKUP(name)                                                               \
    MISSING(-1)                                                                \
    int rc = real(path, mode);                                                 \
    after(mine, FN_##name, AT_FDCWD, path, rc < 0);                            \
    return rc;                                                                 \
  }

HOOK_OPEN(open)
HOOK_OPEN(open64)
HOOK_OPENAT(openat)
HOOK_OPENAT(openat64)
HOOK_OPEN_2(__open_2)
HOOK_OPEN_2(__open64_2)
HOOK_OPENAT_2(__openat_2)
HOOK_OPENAT_2(__openat64_2)
HOOK_CREAT(creat)
HOOK_CREAT(creat64)

/* glibc 2.36 has no openat2 wrapper: a program that calls one links it
   from a newer libc. Should none be found, the system call does its job. */
AUDIT_EXPORT int openat2(int dirfd, const char *path, struct open_how *how,
                         size_t size) {
  LOOKUP(openat2)
  int rc = real ? real(dirfd, path, how, size)
                : (int)syscall(SYS_openat2, dirfd, path, how, size);
  after(mine, FN_openat2, dirfd, path, rc < 0);
  return rc;
}

/* ---- fopen --------------------------------------------------------------- */

typedef FILE *(*fopen_fn)(const char *, const char *);
typedef FILE *(*freopen_fn)(const char *, const char *, FILE *);
typedef fopen_fn fopen64_fn;
typedef freopen_fn freopen64_fn;
AUDIT_REAL(fopen_fn, fopen)
AUDIT_REAL(fopen64_fn, fopen64)
AUDIT_REAL(freopen_fn, freopen)
AUDIT_REAL(freopen64_fn, freopen64)

#define HOOK_FOPEN(name)                                                       \
  AUDIT_EXPORT FILE *name(const char *path, const char *how) {                 \
    LOOKUP(name)                                                               \
    MISSING(NULL)                                                              \
    FILE *f = real(path, how);                                                 \
    after(mine, FN_##name, AT_FDCWD, path, f == NULL);                         \
    return f;                                                                  \
  }

/* A NULL path reopens the stream's own file in a new mode: no new path. */
#define HOOK_FREOPEN(name)                                                     \
  AUDIT_EXPORT FILE *name(const char *path, const char *how, FILE *stream) {   \
    LOOKUP(name)                                                               \
    MISSING(NULL)                                                              \
    FILE *f = real(path, how, stream);                                         \
    after(mine, FN_##name, AT_FDCWD, path, f == NULL);                         \
    return f;                                                                  \
  }

HOOK_FOPEN(fopen)
HOOK_FOPEN(fopen64)
HOOK_FREOPEN(freopen)
HOOK_FREOPEN(freopen64)

/* ---- stat and access ------------------------------------------------------
 */

typedef int (*stat_fn)(const char *, struct stat *);
typedef int (*stat64_fn)(const char *, struct stat64 *);
typedef int (*fstatat_fn)(int, const char *, struct stat *, int);
typedef int (*fstatat64_fn)(int, const char *, struct stat64 *, int);
typedef int (*xstat_fn)(int, const char *, struct stat *);
typedef int (*xstat64_fn)(int, const char *, struct stat64 *);
typedef int (*fxstatat_fn)(int, int, const char *, struct stat *, int);
typedef int (*fxstatat64_fn)(int, int, const char *, struct stat64 *, int);
typedef int (*statx_fn)(int, const char *, int, unsigned, struct statx *);
typedef int (*access_fn)(const char *, int);
typedef int (*faccessat_fn)(int, const char *, int, int);
typedef stat_fn lstat_fn;
typedef stat64_fn lstat64_fn;
typedef xstat_fn __xstat_fn, __lxstat_fn;
typedef xstat64_fn __xstat64_fn, __lxstat64_fn;
typedef fxstatat_fn __fxstatat_fn;
typedef fxstatat64_fn __fxstatat64_fn;
typedef access_fn euidaccess_fn, eaccess_fn;
AUDIT_REAL(stat_fn, stat)
AUDIT_REAL(stat64_fn, stat64)
AUDIT_REAL(lstat_fn, lstat)
AUDIT_REAL(lstat64_fn, lstat64)
AUDIT_REAL(fstatat_fn, fstatat)
AUDIT_REAL(fstatat64_fn, fstatat64)
AUDIT_REAL(__xstat_fn, __xstat)
AUDIT_REAL(__xstat64_fn, __xstat64)
AUDIT_REAL(__lxstat_fn, __lxstat)
AUDIT_REAL(__lxstat64_fn, __lxstat64)
AUDIT_REAL(__fxstatat_fn, __fxstatat)
AUDIT_REAL(__fxstatat64_fn, __fxstatat64)
AUDIT_REAL(statx_fn, statx)
AUDIT_REAL(access_fn, access)
AUDIT_REAL(faccessat_fn, faccessat)
AUDIT_REAL(euidaccess_fn, euidaccess)
AUDIT_REAL(eaccess_fn, eaccess)

/* (path, second argument): stat, lstat, access and kin. */
#define HOOK_PATH2(name, type2)                                                \
  AUDIT_EXPORT int name(const char *path, type2 arg) {                         \
    LOOKUP(name)                                                               \
    MISSING(-1)                                                                \
    int rc = real(path, arg);                                                  \
    after(mine, FN_##name, AT_FDCWD, path, rc != 0);                           \
    return rc;                                                                 \
  }

#define HOOK_FSTATAT(name, type)                                               \
  AUDIT_EXPORT int name(int dirfd, const char *path, type *buf, int flags) {   \
    LOOKUP(name)                                                               \
    MISSING(-1)                                                                \
    int rc = real(dirfd, path, buf, flags);                                    \
    after(mine, FN_##name, dirfd, path, rc != 0);                              \
    return rc;                                                                 \
  }

#define HOOK_XSTAT(name, type)                                                 \
  AUDIT_EXPORT int name(int ver, const char *path, type *buf) {                \
    LOOKUP(name)                                                               \
    MISSING(-1)                                                                \
    int rc = real(ver, path, buf);                                             \
    after(mine, FN_##name, AT_FDCWD, path, rc != 0);                           \
    return rc;                                                                 \
  }

#define HOOK_FXSTATAT(name, type)                                              \
  AUDIT_EXPORT int name(int ver, int dirfd, const char *path, type *buf,       \
                        int flags) {                                           \
    LOOKUP(name)                                                               \
    MISSING(-1)                                                                \
    int rc = real(ver, dirfd, path, buf, flags);                               \
    after(mine, FN_##name, dirfd, path, rc != 0);                              \
    return rc;                                                                 \
  }

HOOK_PATH2(stat, struct stat *)
HOOK_PATH2(stat64, struct stat64 *)
HOOK_PATH2(lstat, struct stat *)
HOOK_PATH2(lstat64, struct stat64 *)
HOOK_FSTATAT(fstatat, struct stat)
HOOK_FSTATAT(fstatat64, struct stat64)
HOOK_XSTAT(__xstat, struct stat)
HOOK_XSTAT(__xstat64, struct stat64)
HOOK_XSTAT(__lxstat, struct stat)
HOOK_XSTAT(__lxstat64, struct stat64)
HOOK_FXSTATAT(__fxstatat, struct stat)
HOOK_FXSTATAT(__fxstatat64, struct stat64)
HOOK_PATH2(access, int)
HOOK_PATH2(euidaccess, int)
HOOK_PATH2(eaccess, int)

AUDIT_EXPORT int statx(int dirfd, const char *path, int flags, unsigned mask,
                       struct statx *buf) {
  LOOKUP(statx)
  MISSING(-1)
  int rc = real(dirfd, path, flags, mask, buf);
  after(mine, FN_statx, dirfd, path, rc != 0);
  return rc;
}

AUDIT_EXPORT int faccessat(int dirfd, const char *path, int mode, int flags) {
  LOOKUP(faccessat)
  MISSING(-1)
  int rc = real(dirfd, path, mode, flags);
  after(mine, FN_faccessat, dirfd, path, rc != 0);
  return rc;
}
