/*
 * test_lag_state.c — the lag's state machine (src/lag/lag_state.c) driven
 * through whole lags, with no thread, no clock and no file.
 *
 * The oracle is the contract docs/lag.md states under "When files are
 * written": a new file at detection unless capped or annealed; re-checks
 * 1, 1, 2, 3, 5, 8 ... thresholds apart, sooner when the stack changed; at
 * hang_ms the kind becomes "hang" and every thread is sampled again; a
 * rewrite every heartbeat; a final write with ongoing false when the loop
 * goes idle or the watchdog stops; an annealed lag grows the previous
 * report's repeats instead of writing its own.
 */
#include <string.h>

#include "check.h"
#include "lag/lag.h"

enum {
  OPEN = SNAP__LAG_DO_OPEN,
  HANG = SNAP__LAG_DO_HANG,
  REFRESH = SNAP__LAG_DO_REFRESH,
  DUMP = SNAP__LAG_DO_DUMP,
  NEW = SNAP__LAG_DO_WRITE_NEW,
  UPDATE = SNAP__LAG_DO_WRITE_UPDATE,
  FINAL = SNAP__LAG_DO_WRITE_FINAL,
  REPEAT = SNAP__LAG_DO_REPEAT,
  KEEP = SNAP__LAG_DO_KEEP,
  DISCARD = SNAP__LAG_DO_DISCARD,
  SCHEDULE = SNAP__LAG_DO_SCHEDULE,
  WRITES = NEW | UPDATE | FINAL,
};

static const char *state_name(snap__lag_state_t s) {
  static const char *const names[] = {
      "IDLE",      "BUSY",     "IGNORED",        "ANNEALED",
      "UNWRITTEN", "REPORTED", "HANG_UNWRITTEN", "HANG_REPORTED"};
  return (unsigned)s < sizeof names / sizeof *names ? names[s] : "?";
}

static snap__lag_machine_t g_m;
static snap__lag_step_t g_last;

/* One event with its facts: checks the state it leads to and the exact
   actions. STEP: an event that needs no facts. */
#define STEPF(ev, want_state, want_actions, ...)                               \
  do {                                                                         \
    g_last = snap__lag_transition(&g_m, ev, (snap__lag_facts_t){__VA_ARGS__}); \
    CHECK(g_m.state == (want_state), "%s: state %s, want %s", #ev,             \
          state_name(g_m.state), state_name(want_state));                      \
    CHECK(g_last.actions == (unsigned)(want_actions),                          \
          "%s -> %s: actions 0x%x, want 0x%x", #ev, state_name(want_state),    \
          g_last.actions, (unsigned)(want_actions));                           \
  } while (0)
#define STEP(ev, want_state, want_actions)                                     \
  STEPF(ev, want_state, want_actions, .ok = false)

#define EV(x) SNAP__LAG_EV_##x
#define ST(x) SNAP__LAG_##x

static void reset(void) { memset(&g_m, 0, sizeof g_m); }

/* Opens a lag that writes its file (the common case). */
static void reported_lag(void) {
  reset();
  STEP(EV(BEGIN), ST(BUSY), 0);
  STEP(EV(THRESHOLD), ST(UNWRITTEN), OPEN | REFRESH | DUMP | NEW | SCHEDULE);
  CHECK_EQ(g_last.check_in, 1);
  STEPF(EV(WRITTEN), ST(REPORTED), 0, .ok = true);
}

static void test_short_stretch(void) {
  reset();
  STEP(EV(BEGIN), ST(BUSY), 0);
  STEP(EV(END), ST(IDLE), 0); /* under the threshold: nothing */
  /* Events that do not apply change nothing. */
  STEP(EV(THRESHOLD), ST(IDLE), 0);
  STEPF(EV(RECHECK), ST(IDLE), 0, .hang = true);
  STEP(EV(HEARTBEAT), ST(IDLE), 0);
  STEPF(EV(WRITTEN), ST(IDLE), 0, .ok = true);
}

/* Detection, re-checks 1, 1, 2, 3, 5, 8 thresholds apart, heartbeats, the
   end: a final write, and the report becomes the one to anneal with. */
