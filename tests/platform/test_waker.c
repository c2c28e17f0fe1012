/*
 * test_waker.c — the trace sampler's waker (platform.h, Wakers): a
 * semaphore with a dead man's switch, its post and alarm called from a
 * signal handler as the trace's ticks call them.
 *
 * 1. A post ends the wait at once; a deadline ends it no earlier than
 *    asked (the test's own monotonic clock is the oracle); a post made
 *    before the wait is not lost; a post is consumed by the wait it ends.
 * 2. Pushed, the alarm does not go off: a SIGALRM handler pushes it
 *    ALARM_MS later every PUSH_MS (setitimer) for PUSHED_MS, and the wait
 *    must not end before the pushes stop, unless a gap between two pushes
 *    (measured by the handler itself, on the monotonic clock) reached
 *    ALARM_MS: a busy machine may hold the handler back that long, and
 *    then the alarm is right to go off. Once the pushes stop it goes off
 *    within ALARM_MS (plus the test's measured lateness).
 * 3. Disarmed (0), it does not go off.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "check.h"
#include "platform/platform.h"
#include "stacksnap.h"
#include "test_clock.h"

#define ALARM_MS 40
#define PUSH_MS 5
#define PUSHED_MS 400

static snap__waker_t g_w;
static atomic_bool g_pushing;
static _Atomic int64_t g_last_push_ns, g_worst_gap_ns;

static void on_alarm(int sig) {
  (void)sig;
  if (!atomic_load(&g_pushing))
    return;
  int64_t now = mono_ns(), last = atomic_load(&g_last_push_ns);
  if (last && now - last > atomic_load(&g_worst_gap_ns))
    atomic_store(&g_worst_gap_ns, now - last);
  snap__plat_waker_alarm(&g_w, (uint64_t)ALARM_MS * 1000000u);
  atomic_store(&g_last_push_ns, now);
}

static void test_post_and_deadline(void) {
  int64_t t0 = mono_ns();
  CHECK_EQ(snap__plat_waker_wait(&g_w, (uint64_t)t0 + 30000000u),
           SNAP_ETIMEDOUT);
  CHECK(mono_ns() - t0 >= 30000000, "woke %lld ns early",
        (long long)(30000000 - (mono_ns() - t0)));
  snap__plat_waker_post(&g_w); /* before the wait: kept */
  t0 = mono_ns();
  CHECK_EQ(snap__plat_waker_wait(&g_w, (uint64_t)t0 + 5000000000u), SNAP_OK);
  CHECK(mono_ns() - t0 < 1000000000, "a posted wait took %lld ms",
        (long long)((mono_ns() - t0) / 1000000));
  /* Consumed: the next wait runs to its deadline. */
  CHECK_EQ(snap__plat_waker_wait(&g_w, (uint64_t)mono_ns() + 10000000u),
           SNAP_ETIMEDOUT);
}

static void test_pushed_alarm(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, NULL);
  atomic_store(&g_pushing, true);
  snap__plat_waker_alarm(&g_w, (uint64_t)ALARM_MS * 1000000u);
  atomic_store(&g_last_push_ns, mono_ns());
  struct itimerval it = {{0, PUSH_MS * 1000}, {0, PUSH_MS * 1000}};
  setitimer(ITIMER_REAL, &it, NULL);
  int64_t t0 = mono_ns(), stop_at = t0 + (int64_t)PUSHED_MS * 1000000;
  int early = 0;
  while (mono_ns() < stop_at) {
    if (snap__plat_waker_wait(&g_w, (uint64_t)stop_at) == SNAP_OK &&
        mono_ns() < stop_at)
      early++;
  }
  atomic_store(&g_pushing, false);
  int64_t stopped = atomic_load(&g_last_push_ns);
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  int64_t gap = atomic_load(&g_worst_gap_ns);
  printf("pushed every %d ms for %d ms: worst gap %.1f ms, %d early wakes\n",
         PUSH_MS, PUSHED_MS, (double)gap / 1e6, early);
  CHECK(early == 0 || gap >= (int64_t)ALARM_MS * 1000000,
        "the alarm went off %d times while pushed (worst gap between "
        "pushes %.1f ms, under its %d ms)",
        early, (double)gap / 1e6, ALARM_MS);
  /* The pushes stopped: it goes off, ALARM_MS after the last one. */
  int rc = snap__plat_waker_wait(&g_w, (uint64_t)mono_ns() + 5000000000u);
  int64_t woke = mono_ns();
  CHECK_EQ(rc, SNAP_OK);
  CHECK(woke - stopped >= (int64_t)ALARM_MS * 1000000 - 1000000,
        "went off %.1f ms after the last push, before its %d ms",
        (double)(woke - stopped) / 1e6, ALARM_MS);
  printf("went off %.1f ms after the last push (alarm %d ms)\n",
         (double)(woke - stopped) / 1e6, ALARM_MS);
}

static void test_disarmed(void) {
  snap__plat_waker_alarm(&g_w, 20000000u);
  snap__plat_waker_alarm(&g_w, 0);
  CHECK_EQ(snap__plat_waker_wait(&g_w, (uint64_t)mono_ns() + 60000000u),
           SNAP_ETIMEDOUT);
}

int main(void) {
  CHECK_EQ(snap__plat_waker_init(&g_w), SNAP_OK);
  test_post_and_deadline();
  test_pushed_alarm();
  test_disarmed();
  snap__plat_waker_destroy(&g_w);
  return check_result("test_waker");
}
