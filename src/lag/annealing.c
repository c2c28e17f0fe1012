/*
 * annealing.c — when a lag is "the same lag again", and how often an
 * ongoing lag is re-checked.
 *
 * Owns: the same-path test, what a lag is known by, and the Fibonacci
 * back-off. Must not: decide what is written (lag_state.c decides,
 * report.c writes).
 *
 * What a lag is known by (snap__lag_identity): its main stack, sampled at
 * detection; else, when there is none (the watchdog, late on a busy
 * machine, saw the lag only once it had ended, or the lag ended between
 * the watchdog's wake and its sample), the costliest of the point stacks
 * sampled during its stretch. A lag known by neither matches nothing and
 * is never the one later lags are compared with: under load every third
 * lag was seen late, and its empty stack made it and the next one "new"
 * (30 identical stalls, 13 to 20 reports).
 *
 * Why annealing (Matrix's term): a screen that stutters the same way on
 * every scroll would otherwise fill the daily cap with one report. Why
 * Fibonacci: re-checks of a long hang are dense at first (where the stack
 * still changes) and sparse later (1, 1, 2, 3, 5, 8 ... base intervals),
 * so a 60 s hang costs a dozen samples, not 240.
 */
#include "lag/lag.h"

static bool has_app_frame(const snap_stack_t *s) {
  for (int i = 0; i < snap_stack_count(s); i++)
    if (snap_stack_frame(s, i)->in_app)
      return true;
  return false;
}

/* The next frame at or after *i that is part of the path (app frames only
   when there are any), or NULL past the end. */
static const snap_frame_t *next_on_path(const snap_stack_t *s, bool app_only,
                                        int *i) {
  for (; *i < snap_stack_count(s); (*i)++) {
    const snap_frame_t *f = snap_stack_frame(s, *i);
    if (!app_only || f->in_app)
      return f;
  }
  return NULL;
}

bool snap__same_path(const snap_stack_t *a, const snap_stack_t *b) {
  if (!a || !b || snap_stack_count(a) == 0 || snap_stack_count(b) == 0)
    return false;
  /* The app's frames are the lag's identity (classify.c keys on them too):
     a hot loop that reads the clock or copies memory is sampled now inside
     libc, now outside it, and both are the same lag. Only a stack with no
     app frame at all is compared whole. */
  bool app_only = has_app_frame(a);
  if (app_only != has_app_frame(b))
    return false;
  int i = 0, j = 0;
  for (;; i++, j++) {
    const snap_frame_t *fa = next_on_path(a, app_only, &i);
    const snap_frame_t *fb = next_on_path(b, app_only, &j);
    if (!fa || !fb)
      return !fa && !fb;
    if (snap__frame_function(fa) != snap__frame_function(fb))
      return false;
  }
}

const snap_stack_t *snap__lag_identity(const snap_stack_t *main,
                                       const snap_stack_t *costliest) {
  return snap_stack_count(main)        ? main
         : snap_stack_count(costliest) ? costliest
                                       : NULL;
}

void snap__backoff_reset(snap__backoff_t *f) {
  f->a = 1;
  f->b = 1;
}

uint64_t snap__backoff_next(snap__backoff_t *f) {
  uint64_t step = f->a;
  if (f->b < 10000) {
    uint64_t next = f->a + f->b;
    f->a = f->b;
    f->b = next;
  } else {
    f->a = f->b = 10000;
  }
  return step;
}
