/*
 * annealing.c — when a lag is "the same lag again", and how often an
 * ongoing lag is re-checked.
 *
 * Owns: the same-path test and the Fibonacci back-off. Must not: decide
 * what is written (watchdog.c does).
 *
 * Why annealing (Matrix's term): a screen that stutters the same way on
 * every scroll would otherwise fill the daily cap with one report. Why
 * Fibonacci: re-checks of a long hang are dense at first (where the stack
 * still changes) and sparse later (1, 1, 2, 3, 5, 8 ... base intervals),
 * so a 60 s hang costs a dozen samples, not 240.
 */
#include "lag/lag.h"

bool snap__same_path(const snap_stack_t *a, const snap_stack_t *b) {
  if (!a || !b)
    return false;
  int n = snap_stack_count(a);
  if (n == 0 || n != snap_stack_count(b))
    return false;
  for (int i = 0; i < n; i++) {
    const snap_frame_t *fa = snap_stack_frame(a, i);
    const snap_frame_t *fb = snap_stack_frame(b, i);
    if (snap__frame_function(fa) != snap__frame_function(fb))
      return false;
  }
  return true;
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
