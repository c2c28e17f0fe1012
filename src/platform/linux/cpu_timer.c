/*
 * cpu_timer.c — per-thread CPU-time sampling timers on Linux: a running
 * thread samples itself.
 *
 * Owns: the POSIX timers armed on a thread's CPU-time clock with
 * SIGEV_THREAD_ID (the kernel delivers the signal to that thread, each
 * time it has used a period of CPU), the table of armed timers the signal
 * handler looks its caller up in, and the rule that a timer's ctx outlives
 * every handler of it. Must not: let the handler allocate, lock, print or
 * read a file (fn is [signal-safe] by contract), or interrupt a thread
 * that does not run.
 *
 * Why: sampling a running thread from another one (sample.c) costs a
 * signal, a semaphore round trip, the process-wide sampler lock and a few
 * /proc reads per sample, and two samplers (the trace, the lag watchdog)
 * wait on each other at that lock. A CPU-time timer costs the signal
 * alone, needs no lock and no reply, and never fires while the thread is
 * blocked: its sleep or poll is never cut short, and a thread that did not
 * run costs nothing. (The one edge: an expiry checked at the tick that
 * finds the thread between its syscall entry and its sleep is delivered
 * before it sleeps; the handler is SA_RESTART, so a restartable wait
 * resumes.)
 *
 * The signal is the sampling signal (sample.c installs one handler for
 * both): a timer's signal carries si_code SI_TIMER and the value
 * (TIMER_MAGIC, generation, slot) set at arming, so a signal of a timer
 * stopped since, or of another library's timer, finds no match. Stopping
 * marks the slot disarmed, deletes the timer, then waits until no handler
 * of the slot is inside fn (busy == 0): the handler counts itself in
 * before it reads the slot's state, the stopper changes the state before
 * it reads the count (both sequentially consistent), so one of the two
 * sees the other.
 *
 * A nudge, for a thread the trace saw awake with no tick since, comes two
 * ways. For a thread on a CPU now, the timer is set to expire after 1 ns
 * more of its CPU time, then every period as before: a tick at the next
 * scheduler tick that finds it on a CPU, and the timer's own expiry keeps
 * its promise: a thread that went to sleep meanwhile is not interrupted.
 * For a thread waiting for a CPU (its clock does not move: a busy
 * machine), the next scheduler tick that finds it running may be tens of
 * ms away, so the timer's value is queued to it as a signal
 * (rt_tgsigqueueinfo, si_code SI_QUEUE): the kernel delivers it on the
 * thread's next return to user mode, before it can make another system
 * call, so it cannot end a sleep the thread has not begun. (A thread
 * preempted inside a system call on its way to sleeping would see it
 * pending and sleep no more: with voluntary kernel preemption, Debian's,
 * that is a thread that yields inside the call, which the waits we know
 * do not.) The scheduler's tick may never find a thread on a CPU (beside
 * busy threads, slices shorter than a tick: docs/trace.md), so the caller
 * queues the tick to such a thread even while it runs. Whether the thread
 * runs is the caller's reading.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "platform/linux/linux.h"

#define SLOTS 256
#define TIMER_MAGIC 0x534e5054u /* "SNPT" */

typedef struct slot {
  atomic_uint state; /* generation << 1 | armed */
  atomic_int busy;   /* handlers inside fn */
  atomic_bool used;  /* claimed by a timer, armed or being armed */
  snap__cpu_tick_fn fn;
  void *ctx;
} slot_t;

static slot_t g_slots[SLOTS];

/* What the opaque handle holds. */
typedef struct handle {
  timer_t id;
  uint32_t slot; /* SLOTS: none */
  uint32_t gen;
  uint64_t period_ns;
} handle_t;
_Static_assert(sizeof(handle_t) <= sizeof(snap__plat_cpu_timer_t),
               "the handle must fit the seam's storage");

static void reset_in_child(void) {
  /* A forked child inherits no POSIX timer: every slot is free again. */
  for (int i = 0; i < SLOTS; i++) {
    unsigned st = atomic_load(&g_slots[i].state);
    atomic_store(&g_slots[i].state, st & ~1u);
    atomic_store(&g_slots[i].busy, 0);
    atomic_store(&g_slots[i].used, false);
  }
}

int64_t snap__plat_self_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
    return -1;
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

bool snap__linux_cpu_timer_token(uint64_t token) {
  return (uint32_t)(token >> 32) == TIMER_MAGIC;
}

void snap__linux_cpu_timer_fire(uint64_t token, void *uc) {
  unsigned idx = (unsigned)(token & 0xff);
  unsigned gen = (unsigned)((token >> 8) & 0xffffff);
  slot_t *s = &g_slots[idx];
  atomic_fetch_add(&s->busy, 1);
  if (atomic_load(&s->state) == (gen << 1 | 1u)) {
    snap__regs_t regs;
    snap__linux_regs_from_ucontext(uc, &regs);
    /* The walk runs here, on the thread's own stack, under the kernel's
       signal frame: both the stack it walks and the room under this
       frame must be known without reading a file (the window's rule,
       sample.c). A thread whose stack is not known yet gets NULL: its
       owner teaches it the stack with one snap__plat_sample. */
    uintptr_t here = (uintptr_t)&regs, lo;
    bool ok = snap__linux_stack_low(regs.sp, &lo) &&
              snap__linux_stack_low(here, &lo) &&
              here - lo >= SNAP__LINUX_WINDOW_STACK;
    snap__linux_window_mark(true);
    s->fn(ok ? &regs : NULL, s->ctx);
    snap__linux_window_mark(false);
  }
  atomic_fetch_sub(&s->busy, 1);
}