static void test_lag_lifecycle(void) {
  reported_lag();
  static const unsigned fib[] = {1, 2, 3, 5, 8, 13};
  for (int i = 0; i < 6; i++) {
    STEP(EV(RECHECK), ST(REPORTED), REFRESH | UPDATE | SCHEDULE);
    CHECK(g_last.check_in == fib[i], "re-check %d: in %u thresholds, want %u",
          i, (unsigned)g_last.check_in, fib[i]);
  }
  STEP(EV(HEARTBEAT), ST(REPORTED), REFRESH | UPDATE);
  STEP(EV(THRESHOLD), ST(REPORTED), 0); /* one detection a stretch */
  STEPF(EV(WRITTEN), ST(REPORTED), 0, .ok = false);
  STEP(EV(END), ST(IDLE), REFRESH | FINAL | KEEP);
}

/* busy -> threshold -> lag reported -> ends -> the same path again ->
   annealed -> ends -> a different path: a report of its own again. */
static void test_two_lags_one_path(void) {
  reported_lag();
  for (int i = 0; i < 3; i++) /* re-checks in 1, 2, 3 thresholds */
    STEP(EV(RECHECK), ST(REPORTED), REFRESH | UPDATE | SCHEDULE);
  CHECK_EQ(g_last.check_in, 3);
  STEP(EV(END), ST(IDLE), REFRESH | FINAL | KEEP);
  STEP(EV(BEGIN), ST(BUSY), 0);
  STEPF(EV(THRESHOLD), ST(ANNEALED), OPEN | REFRESH | SCHEDULE,
        .same_as_prev = true);
  CHECK_EQ(g_last.check_in, 1); /* a new lag: the back-off starts over */
  STEP(EV(END), ST(IDLE), REPEAT | DISCARD);
  STEP(EV(BEGIN), ST(BUSY), 0);
  STEP(EV(THRESHOLD), ST(UNWRITTEN), OPEN | REFRESH | DUMP | NEW | SCHEDULE);
  STEPF(EV(WRITTEN), ST(REPORTED), 0, .ok = true);
}

/* The same path as the previous lag: no file, no dump, no heartbeat; its
   end counts a repeat into the previous report. */
static void test_annealed(void) {
  reset();
  STEP(EV(BEGIN), ST(BUSY), 0);
  STEPF(EV(THRESHOLD), ST(ANNEALED), OPEN | REFRESH | SCHEDULE,
        .same_as_prev = true);
  STEP(EV(HEARTBEAT), ST(ANNEALED), 0);
  STEP(EV(RECHECK), ST(ANNEALED), REFRESH | SCHEDULE);
  STEP(EV(END), ST(IDLE), REPEAT | DISCARD);
}

/* An annealed lag whose stack moves is a lag of its own: written as new,
   and the back-off starts again. */
static void test_annealed_moves(void) {
  reset();
  STEP(EV(BEGIN), ST(BUSY), 0);
  STEPF(EV(THRESHOLD), ST(ANNEALED), OPEN | REFRESH | SCHEDULE,
        .same_as_prev = true);
  CHECK_EQ(g_last.check_in, 1);
  STEP(EV(RECHECK), ST(ANNEALED), REFRESH | SCHEDULE);
  CHECK_EQ(g_last.check_in, 1);
  STEP(EV(RECHECK), ST(ANNEALED), REFRESH | SCHEDULE);
  CHECK_EQ(g_last.check_in, 2);
  STEPF(EV(RECHECK), ST(UNWRITTEN), REFRESH | DUMP | NEW | SCHEDULE,
        .moved = true);
  CHECK_EQ(g_last.check_in, 1);
  STEPF(EV(WRITTEN), ST(REPORTED), 0, .ok = true);
  STEP(EV(END), ST(IDLE), REFRESH | FINAL | KEEP);
}

/* A reported lag whose stack moves: looked at again soon (back-off reset),
   same file, no new dump. */
static void test_moved_resets_backoff(void) {
  reported_lag();
  for (int i = 0; i < 4; i++)
    STEP(EV(RECHECK), ST(REPORTED), REFRESH | UPDATE | SCHEDULE);
  CHECK_EQ(g_last.check_in, 5);
  STEPF(EV(RECHECK), ST(REPORTED), REFRESH | UPDATE | SCHEDULE, .moved = true);
  CHECK_EQ(g_last.check_in, 1);
  STEP(EV(RECHECK), ST(REPORTED), REFRESH | UPDATE | SCHEDULE);
  CHECK_EQ(g_last.check_in, 1);
  STEP(EV(RECHECK), ST(REPORTED), REFRESH | UPDATE | SCHEDULE);
  CHECK_EQ(g_last.check_in, 2);
}

