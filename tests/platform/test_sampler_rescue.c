/*
 * test_sampler_rescue.c — our sampler beside another profiler that
 * suspends it: the app's threads are never held for good (docs/apple.md,
 * "Contract: beside another profiler").
 *
 * There is no xnu here, so the suspension is a stand-in that keeps the
 * contract the doc cites (xnu osfmk/kern/thread_act.c): thread_suspend
 * raises the target's suspend count and the target parks at its next
 * return to user space (a `checkpoint` here: after each "kernel call" and
 * at points of the window), until thread_resume brings the count back to
 * 0; the count is what THREAD_BASIC_INFO's suspend_count reports. Our side
 * is the library's real code: the sampler lock (snap__sampler_enter_bounded,
 * _leave), the window record (snap__sampler_window_open, _close) and the
 * rescue decision (snap__sampler_rescue_step), which Apple's rescuer.c
 * calls with thread_info and thread_resume in place of the stand-in.
 *
 * Cases:
 *  1. the mutual suspension, forced (both suspend each other, then
 *     return to user space): with no rescue both stay parked (the stand-in
 *     shows the hang the issue describes: 300 ms and nothing moves); one
 *     rescue step resumes our target, the other profiler then finishes its
 *     sample and resumes ours, our window closes as "rescued" (void sample,
 *     no second resume) and every count is back to 0;
 *  2. the other profiler is itself held forever while it holds our
 *     sampler, and ours holds an app thread ("main"): the rescue frees the
 *     app thread, and a privacy hook asking for a sample gets SNAP_EBUSY at
 *     once instead of waiting on the lock of a sampler that never runs;
 *  3. what the rescue must not do: a young window, a window whose sampler
 *     is not held (merely slow), a target our suspension has not reached;
 *  4. both in loops for RUN_SECONDS with a rescuer thread: no hang (a
 *     watchdog fails the test after HANG_SECONDS without progress) and
 *     every count 0 at the end.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "platform/posix/locks.h"
#include "test_clock.h"

#define RUN_SECONDS 3
#define HANG_SECONDS 30
#define BOUND_NS (20u * 1000u * 1000u)

/* ---- The stand-in of xnu's suspension --------------------------------- */

enum { T_OURS = 1, T_OTHER = 2, T_MAIN = 3, N_THREADS = 4 };

typedef struct standin {
  pthread_mutex_t m;
  pthread_cond_t c;
  int count;   /* user_stop_count */
  bool parked; /* stopped at a return to user space */
} standin_t;

static standin_t g_t[N_THREADS];

static void standin_init(void) {
  for (int i = 0; i < N_THREADS; i++) {
    pthread_mutex_init(&g_t[i].m, NULL);
    pthread_cond_init(&g_t[i].c, NULL);
    g_t[i].count = 0;
    g_t[i].parked = false;
  }
}

static void xsuspend(int t) {
  pthread_mutex_lock(&g_t[t].m);
  g_t[t].count++;
  pthread_mutex_unlock(&g_t[t].m);
}

static int xresume(int t) {
  pthread_mutex_lock(&g_t[t].m);
  int rc = g_t[t].count > 0 ? 0 : -1; /* KERN_FAILURE when not held */
  if (g_t[t].count > 0 && --g_t[t].count == 0)
    pthread_cond_broadcast(&g_t[t].c);
  pthread_mutex_unlock(&g_t[t].m);
  return rc;
}

static int xcount(int t) {
  pthread_mutex_lock(&g_t[t].m);
  int n = g_t[t].count;
  pthread_mutex_unlock(&g_t[t].m);
  return n;
}

static bool xparked(int t) {
  pthread_mutex_lock(&g_t[t].m);
  bool p = g_t[t].parked;
  pthread_mutex_unlock(&g_t[t].m);
  return p;
}

/* The calling thread returns to user space: parks while it is held. */
static void checkpoint(int self) {
  pthread_mutex_lock(&g_t[self].m);
  while (g_t[self].count > 0) {
    g_t[self].parked = true;
    pthread_cond_wait(&g_t[self].c, &g_t[self].m);
  }
  g_t[self].parked = false;
  pthread_mutex_unlock(&g_t[self].m);
}

static int count_op(void *ctx, snap_thread_t t) {
  (void)ctx;
  return t < N_THREADS ? xcount((int)t) : -1;
}

static int resume_op(void *ctx, snap_thread_t t) {
  (void)ctx;
  return xresume((int)t);
}

static const snap__sampler_ops_t g_ops = {count_op, resume_op, NULL};

/* Waits until thread t is parked (or 5 s). */
static bool wait_parked(int t) {
  for (int i = 0; i < 5000 && !xparked(t); i++)
    sleep_ms(1);
  return xparked(t);
}

/* Two threads meet here (pthread_barrier_t is not in macOS, where this
   test runs too). */
typedef struct meet {
  atomic_int arrived;
} meet_t;

