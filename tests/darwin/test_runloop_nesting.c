/*
 * test_runloop_nesting.c — busy/idle from CFRunLoop observer callbacks
 * with nested runs (src/platform/darwin/runloop_nesting.c), on Linux.
 *
 * Each scenario is a sequence of observer callbacks exactly as CF-Lite's
 * CFRunLoopRunSpecific / __CFRunLoopRun emit them (docs/apple.md, "Run loop
 * nesting"), with the time each happens. A model of the watchdog replays
 * the verdicts (BUSY: a stretch starts now; IDLE: none) and is asked at a
 * given time how long the current busy stretch has been going.
 *
 * The defect: the adapter used to map Exit to idle, so a nested run
 * returning inside an outer handler made the rest of that handler
 * invisible. old_step() is that mapping, kept to show it loses the lag;
 * the machine must not.
 */
#include <stdbool.h>
#include <stdint.h>

#include "check.h"
#include "platform/darwin/runloop_nesting.h"

enum {
  E = SNAP__RL_ENTRY,
  BT = SNAP__RL_BEFORE_TIMERS,
  BS = SNAP__RL_BEFORE_SOURCES,
  BW = SNAP__RL_BEFORE_WAITING,
  AW = SNAP__RL_AFTER_WAITING,
  X = SNAP__RL_EXIT
};

typedef struct ev {
  unsigned act;
  unsigned ms; /* when it happens */
} ev_t;

/* The adapter before nesting was counted: busy on AfterWaiting and
   BeforeSources, idle on BeforeWaiting and Exit. */
static enum snap__rl_verdict old_step(snap__rl_nesting_t *n, unsigned act) {
  (void)n;
  if (act == AW || act == BS)
    return SNAP__RL_BUSY;
  if (act == BW || act == X)
    return SNAP__RL_IDLE;
  return SNAP__RL_NOTHING;
}

typedef enum snap__rl_verdict (*step_fn)(snap__rl_nesting_t *, unsigned);

typedef struct watch {
  bool busy;
  unsigned since;
} watch_t;

/* Replays evs; returns the watchdog's view after the last one. */
static watch_t replay(step_fn step, unsigned depth0, bool busy0,
                      const ev_t *evs, int n, snap__rl_nesting_t *st) {
  watch_t w = {busy0, 0};
  snap__rl_nesting_init(st, depth0, busy0);
  for (int i = 0; i < n; i++) {
    enum snap__rl_verdict v = step(st, evs[i].act);
    if (v == SNAP__RL_BUSY)
      w.busy = true, w.since = evs[i].ms;
    else if (v == SNAP__RL_IDLE)
      w.busy = false;
  }
  return w;
}

/* How long the watchdog sees the loop busy at time `now` (0: idle). */
static unsigned busy_for(watch_t w, unsigned now) {
  return w.busy ? now - w.since : 0;
}

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* One outermost run: two iterations that sleep, then it returns. */
static void plain_run(void) {
  snap__rl_nesting_t st;
  const ev_t evs[] = {{E, 0},   {BT, 0},  {BS, 1},  {BW, 5},
                      {AW, 50}, {BT, 51}, {BS, 51}, {BW, 60}};
  watch_t w = replay(snap__rl_nesting_step, 0, false, evs, N(evs), &st);
  CHECK(!w.busy, "asleep at BeforeWaiting");
  CHECK_EQ(st.depth, 1);
  const ev_t wake[] = {{AW, 100}};
  enum snap__rl_verdict v = snap__rl_nesting_step(&st, wake[0].act);
  CHECK_EQ(v, SNAP__RL_BUSY);
  CHECK_EQ(snap__rl_nesting_step(&st, BT), SNAP__RL_NOTHING);
  CHECK_EQ(snap__rl_nesting_step(&st, X), SNAP__RL_IDLE);
  CHECK_EQ(st.depth, 0);
  CHECK_EQ(snap__rl_nesting_step(&st, E), SNAP__RL_BUSY); /* runs again */
  CHECK_EQ(st.depth, 1);
}

/* A source handler (10 ms in) runs a modal nested run in the same mode;
   the nested run sleeps (a user answers at 2000 ms), its handler stops it,
   it returns at 2001 ms, and the outer handler works for 500 ms more. At
   2501 ms the watchdog must see a 500 ms busy stretch: a lag. */
static const ev_t nested_sleeping[] = {
    {E, 0},     {BT, 0},    {BS, 0},               /* outer */
    {E, 10},    {BT, 10},   {BS, 10},   {BW, 11},  /* nested, sleeps */
    {AW, 2000}, {BT, 2000}, {BS, 2000}, {X, 2001}, /* wakes, returns */
};

