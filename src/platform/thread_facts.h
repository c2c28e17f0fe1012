/*
 * thread_facts.h — the platform seam's answers about one thread beyond its
 * registers: its CPU time, its scheduler state and times (running,
 * runnable, blocked and in what), its name; and the platform facts that
 * tell how far those answers go (snap__plat_trace_facts).
 *
 * Owns: declarations only; each backend defines them (Linux: /proc, the
 * schedstat file kept open; Apple: thread_info). Kept out of platform.h,
 * which holds what capture needs (threads, the stopped window, memory,
 * images, symbols), so that the seam the walker depends on does not
 * carry what only the lag watchdog, the thread dump and the trace ask.
 * Must not: hold a decision (what a lag is, what a thread waits on:
 * lag/ and blocked/ decide); name an OS type in a signature. None of
 * these may run in the stopped window unless tagged [signal-safe].
 */
#ifndef SNAP_PLATFORM_THREAD_FACTS_H
#define SNAP_PLATFORM_THREAD_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stacksnap.h"

/* CPU time the thread has used (user + system), in nanoseconds, or a
   negative SNAP_E* code (SNAP_ENOTHREAD when it exited). */
int64_t snap__plat_thread_cpu_ns(snap_thread_t thread);

/* What the thread-state decision (src/blocked/thread_state.c, which the
   trace's sampler asks too) must know of this platform's facts.
   cpu_time_exact: a thread's CPU time grows while it runs, up to the
   instant it is read (Linux: the kernel brings a running task's clock up
   to date on every read); false where it grows only at the thread's
   kernel entries and context switches (xnu's THREAD_BASIC_INFO), so an
   unchanged value does not mean "did not run". sample_keeps_call: a
   sample leaves a thread that was in a system call inside it (Apple's
   thread_suspend), rather than interrupting it (Linux's signal, which
   runs the handler on the way out), so a call in the sample's registers
   is one the thread was still in. */
typedef struct snap__plat_trace_facts {
  bool cpu_time_exact;
  bool sample_keeps_call;
} snap__plat_trace_facts_t;
snap__plat_trace_facts_t snap__plat_trace_facts(void);
/* A reader of one thread's own scheduler times, kept open (the watchdog
   reads them at every wake: opening /proc/thread-self/schedstat each time
   was half of its CPU time on a 60 fps loop; a read of the open file is a
   fifth of that). Opened by the thread it reads, closed by anyone. */
typedef struct snap__plat_self_sched {
  int handle;     /* -1: not open */
  uint64_t id[2]; /* what the handle refers to (an app may reuse it) */
} snap__plat_self_sched_t;
/* Opens r for the calling thread: SNAP_OK, or a negative code (then
   snap__plat_self_sched_times answers that code). [setup] */
int snap__plat_self_sched_open(snap__plat_self_sched_t *r);
void snap__plat_self_sched_close(snap__plat_self_sched_t *r);
/* The times of r's thread since it started, in nanoseconds: *on_cpu,
   running, and *runq, runnable but waiting on a run queue for a CPU.
   SNAP_OK, or a negative SNAP_E* code where the OS does not say
   (SNAP_EUNSUPPORTED on Apple). What is neither was spent blocked or
   stopped: this tells a thread that woke late because it was starved from
   one whose whole process was stopped (a stopped thread is not runnable).
   Linux: /proc/thread-self/schedstat. [setup] */
int snap__plat_self_sched_times(const snap__plat_self_sched_t *r,
                                int64_t *on_cpu, int64_t *runq);
/* What the OS says of a thread at one instant: raw facts, judged by
   src/blocked/ (snap__state_judge), never here. */
typedef enum snap__plat_run {
  SNAP__RUN_UNKNOWN, /* the OS did not say (or the read failed) */
  SNAP__RUN_READY,   /* on a CPU or on a run queue (Linux 'R', Apple
                        TH_STATE_RUNNING) */
  SNAP__RUN_WAITING, /* asleep in the kernel, waiting for an event (Linux
                        'S', 'D'; Apple waiting, uninterruptible) */
  SNAP__RUN_STOPPED  /* stopped or traced (SIGSTOP, a debugger), or a
                        state the OS runs no code in (Linux 'T', 't', ...) */
} snap__plat_run_t;

typedef struct snap__plat_sched {
  uint8_t run;           /* snap__plat_run_t */
  uint8_t call_kind;     /* WAITING: the SNAP_WAIT_* kind of the system
                            call the OS says it waits in (futex, io, sleep,
                            poll, other; io for an uninterruptible wait
                            outside a call); SNAP_WAIT_NONE otherwise */
  int64_t cpu_before_ns; /* CPU time read just before the run state ... */
  int64_t cpu_ns;        /* ... and just after: CPU time used */
  int64_t runq_ns;       /* time runnable but not running */
  int64_t voluntary;     /* context switches: it blocked ... */
  int64_t involuntary;   /* ... it was preempted */
  int64_t major_faults;  /* page faults that waited for I/O */
} snap__plat_sched_t;

/* The thread's run state now and its counters (-1 each where the OS
   does not say): facts only; what they mean is src/blocked/'s to say. Reads
   only: a few small /proc files on Linux (stat, schedstat, status, syscall when
   blocked; ~30-60 us), one thread_info on Apple. SNAP_OK (possibly with every
   field unknown), or SNAP_ENOTHREAD when the thread is gone. [setup] Never from
   the stopped window. */
int snap__plat_thread_sched(snap_thread_t thread, snap__plat_sched_t *out);
/* A reading with every field unknown. */
static inline snap__plat_sched_t snap__plat_sched_unknown(void) {
  return (snap__plat_sched_t){.run = SNAP__RUN_UNKNOWN,
                              .call_kind = SNAP_WAIT_NONE,
                              .cpu_before_ns = -1,
                              .cpu_ns = -1,
                              .runq_ns = -1,
                              .voluntary = -1,
                              .involuntary = -1,
                              .major_faults = -1};
}
/* Just the run-queue wait of the thread (see snap__plat_thread_sched), in
   nanoseconds, or a negative SNAP_E* code (SNAP_EUNSUPPORTED on Apple):
   one small read, for a baseline taken at every busy stretch. [setup] */
int64_t snap__plat_thread_runq_ns(snap_thread_t thread);
/* The thread's name ("" when it has none); false when it cannot be read. */
bool snap__plat_thread_name(snap_thread_t thread, char *buf, size_t size);

#endif /* SNAP_PLATFORM_THREAD_FACTS_H */