/* lag -> hang: the kind changes once, every thread is sampled again, the
   same file is rewritten (the store renames it); then a stop during the
   hang finishes its report. */
static void test_lag_becomes_hang_then_stop(void) {
  reported_lag();
  STEP(EV(RECHECK), ST(REPORTED), REFRESH | UPDATE | SCHEDULE);
  STEPF(EV(RECHECK), ST(HANG_REPORTED),
        HANG | REFRESH | DUMP | UPDATE | SCHEDULE, .hang = true);
  STEPF(EV(RECHECK), ST(HANG_REPORTED), REFRESH | UPDATE | SCHEDULE,
        .hang = true);
  STEPF(EV(RECHECK), ST(HANG_REPORTED), REFRESH | UPDATE | SCHEDULE,
        .hang = true, .moved = true);
  STEP(EV(HEARTBEAT), ST(HANG_REPORTED), REFRESH | UPDATE);
  STEP(EV(STOP), ST(IDLE), REFRESH | FINAL | KEEP);
}

/* A hang is never annealed: not at detection, not later. */
static void test_hang_not_annealed(void) {
  reset();
  STEP(EV(BEGIN), ST(BUSY), 0);
  STEPF(EV(THRESHOLD), ST(HANG_UNWRITTEN),
        OPEN | REFRESH | DUMP | NEW | SCHEDULE, .hang = true,
        .same_as_prev = true);
  STEPF(EV(WRITTEN), ST(HANG_REPORTED), 0, .ok = true);

  reset();
  STEP(EV(BEGIN), ST(BUSY), 0);
  STEPF(EV(THRESHOLD), ST(ANNEALED), OPEN | REFRESH | SCHEDULE,
        .same_as_prev = true);
  STEPF(EV(RECHECK), ST(HANG_UNWRITTEN), HANG | REFRESH | DUMP | NEW | SCHEDULE,
        .hang = true);
  STEPF(EV(WRITTEN), ST(HANG_REPORTED), 0, .ok = true);
  STEP(EV(END), ST(IDLE), REFRESH | FINAL | KEEP);
}

/* The daily cap (or a failed write): no file, so no heartbeat and no final
   write; each re-check tries again; the end drops it. */
static void test_unwritten(void) {
  reset();
  STEP(EV(BEGIN), ST(BUSY), 0);
  STEP(EV(THRESHOLD), ST(UNWRITTEN), OPEN | REFRESH | DUMP | NEW | SCHEDULE);
  STEPF(EV(WRITTEN), ST(UNWRITTEN), 0, .ok = false);
  STEP(EV(HEARTBEAT), ST(UNWRITTEN), 0);
  STEP(EV(RECHECK), ST(UNWRITTEN), REFRESH | DUMP | NEW | SCHEDULE);
  STEPF(EV(WRITTEN), ST(UNWRITTEN), 0, .ok = false);
  STEPF(EV(RECHECK), ST(HANG_UNWRITTEN), HANG | REFRESH | DUMP | NEW | SCHEDULE,
        .hang = true);
  STEPF(EV(WRITTEN), ST(HANG_UNWRITTEN), 0, .ok = false);
  STEP(EV(STOP), ST(IDLE), DISCARD);
}

/* Traced at the threshold: not a lag at all, for the whole stretch. */
static void test_traced(void) {
  reset();
  STEP(EV(BEGIN), ST(BUSY), 0);
  STEPF(EV(THRESHOLD), ST(IGNORED), 0, .traced = true, .hang = true);
  STEP(EV(THRESHOLD), ST(IGNORED), 0);
  STEPF(EV(RECHECK), ST(IGNORED), 0, .hang = true);
  STEP(EV(HEARTBEAT), ST(IGNORED), 0);
  STEP(EV(END), ST(IDLE), 0);
}

/* A new stretch while a lag is still open ends that lag first. */
static void test_begin_ends_lag(void) {
  reported_lag();
  STEP(EV(BEGIN), ST(BUSY), REFRESH | FINAL | KEEP);
  STEPF(EV(THRESHOLD), ST(ANNEALED), OPEN | REFRESH | SCHEDULE,
        .same_as_prev = true);
  STEP(EV(BEGIN), ST(BUSY), REPEAT | DISCARD);
}

