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
 * With SNAP_CAPTURE_QUIET it first asks the platform for the registers of
 * a thread blocked in a system call (snap__plat_blocked_regs): no signal,
 * so its sleep or wait is not cut short. The walk then runs here, on the
 * caller's thread, over a stack that is not ours: bounds unknown (hi 0),
 * so every stack read is a checked snap__plat_read; fp unknown (0), so
 * at a frame whose rule needs it (and no callee saved it) the walk goes on
 * from the frame record snap__fp_recover finds above sp; frame
 * 0 exact (the instruction after the system call). Before the pc is
 * trusted it must lie in an executable range of a loaded image; after the
 * walk the platform must confirm the thread did not run meanwhile
 * (snap__plat_blocked_still), else the walk is taken again once, then the
 * thread is signalled as without the flag. Not a stopped window: nothing
 * is stopped, but nothing here allocates either.
 *
 * Restartable waits: snap__fp_recover accepts a frame record found by a
 * scan only behind a direct call to its function; for an app function
 * reached through a pointer (a pool's job, a callback) it takes the one
 * slot the function's prologue put its record in (prologue.c), where that
 * prologue can be read. Where neither holds, a quiet walk ends short at
 * that function when no libc frame below it saved fp. When it does
 * (SNAP__FP_LOST) and the
 * platform says the thread's wait is one a signal cannot change
 * (snap__plat_blocked_t.restartable: an untimed futex wait, a PI lock,
 * which the kernel restarts after our SA_RESTART handler), the thread is
 * signalled after all and walks itself from its real registers; its
 * answer replaces the quiet one only if it is longer (a thread that
 * blocks the signal, or does not answer, keeps the quiet stack). Why not
 * scan the stack for it: the tables of libc's frames restore fp only
 * where a frame saved it, and the stack under a pointer-called function
 * holds stale records of earlier calls that unwind consistently to the
 * same outer frames; no check can tell them from the real one without the
 * call's target or the prologue's slot. The signal is exact and costs less
 * than the quiet walk itself (bench_sample, target blk_ptr). Sleeps and
 * polls keep the shorter stack: the signal would end them with EINTR.
 * The completed stack is kept while the thread stays as the signal left
 * it (completed.c), so asking again costs no second signal.
 *
 * Must not: allocate or lock in snap_capture_self or in sample_walk.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "capture/arch.h"
#include "capture/capture.h"
#include "capture/completed.h"
#include "capture/fp_recover.h"
#include "capture/walk.h"
#include "images/images.h"
#include "platform/platform.h"
#include "platform/thread_facts.h"

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
  /* Frame 0 of the walk is this function itself: skip it. FP_ONLY alone
     takes the records-only walk, set up in a few instructions. */
  int n = flags == SNAP_CAPTURE_FP_ONLY
              ? snap__walk_records(&regs, pcs, max, skip + 1)
              : -1;
  if (n < 0)
    n = snap__walk(&regs, true, flags, pcs, max, skip + 1);
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

/* Quiet samples: how many walks were kept, and how many fell back to a
   signal (tests read them through snap__capture_quiet_counts). */
static _Atomic uint64_t g_quiet_kept, g_quiet_signalled, g_quiet_completed;

void snap__capture_quiet_counts(uint64_t *kept, uint64_t *signalled) {
  *kept = g_quiet_kept;
  *signalled = g_quiet_signalled;
}

uint64_t snap__capture_quiet_completed(void) { return g_quiet_completed; }

/* Whether pc lies in an executable range of a loaded image: under
   qemu-user the kernel speaks of the emulator's host code instead. */
static bool in_image(uintptr_t pc) {
  const snap__images_t *t = snap__images_acquire();
  bool in = t && snap__images_find(t, pc) != NULL;
  snap__images_release(t);
  return in;
}

/* SNAP_CAPTURE_QUIET's walk of a thread blocked in a system call: a count,
   or SNAP_EBUSY / SNAP_EUNSUPPORTED when the thread must be signalled.
   *want_regs: the walk ended short of the thread's root for want of fp,
   and the thread's wait is one a signal cannot change. */
static int quiet_walk(snap_thread_t thread, uintptr_t *pcs, int max,
                      unsigned flags, snap__plat_wait_regs_t *wait,
                      bool *want_regs, snap__plat_blocked_t *b_out) {
  *want_regs = false;
  unsigned key_flags = flags;
  /* No Swift async chains: whether a record really leads to one is asked
     of the running thread (snap__plat_async_task_active, thread-local
     state), and here that is the sampler, not the target. The target's
     OS stack is walked instead. */
  flags &= ~SNAP_CAPTURE_ASYNC;
  for (int attempt = 0; attempt < 2; attempt++) {
    snap__plat_blocked_t b;
    int rc = snap__plat_blocked_regs(thread, &b);
    if (rc != SNAP_OK)
      return rc;
    if (!in_image(b.regs.pc))
      return SNAP_EBUSY;
    /* Not run since a signal completed its stack: that stack still. */
    int kept = snap__completed_get(thread, key_flags, &b, pcs, max, wait);
    if (kept >= 0)
      return kept;
    snap__walk_state_t st;
    int n = snap__walk_bounded_in(&st, &b.regs, true, flags, 0, pcs, max, 0);
    /* Where the walk ended at a frame-pointer function (fp unknown), its
       record is found on the stack and the walk goes on from its caller:
       a few times at most (each costs a scan). */
    bool lost = false;
    for (int seg = 0; seg < 4 && n < max; seg++) {
      snap__regs_t caller;
      snap__fp_recover_t r =
          snap__fp_recover(&st.cursor.regs, st.cursor.exact, flags, &caller);
      lost = r == SNAP__FP_LOST;
      if (r != SNAP__FP_RECOVERED)
        break;
      n += snap__walk_bounded_in(&st, &caller, false, flags, 0, pcs + n,
                                 max - n, 0);
    }
    rc = snap__plat_blocked_still(thread, &b);
    if (rc == SNAP_OK) {
      *wait = b.wait;
      *want_regs = lost && n < max && b.restartable;
      *b_out = b;
      return n;
    }
    if (rc != SNAP_EBUSY)
      return rc; /* gone */
  }
  return SNAP_EBUSY; /* it keeps waking: signal it */
}

/* A sample through the signal: the thread walks itself from its own
   registers. pcs and *wait are written only when it gives more than `keep`
   frames (0: whatever it gives, an error code included), so a quiet stack
   already in pcs stands when the signal answers less. */
static int signal_walk(snap_thread_t thread, uintptr_t *pcs, int max,
                       unsigned flags, snap__plat_wait_regs_t *wait, int keep) {
  sample_job_t job;
  job.flags = flags;
  job.max = max < SNAP_MAX_FRAMES ? max : SNAP_MAX_FRAMES;
  snap__plat_wait_regs_t w;
  int n = snap__plat_sample(thread, sample_walk, &job,
                            offsetof(sample_job_t, walk), &w);
  if (n > keep) {
    memcpy(pcs, job.pcs, (size_t)n * sizeof *pcs);
    *wait = w;
  } else if (keep == 0) {
    *wait = w;
  }
  return n;
}

/* Another thread's stack, and the registers its wait is decoded from. */
static int capture_other(snap_thread_t thread, uintptr_t *pcs, int max,
                         unsigned flags, snap__plat_wait_regs_t *wait) {
  (void)snap__images_refresh(false);
  if (flags & SNAP_CAPTURE_QUIET) {
    int max_quiet = max < SNAP_MAX_FRAMES ? max : SNAP_MAX_FRAMES;
    bool want_regs;
    snap__plat_blocked_t b;
    int n = quiet_walk(thread, pcs, max_quiet, flags, wait, &want_regs, &b);
    if (n >= 0 && want_regs && snap__plat_sample_reachable(thread) == SNAP_OK) {
      /* Short for want of fp, in a wait the signal cannot change: the
         thread's own registers give the whole stack. The quiet stack
         stands if the signal does not answer (or answers less). */
      int m = signal_walk(thread, pcs, max, flags, wait, n);
      if (m > n) {
        g_quiet_completed++;
        /* Kept while the thread stays as the signal left it (completed.c):
           a sampler that asks again because the handler moved the
           thread's CPU clock gets it without another signal. The thread
           is usually back in its wait by now; a few reads at most. */
        snap__plat_blocked_t after;
        for (int i = 0; i < 8; i++) {
          int r = snap__plat_blocked_again(thread, &b, &after);
          if (r == SNAP_OK)
            snap__completed_put(thread, flags, &after, pcs, m, wait);
          if (r != SNAP_EBUSY)
            break;
        }
        return m;
      }
    }
    if (n >= 0 || n == SNAP_ENOTHREAD) {
      if (n >= 0)
        g_quiet_kept++;
      return n;
    }
    g_quiet_signalled++;
  }
  return signal_walk(thread, pcs, max, flags, wait, 0);
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
  snap__plat_wait_regs_t wait;
  return capture_other(thread, pcs, max, flags, &wait);
}

int snap__capture_thread_wait(snap_thread_t thread, uintptr_t *pcs, int max,
                              unsigned flags, snap_wait_t *wait,
                              bool name_owner, bool *os_blocked) {
  if (os_blocked)
    *os_blocked = false;
  if (!wait)
    return snap_capture_thread(thread, pcs, max, flags);
  /* API v1 knows one size: the whole struct. */
  if (wait->size != sizeof(snap_wait_t) || !valid_args(pcs, max, flags))
    return SNAP_EINVAL;
  snap_wait_t w;
  snap__plat_wait_none(&w);
  int n;
  if (thread == snap__plat_thread_self()) {
    n = snap_capture_self(pcs, max, 1, flags);
    __asm__ volatile("" ::: "memory");
  } else {
    snap__plat_wait_regs_t regs = {.source = SNAP__WAIT_REGS_NONE};
    n = capture_other(thread, pcs, max, flags, &regs);
    if (os_blocked)
      *os_blocked = n >= 0 && regs.source == SNAP__WAIT_REGS_KERNEL;
    if (n >= 0) {
      snap__plat_wait_decode(thread, &regs, pcs, n, &w);
      if (name_owner && w.owner_state == SNAP_OWNER_KNOWN &&
          !snap__plat_thread_name(w.owner, w.owner_name, sizeof w.owner_name))
        w.owner_name[0] = '\0';
    }
  }
  w.size = wait->size;
  *wait = w;
  return n;
}

int snap_capture_thread_wait(snap_thread_t thread, uintptr_t *pcs, int max,
                             unsigned flags, snap_wait_t *wait) {
  return snap__capture_thread_wait(thread, pcs, max, flags, wait, true, NULL);
}

const char *snap_wait_kind_name(unsigned kind) {
  static const char *const names[SNAP_WAIT_KIND_COUNT] = {
      "none",  "mutex", "rwlock", "unfair_lock", "condvar", "semaphore",
      "futex", "io",    "sleep",  "poll",        "other"};
  return kind < SNAP_WAIT_KIND_COUNT ? names[kind] : "unknown";
}

int snap_set_sample_timeout_ms(unsigned ms) {
  if (ms == 0 || ms > 10000)
    return SNAP_EINVAL;
  return snap__plat_set_sample_timeout_ms(ms);
}

int snap_set_sample_signal(int signo) {
  return snap__plat_set_sample_signal(signo);
}

void snap__capture_prepare(void) { (void)snap__images_refresh(false); }
