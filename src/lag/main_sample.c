/*
 * main_sample.c — sampling the main thread: one named sample when a report
 * needs its stack, and the point samples of the ring while it is busy.
 *
 * Owns: how the watchdog captures and names a stack of another thread
 * (flags, the exact pc of frame 0), when a point sample is named, and the
 * main thread's scheduler state recorded with each point (read just
 * before the sample; the stretch's first point keeps its counters), and
 * what it waited for at the named sample (snap__capture_thread_wait: the
 * wait is copied with the pcs at no cost to the stopped window and
 * decoded after it, with the lock's owner, named and looked at right
 * away: the owner may let go and exit before the thread dump, and the
 * report still says who held the lock, by the name it had; the look is
 * its start, which tells it from a thread given its TID later).
 * Must not: name a stack while its thread is stopped (every capture has
 * returned, and the thread runs again, before its pcs are named), decide
 * what is a lag or what state a thread is in, or write anything.
 *
 * One sampler: while a trace runs, the main thread samples itself for it
 * (trace/sampler_timed.c: its CPU-time timer), and a running main thread's
 * stack is taken from the trace's latest sample of it, never by stopping
 * it again (the two samplers waited on each other at the process-wide
 * sampler lock, and the trace's slice edges moved by 50-100 ms on a busy
 * machine: issue 25). A blocked main thread is read quietly as before (no
 * signal either way). Without a trace, or without a trace sample inside
 * the stretch, the watchdog samples as before.
 */
#include "capture/capture.h"
#include "lag/lag.h"
#include "trace/trace.h"

/* The running trace's latest sample of the main thread taken at or after
   since (monotonic), into pcs: its count, or < 0 (none: no trace, or none
   that recent). */
static int from_trace(uintptr_t *pcs, int max, uint64_t since) {
  uint64_t t;
  int64_t cpu;
  return snap__trace_main_latest(pcs, max, since, &t, &cpu);
}

const snap_stack_t *snap__lag_name(const uintptr_t *pcs, int n) {
  return snap_symbolicate(pcs, n, SNAP_SYMBOLICATE_EXACT_PC0);
}

/* Where Swift concurrency runs, a thread's stack below an async function is
   only the executor's machinery: ask for the task's async chain instead.
   Always quiet: a signal would end a sleeping thread's usleep or poll
   early (EINTR), and a worker that holds a lock across one would let go
   of it at the dump, shortening the very lag being reported. */
unsigned snap__lag_capture_flags(void) {
  return SNAP_CAPTURE_QUIET |
         (snap__plat_has_swift_concurrency() ? SNAP_CAPTURE_ASYNC : 0);
}

/* NULL when the main thread could not be sampled (m->error says why: it
   did not answer in time, e.g. under TSan, which holds signals back while
   a thread blocks). */
const snap_stack_t *snap__main_sample(snap__main_sample_t *m) {
  /* Its run state before the sample: right after one it is still on its
     way out of the signal handler, so it would read "running". One read
     (a look), not the counters' several: the sample's wait says the rest. */
  snap__plat_thread_look_t look;
  snap__plat_sched_t os = snap__plat_sched_unknown();
  bool running =
      snap__plat_thread_look(m->tid, &look) == SNAP_OK && look.running;
  if (running)
    os.run = SNAP__RUN_READY;
  /* When it last ran before the sample is what bounds when its wait
     began (report.c). */
  m->t_ns = snap__plat_now_ns();
  m->cpu_ns = snap__plat_thread_cpu_ns(m->tid);
  m->wait = (snap_wait_t){.size = sizeof m->wait};
  bool from_os = false;
  /* Running, with a trace running: the trace's sample (no wait: it ran). */
  int n = running ? from_trace(m->pcs, SNAP__DUMP_DEPTH, m->since_ns) : -1;
  m->from_trace = n > 0;
  if (m->from_trace)
    snap__plat_wait_none(&m->wait);
  else
    n = snap__capture_thread_wait(m->tid, m->pcs, SNAP__DUMP_DEPTH,
                                  snap__lag_capture_flags(), &m->wait, true,
                                  &from_os);
  m->state = snap__state_judge(
      &(snap__state_facts_t){.cpu0_ns = -1,
                             .cpu1_ns = -1,
                             .runq0_ns = -1,
                             .runq1_ns = -1,
                             .os = &os,
                             .wait = n >= 0 ? &m->wait : NULL,
                             .wait_from_os = from_os,
                             .plat = snap__plat_trace_facts()});
  m->n = n; /* kept for the thread dump */
  /* Where the loop is once the capture returned, before the naming (the
     first naming of an image takes tens of ms): a stack captured inside
     the stretch is the stretch's, however long naming it takes. */
  m->loop = snap__loop_read();
  m->owner = (snap__plat_thread_look_t){0};
  m->owner_rc = n >= 0 && m->wait.owner_state == SNAP_OWNER_KNOWN
                    ? snap__plat_thread_look(m->wait.owner, &m->owner)
                    : SNAP_ENOTHREAD;
  const snap_stack_t *s =
      n < 0 ? NULL : snap__lag_name(m->pcs, n); /* it runs again */
  m->error = n < 0 ? n : s ? SNAP_OK : SNAP_ENOMEM;
  return s;
}