static void nested_run_returns_into_busy_handler(void) {
  snap__rl_nesting_t st;
  watch_t w = replay(snap__rl_nesting_step, 0, false, nested_sleeping,
                     N(nested_sleeping), &st);
  CHECK(w.busy, "after a nested run returns, its caller's handler is busy");
  CHECK(busy_for(w, 2501) >= 250,
        "the outer handler's 500 ms after the nested run are a lag: seen "
        "%u ms busy",
        busy_for(w, 2501));
  CHECK_EQ(st.depth, 1);
  /* The outer run then goes on: next iteration, then sleeps. */
  CHECK_EQ(snap__rl_nesting_step(&st, BT), SNAP__RL_NOTHING);
  CHECK_EQ(snap__rl_nesting_step(&st, BS), SNAP__RL_BUSY);
  CHECK_EQ(snap__rl_nesting_step(&st, BW), SNAP__RL_IDLE);
}

/* What the old mapping made of the same callbacks: idle after the nested
   Exit, so the 500 ms after it were never a lag. Kept as the record of the
   defect (this check holds of the old mapping, not of ours). */
static void old_mapping_lost_the_lag(void) {
  snap__rl_nesting_t st;
  watch_t w =
      replay(old_step, 0, false, nested_sleeping, N(nested_sleeping), &st);
  CHECK(!w.busy && busy_for(w, 2501) == 0,
        "the old mapping is the defect this test is about");
}

/* While the nested run sleeps, the thread is idle (it handles events). */
static void nested_sleep_is_idle(void) {
  snap__rl_nesting_t st;
  watch_t w = replay(snap__rl_nesting_step, 0, false, nested_sleeping, 7, &st);
  CHECK(!w.busy, "a nested run asleep in BeforeWaiting is idle");
  CHECK_EQ(st.depth, 2);
}

/* A nested run that polls (timeout 0, or a source0 handled: no
   BeforeWaiting/AfterWaiting) inside a timer handler after a wake. */
static void nested_polling_run(void) {
  snap__rl_nesting_t st;
  const ev_t evs[] = {{E, 0},    {BT, 0},   {BS, 0},   {BW, 1},
                      {AW, 100}, /* timer fires, handler spins: */
                      {E, 110},  {BT, 110}, {BS, 110}, {X, 111},
                      {E, 120},  {BT, 120}, {BS, 120}, {X, 121}};
  watch_t w = replay(snap__rl_nesting_step, 0, false, evs, N(evs), &st);
  CHECK(w.busy, "busy after polling nested runs");
  CHECK_EQ(w.since, 120); /* BeforeSources restarts; Exit keeps it */
  CHECK_EQ(st.depth, 1);
}

/* Two levels: the innermost returning leaves two handlers working. */
static void two_levels(void) {
  snap__rl_nesting_t st;
  const ev_t evs[] = {{E, 0},   {BS, 0},  {E, 5},   {BS, 5}, {E, 6},
                      {BS, 6},  {BW, 7},  {AW, 50}, {X, 51}, {BS, 52},
                      {BW, 53}, {AW, 90}, {X, 91}};
  watch_t w = replay(snap__rl_nesting_step, 0, false, evs, N(evs), &st);
  CHECK(w.busy, "two nested runs returned: the outermost handler is busy");
  CHECK_EQ(w.since, 90);
  CHECK_EQ(st.depth, 1);
  CHECK_EQ(snap__rl_nesting_step(&st, X), SNAP__RL_IDLE);
}

/* Observers added while the loop runs (the app starts the watchdog from a
   handler): one run is already going, its Entry unseen. */
static void attached_inside_a_run(void) {
  snap__rl_nesting_t st;
  const ev_t evs[] = {{E, 10}, {BS, 10}, {BW, 11}, {AW, 30}, {X, 31}};
  watch_t w = replay(snap__rl_nesting_step, 1, true, evs, N(evs), &st);
  CHECK(w.busy, "the handler we were attached from is still working");
  CHECK_EQ(st.depth, 1);
  CHECK_EQ(snap__rl_nesting_step(&st, X), SNAP__RL_IDLE); /* its own Exit */
  CHECK_EQ(st.depth, 0);
}

/* More Exits than Entries seen (a run entered before we attached, when the
   caller could not tell): idle, and the count does not wrap. */
static void unseen_entry(void) {
  snap__rl_nesting_t st;
  snap__rl_nesting_init(&st, 0, true);
  CHECK_EQ(snap__rl_nesting_step(&st, X), SNAP__RL_IDLE);
  CHECK_EQ(st.depth, 0);
  CHECK_EQ(snap__rl_nesting_step(&st, X), SNAP__RL_IDLE);
  CHECK_EQ(st.depth, 0);
  CHECK_EQ(snap__rl_nesting_step(&st, E), SNAP__RL_BUSY);
  CHECK_EQ(snap__rl_nesting_step(&st, E), SNAP__RL_NOTHING);
  CHECK_EQ(snap__rl_nesting_step(&st, X), SNAP__RL_NOTHING);
  CHECK_EQ(snap__rl_nesting_step(&st, X), SNAP__RL_IDLE);
  CHECK_EQ(snap__rl_nesting_step(&st, 1u << 3), SNAP__RL_NOTHING);
}

int main(void) {
  plain_run();
  nested_run_returns_into_busy_handler();
  old_mapping_lost_the_lag();
  nested_sleep_is_idle();
  nested_polling_run();
  two_levels();
  attached_inside_a_run();
  unseen_entry();
  return check_result("test_runloop_nesting");
}
