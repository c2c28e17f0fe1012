/*
 * test_print_sigpipe.c — snap_print_callstack to a reader that is gone
 * answers SNAP_EIO and leaves the process alive, with SIGPIPE at its
 * default disposition (terminate): a pipe whose read end is closed, a
 * socket whose peer is closed, from the main thread and from a second
 * thread. A SIGPIPE of the app's own, pending and blocked before the call
 * (on the thread, or on the process), is still pending afterwards, and no
 * other one is. A live pipe still gets the whole text, byte for byte what
 * the same call writes to a regular file.
 *
 * Oracle: the kernel's behaviour (an unblocked SIGPIPE at its default
 * disposition kills the process, so merely returning is the first check)
 * and sigpending().
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "stacksnap.h"

static void closed_pipe(int fds[2]) {
  CHECK(pipe(fds) == 0, "pipe: %s", strerror(errno));
  close(fds[0]);
}

static void closed_socket(int fds[2]) {
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0, "socketpair: %s",
        strerror(errno));
  close(fds[1]);
  fds[1] = fds[0];
}

static bool sigpipe_pending(void) {
  sigset_t s;
  sigemptyset(&s);
  return sigpending(&s) == 0 && sigismember(&s, SIGPIPE);
}

/* Both kinds of dead reader, at SIGPIPE's default disposition and
   unblocked: a SIGPIPE raised by our write would end the process here. */
static void print_to_dead_readers(const char *who) {
  for (int kind = 0; kind < 2; kind++) {
    int fds[2];
    if (kind == 0)
      closed_pipe(fds);
    else
      closed_socket(fds);
    int rc = snap_print_callstack(fds[1], 32, 0);
    CHECK(rc == SNAP_EIO, "%s, %s: rc %d, want SNAP_EIO", who,
          kind ? "socket" : "pipe", rc);
    close(fds[1]);
  }
}

static void *thread_prints(void *arg) {
  (void)arg;
  print_to_dead_readers("second thread");
  return NULL;
}

/* The app blocked SIGPIPE and one is pending (process_wide: sent to the
   process, else raised on this thread); our failed write must neither
   take it nor leave a second one behind. */
static void app_pending_sigpipe_survives(bool process_wide) {
  const char *how = process_wide ? "kill()" : "raise()";
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  if (process_wide)
    kill(getpid(), SIGPIPE);
  else
    raise(SIGPIPE);
  CHECK(sigpipe_pending(), "%s: SIGPIPE not pending before the call", how);

  for (int kind = 0; kind < 2; kind++) {
    int fds[2];
    if (kind == 0)
      closed_pipe(fds);
    else
      closed_socket(fds);
    int rc = snap_print_callstack(fds[1], 32, 0);
    CHECK(rc == SNAP_EIO, "%s, %s: rc %d", how, kind ? "socket" : "pipe", rc);
    close(fds[1]);
    CHECK(sigpipe_pending(), "%s, %s: the app's pending SIGPIPE was taken", how,
          kind ? "socket" : "pipe");
  }

  /* Take the app's one (sigwait returns at once: it is pending; Apple has
     no sigtimedwait): exactly one must have been there. */
  int sig = 0;
  if (sigpipe_pending())
    CHECK(sigwait(&pipe_set, &sig) == 0 && sig == SIGPIPE, "sigwait %d", sig);
  CHECK(!sigpipe_pending(), "%s: a second SIGPIPE is pending", how);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Reads fd to its end into buf. */
struct drain {
  int fd;
  char buf[1 << 16];
  size_t len;
};

static void *drain_fd(void *arg) {
  struct drain *d = arg;
  for (;;) {
    ssize_t r = read(d->fd, d->buf + d->len, sizeof d->buf - d->len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    d->len += (size_t)r;
    usleep(200); /* a slow reader: the writer meets a full pipe */
  }
  return NULL;
}

static int print_deep(int depth, int fd) {
  if (depth > 0) {
    int r = print_deep(depth - 1, fd);
    __asm__ volatile("" ::: "memory"); /* no tail call: keep the frame */
    return r;
  }
  return snap_print_callstack(fd, SNAP_MAX_FRAMES, 0);
}

/* The same call site prints to a regular file and to a live pipe with a
   slow reader and (on Linux) a one-page buffer: the pipe gets all of it. */
static void live_pipe_gets_everything(void) {
  static char file_text[1 << 16];
  static struct drain d;
  FILE *tmp = tmpfile();
  CHECK(tmp != NULL, "tmpfile: %s", strerror(errno));
  if (!tmp)
    return;
  int fds[2];
  CHECK(pipe(fds) == 0, "pipe: %s", strerror(errno));
#ifdef F_SETPIPE_SZ
  (void)fcntl(fds[1], F_SETPIPE_SZ, 4096);
#endif
  d.fd = fds[0];
  pthread_t reader;
  pthread_create(&reader, NULL, drain_fd, &d);

  /* One call site for both (a volatile count: the loop is not unrolled),
     so both stacks and their text are the same. */
  int out[2] = {fileno(tmp), fds[1]}, rc[2] = {0, 0};
  for (volatile int i = 0; i < 2; i++)
    rc[i] = print_deep(80, out[i]);
  int rc_file = rc[0], rc_pipe = rc[1];
  close(fds[1]);
  pthread_join(reader, NULL);
  close(fds[0]);

  rewind(tmp);
  size_t file_len = fread(file_text, 1, sizeof file_text, tmp);
  fclose(tmp);
  CHECK(rc_file > 80 && rc_pipe == rc_file, "frames: file %d, pipe %d", rc_file,
        rc_pipe);
  CHECK(file_len > 4096, "only %zu bytes: the pipe was never full", file_len);
  CHECK(d.len == file_len && memcmp(d.buf, file_text, file_len) == 0,
        "pipe got %zu bytes, the file %zu, or other bytes", d.len, file_len);
}

int main(void) {
  signal(SIGPIPE, SIG_DFL);
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_UNBLOCK, &pipe_set, NULL);

  print_to_dead_readers("main thread");
  pthread_t t;
  pthread_create(&t, NULL, thread_prints, NULL);
  pthread_join(t, NULL);
  CHECK(!sigpipe_pending(), "a SIGPIPE is left pending");

  app_pending_sigpipe_survives(false);
  app_pending_sigpipe_survives(true);

  live_pipe_gets_everything();
  return check_result("test_print_sigpipe");
}
