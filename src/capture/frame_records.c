/*
 * frame_records.c — the frame-record reader: every function that keeps a
 * frame pointer stores [saved fp, return address] at fp. On Apple platforms
 * that is ABI and the whole walk; on Linux it is the fallback where no
 * unwind rule exists (JIT code, tables stripped).
 *
 * The behaviour is that of Apple Libc's __thread_stack_pcs: a record must be
 * aligned, inside the stack, and strictly above the previous one; a saved fp
 * of 0 ends the walk.
 *
 * The link register (arm64, a thread stopped at an arbitrary instruction) is
 * frame 1 only while it is the live return address: frame 0 has not pushed
 * its record (a leaf, or a prologue), so lr points into the caller and the
 * record at fp is still the caller's. Once frame 0 has made a call, lr
 * still holds that call's return address — a pc inside frame 0's own
 * function — and would be a fake frame 1. Told apart by the bounds of the
 * function holding pc (its FDE on Linux, the platform's function index on
 * Apple): lr inside that function is stale, lr outside is live; lr equal to
 * the record's return address is the record's (frame 0 pushed it and made
 * no call yet), so lr never appears twice. Where no bounds are known, lr is
 * taken whenever the record does not hold it (the behaviour before bounds
 * existed): a stale lr can then still become a fake frame 1. One known
 * miss: a recursive function sampled in its prologue has a live lr inside
 * its own function; it is dropped as stale (one frame of the recursion
 * lost, never a wrong one). The CFI reader, where it has a rule, decides
 * exactly and never asks this one.
 *
 * Must not: read a record it has not bounded.
 */
#include "capture/arch.h"
#include "capture/cfi.h"
#include "capture/walk.h"

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

/* The record at fp: [saved fp, return address (pac bits still on)]. */
static bool read_record(const snap__cursor_t *c, uintptr_t *saved_fp,
                        uintptr_t *ra) {
  uintptr_t fp = c->regs.fp;
  return fp % SNAP__FP_ALIGN == 0 && fp >= c->regs.sp &&
         snap__cursor_read(c, fp, saved_fp) &&
         snap__cursor_read(c, fp + sizeof(uintptr_t), ra);
}

static bool lr_live(snap__cursor_t *c, bool record, uintptr_t ra) {
  uintptr_t lr = c->regs.lr, start, end;
  if (!c->regs.lr_valid || !lr)
    return false;
  if (record && snap__strip_pac(ra) == lr)
    return false; /* the record holds it: frame 1 comes from the record */
  if (function_bounds(c, &start, &end))
    return lr - 1 < start || lr - 1 >= end; /* looked up at the call */
  return true; /* no bounds: see the head comment */
}

bool snap__frame_records_lr_live(snap__cursor_t *c) {
  /* Initialised: passing ra unset to lr_live when there is no record is
     undefined to the optimiser, which then dropped every check of
     read_record (clang 14 -O2 read a wild fp here). */
  uintptr_t saved_fp = 0, ra = 0;
  bool record = read_record(c, &saved_fp, &ra);
  return lr_live(c, record, ra);
}

int snap__frame_records_step(snap__cursor_t *c) {
  uintptr_t saved_fp = 0, ra = 0;
  bool record = read_record(c, &saved_fp, &ra);

  if (c->regs.lr_valid) {
    bool live = lr_live(c, record, ra);
    c->regs.lr_valid = false; /* used now or never */
    if (live) {
      /* lr is the caller, and the caller's record is still the one at
         fp: the next step reads it. */
      c->regs.pc = c->regs.lr;
      c->exact = false;
      return SNAP__STEP_OK;
    }
  }
  if (!record)
    return SNAP__STEP_END;
  ra = snap__strip_pac(ra);
  if (ra == 0)
    return SNAP__STEP_END;
  c->regs.pc = ra;
  c->regs.sp = c->regs.fp + 2 * sizeof(uintptr_t);
  c->regs.fp = snap__untag_fp(saved_fp);
  c->exact = false;
  if (c->regs.sp > c->lo)
    c->lo = c->regs.sp;
  return SNAP__STEP_OK;
}
