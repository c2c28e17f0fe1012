/*
 * frame_records.c — the frame-record reader: every function that keeps a
 * frame pointer stores [saved fp, return address] at fp. On Apple platforms
 * that is ABI and the whole walk; on Linux it is the fallback where no
 * unwind rule exists (JIT code, tables stripped).
 *
 * The behaviour is that of Apple Libc's __thread_stack_pcs: a record must be
 * aligned, inside the stack, and strictly above the previous one; a saved fp
 * of 0 ends the walk. For a thread stopped at an arbitrary instruction on
 * arm64, the link register is frame 1 unless the first record already holds
 * it (the function has pushed its record), so lr never appears twice.
 *
 * Must not: read a record it has not bounded.
 */
#include "capture/arch.h"
#include "capture/walk.h"

int snap__frame_records_step(snap__cursor_t *c) {
  uintptr_t fp = c->regs.fp;
  uintptr_t saved_fp = 0, ra = 0;
  bool record = fp % SNAP__FP_ALIGN == 0 && fp >= c->regs.sp &&
                snap__cursor_read(c, fp, &saved_fp) &&
                snap__cursor_read(c, fp + sizeof(uintptr_t), &ra);

  if (c->regs.lr_valid) {
    c->regs.lr_valid = false;
    uintptr_t lr = c->regs.lr;
    if (lr && (!record || snap__strip_pac(ra) != lr)) {
      /* Stopped in a leaf or before the record was pushed: lr is the
         caller, and the caller's record is still the one at fp. */
      c->regs.pc = lr;
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
  c->regs.sp = fp + 2 * sizeof(uintptr_t);
  c->regs.fp = snap__untag_fp(saved_fp);
  c->exact = false;
  if (c->regs.sp > c->lo)
    c->lo = c->regs.sp;
  return SNAP__STEP_OK;
}