static void meet_wait(meet_t *m) {
  atomic_fetch_add(&m->arrived, 1);
  while (atomic_load(&m->arrived) < 2)
    sleep_ms(1);
}

/* ---- Our sampler, as Apple's sample.c drives the library --------------- */

typedef struct ours {
  int target;
  meet_t *after_suspend; /* case 1: both suspend, then return */
  int rc;                /* 0 sampled, 1 rescued, <0 error */
} ours_t;

static void *ours_once(void *arg) {
  ours_t *o = arg;
  o->rc = snap__sampler_enter_bounded();
  if (o->rc != SNAP_OK)
    return NULL;
  snap__sampler_window_open(T_OURS, (snap_thread_t)o->target, xcount(o->target),
                            mono_ns());
  xsuspend(o->target);
  if (o->after_suspend)
    meet_wait(o->after_suspend);
  checkpoint(T_OURS); /* out of thread_suspend */
  /* the window: registers, walk */
  checkpoint(T_OURS);
  if (snap__sampler_window_close()) {
    xresume(o->target);
    o->rc = 0;
  } else {
    o->rc = 1; /* rescued: void, and not resumed a second time */
  }
  snap__sampler_leave();
  return NULL;
}

/* ---- The other profiler (sentry-cocoa's shape) ------------------------- */

typedef struct other {
  int target;
  meet_t *after_suspend;
  bool park_self; /* case 2: someone holds it for good after its suspend */
} other_t;

static void *other_once(void *arg) {
  other_t *p = arg;
  xsuspend(p->target);
  if (p->after_suspend)
    meet_wait(p->after_suspend);
  if (p->park_self)
    xsuspend(T_OTHER);
  checkpoint(T_OTHER); /* out of thread_suspend */
  /* its backtrace of the target */
  checkpoint(T_OTHER);
  xresume(p->target);
  return NULL;
}

static void case_mutual(void) {
  standin_init();
  meet_t b = {0};
  ours_t o = {.target = T_OTHER, .after_suspend = &b};
  other_t p = {.target = T_OURS, .after_suspend = &b};
  pthread_t to, tp;
  uint64_t rescues0 = snap__sampler_rescues();
  pthread_create(&to, NULL, ours_once, &o);
  pthread_create(&tp, NULL, other_once, &p);
  CHECK(wait_parked(T_OURS) && wait_parked(T_OTHER),
        "mutual: both should park (ours %d, other %d)", xparked(T_OURS),
        xparked(T_OTHER));
  /* Without a rescue this is for good: nothing moves. */
  sleep_ms(300);
  CHECK(xparked(T_OURS) && xparked(T_OTHER),
        "mutual: the stand-in should hold both without a rescue");
  /* Too young for the rescue yet? Not after 300 ms > 20 ms. */
  int r = snap__sampler_rescue_step(&g_ops, mono_ns(), BOUND_NS);
  CHECK_EQ(r, 1);
  pthread_join(tp, NULL);
  pthread_join(to, NULL);
  CHECK_EQ(o.rc, 1); /* our sample is void */
  CHECK_EQ(xcount(T_OURS), 0);
  CHECK_EQ(xcount(T_OTHER), 0);
  CHECK_EQ(snap__sampler_rescues() - rescues0, 1);
  /* Nothing left to rescue. */
  CHECK_EQ(snap__sampler_rescue_step(&g_ops, mono_ns() + 10 * BOUND_NS, 0), 0);
  printf("mutual suspension: both parked 300 ms without rescue; one rescue "
         "step freed them\n");
}

static void case_other_held_forever(void) {
  standin_init();
  meet_t b = {0};
  ours_t o = {.target = T_MAIN, .after_suspend = &b};
  other_t p = {.target = T_OURS, .after_suspend = &b, .park_self = true};
  pthread_t to, tp;
  pthread_create(&to, NULL, ours_once, &o);
  pthread_create(&tp, NULL, other_once, &p);
  CHECK(wait_parked(T_OURS) && wait_parked(T_OTHER), "held: both should park");
  CHECK_EQ(xcount(T_MAIN), 1); /* the app's thread is held by ours */
  sleep_ms(30);
  CHECK_EQ(snap__sampler_rescue_step(&g_ops, mono_ns(), BOUND_NS), 1);
  CHECK_EQ(xcount(T_MAIN), 0); /* the app's thread runs again */
  /* A privacy hook wants a sample now: no wait on a parked holder. */
  uint64_t t0 = mono_ns();
  int rc = snap__sampler_enter_bounded();
  uint64_t waited = mono_ns() - t0;
  CHECK(rc == SNAP_EBUSY, "hook: enter gave %d, not SNAP_EBUSY", rc);
  if (rc == SNAP_OK)
    snap__sampler_leave();
  CHECK(waited < 1000u * 1000u * 1000u, "hook waited %llu ns",
        (unsigned long long)waited);
  /* Whoever held the other profiler lets it go: all unwinds. */
  xresume(T_OTHER);
  pthread_join(tp, NULL);
  pthread_join(to, NULL);
  CHECK_EQ(o.rc, 1);
  CHECK_EQ(xcount(T_OURS) + xcount(T_OTHER) + xcount(T_MAIN), 0);
  /* And the lock is usable again. */
  rc = snap__sampler_enter_bounded();
  CHECK_EQ(rc, SNAP_OK);
  if (rc == SNAP_OK)
    snap__sampler_leave();
}

