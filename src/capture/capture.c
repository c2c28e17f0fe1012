/*
 * capture.c — the public capture entry points.
 *
 * snap_capture_self starts the cursor at its own frame, from registers read
 * in its own body, and skips itself: the first frame handed out is the
 * return address into its caller, as with backtrace(). It is noinline, and
 * its call to the walk is not a tail call, so the frame it describes exists.
 *
 * snap_capture_thread refreshes the image table (setup side: it may take
 * the loader lock), then has the platform stop the target and run the walk
 * in the stopped window into a fixed-size block it copies back.
 *
 * Must not: allocate or lock in snap_capture_self or in sample_walk.
 */
#include <stddef.h>
#include <string.h>

#include "capture/arch.h"
#include "capture/walk.h"
#include "images/images.h"
#include "platform/platform.h"

static bool valid_args(const uintptr_t *pcs, int max, unsigned flags) {
  return pcs && max > 0 && !(flags & ~SNAP_CAPTURE_ALL_FLAGS);
}

__attribute__((noinline)) int snap_capture_self(uintptr_t *pcs, int max,
                                                int skip, unsigned flags) {
  if (!valid_args(pcs, max, flags) || skip < 0)
    return SNAP_EINVAL;
  snap__regs_t regs;
  SNAP__REGS_HERE(&regs);
  if (skip > 2 * SNAP_MAX_FRAMES)
    return 0;
  /* Frame 0 of the walk is this function itself: skip it. */
  int n = snap__walk(&regs, true, flags, pcs, max, skip + 1);
  /* The walk reads this frame: it must not be popped by a tail call. */
  __asm__ volatile("" ::: "memory");
  return n;
}

/* What travels into the stopped window and back (up to `walk`), and the
   walk's state: on Linux the window runs on the target's stack, which may
   be nearly full, so the state lives in the platform's private block, past
   what is copied (test_low_stack.c measures what is left on the stack). */
typedef struct sample_job {
  unsigned flags;
  int max;
  uintptr_t pcs[SNAP_MAX_FRAMES];
  snap__walk_state_t walk; /* scratch: not copied in or out */
} sample_job_t;
_Static_assert(sizeof(sample_job_t) <= SNAP__SAMPLE_ARG_MAX,
               "sample job must fit the platform's argument block");

static int sample_walk(const snap__regs_t *regs, void *arg) {
  sample_job_t *job = arg;
  return snap__walk_in(&job->walk, regs, true, job->flags, job->pcs, job->max,
                       0);
}

int snap_capture_thread(snap_thread_t thread, uintptr_t *pcs, int max,
                        unsigned flags) {
  if (!valid_args(pcs, max, flags))
    return SNAP_EINVAL;
  if (thread == snap__plat_thread_self()) {
    /* As if the caller had called snap_capture_self: skip this frame
       (which therefore must not be a tail call away). */
    int n = snap_capture_self(pcs, max, 1, flags);
    __asm__ volatile("" ::: "memory");
    return n;
  }
  (void)snap__images_refresh(false);
  sample_job_t job;
  job.flags = flags;
  job.max = max < SNAP_MAX_FRAMES ? max : SNAP_MAX_FRAMES;
  int n = snap__plat_sample(thread, sample_walk, &job,
                            offsetof(sample_job_t, walk));
  if (n > 0)
    memcpy(pcs, job.pcs, (size_t)n * sizeof *pcs);
  return n;
}

int snap_set_sample_timeout_ms(unsigned ms) {
  if (ms == 0 || ms > 10000)
    return SNAP_EINVAL;
  return snap__plat_set_sample_timeout_ms(ms);
}

int snap_set_sample_signal(int signo) {
  return snap__plat_set_sample_signal(signo);
}