int snap__plat_cpu_timer_start(snap__plat_cpu_timer_t *t, snap_thread_t thread,
                               uint64_t period_ns, snap__cpu_tick_fn fn,
                               void *ctx) {
  handle_t *h = (handle_t *)(void *)t->opaque;
  h->slot = SLOTS;
  if (!fn || period_ns == 0)
    return SNAP_EINVAL;
  if (!snap__linux_tid_ok(thread))
    return SNAP_ENOTHREAD;
  int rc = snap__linux_sample_install();
  if (rc != SNAP_OK)
    return rc;
  /* Bind the handler's one libc import (clock_gettime, for fn's CPU
     reading) before the first signal: a lazy-binding resolver would run
     on the target's stack (sample.c says why not). */
  (void)snap__plat_self_cpu_ns();
  static atomic_bool hooked;
  if (!atomic_exchange(&hooked, true))
    (void)snap__plat_on_fork(SNAP__FORK_CPU_TIMERS, NULL, NULL, reset_in_child);
  slot_t *s = NULL;
  unsigned idx;
  for (idx = 0; idx < SLOTS; idx++) {
    bool f = false;
    if (atomic_compare_exchange_strong(&g_slots[idx].used, &f, true)) {
      s = &g_slots[idx];
      break;
    }
  }
  if (!s)
    return SNAP_EBUSY;
  unsigned gen = ((atomic_load(&s->state) >> 1) + 1) & 0xffffff;
  s->fn = fn;
  s->ctx = ctx;
  atomic_store(&s->state, gen << 1 | 1u); /* before the first signal */
  /* The thread's CPU clock, as pthread_getcpuclockid builds it from the
     TID (the kernel's MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)). */
  clockid_t clk = (clockid_t)((~(unsigned)thread << 3) | 6u);
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = snap__linux_sample_signo();
  sev._sigev_un._tid = (pid_t)thread;
  sev.sigev_value.sival_ptr =
      (void *)(((uintptr_t)TIMER_MAGIC << 32) | ((uintptr_t)gen << 8) | idx);
  timer_t id;
  if (timer_create(clk, &sev, &id) != 0) {
    int err = errno;
    atomic_store(&s->state, gen << 1);
    atomic_store(&s->used, false);
    return err == EINVAL || err == ESRCH ? SNAP_ENOTHREAD : SNAP_EUNSUPPORTED;
  }
  struct itimerspec its = {.it_interval = {(time_t)(period_ns / 1000000000u),
                                           (long)(period_ns % 1000000000u)},
                           .it_value = {(time_t)(period_ns / 1000000000u),
                                        (long)(period_ns % 1000000000u)}};
  if (timer_settime(id, 0, &its, NULL) != 0) {
    timer_delete(id);
    atomic_store(&s->state, gen << 1);
    atomic_store(&s->used, false);
    return SNAP_EUNSUPPORTED;
  }
  h->id = id;
  h->slot = idx;
  h->gen = gen;
  h->period_ns = period_ns;
  return SNAP_OK;
}

void snap__plat_cpu_timer_stop(snap__plat_cpu_timer_t *t) {
  handle_t *h = (handle_t *)(void *)t->opaque;
  if (h->slot >= SLOTS)
    return;
  slot_t *s = &g_slots[h->slot];
  atomic_store(&s->state, h->gen << 1); /* disarmed: late signals leave */
  timer_delete(h->id);
  while (atomic_load(&s->busy) > 0) {
    struct timespec ms = {0, 100000};
    nanosleep(&ms, NULL);
  }
  atomic_store(&s->used, false);
  h->slot = SLOTS;
}

int snap__plat_cpu_timer_nudge(snap__plat_cpu_timer_t *t, snap_thread_t thread,
                               bool waiting) {
  handle_t *h = (handle_t *)(void *)t->opaque;
  if (h->slot >= SLOTS || !snap__linux_tid_ok(thread))
    return SNAP_EINVAL;
  if (!waiting) {
    struct itimerspec its = {
        .it_interval = {(time_t)(h->period_ns / 1000000000u),
                        (long)(h->period_ns % 1000000000u)},
        .it_value = {0, 1}};
    return timer_settime(h->id, 0, &its, NULL) == 0 ? SNAP_OK : SNAP_EBUSY;
  }
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = snap__linux_sample_signo();
  si.si_code = SI_QUEUE;
  si.si_pid = getpid();
  si.si_uid = getuid();
  si.si_value.sival_ptr = (void *)(((uintptr_t)TIMER_MAGIC << 32) |
                                   ((uintptr_t)h->gen << 8) | h->slot);
  if (syscall(SYS_rt_tgsigqueueinfo, getpid(), (int)thread, si.si_signo, &si) !=
      0)
    return errno == ESRCH ? SNAP_ENOTHREAD : SNAP_EBUSY;
  return SNAP_OK;
}
