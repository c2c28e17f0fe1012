/*
 * link_register.c — whether the link register (arm64, a thread stopped at
 * an arbitrary instruction) is the live return address of frame 0.
 *
 * lr is frame 1 only while frame 0 has not pushed its record (a leaf, or a
 * prologue): lr points into the caller and the record at fp is still the
 * caller's. Once frame 0 has made a call, lr still holds that call's
 * return address — a pc inside frame 0's own function — and would be a
 * fake frame 1. Told apart by the bounds of the function holding pc (its
 * FDE on Linux, the platform's function index on Apple): lr inside that
 * function is stale, lr outside is live; lr equal to the record's return
 * address is the record's (frame 0 pushed it and made no call yet), so lr
 * never appears twice. Where no bounds are known, lr is taken whenever the
 * record does not hold it (the behaviour before bounds existed): a stale
 * lr can then still become a fake frame 1. One known miss: a recursive
 * function sampled in its prologue has a live lr inside its own function;
 * it is dropped as stale (one frame of the recursion lost, never a wrong
 * one). Where the pc has an unwind rule, the rule decides exactly
 * (snap__lr_pending) and the CFI reader takes lr itself.
 *
 * Must not: read a record it has not bounded (snap__record_at).
 */
#include "capture/link_register.h"

#include "capture/arch.h"
#include "capture/cfi.h"
#include "capture/readers.h"

/* The function holding the cursor's pc: the platform's own index first
   (Apple's __unwind_info), then the image's call-frame information. */
static bool function_bounds(snap__cursor_t *c, uintptr_t *start,
                            uintptr_t *end) {
  uintptr_t pc = snap__cursor_lookup_pc(c);
  snap__image_t scratch;
  const snap__image_t *img = snap__cursor_unwind_image(c, pc, &scratch);
  if (!img)
    return false;
  if (img->func_index &&
      snap__plat_function_bounds(img->func_index, img->func_index_size,
                                 img->base, pc, start, end))
    return true;
  return snap__cfi_function_bounds(img, pc, start, end);
}

bool snap__lr_live(snap__cursor_t *c, bool record, uintptr_t ra) {
  uintptr_t lr = c->regs.lr, start, end;
  if (!c->regs.lr_valid || !lr)
    return false;
  if (record && snap__strip_pac(ra) == lr)
    return false; /* the record holds it: frame 1 comes from the record */
  if (function_bounds(c, &start, &end))
    return lr - 1 < start || lr - 1 >= end; /* looked up at the call */
  return true; /* no bounds: see the head comment */
}

bool snap__lr_pending(snap__cursor_t *c) {
  if (!c->regs.lr_valid)
    return false;
  if (!(c->flags & SNAP_CAPTURE_FP_ONLY)) {
    snap__rule_t rule;
    snap__cursor_rule(c, &rule);
    if (rule.cfa == SNAP__CFA_SP || rule.cfa == SNAP__CFA_FP)
      return rule.ra == SNAP__RA_IN_LR;
    if (rule.cfa == SNAP__CFA_SIGNAL)
      return false; /* the kernel's frame comes next, not lr */
  }
  /* Initialised: passing ra unset to snap__lr_live when there is no
     record is undefined to the optimiser, which then dropped every check
     of the record read (clang 14 -O2 read a wild fp here). */
  uintptr_t saved_fp = 0, ra = 0;
  bool record = snap__record_at(c->regs.sp, c->hi, c->regs.fp, &saved_fp, &ra);
  return snap__lr_live(c, record, ra);
}
