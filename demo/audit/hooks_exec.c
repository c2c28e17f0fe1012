/*
 * hooks_exec.c — the interposed exec functions: execve, execv, execvp,
 * execvpe, execl, execlp, execle, fexecve and execveat. An exec replaces
 * the process image, and with it the table and the helper thread: what
 * was recorded and not yet written would be lost, the access just before
 * the exec first. So each hook flushes synchronously (audit_writer_exec:
 * the helper names and writes what it can in a bounded wait, the rest is
 * written raw, then an end line "exec"), then calls the real function.
 * If the exec fails the process goes on, recording as before.
 *
 * glibc's execvp, execlp and execl call its execve inside itself, not
 * through the hooked symbol: each is hooked. posix_spawn, system and
 * popen exec in a child, not in this process: not hooked.
 * Must not: do anything that is not async-signal-safe (exec is called in
 * signal handlers and in vfork children; in a vfork child the table is
 * the parent's, which lives on: nothing is flushed there), or change the
 * call's result or errno.
 */
#include "audit.h"

#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

int execveat(int dirfd, const char *path, char *const argv[],
             char *const envp[], int flags);

/* Before the real exec [signal-safe]. */
static void before_exec(void) {
  if (!audit_mine() ||
      !atomic_load_explicit(&audit_ready, memory_order_acquire))
    return;
  int err = errno;
  audit_check_process();
  if (audit_own_process())
    audit_writer_exec();
  errno = err;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef execve_fn execvpe_fn;
typedef execv_fn execvp_fn;
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[],
                           int);
AUDIT_REAL(execve_fn, execve)
AUDIT_REAL(execv_fn, execv)
AUDIT_REAL(execvp_fn, execvp)
AUDIT_REAL(execvpe_fn, execvpe)
AUDIT_REAL(fexecve_fn, fexecve)
AUDIT_REAL(execveat_fn, execveat)

#define MISSING(real)                                                          \
  if (!real) {                                                                 \
    errno = ENOSYS;                                                            \
    return -1;                                                                 \
  }

AUDIT_EXPORT int execve(const char *path, char *const argv[],
                        char *const envp[]) {
  execve_fn real = real_execve();
  MISSING(real)
  before_exec();
  return real(path, argv, envp);
}

AUDIT_EXPORT int execv(const char *path, char *const argv[]) {
  execv_fn real = real_execv();
  MISSING(real)
  before_exec();
  return real(path, argv);
}

AUDIT_EXPORT int execvp(const char *file, char *const argv[]) {
  execvp_fn real = real_execvp();
  MISSING(real)
  before_exec();
  return real(file, argv);
}

AUDIT_EXPORT int execvpe(const char *file, char *const argv[],
                         char *const envp[]) {
  execvpe_fn real = real_execvpe();
  MISSING(real)
  before_exec();
  return real(file, argv, envp);
}

AUDIT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
  fexecve_fn real = real_fexecve();
  MISSING(real)
  before_exec();
  return real(fd, argv, envp);
}

AUDIT_EXPORT int execveat(int dirfd, const char *path, char *const argv[],
                          char *const envp[], int flags) {
  execveat_fn real = real_execveat();
  MISSING(real)
  before_exec();
  return real(dirfd, path, argv, envp, flags);
}

/* The execl family: the arguments into an array on the stack (as glibc
   does), then the matching v form's real function; envp follows the
   NULL for execle. */
#define ARGV_FROM(arg0, last, ap)                                              \
  size_t argc = 1;                                                             \
  va_start(ap, arg0);                                                          \
  while (va_arg(ap, char *))                                                   \
    argc++;                                                                    \
  va_end(ap);                                                                  \
  char *argv[argc + 1];                                                        \
  argv[0] = (char *)arg0;                                                      \
  va_start(ap, arg0);                                                          \
  for (size_t i = 1; i <= argc; i++)                                           \
    argv[i] = va_arg(ap, char *);                                              \
  last;                                                                        \
  va_end(ap);

AUDIT_EXPORT int execl(const char *path, const char *arg, ...) {
  va_list ap;
  ARGV_FROM(arg, (void)0, ap)
  return execv(path, argv);
}

AUDIT_EXPORT int execlp(const char *file, const char *arg, ...) {
  va_list ap;
  ARGV_FROM(arg, (void)0, ap)
  return execvp(file, argv);
}

AUDIT_EXPORT int execle(const char *path, const char *arg, ...) {
  va_list ap;
  char *const *envp;
  ARGV_FROM(arg, envp = va_arg(ap, char *const *), ap)
  return execve(path, argv, envp);
}