/* The back-off is bounded: a day-long hang is re-checked at least every
   10 000 thresholds. */
static void test_backoff_cap(void) {
  reported_lag();
  uint64_t last = 0;
  for (int i = 0; i < 40; i++) {
    STEP(EV(RECHECK), ST(REPORTED), REFRESH | UPDATE | SCHEDULE);
    CHECK(g_last.check_in >= last && g_last.check_in <= 10000,
          "re-check %d in %llu thresholds", i,
          (unsigned long long)g_last.check_in);
    last = g_last.check_in;
  }
  CHECK_EQ(last, 10000);
}

/* Every state against every event and every combination of facts: the
   rules that hold whatever the path. */
static void test_every_pair(void) {
  for (int s = ST(IDLE); s <= ST(HANG_REPORTED); s++) {
    for (int ev = EV(BEGIN); ev <= EV(STOP); ev++) {
      for (unsigned bits = 0; bits < 32; bits++) {
        snap__lag_facts_t f = {.traced = bits & 1,
                               .hang = bits & 2,
                               .same_as_prev = bits & 4,
                               .moved = bits & 8,
                               .ok = bits & 16};
        snap__lag_machine_t m = {.state = (snap__lag_state_t)s};
        snap__backoff_reset(&m.backoff);
        snap__lag_step_t out =
            snap__lag_transition(&m, (snap__lag_event_t)ev, f);
        snap__lag_state_t t = m.state;
        unsigned a = out.actions;
        bool was_on = snap__lag_state_ongoing((snap__lag_state_t)s);
        bool is_on = snap__lag_state_ongoing(t);
        unsigned writes = a & WRITES;
        CHECK(t <= ST(HANG_REPORTED), "%s ev %d: state %d", state_name(s), ev,
              t);
        CHECK(!(writes & (writes - 1)), "%s ev %d: two writes (0x%x)",
              state_name(s), ev, a);
        /* Only a lag opened now, or one going on, has anything to do. */
        CHECK(a == 0 || was_on || (s == ST(BUSY) && is_on),
              "%s ev %d: actions 0x%x with no lag", state_name(s), ev, a);
        CHECK(!(a & OPEN) || (s == ST(BUSY) && ev == EV(THRESHOLD)),
              "%s ev %d: a report opened twice", state_name(s), ev);
        CHECK(!(a & NEW) || t == ST(UNWRITTEN) || t == ST(HANG_UNWRITTEN),
              "%s ev %d: a new file for a %s lag", state_name(s), ev,
              state_name(t));
        CHECK(!(a & (UPDATE | FINAL)) || s == ST(REPORTED) ||
                  s == ST(HANG_REPORTED),
              "%s ev %d: a rewrite of a file never written", state_name(s), ev);
        CHECK(!(a & REPEAT) || s == ST(ANNEALED),
              "%s ev %d: a repeat counted by a lag not annealed", state_name(s),
              ev);
        CHECK(!(a & KEEP) || (a & FINAL),
              "%s ev %d: kept as previous without its final write",
              state_name(s), ev);
        CHECK(!(a & SCHEDULE) == (out.check_in == 0),
              "%s ev %d: check_in %llu with actions 0x%x", state_name(s), ev,
              (unsigned long long)out.check_in, a);
        /* A hang stays a hang; a file once written stays written. */
        CHECK(!snap__lag_state_is_hang((snap__lag_state_t)s) ||
                  snap__lag_state_is_hang(t) || !is_on,
              "%s ev %d: a hang became %s", state_name(s), ev, state_name(t));
        CHECK(!(s == ST(REPORTED) || s == ST(HANG_REPORTED)) || !is_on ||
                  t == ST(REPORTED) || t == ST(HANG_REPORTED),
              "%s ev %d: a written lag became %s", state_name(s), ev,
              state_name(t));
        if (ev == EV(END) || ev == EV(STOP)) {
          CHECK(t == ST(IDLE), "%s ev %d: %s after the end", state_name(s), ev,
                state_name(t));
          /* Nothing lost: an ongoing lag's report is finished or counted
             or (never written) dropped, never left open. */
          CHECK(!was_on || (a & (FINAL | REPEAT | DISCARD)),
                "%s: its end does nothing with the report", state_name(s));
        }
      }
    }
  }
}

