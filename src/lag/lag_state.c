/*
 * lag_state.c — the lag's state machine: what the watched busy stretch is
 * (busy, a lag, annealed, a hang, reported or not) and what each event
 * asks the watchdog to do about its report.
 *
 * Owns: snap__lag_transition, the only place a lag's state changes, and
 * the re-check back-off of the ongoing lag. Must not: read a clock, sample,
 * name, write files or touch a report: it answers with actions
 * (SNAP__LAG_DO_*) that watchdog.c and report.c perform, so it is tested
 * without threads (tests/lag/test_lag_state.c).
 *
 *   IDLE --BEGIN--> BUSY --THRESHOLD--> IGNORED            (traced)
 *                                   +-> HANG_UNWRITTEN     (busy >= hang)
 *                                   +-> ANNEALED           (previous path)
 *                                   +-> LAG_UNWRITTEN      (else)
 *   *_UNWRITTEN --WRITTEN ok--> *_REPORTED   (a capped or failed write is
 *                                             retried at each re-check)
 *   ANNEALED --RECHECK moved--> LAG_UNWRITTEN (no longer the previous lag)
 *   LAG_* --RECHECK hang--> HANG_*            (a hang always gets a file)
 *   any --END/STOP--> IDLE: annealed: the previous lag's repeats grow;
 *                           reported: a final write, kept as "previous";
 *                           unwritten: dropped.
 */
#include "lag/lag.h"

static bool reported(snap__lag_state_t s) {
  return s == SNAP__LAG_REPORTED || s == SNAP__LAG_HANG_REPORTED;
}

/* What the end of the stretch does to its report. */
static unsigned end_actions(snap__lag_state_t s) {
  if (s == SNAP__LAG_ANNEALED)
    return SNAP__LAG_DO_REPEAT | SNAP__LAG_DO_DISCARD;
  if (reported(s))
    /* Final figures: duration, CPU and the ring up to the end; the
       stacks stay those of the last check (the main thread moved on). */
    return SNAP__LAG_DO_REFRESH | SNAP__LAG_DO_WRITE_FINAL | SNAP__LAG_DO_KEEP;
  if (snap__lag_state_ongoing(s))
    return SNAP__LAG_DO_DISCARD;
  return 0;
}

/* The stretch outlived the threshold. */
static unsigned on_threshold(snap__lag_machine_t *m, snap__lag_facts_t f) {
  if (f.traced) { /* a process stopped at a breakpoint is not lagging */
    m->state = SNAP__LAG_IGNORED;
    return 0;
  }
  snap__backoff_reset(&m->backoff);
  unsigned a = SNAP__LAG_DO_OPEN | SNAP__LAG_DO_REFRESH | SNAP__LAG_DO_SCHEDULE;
  if (f.hang) {
    m->state = SNAP__LAG_HANG_UNWRITTEN;
  } else if (f.same_as_prev) {
    m->state = SNAP__LAG_ANNEALED; /* the same lag again: counted */
    return a;
  } else {
    m->state = SNAP__LAG_UNWRITTEN;
  }
  return a | SNAP__LAG_DO_DUMP | SNAP__LAG_DO_WRITE_NEW;
}

/* A re-check of an ongoing lag (Fibonacci-spaced), or its turn into a
   hang. */
static unsigned on_recheck(snap__lag_machine_t *m, snap__lag_facts_t f) {
  unsigned a = SNAP__LAG_DO_REFRESH | SNAP__LAG_DO_SCHEDULE;
  if (f.moved) {
    snap__backoff_reset(&m->backoff); /* it moved: look again soon */
    if (m->state == SNAP__LAG_ANNEALED)
      m->state = SNAP__LAG_UNWRITTEN; /* no longer the previous lag */
  }
  if (f.hang && !snap__lag_state_is_hang(m->state)) {
    a |= SNAP__LAG_DO_HANG;
    if (m->state == SNAP__LAG_REPORTED) {
      m->state = SNAP__LAG_HANG_REPORTED;
      a |= SNAP__LAG_DO_DUMP; /* a hang shows every thread as it is now */
    } else {
      m->state = SNAP__LAG_HANG_UNWRITTEN; /* annealed or not written */
    }
  }
  if (reported(m->state))
    a |= SNAP__LAG_DO_WRITE_UPDATE;
  else if (m->state != SNAP__LAG_ANNEALED)
    a |= SNAP__LAG_DO_DUMP | SNAP__LAG_DO_WRITE_NEW; /* try again */
  return a;
}

snap__lag_step_t snap__lag_transition(snap__lag_machine_t *m,
                                      snap__lag_event_t ev,
                                      snap__lag_facts_t f) {
  snap__lag_step_t out = {0, 0};
  snap__lag_state_t s = m->state;
  switch (ev) {
  case SNAP__LAG_EV_BEGIN:
    /* The watchdog ends a stretch before it begins the next; should it
       not, the lag still ends properly. */
    out.actions = end_actions(s);
    m->state = SNAP__LAG_BUSY;
    break;
  case SNAP__LAG_EV_END:
  case SNAP__LAG_EV_STOP:
    out.actions = end_actions(s);
    m->state = SNAP__LAG_IDLE;
    break;
  case SNAP__LAG_EV_THRESHOLD:
    if (s == SNAP__LAG_BUSY)
      out.actions = on_threshold(m, f);
    break;
  case SNAP__LAG_EV_RECHECK:
    if (snap__lag_state_ongoing(s))
      out.actions = on_recheck(m, f);
    break;
  case SNAP__LAG_EV_HEARTBEAT:
    /* Between re-checks, which grow apart, a written report's duration is
       rewritten (no new sample): a process killed in a long hang leaves a
       hang_killed report at most a heartbeat stale. */
    if (reported(s))
      out.actions = SNAP__LAG_DO_REFRESH | SNAP__LAG_DO_WRITE_UPDATE;
    break;
  case SNAP__LAG_EV_WRITTEN:
    if (f.ok && s == SNAP__LAG_UNWRITTEN)
      m->state = SNAP__LAG_REPORTED;
    else if (f.ok && s == SNAP__LAG_HANG_UNWRITTEN)
      m->state = SNAP__LAG_HANG_REPORTED;
    break;
  }
  if (out.actions & SNAP__LAG_DO_SCHEDULE)
    out.check_in = snap__backoff_next(&m->backoff);
  return out;
}