static void case_no_rescue(void) {
  standin_init();
  CHECK_EQ(snap__sampler_enter_bounded(), SNAP_OK);
  uint64_t t0 = mono_ns();
  snap__sampler_window_open(T_OURS, T_MAIN, 0, t0);
  xsuspend(T_MAIN);
  xsuspend(T_OURS); /* held by the other profiler */
  /* young */
  CHECK_EQ(snap__sampler_rescue_step(&g_ops, t0 + BOUND_NS / 2, BOUND_NS), 0);
  /* old, but ours is not held: merely slow, it resumes its target itself */
  xresume(T_OURS);
  CHECK_EQ(snap__sampler_rescue_step(&g_ops, t0 + 2 * BOUND_NS, BOUND_NS), 0);
  /* held, but our suspension has not reached the target: its count is
     only what it was before (another's) */
  xsuspend(T_OURS);
  xresume(T_MAIN);
  snap__sampler_window_open(T_OURS, T_MAIN, 0, t0);
  CHECK_EQ(snap__sampler_rescue_step(&g_ops, t0 + 2 * BOUND_NS, BOUND_NS), 0);
  xsuspend(T_MAIN);
  CHECK_EQ(snap__sampler_rescue_step(&g_ops, t0 + 2 * BOUND_NS, BOUND_NS), 1);
  CHECK_EQ(xcount(T_MAIN), 0);
  CHECK(!snap__sampler_window_close(), "a rescued window is not ours");
  snap__sampler_leave();
  xresume(T_OURS);
}

/* ---- Both in loops, with a rescuer ------------------------------------- */

static atomic_bool g_stop, g_rescuer_stop;
static atomic_long g_progress;
static long g_ours_ok, g_ours_rescued, g_ours_busy, g_other_ok;

static void *ours_loop(void *arg) {
  (void)arg;
  while (!atomic_load(&g_stop)) {
    ours_t o = {.target = T_OTHER};
    ours_once(&o);
    if (o.rc == 0)
      g_ours_ok++;
    else if (o.rc == 1)
      g_ours_rescued++;
    else
      g_ours_busy++;
    atomic_fetch_add(&g_progress, 1);
    checkpoint(T_OURS);
  }
  return NULL;
}

static void *other_loop(void *arg) {
  (void)arg;
  while (!atomic_load(&g_stop)) {
    other_t p = {.target = T_OURS};
    other_once(&p);
    g_other_ok++;
    atomic_fetch_add(&g_progress, 1);
    checkpoint(T_OTHER);
  }
  return NULL;
}

static void *rescuer_loop(void *arg) {
  (void)arg;
  while (!atomic_load(&g_rescuer_stop)) {
    sleep_ms(2);
    (void)snap__sampler_rescue_step(&g_ops, mono_ns(), BOUND_NS);
  }
  return NULL;
}

static void case_loops(void) {
  standin_init();
  pthread_t a, b, r;
  pthread_create(&r, NULL, rescuer_loop, NULL);
  pthread_create(&a, NULL, ours_loop, NULL);
  pthread_create(&b, NULL, other_loop, NULL);
  int64_t end = mono_ns() + RUN_SECONDS * 1000000000ll;
  long last = -1;
  uint64_t since = mono_ns();
  while (mono_ns() < end) {
    sleep_ms(50);
    long p = atomic_load(&g_progress);
    if (p != last) {
      last = p;
      since = mono_ns();
    } else if (mono_ns() - since > HANG_SECONDS * 1000000000ull) {
      fprintf(stderr,
              "test_sampler_rescue: FAIL: no progress for %d s: "
              "the samplers hang\n",
              HANG_SECONDS);
      _exit(1);
    }
  }
  atomic_store(&g_stop, true);
  /* A loop may be parked with its peer gone: the rescuer keeps running
     until both are out. */
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  atomic_store(&g_rescuer_stop, true);
  pthread_join(r, NULL);
  printf("loops: ours %ld sampled, %ld rescued, %ld busy; other %ld "
         "sampled; rescues in all %llu\n",
         g_ours_ok, g_ours_rescued, g_ours_busy, g_other_ok,
         (unsigned long long)snap__sampler_rescues());
  CHECK(g_ours_ok + g_ours_rescued > 0 && g_other_ok > 0,
        "both samplers should have made progress");
  CHECK_EQ(xcount(T_OURS) + xcount(T_OTHER), 0);
}

int main(void) {
  case_mutual();
  case_other_held_forever();
  case_no_rescue();
  case_loops();
  return check_result("test_sampler_rescue");
}