/* The CPU time and run-queue wait the interval of a new point starts
   from: the stretch's previous point, or when the watchdog saw the
   stretch begin (-1 unknown). */
static void interval_start(const snap__ring_t *ring, const snap__stretch_t *st,
                           int64_t *cpu0, int64_t *runq0) {
  *cpu0 = st->seen_cpu;
  *runq0 = st->seen_runq;
  if (ring->written > 0 && ring->size > 1) {
    const snap__point_t *prev = &ring->slots[(ring->written - 1) % ring->size];
    if (prev->seq == st->seq && prev->t_ns >= st->seen_ns) {
      *cpu0 = prev->sched.cpu_ns;
      *runq0 = prev->sched.runq_ns;
    }
  }
}

void snap__main_point(snap_thread_t main, snap__ring_t *ring,
                      snap__stretch_t *st, uint64_t now, uint64_t interval_ns) {
  snap__point_t *p = snap__ring_next(ring);
  if (!p)
    return;
  /* Where the thread is, read before the sample: a sampled thread is on
     its way out of the signal handler (running) for a while after. */
  snap__plat_sched_t sched; /* p is the oldest point until committed */
  snap__plat_thread_sched(main, &sched);
  /* Judged over the interval since the previous point: at the instant of
     the read the watchdog itself, just woken, may hold the thread's CPU
     (src/blocked/thread_state.c, rule 4). */
  snap__state_facts_t facts = {.cpu1_ns = sched.cpu_ns,
                               .runq1_ns = sched.runq_ns,
                               .os = &sched,
                               .plat = snap__plat_trace_facts()};
  interval_start(ring, st, &facts.cpu0_ns, &facts.runq0_ns);
  snap__thread_state_t state = snap__state_judge(&facts);
  if (!st->have_first) { /* the reading holds even if the capture fails */
    st->first = sched;
    st->have_first = true;
  }
  /* No wait record here: reports take main's wait from its detection
     sample and the dump, and its decode and owner name would cost every
     point ~8 us (bench_sample). */
  /* Running, with a trace running: the trace's latest sample since the
     previous point (a repeat would weigh one sample twice), or none this
     time; the thread is never stopped a second time. */
  int n = SNAP_EINVAL;
  if (state.state == SNAP__STATE_RUNNING ||
      state.state == SNAP__STATE_RUNNABLE || state.state == SNAP__STATE_READY) {
    uint64_t since = now > interval_ns / 2 ? now - interval_ns / 2 : 0;
    n = from_trace(p->pcs, SNAP__RING_DEPTH,
                   since > st->since_ns ? since : st->since_ns);
    if (n == SNAP_EBUSY)
      return; /* a trace runs, no sample of it yet: no point this time */
  }
  if (n < 0)
    n = snap_capture_thread(main, p->pcs, SNAP__RING_DEPTH,
                            snap__lag_capture_flags());
  /* A capture that ended after the stretch did may hold the idle loop's
     stack, which every lag shares: not the stretch's (a lag seen late is
     known by its points, and would match any other). */
  snap__loop_view_t v = snap__loop_read();
  if (n <= 0 || !v.busy || v.seq != st->seq)
    return;
  p->n = n;
  p->sched = sched;
  p->state = state;
  p->seq = st->seq;
  p->t_ns = now;
  p->cpu_ns =
      p->sched.cpu_ns >= 0 ? p->sched.cpu_ns : snap__plat_thread_cpu_ns(main);
  snap__ring_commit(ring);
  /* A stretch a whole interval old may become a lag: its point is named
     now, once the main thread runs again, so that the first naming of an
     image (tens of ms for libc with its debug file) is not paid between
     detection and the report. Points of short stretches are named only if
     a report needs them: a hot loop's samples cost no naming. */
  if (now - st->since_ns >= interval_ns)
    snap_stack_release(snap__lag_name(p->pcs, n));
}
