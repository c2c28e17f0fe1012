/*
 * waker.c — the trace sampler's waker on Linux (platform.h, Wakers): an
 * eventfd for posts and a timerfd for the alarm, waited on together.
 *
 * Why not the semaphore with a timeout: the alarm is pushed later by a
 * signal handler on another thread at every tick, and only a kernel timer
 * can be moved without waking the thread that waits for it (a
 * timerfd_settime does not wake a poller; an expiry does). A semaphore
 * post is one atomic, this one is a system call: only the trace's sampler
 * sleeps here, and it is posted a few times a second.
 *
 * Both descriptors are non-blocking and close-on-exec; a wait reads each
 * one that is ready, which consumes it (an eventfd's count, a timerfd's
 * expirations). A forked child must not share them with its parent (the
 * child's pushes would move the parent's alarm): the trace's fork stage
 * destroys the waker in the child (trace_api.c).
 *
 * Must not: allocate or lock in post or alarm (signal handlers call them).
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "platform/linux/linux.h"

typedef struct fds {
  int event, timer;
} fds_t;
_Static_assert(sizeof(fds_t) <= sizeof(snap__waker_t),
               "the descriptors must fit the seam's storage");

static fds_t *fds(snap__waker_t *w) { return (fds_t *)(void *)w->opaque; }

int snap__plat_waker_init(snap__waker_t *w) {
  fds_t *f = fds(w);
  f->event = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  f->timer = f->event < 0
                 ? -1
                 : timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (f->timer < 0) {
    int err = errno;
    if (f->event >= 0)
      close(f->event);
    f->event = f->timer = -1;
    return err == EMFILE || err == ENFILE || err == ENOMEM ? SNAP_ENOMEM
                                                           : SNAP_EIO;
  }
  return SNAP_OK;
}

void snap__plat_waker_destroy(snap__waker_t *w) {
  fds_t *f = fds(w);
  if (f->event >= 0)
    close(f->event);
  if (f->timer >= 0)
    close(f->timer);
  f->event = f->timer = -1;
}

void snap__plat_waker_post(snap__waker_t *w) {
  int saved = errno; /* a signal handler may call this */
  uint64_t one = 1;
  (void)!write(fds(w)->event, &one, sizeof one);
  errno = saved;
}

void snap__plat_waker_alarm(snap__waker_t *w, uint64_t after_ns) {
  int saved = errno;
  struct itimerspec its;
  memset(&its, 0, sizeof its);
  its.it_value.tv_sec = (time_t)(after_ns / 1000000000u);
  its.it_value.tv_nsec = (long)(after_ns % 1000000000u);
  (void)timerfd_settime(fds(w)->timer, 0, &its, NULL);
  errno = saved;
}

/* Reads fd if it is ready: true if it held a post or an expiry. */
static bool consume(int fd, short revents) {
  uint64_t count;
  return (revents & POLLIN) && read(fd, &count, sizeof count) == sizeof count;
}

int snap__plat_waker_wait(snap__waker_t *w, uint64_t deadline_ns) {
  fds_t *f = fds(w);
  for (;;) {
    uint64_t now = snap__plat_now_ns();
    uint64_t left = deadline_ns > now ? deadline_ns - now : 0;
    struct timespec ts = {.tv_sec = (time_t)(left / 1000000000u),
                          .tv_nsec = (long)(left % 1000000000u)};
    struct pollfd p[2] = {{.fd = f->event, .events = POLLIN},
                          {.fd = f->timer, .events = POLLIN}};
    int n = ppoll(p, 2, &ts, NULL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return SNAP_ETIMEDOUT; /* the deadline, or no descriptors (EBADF) */
    bool woke = consume(f->event, p[0].revents);
    woke = consume(f->timer, p[1].revents) || woke;
    if (woke)
      return SNAP_OK;
    /* Ready but empty: another consumer was first (one waiter: never). */
  }
}
