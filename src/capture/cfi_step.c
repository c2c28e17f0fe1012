/*
 * cfi_step.c — the call-frame-information reader of the cursor: one frame
 * up by the rule the compiler wrote for this pc.
 *
 * This is what sees through code built without frame pointers (Debian's
 * libc): inside pthread_cond_wait rbp is 0 and only the unwind tables know
 * where the return address is. Rules come from the rule cache, or from
 * cfi.c on a miss.
 *
 * A register rule pointing below sp describes a slot the epilogue has
 * already loaded back and freed: the register itself holds the value.
 *
 * Must not: follow a rule off the stack bounds, or let the stack pointer go
 * down. (Signal frames, marked 'S', are signal_frames.c's.)
 */
#include "capture/arch.h"
#include "capture/cfi.h"
#include "capture/rule_cache.h"
#include "capture/walk.h"

void snap__cfi_rule_here(snap__cursor_t *c, snap__rule_t *rule) {
  uintptr_t pc = snap__cursor_lookup_pc(c);
  if (!snap__rule_cache_get(pc, snap__cursor_salt(c, pc), rule)) {
    /* The table first (it may move the walk's salt to its generation),
       then the salt the rule is filed under. */
    snap__image_t scratch;
    const snap__image_t *img = snap__cursor_unwind_image(c, pc, &scratch);
    snap__cfi_find_rule(img, pc, rule); /* NONE without image or tables */
    snap__rule_cache_put(pc, snap__cursor_salt(c, pc), rule);
  }
}

int snap__cfi_step(snap__cursor_t *c) {
  snap__rule_t rule;
  snap__cfi_rule_here(c, &rule);
  if (rule.cfa == SNAP__CFA_NONE)
    return SNAP__STEP_DECLINE;
  if (rule.cfa == SNAP__CFA_SIGNAL)
    return snap__signal_step(c);

  uintptr_t base = rule.cfa == SNAP__CFA_SP ? c->regs.sp : c->regs.fp;
  uintptr_t cfa = base + (intptr_t)rule.cfa_off;
  uintptr_t ra, fp = c->regs.fp;
  /* A saved fp below sp has been loaded back already: an epilogue's
     `pop %rbp` moves the CFA but leaves rbp's rule at its slot (GCC
     writes no restore there; over 5 700 such rows in Debian's x86_64
     libc, each right after a pop or leave), and the slot, now free stack,
     is outside the bounds. fp holds the caller's value. */
  if (rule.fp == SNAP__FP_AT_CFA && cfa + (intptr_t)rule.fp_off < c->regs.sp)
    rule.fp = SNAP__FP_SAME;
  /* The stack must move up; a leaf still holding its return address in lr
     may share its caller's CFA. */
  if (cfa < c->regs.sp || (cfa == c->regs.sp && rule.ra != SNAP__RA_IN_LR))
    return SNAP__STEP_END;
  switch (rule.ra) {
  case SNAP__RA_UNDEFINED:
    return SNAP__STEP_END; /* the outermost frame (_start, thread start) */
  case SNAP__RA_IN_LR:
    /* Only a stopped thread's own frame can still hold it in lr. */
    if (!c->regs.lr_valid)
      return SNAP__STEP_END;
    ra = c->regs.lr;
    break;
  default:
    if (!snap__cursor_read(c, cfa + (intptr_t)rule.ra_off, &ra))
      return SNAP__STEP_END;
    break;
  }
  if (rule.fp == SNAP__FP_AT_CFA &&
      !snap__cursor_read(c, cfa + (intptr_t)rule.fp_off, &fp))
    return SNAP__STEP_END;
  ra = snap__strip_pac(ra);
  if (ra == 0)
    return SNAP__STEP_END;
  c->regs.pc = ra;
  c->regs.sp = cfa;
  c->regs.fp = snap__untag_fp(fp);
  c->regs.lr_valid = false;
  c->exact = false;
  if (cfa > c->lo)
    c->lo = cfa;
  return SNAP__STEP_OK;
}
