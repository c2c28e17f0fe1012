/*
 * cfi_step.c — the call-frame-information reader: one frame up by the rule
 * the compiler wrote for this pc (snap__rule_next, readers.h).
 *
 * This is what sees through code built without frame pointers (Debian's
 * libc): inside pthread_cond_wait rbp is 0 and only the unwind tables know
 * where the return address is. Rules come from the rule cache, or from
 * cfi.c on a miss (snap__cursor_rule).
 *
 * A rule marked as a signal frame ('S') is not this reader's to cross: it
 * answers SNAP__STEP_SIGNAL and the walk hands the frame to the signal
 * reader. Where there is no rule it declines.
 *
 * Must not: follow a rule off the stack bounds, or let the stack pointer go
 * down (snap__rule_next keeps both).
 */
#include "capture/readers.h"

static int cfi_step(snap__cursor_t *c, snap__emitter_t *e) {
  (void)e;
  snap__rule_t rule;
  snap__cursor_rule(c, &rule);
  if (rule.cfa == SNAP__CFA_NONE)
    return SNAP__STEP_DECLINE;
  if (rule.cfa == SNAP__CFA_SIGNAL)
    return SNAP__STEP_SIGNAL;
  snap__regs_t next;
  int r = snap__rule_next(&rule, &c->regs, c->hi, &next);
  if (r == SNAP__STEP_OK) {
    c->regs = next;
    c->exact = false;
  }
  return r;
}

const snap__reader_t snap__cfi_reader = {"call-frame information", 0,
                                         SNAP_CAPTURE_FP_ONLY, cfi_step};
