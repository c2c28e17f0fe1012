/*
 * thread_state.c — the decision table behind snap__state_judge
 * (thread_state.h): one thread's state over an interval, from what the
 * platform said of it.
 *
 * Why one table: the watchdog's point samples, its thread dump, the
 * trace's samples and its slices each used to decide "is it blocked"
 * their own way (the stat letter, the CPU clock across a read, a
 * re-judgement over the stretch's interval, the capture's wait), and on a
 * busy machine they disagreed: a compute lag read "blocked" in one place
 * and "running" in another.
 *
 * The table, first rule that applies:
 *   1. The OS says the thread is stopped (a debugger, SIGSTOP):
 *      blocked, kind other.
 *   2. A sample in the interval found it in a waiting call: blocked on
 *      that wait (kind, address, owner). Except a call of kind other that
 *      only a signal saw, where the sample interrupts calls rather than
 *      keeping the thread inside them (Linux): a signal lands on a thread
 *      that runs, so "other" there is a short call it was running through
 *      (clock_gettime under qemu-user, which has no vDSO). Where a sample
 *      keeps the thread in its call (Apple's suspension), a message wait
 *      (a run loop's idle wait: kind other) is a wait all the same.
 *   3. It did not run since its previous sample (a sampler that follows
 *      it, the trace, says which: prev): no sample since, its CPU time
 *      unmoved, and that clock exact or the OS not saying it is ready
 *      (snap__state_did_not_run). Runnable when the OS says it is ready
 *      (woken or preempted, waiting for a CPU); else where that sample
 *      found it: its blocked state, or, after a ready one, blocked on the
 *      call the OS names (other when none: it went to sleep in the steps
 *      between the reading before that sample and the sample). The
 *      reading must come before the sample: read after, it can include
 *      those last steps into a sleep, and every later answer would repeat
 *      the stack it left.
 *   4. No sample, and the OS says it is asleep in the kernel: blocked, on
 *      the kind of the call the OS names (other when none).
 *   5. Otherwise it did not block; if it is known to be ready (a sample
 *      ran on it, or the OS says it is on a CPU or a run queue), which of
 *      running and runnable it was is told, in this order, by:
 *      a. the interval: running when its CPU time grew at least as much
 *         as its run-queue wait (the instant alone is misleading on a
 *         busy machine: the reader, just woken to look, often holds the
 *         thread's CPU at that instant). A sampler whose thread ticks
 *         itself (a CPU-time timer) and did not block between two ticks
 *         hands in, as that wait, the wall time between them that the
 *         CPU time does not explain;
 *      b. the instant: running when the CPU clock moved across the OS's
 *         read; runnable when it did not, the clock is exact (Linux
 *         brings a running thread's clock up to date on every read; xnu
 *         charges it only at kernel entries, so there an unmoved clock
 *         says nothing) and no sample ran on it afterwards;
 *      c. a sample ran on it: running (the signal ran on a CPU);
 *      d. otherwise ready, running or runnable.
 *   6. Nothing known: unknown.
 * A counter that went backwards (another thread behind the id) is
 * unknown, never a negative interval.
 */
#include "blocked/thread_state.h"

static const snap__thread_state_t k_unknown = {.state = SNAP__STATE_UNKNOWN,
                                               .kind = SNAP_WAIT_NONE,
                                               .owner_state = SNAP_OWNER_NONE};

static snap__thread_state_t blocked(unsigned kind, uintptr_t address,
                                    unsigned owner_state, snap_thread_t owner) {
  snap__thread_state_t s = k_unknown;
  s.state = SNAP__STATE_BLOCKED;
  s.kind = (uint8_t)(kind != SNAP_WAIT_NONE && kind < SNAP_WAIT_KIND_COUNT
                         ? kind
                         : SNAP_WAIT_OTHER);
  s.address = address;
  s.owner_state = (uint8_t)owner_state;
  s.owner = owner_state == SNAP_OWNER_KNOWN ? owner : 0;
  return s;
}

/* b - a, or -1 when either is unknown or it went backwards. */
static int64_t grew(int64_t a, int64_t b) {
  return a < 0 || b < 0 || b < a ? -1 : b - a;
}

/* Rule 2: whether the sample's wait is one the thread was in. */
static bool sample_waits(const snap__state_facts_t *f) {
  const snap_wait_t *w = f->wait;
  if (!w || w->kind == SNAP_WAIT_NONE)
    return false;
  return w->kind != SNAP_WAIT_OTHER || f->wait_from_os ||
         f->plat.sample_keeps_call;
}

