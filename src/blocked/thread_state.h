/*
 * thread_state.h — the one answer to "what was this thread doing": running,
 * runnable, or blocked (on what kind of wait, at which address, held by
 * whom), over an interval, from the platform's raw facts.
 *
 * Owns: the thread-state enum every layer records (the lag watchdog's
 * point samples and thread dump, the trace's spans and slices) and the
 * decision table that fills it (thread_state.c). The public SNAP_WAIT_*
 * kinds (stacksnap.h) are the kinds of a blocked state; nothing else
 * classifies a wait, and no caller says running, runnable, ready or
 * blocked itself: the trace's sampler (trace/sampler.c, sampler_timed.c)
 * asks the judge for every sample it records, a tick its timer took and a
 * sample it did not take (the thread did not run) alike. Must not: read
 * anything itself (callers hand in what the platform said: platform.h's
 * snap__plat_thread_sched, a sample's decoded wait, snap__plat_trace_facts),
 * name an OS API, or allocate. Every function here is pure, so it may be asked
 * from any thread, and from a sampler that records its answer as it goes.
 */
#ifndef SNAP_BLOCKED_THREAD_STATE_H
#define SNAP_BLOCKED_THREAD_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "platform/platform.h"
#include "platform/thread_facts.h"
#include "stacksnap.h"

/* What a thread did. READY is "running or runnable" where the facts
   cannot tell which (Apple publishes no run-queue time and charges CPU
   time only at kernel entries): reports keep it apart rather than guess,
   so a starved thread is never counted as computing there. */
typedef enum snap__state {
  SNAP__STATE_UNKNOWN,  /* nothing was known (a read or a sample failed) */
  SNAP__STATE_RUNNING,  /* on a CPU */
  SNAP__STATE_RUNNABLE, /* ready, but waited on a run queue for a CPU */
  SNAP__STATE_READY,    /* running or runnable: the facts do not say */
  SNAP__STATE_BLOCKED,  /* waiting for an event: see kind */
  SNAP__STATE_COUNT
} snap__state_t;

/* The answer. kind, address and owner are set only when BLOCKED (kind
   SNAP_WAIT_NONE, owner_state SNAP_OWNER_NONE otherwise). */
typedef struct snap__thread_state {
  uint8_t state;       /* snap__state_t */
  uint8_t kind;        /* SNAP_WAIT_*: what it waits in */
  uint8_t owner_state; /* SNAP_OWNER_* */
  uintptr_t address;   /* the lock word / object waited on, 0 unknown */
  snap_thread_t owner; /* who holds it, when owner_state is KNOWN */
} snap__thread_state_t;

/* What is known of one thread over an interval [start, end]. Every field
   may be absent (-1 or NULL); the more is known, the sharper the answer. */
typedef struct snap__state_facts {
  /* Its CPU time and run-queue wait at the interval's two ends (ns; -1
     unknown): which of the two grew more says whether a thread that did
     not block computed or starved while nobody looked. */
  int64_t cpu0_ns, cpu1_ns;
  int64_t runq0_ns, runq1_ns;
  /* What the OS said at one instant near the end (snap__plat_thread_sched:
     its run state, the call it names, the CPU clock read on either side
     of that); NULL when not read. */
  const snap__plat_sched_t *os;
  /* A sample taken in the interval: its decoded wait (snap__capture_
     thread_wait; NULL when no sample was taken or it failed), and whether
     the OS itself said the thread was blocked in that call (a quiet walk,
     SNAP__WAIT_REGS_KERNEL) rather than a signal finding it there. */
  const snap_wait_t *wait;
  bool wait_from_os;
  /* For a sampler that follows the thread from sample to sample (the
     trace): the state its previous sample was given, when cpu0_ns is the
     CPU time read just before that sample (NULL otherwise). A thread that
     did not run since is where that sample found it (rule 3): its state
     goes on without a new sample. */
  const snap__thread_state_t *prev;
  /* The platform's facts (snap__plat_trace_facts()): whether an unmoved
     CPU clock means "did not run", and whether a sample leaves a thread
     inside its call. */
  snap__plat_trace_facts_t plat;
} snap__state_facts_t;

/* The decision table (thread_state.c, head comment). */
snap__thread_state_t snap__state_judge(const snap__state_facts_t *f);

/* Rule 3's test: whether the facts say the thread did not run since its
   previous sample (prev): no sample since, and its CPU time unmoved over
   the interval where that means "did not run" (an exact clock), or the
   OS does not say it is on a CPU or a run queue (Apple's clock moves only
   at kernel entries, so there a ready thread may have run). A sampler
   that follows a thread samples it again only when this is false; when
   true, the judge's answer goes with the stack the previous sample
   recorded. */
bool snap__state_did_not_run(const snap__state_facts_t *f);

/* The state of a stretch of samples from their counts by state: blocked
   when more than half of those whose state is known were blocked,
   runnable when more than half were runnable, running or ready (the
   larger) otherwise; unknown when none is known. waits (may be NULL): the
   blocked samples by SNAP_WAIT_* kind; the answer's kind is the most
   frequent of them when the answer is blocked. */
snap__thread_state_t
snap__state_of_samples(const uint32_t by_state[SNAP__STATE_COUNT],
                       const uint32_t *waits);

/* "unknown", "running", "runnable", "running_or_runnable", "blocked";
   NULL out of range (report and trace files name states by these). */
const char *snap__state_name(unsigned state);

#endif /* SNAP_BLOCKED_THREAD_STATE_H */
