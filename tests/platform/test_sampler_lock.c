/*
 * test_sampler_lock.c — two threads sample each other in a loop: no hang,
 * every sample whole or a clean error code, and never two stopped windows
 * open at once (docs/apple.md, "Contract: locks and the stopped window").
 *
 * On Apple two samplers that suspend each other hang for good. On Linux the
 * same race does not hang (the target runs the signal handler itself), so
 * the test also asks the library's own count of windows in flight
 * (snap__sampler_windows_peak, counted from before the stop to after the
 * target is free again): it must never have exceeded 1. Without the
 * sampler lock it reaches 2 within a few samples here.
 *
 * Time-boxed, not iteration-counted: each sampler runs for RUN_SECONDS of
 * wall time (however slow the box, qemu or the sanitizer), and a watchdog
 * thread fails the test with a message (rather than let ctest's timeout
 * kill a hung process) when no sample completes for HANG_SECONDS.
 *
 * Whole: a sample is n frames, 1 <= n <= max, every pc inside a loaded
 * image as dladdr sees it; and every one reaches the sampled thread's
 * loop function as dladdr names it (the executable exports its
 * functions). Clean errors: SNAP_ETIMEDOUT, SNAP_EBUSY.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "oracle.h"
#include "platform/posix/locks.h"
#include "stacksnap.h"
#include "test_clock.h"

#define RUN_SECONDS 10
#define HANG_SECONDS 60
#define MAX_FRAMES 64

typedef struct sampler {
  int id;
  _Atomic snap_thread_t self;
  long ok, whole, reached, timeouts, busy, other_errors, not_whole;
} sampler_t;

static sampler_t g_s[2];
static atomic_long g_progress; /* samples finished, any result */
static atomic_bool g_stop;
static atomic_int g_ready, g_done;
static double g_end; /* both samplers stop at the same instant */

/* Exported (ENABLE_EXPORTS) so dladdr names it in the other's samples. */
void *sampler_main(void *arg);

__attribute__((noinline)) void sampler_loop(sampler_t *me) {
  sampler_t *other = &g_s[1 - me->id];
  snap_thread_t target = atomic_load(&other->self);
  while (mono_s() < g_end) {
    uintptr_t pcs[MAX_FRAMES];
    int n = snap_capture_thread(target, pcs, MAX_FRAMES, 0);
    atomic_fetch_add(&g_progress, 1);
    if (n == SNAP_ETIMEDOUT) {
      me->timeouts++;
      continue;
    }
    if (n == SNAP_EBUSY) {
      me->busy++;
      continue;
    }
    if (n < 1 || n > MAX_FRAMES) {
      if (me->other_errors++ < 3)
        fprintf(stderr, "sampler %d: result %d (%s)\n", me->id, n,
                snap_strerror(n));
      continue;
    }
    me->ok++;
    bool mapped = true; /* every pc in a loaded image, as dladdr sees it */
    for (int i = 0; i < n; i++) {
      Dl_info info;
      mapped = mapped && pcs[i] != 0 &&
               dladdr((void *)(pcs[i] - (i > 0)), &info) && info.dli_fname;
    }
    /* The other thread is inside its own sampler_loop (sampling, waiting
       for the sampler lock, or running our signal handler), or waiting in
       sampler_main for the loops to start or both to end. */
    bool reaches = oracle_find_fn(pcs, n, 0, (void *)sampler_loop, 1) >= 0 ||
                   oracle_find_fn(pcs, n, 0, (void *)sampler_main, 1) >= 0;
    if (mapped)
      me->whole++;
    if (reaches)
      me->reached++;
    if ((!mapped || !reaches) && me->not_whole++ < 2)
      oracle_print("sample not whole or short of sampler_loop", pcs, n);
  }
  __asm__ volatile("" ::: "memory"); /* keep the frame: no tail call */
}

/* Exported too. Neither thread exits while the other may still sample it
   (that would be SNAP_ENOTHREAD, not what this test is about). */