/* Rule 5, for a thread known not to have blocked. */
static uint8_t running_or_runnable(const snap__state_facts_t *f) {
  int64_t cpu = grew(f->cpu0_ns, f->cpu1_ns);
  int64_t runq = grew(f->runq0_ns, f->runq1_ns);
  if (cpu >= 0 && runq >= 0) /* 5a */
    return cpu >= runq ? SNAP__STATE_RUNNING : SNAP__STATE_RUNNABLE;
  const snap__plat_sched_t *os = f->os;
  if (os && os->run == SNAP__RUN_READY) { /* 5b */
    int64_t moved = grew(os->cpu_before_ns, os->cpu_ns);
    if (moved > 0)
      return SNAP__STATE_RUNNING;
    if (moved == 0 && f->plat.cpu_time_exact && !f->wait)
      return SNAP__STATE_RUNNABLE;
  }
  if (f->wait) /* 5c */
    return SNAP__STATE_RUNNING;
  return SNAP__STATE_READY; /* 5d */
}

static bool os_ready(const snap__state_facts_t *f) {
  return f->os && f->os->run == SNAP__RUN_READY;
}

bool snap__state_did_not_run(const snap__state_facts_t *f) {
  if (!f->prev || f->wait || grew(f->cpu0_ns, f->cpu1_ns) != 0)
    return false;
  return f->plat.cpu_time_exact || !os_ready(f);
}

snap__thread_state_t snap__state_judge(const snap__state_facts_t *f) {
  const snap__plat_sched_t *os = f->os;
  if (os && os->run == SNAP__RUN_STOPPED) /* 1 */
    return blocked(SNAP_WAIT_OTHER, 0, SNAP_OWNER_NONE, 0);
  if (sample_waits(f)) /* 2 */
    return blocked(f->wait->kind, f->wait->address, f->wait->owner_state,
                   f->wait->owner);
  if (snap__state_did_not_run(f)) { /* 3 */
    snap__thread_state_t s = k_unknown;
    const snap__thread_state_t *p = f->prev;
    if (os_ready(f)) {
      s.state = SNAP__STATE_RUNNABLE;
      return s;
    }
    if (p->state == SNAP__STATE_BLOCKED)
      return blocked(p->kind, p->address, p->owner_state, p->owner);
    return blocked(os && os->run == SNAP__RUN_WAITING ? os->call_kind
                                                      : SNAP_WAIT_OTHER,
                   0, SNAP_OWNER_NONE, 0);
  }
  if (!f->wait && os && os->run == SNAP__RUN_WAITING) /* 4 */
    return blocked(os->call_kind, 0, SNAP_OWNER_NONE, 0);
  if (f->wait || os_ready(f)) { /* 5 */
    snap__thread_state_t s = k_unknown;
    s.state = running_or_runnable(f);
    return s;
  }
  return k_unknown; /* 6 */
}

snap__thread_state_t
snap__state_of_samples(const uint32_t by_state[SNAP__STATE_COUNT],
                       const uint32_t *waits) {
  uint64_t run = by_state[SNAP__STATE_RUNNING];
  uint64_t queued = by_state[SNAP__STATE_RUNNABLE];
  uint64_t ready = by_state[SNAP__STATE_READY];
  uint64_t blocked_n = by_state[SNAP__STATE_BLOCKED];
  uint64_t known = run + queued + ready + blocked_n;
  snap__thread_state_t s = k_unknown;
  if (known == 0)
    return s;
  if (blocked_n * 2 > known) {
    unsigned kind = SNAP_WAIT_OTHER;
    uint32_t best = 0;
    for (unsigned k = SNAP_WAIT_NONE + 1; waits && k < SNAP_WAIT_KIND_COUNT;
         k++)
      if (waits[k] > best) {
        best = waits[k];
        kind = k;
      }
    return blocked(kind, 0, SNAP_OWNER_NONE, 0);
  }
  s.state = queued * 2 > known ? SNAP__STATE_RUNNABLE
            : ready > run      ? SNAP__STATE_READY
                               : SNAP__STATE_RUNNING;
  return s;
}

const char *snap__state_name(unsigned state) {
  static const char *const names[SNAP__STATE_COUNT] = {
      [SNAP__STATE_UNKNOWN] = "unknown",
      [SNAP__STATE_RUNNING] = "running",
      [SNAP__STATE_RUNNABLE] = "runnable",
      [SNAP__STATE_READY] = "running_or_runnable",
      [SNAP__STATE_BLOCKED] = "blocked",
  };
  return state < SNAP__STATE_COUNT ? names[state] : NULL;
}
