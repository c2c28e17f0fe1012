/*
 * write_all.c — writing a whole buffer to a file descriptor, for debug
 * printing and report files, without ever raising SIGPIPE (or, on Linux,
 * SIGXFSZ). POSIX only, so both backends compile it.
 *
 * A write to a pipe or socket whose reader is gone fails with EPIPE and
 * also raises SIGPIPE, whose default action kills the process: the app
 * handed us a descriptor, not the right to die when its reader does. So:
 *
 *  Linux (the kernel sends that SIGPIPE to the writing thread only):
 *   1. sockets: send(MSG_NOSIGNAL), which raises nothing; a descriptor that
 *      is not a socket answers ENOTSOCK at once, and we go on with 2.
 *   2. anything else: SIGPIPE is blocked on the calling thread for the
 *      write (pthread_sigmask; other threads keep their masks), so the
 *      kernel's signal can only become pending on this thread. On EPIPE
 *      that pending signal is taken back (sigtimedwait, zero timeout)
 *      before the old mask returns. A SIGPIPE of the app's own that was
 *      already pending is left pending (see drop_ours).
 *  Apple (xnu raises it for the whole process: psignal, not the thread, so
 *  a thread's mask cannot hold it back): the descriptor's own "no SIGPIPE"
 *  flag (fcntl F_SETNOSIGPIPE, fcntl(2)) is set for the write when it was
 *  not, and cleared afterwards.
 *
 * A write past the file size limit (RLIMIT_FSIZE) is the same case with
 * SIGXFSZ on Linux (blocked and taken back alike). On Apple xnu sends
 * SIGXFSZ to the process, and no flag holds it back: an app that sets a
 * file size limit there ignores SIGXFSZ itself.
 *
 * Short writes and EINTR are retried; EPIPE and any other failure is
 * SNAP_EIO. Must not: buffer or allocate; change the caller's signal mask,
 * handlers or pending signals as seen after the call.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "platform/platform.h"

/* Plain write loop: SNAP_OK, or the errno of the failed write (EIO for a
   write that accepted nothing). */
static int write_loop(int fd, const char *p, size_t n, bool sock) {
  while (n > 0) {
#ifdef MSG_NOSIGNAL
    ssize_t w = sock ? send(fd, p, n, MSG_NOSIGNAL) : write(fd, p, n);
#else
    (void)sock;
    ssize_t w = write(fd, p, n);
#endif
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      return errno;
    if (w == 0)
      return EIO;
    p += w;
    n -= (size_t)w;
  }
  return SNAP_OK;
}

#ifdef __APPLE__

static int write_guarded(int fd, const char *p, size_t n) {
  /* The flag belongs to the open file (every dup of it, in every process
     sharing it), so it is set only for our write and only when it was not
     set already. Another thread writing to that same file meanwhile gets
     EPIPE without the signal, as it would with the flag of its own. */
  int had = fcntl(fd, F_GETNOSIGPIPE);
  bool set = had == 0 && fcntl(fd, F_SETNOSIGPIPE, 1) == 0;
  int err = write_loop(fd, p, n, false);
  if (set)
    (void)fcntl(fd, F_SETNOSIGPIPE, 0);
  return err;
}

#else

/* Takes back the one signal (SIGPIPE, SIGXFSZ) our failed write made
   pending on this thread. Linux keeps a thread's pending signals apart from
   the process's, a non-real-time signal pends once per queue (a second is
   dropped), and a signal is taken from the thread's queue before the
   process's.
   - Nothing pending before: the one pending now is ours: take it.
   - One pending before: if it was the process's, ours sits on the thread:
     taking one takes ours and the app's stays. If it was this thread's,
     ours merged with it and taking one took the app's: raise it again
     (on this thread, where it was). */
static void drop_ours(int signo, bool pending_before) {
  sigset_t set, pending;
  sigemptyset(&set);
  sigaddset(&set, signo);
  const struct timespec now = {0, 0};
  while (sigtimedwait(&set, NULL, &now) < 0 && errno == EINTR) {
  }
  if (pending_before && sigpending(&pending) == 0 &&
      !sigismember(&pending, signo))
    (void)pthread_kill(pthread_self(), signo); /* blocked: stays pending */
}

/* SIGXFSZ is the same case as SIGPIPE: a write past RLIMIT_FSIZE fails
   with EFBIG and the kernel sends SIGXFSZ to the writing thread
   (generic_write_check_limits: send_sig to current), whose default action
   kills the process. A report or a printed stack past the app's file size
   limit is an error, not the app's end. */
static int write_guarded(int fd, const char *p, size_t n) {
  sigset_t set, old, pending;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  sigaddset(&set, SIGXFSZ);
  if (pthread_sigmask(SIG_BLOCK, &set, &old) != 0)
    return EIO;
  bool ok = sigpending(&pending) == 0;
  bool pipe_before = ok && sigismember(&pending, SIGPIPE);
  bool xfsz_before = ok && sigismember(&pending, SIGXFSZ);
  int err = write_loop(fd, p, n, false);
  if (err == EPIPE)
    drop_ours(SIGPIPE, pipe_before);
  else if (err == EFBIG)
    drop_ours(SIGXFSZ, xfsz_before);
  (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
  return err;
}

#endif

int snap__plat_write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  int err = ENOTSOCK;
#if defined(MSG_NOSIGNAL) && !defined(__APPLE__)
  /* A socket is written with MSG_NOSIGNAL; anything else fails this first
     call with ENOTSOCK having written nothing. */
  err = write_loop(fd, p, n, true);
#endif
  if (err == ENOTSOCK)
    err = write_guarded(fd, p, n);
  return err == SNAP_OK ? SNAP_OK : SNAP_EIO;
}
