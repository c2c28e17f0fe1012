/*
 * frame_records.c — the frame-record reader: every function that keeps a
 * frame pointer stores [saved fp, return address] at fp. On Apple platforms
 * that is ABI and the whole walk; on Linux it is the fallback where no
 * unwind rule exists (JIT code, tables stripped).
 *
 * The rule is snap__record_next (readers.h), Apple Libc's
 * __thread_stack_pcs: a record must be aligned, inside the stack, and at or
 * above the stack pointer (so strictly above the previous record); a
 * return address of 0 ends the walk.
 *
 * Frame 0 of a stopped arm64 thread may have its caller in the link
 * register instead (link_register.c decides); that caller's record is then
 * still the one at fp, so the step hands out lr and leaves fp alone.
 *
 * Must not: read a record it has not bounded.
 */
#include "capture/link_register.h"
#include "capture/readers.h"

static int record_step(snap__cursor_t *c, snap__emitter_t *e) {
  (void)e;
  if (c->regs.lr_valid) {
    uintptr_t saved_fp = 0, ra = 0; /* see snap__lr_pending */
    bool record =
        snap__record_at(c->regs.sp, c->hi, c->regs.fp, &saved_fp, &ra);
    bool live = snap__lr_live(c, record, ra);
    c->regs.lr_valid = false; /* used now or never */
    if (live) {
      /* lr is the caller, and the caller's record is still the one at
         fp: the next step reads it. */
      c->regs.pc = c->regs.lr;
      c->exact = false;
      return SNAP__STEP_OK;
    }
  }
  if (!snap__record_next(&c->regs.pc, &c->regs.sp, &c->regs.fp, c->hi))
    return SNAP__STEP_END;
  c->exact = false;
  return SNAP__STEP_OK;
}

const snap__reader_t snap__record_reader = {"frame records", 0, 0, record_step};