void *sampler_main(void *arg) {
  sampler_t *me = arg;
  atomic_store(&me->self, snap_thread_self());
  atomic_fetch_add(&g_ready, 1);
  while (atomic_load(&g_ready) < 2)
    usleep(1000);
  sampler_loop(me);
  atomic_fetch_add(&g_done, 1);
  while (atomic_load(&g_done) < 2)
    usleep(1000);
  __asm__ volatile("" ::: "memory");
  return NULL;
}

/* Fails the test when the samplers stop making progress: a hang. */
static void *watchdog_main(void *arg) {
  (void)arg;
  long last = -1;
  double since = mono_s();
  while (!atomic_load(&g_stop)) {
    usleep(200 * 1000);
    long p = atomic_load(&g_progress);
    if (p != last) {
      last = p;
      since = mono_s();
    } else if (mono_s() - since > HANG_SECONDS) {
      fprintf(stderr,
              "test_sampler_lock: FAIL: no sample finished for %d s "
              "(%ld done): the samplers hang\n",
              HANG_SECONDS, p);
      fflush(stderr);
      _exit(1);
    }
  }
  return NULL;
}

int main(void) {
  pthread_t t[2], dog;
  g_end = mono_s() + RUN_SECONDS;
  pthread_create(&dog, NULL, watchdog_main, NULL);
  for (int i = 0; i < 2; i++) {
    g_s[i].id = i;
    pthread_create(&t[i], NULL, sampler_main, &g_s[i]);
  }
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  atomic_store(&g_stop, true);
  pthread_join(dog, NULL);

  for (int i = 0; i < 2; i++) {
    sampler_t *s = &g_s[i];
    printf("sampler %d: %ld whole (%ld reach the loop) of %ld samples, %ld "
           "timed out, %ld busy, %ld other errors\n",
           i, s->whole, s->reached, s->ok, s->timeouts, s->busy,
           s->other_errors);
    CHECK(s->other_errors == 0, "sampler %d: %ld unexpected error codes", i,
          s->other_errors);
    /* Under TSan a deferred signal runs the handler with a stale ucontext
       (check.h): its frames may be anything; there the test is about the
       window count and races. */
    CHECK(SNAP_TEST_TSAN || s->whole == s->ok,
          "sampler %d: %ld of %ld samples not whole", i, s->ok - s->whole,
          s->ok);
    /* Every sample reaches the sampled loop (issue 12 defect 6, a walk
       ending early after an epilogue's pop, once made 1 in 50 000 short);
       under TSan a deferred signal may see a later stack (check.h). */
    CHECK(SNAP_TEST_TSAN || s->reached == s->ok,
          "sampler %d: only %ld of %ld samples reach sampler_loop", i,
          s->reached, s->ok);
    /* Some must get through, or the test proved nothing: a loaded box or
       qemu makes hundreds in 10 s, an unloaded one tens of thousands. */
    /* TSan: most samples time out. It defers a signal until the target
       leaves a call it knows blocks, and here the target mostly waits for
       the sampler lock the other holds, in a futex system call TSan does
       not see: the signal waits for the lock, which waits for the timeout
       (CI: 1 of 53, 28 of 48 in 10 s; with a 1 s timeout, 0 of 5; beside
       busy-box, 0 of 50 once). There the requests are what the test
       needs: one that times out opens a window all the same (the peak
       below counts it, from the sampler lock on), and it takes the path
       that abandons a request, which TSan is there to race. */
    if (SNAP_TEST_TSAN)
      CHECK(s->ok + s->timeouts >= 10, "sampler %d: only %ld requests made", i,
            s->ok + s->timeouts);
    else
      CHECK(s->ok >= 20, "sampler %d: only %ld samples succeeded", i, s->ok);
  }
  int peak = snap__sampler_windows_peak();
  printf("most stopped windows open at once: %d\n", peak);
  CHECK(peak == 1,
        "two samplers had a thread stopped at the same time "
        "(peak %d windows in flight): on Apple they can suspend "
        "each other and hang",
        peak);
  return check_result("test_sampler_lock");
}
