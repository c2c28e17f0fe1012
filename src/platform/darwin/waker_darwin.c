/*
 * waker_darwin.c — the trace sampler's waker on Apple (platform.h,
 * Wakers): the platform semaphore, and an alarm that does nothing.
 *
 * Why no alarm: only a thread that samples itself pushes it (its CPU-time
 * timer's handler), and xnu gives no thread a CPU-time timer
 * (cpu_timer_darwin.c): the trace samples with thread_suspend from its
 * sampler thread, which wakes on its own schedule. A dispatch_semaphore
 * signal is not async-signal-safe; nothing posts this one from a handler
 * here for the same reason.
 */
#include <string.h>

#include "platform/darwin/darwin.h"

_Static_assert(sizeof(snap__sem_t) <= sizeof(snap__waker_t),
               "the semaphore must fit the waker's storage");

static snap__sem_t *sem(snap__waker_t *w) {
  return (snap__sem_t *)(void *)w->opaque;
}

int snap__plat_waker_init(snap__waker_t *w) {
  memset(w->opaque, 0, sizeof w->opaque);
  return snap__plat_sem_init(sem(w), 0);
}

void snap__plat_waker_destroy(snap__waker_t *w) {
  snap__plat_sem_destroy(sem(w));
}

void snap__plat_waker_post(snap__waker_t *w) { snap__plat_sem_post(sem(w)); }

void snap__plat_waker_alarm(snap__waker_t *w, uint64_t after_ns) {
  (void)w;
  (void)after_ns;
}

int snap__plat_waker_wait(snap__waker_t *w, uint64_t deadline_ns) {
  return snap__plat_sem_timedwait(sem(w), deadline_ns);
}