/* Issue 13: of the time since the last wake, only what the watchdog's own
   running, run-queue wait and sampling waits do not explain, and the main
   thread did not run either, is time the process did not run. */
static uint64_t stolen_q(uint64_t window, uint64_t work, uint64_t late,
                         int64_t ran, int64_t proc_ran, int64_t main_runq) {
  snap__wake_facts_t f = {window, work, late, ran, proc_ran, main_runq};
  return snap__stolen_ns(&f, 200 * 1000000);
}

static uint64_t stolen(uint64_t window, uint64_t work, uint64_t late,
                       int64_t ran, int64_t proc_ran) {
  return stolen_q(window, work, late, ran, proc_ran, -1);
}

static void test_stolen(void) {
  const uint64_t ms = 1000000;
  CHECK_EQ(stolen(50 * ms, 1 * ms, 0, 1 * ms, 10 * ms), 0);
  /* SIGSTOP in the sleep: 2 s late, not runnable meanwhile: all stolen. */
  CHECK_EQ(stolen(2050 * ms, 1 * ms, 2000 * ms, 2 * ms, 0), 1999 * ms);
  /* SIGSTOP in the work (a sample that waited out the stop): the sleep was
     on time, the work took 2 s, the watchdog ran 10 ms of it. */
  CHECK_EQ(stolen(2060 * ms, 2010 * ms, 0, 10 * ms, 0), 2000 * ms);
  /* The same, but the wait was the sampler's own (counted in ran). */
  CHECK_EQ(stolen(160 * ms, 110 * ms, 0, 110 * ms, 0), 0);
  /* Starved: 400 ms late, 400 ms on a run queue: none stolen. */
  CHECK_EQ(stolen(450 * ms, 1 * ms, 400 * ms, 401 * ms, 0), 0);
  CHECK_EQ(stolen(450 * ms, 1 * ms, 400 * ms, 900 * ms, 0), 0);
  /* Both: the unexplained part, if past the slack. */
  CHECK_EQ(stolen(1550 * ms, 0, 1500 * ms, 300 * ms, 0), 1200 * ms);
  CHECK_EQ(stolen(500 * ms, 0, 450 * ms, 300 * ms, 0), 0);
  /* The watchdog blocked 400 ms (a slow disk) while the main thread
     computed 300 ms of it: at most the rest can be a stop, and that is
     within the slack. */
  CHECK_EQ(stolen(450 * ms, 420 * ms, 0, 20 * ms, 300 * ms), 0);
  /* The OS does not say how long the watchdog waited (Apple): a late wake
     is a stop, as before ... */
  CHECK_EQ(stolen(500 * ms, 0, 450 * ms, -1, -1), 450 * ms);
  /* ... unless the main thread ran meanwhile. */
  CHECK_EQ(stolen(500 * ms, 0, 450 * ms, -1, 400 * ms), 0);
  CHECK_EQ(stolen(2500 * ms, 0, 2450 * ms, -1, 100 * ms), 2400 * ms);
  /* The watchdog blocked 400 ms in its work, on neither a CPU nor a run
     queue (seen in test_lag_starved), while another thread of the process
     computed 400 ms (the real-time worker) and the main thread was
     blocked: the process ran, nothing is stolen ... */
  CHECK_EQ(stolen_q(401 * ms, 401 * ms, 0, 0, 400 * ms, 0), 0);
  /* ... nor when the main thread waited that long on a run queue ... */
  CHECK_EQ(stolen_q(401 * ms, 401 * ms, 0, 0, 0, 400 * ms), 0);
  /* ... which without either looked like a stop (the old rule) ... */
  CHECK_EQ(stolen_q(401 * ms, 401 * ms, 0, 0, 0, -1), 401 * ms);
  /* ... and a real stop leaves no thread running and none queued. */
  CHECK_EQ(stolen_q(2001 * ms, 2001 * ms, 0, 1 * ms, 1 * ms, 0), 2000 * ms);
}

int main(void) {
  test_short_stretch();
  test_lag_lifecycle();
  test_two_lags_one_path();
  test_annealed();
  test_annealed_moves();
  test_moved_resets_backoff();
  test_lag_becomes_hang_then_stop();
  test_hang_not_annealed();
  test_unwritten();
  test_traced();
  test_begin_ends_lag();
  test_backoff_cap();
  test_every_pair();
  test_stolen();
  return check_result("test_lag_state");
}
