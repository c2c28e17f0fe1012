/*
 * wake_accounting.c — how late each wake of the watchdog was, and how much
 * of the time since the last wake the process did not run at all.
 *
 * Owns: the reading taken at each wake (the clock with the counters, read
 * together), its comparison with the last one, and whether the loop was
 * calm meanwhile. Must not: decide what a lag is (lag_state.c) or act on
 * a stretch (watchdog.c): it answers a number of nanoseconds stolen.
 *
 * A wake later than planned, or work that took longer than the watchdog
 * ran, is either a machine too busy to run the watchdog on time (it waited
 * on a run queue: the app ran or waited meanwhile, and that time is lag)
 * or a process that did not run at all (SIGSTOP, a debugger, a suspended
 * VM: that time is "stolen" and does not count as busy, so a stop never
 * makes a lag). The watchdog thread's own CPU time, run-queue wait,
 * sampling waits and waits on the disk under its report files (an fsync
 * on a busy box: 100 ms and more) since its last wake, the process's CPU
 * time and the main thread's run-queue wait, tell them apart
 * (snap__stolen_ns; past
 * STOP_NOISE_NS); where the OS does not say how long a thread waited for
 * a CPU (Apple), a wake later than `slack` is a stop unless the main
 * thread ran meanwhile. A stretch that went past the threshold while the
 * watchdog waited is reported when it runs (watchdog.c's missed_stretches),
 * and a lag
 * ends when the observer says its stretch ended.
 */
#include "lag/lag.h"
#include "lag/watchdog.h"
#include "report/report.h"

/* The watchdog thread's own time so far that it spent running, waiting
   for a CPU, waiting on samples or on the disk under its report files (all
   of it time the process ran), or -1 where the OS does not say. */
static int64_t own_ran(const wd_t *w) {
  int64_t cpu, runq;
  if (snap__plat_self_sched_times(&w->sched, &cpu, &runq) != SNAP_OK)
    return -1;
  return cpu + runq + (int64_t)snap__plat_sample_waited_ns() +
         (int64_t)snap__report_waited_ns();
}

/* Reads the clock and the counters (wake_reading_t) so that no time passes
   between them:
   a preemption (or a block) between the two would put its wall time in
   one window and its run-queue wait in the other, and the window without
   it would look stopped (seen under load: a watchdog preempted for 400 ms
   right after reading the clock, its next window "400 ms of work, none of
   it run or queued", and a 400 ms lag discounted whole). Read again while
   the clock moved more than 1 ms across the counters (three tries). */
wake_reading_t snap__wd_read_wake(const wd_t *w) {
  wake_reading_t r;
  for (int tries = 0; tries < 3; tries++) {
    uint64_t t0 = snap__plat_now_ns();
    r.ran = own_ran(w);
    r.proc_cpu = snap__plat_process_cpu_ns();
    r.main_runq = snap__plat_thread_runq_ns(w->main.tid);
    r.now = snap__plat_now_ns();
    if (r.now - t0 <= SNAP__MS)
      break;
  }
  return r;
}

/* Remembers what this wake saw, for the next (woken_late). */
void snap__wd_note_wake(wd_t *w, const wake_reading_t *r) {
  w->prev_wake_ns = w->wake_ns;
  w->wake_ns = r->now;
  w->ran_ns = r->ran;
  w->proc_cpu_ns = r->proc_cpu;
  w->main_runq_ns = r->main_runq;
}

/* How many stretches ended since the last look (seen_seq), as v shows
   them (0 when the sequence went back: a new observer), and in *first the
   oldest of the last 16 of them (the observer keeps no more). */
uint32_t snap__wd_ended_since_seen(const wd_t *w, const snap__loop_view_t *v,
                                   uint32_t *first) {
  uint32_t last = (v->busy ? v->seq - 1 : v->seq) & SEQ_MASK;
  uint32_t n = (last - w->seen_seq) & SEQ_MASK;
  if (n > SEQ_MASK / 2)
    n = 0;
  *first = (last - (n < 16 ? n : 16) + 1) & SEQ_MASK;
  return n;
}

/* Whether the loop was calm since the last wake (`window` ago, at now):
   busy for under a tenth of the window, counting the stretches that ended
   meanwhile (at most 16: the observer's record) and the current one's age.
   A calm loop has no hot iterations to point-sample between wakes. */
static bool calm(const wd_t *w, const snap__loop_view_t *v, uint64_t now,
                 uint64_t window) {
  uint32_t s, n = snap__wd_ended_since_seen(w, v, &s);
  if (n > 16)
    return false; /* not known: not calm */
  uint64_t busy =
      v->busy && now > v->busy_since_ns ? now - v->busy_since_ns : 0;
  for (; n > 0; n--, s = (s + 1) & SEQ_MASK) {
    uint64_t since, len;
    if (!snap__loop_ended(s, &since, &len))
      return false; /* not known: not calm */
    busy += len;
  }
  return busy * 10 < window;
}

/* How long, since the last wake, the process did not run (0: it ran, or
   the watchdog was only starved of a CPU): a stop can land in the sleep
   (the wake is late) or in the work before it (sampling, naming, writing:
   the work took longer than the watchdog ran), so both are accounted
   (snap__stolen_ns). A park ends with a post right after a busy call, so
   that is when it was due: the start of the first stretch after the
   park, whether it still runs or already ended (a stop inside a stretch
   that ended before the wake is late all the same). The CPU window does
   not count the time either. */
uint64_t snap__wd_woken_late(wd_t *w, const snap__loop_view_t *v,
                             const wake_reading_t *r) {
  uint64_t now = r->now;
  uint64_t planned = w->planned_ns, since, len;
  uint32_t first = (w->park_seq + 1) & SEQ_MASK;
  if (w->from_park && v->busy && v->seq == first)
    planned = v->busy_since_ns;
  else if (w->from_park && snap__loop_ended(first, &since, &len))
    planned = since;
  int64_t ran_before = w->ran_ns, proc_before = w->proc_cpu_ns;
  int64_t runq_before = w->main_runq_ns;
  snap__wake_facts_t f = {.window = now - w->wake_ns,
                          .work = w->slept_ns - w->wake_ns,
                          .late = (now > planned ? now - planned : 0) +
                                  w->slices_late_ns,
                          .ran = -1,
                          .proc_ran = -1,
                          .main_runq = -1};
  snap__wd_note_wake(w, r);
  if (w->ran_ns >= 0 && ran_before >= 0 && w->ran_ns >= ran_before)
    f.ran = w->ran_ns - ran_before;
  if (w->proc_cpu_ns >= 0 && proc_before >= 0 && w->proc_cpu_ns >= proc_before)
    f.proc_ran = w->proc_cpu_ns - proc_before;
  if (w->main_runq_ns >= 0 && runq_before >= 0 &&
      w->main_runq_ns >= runq_before)
    f.main_runq = w->main_runq_ns - runq_before;
  w->calm = calm(w, v, now, f.window);
  uint64_t late = snap__stolen_ns(&f, f.ran >= 0 ? STOP_NOISE_NS : w->slack_ns);
  if (late)
    snap__cpu_trigger_discount(&w->cpu, late);
  return late;
}

/* Of a stop of `late` since the last wake, the part inside [since, end). */
uint64_t snap__wd_stop_within(const wd_t *w, uint64_t late, uint64_t since,
                              uint64_t end) {
  uint64_t from = since > w->prev_wake_ns ? since : w->prev_wake_ns;
  return min_u64(late, end > from ? end - from : 0);
}
