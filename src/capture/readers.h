/*
 * readers.h — the frame readers the walk tries, in this order (walk.c's
 * table), and the two inline rules that decide a frame:
 *
 *   1. snap__async_reader (async_frames.c), with SNAP_CAPTURE_ASYNC, at a
 *      Swift extended frame record: emits the async context chain in place
 *      of the rest of the OS stack (once a pending link register has been
 *      handed out: it is the caller of a leaf, and that caller's record is
 *      the extended one);
 *   2. snap__cfi_reader (cfi_step.c), not with SNAP_CAPTURE_FP_ONLY: the
 *      unwind rule for the pc (snap__rule_next); at a rule marked as a
 *      signal frame it answers SNAP__STEP_SIGNAL;
 *   3. snap__signal_reader (signal_frames.c), not with FP_ONLY: crosses the
 *      kernel's signal frame, where the CFI reader said so or where a
 *      signal-return trampoline no unwind entry describes is recognised by
 *      its code;
 *   4. snap__record_reader (frame_records.c): [saved fp, return address] at
 *      fp (snap__record_next), after the live link register if any.
 *
 * The walk's fast path (walk.c) applies these same inline rules to the
 * frames where the table would pick them anyway: with FP_ONLY and no link
 * register, snap__record_next (what reader 4 does there); otherwise, on a
 * cached ordinary rule, what reader 2 does there: snap__rule_next, whose
 * frame-record case (snap__record_rule_holds, then snap__record_next) the
 * fast path runs in bulk. A differential test
 * (tests/capture/test_walk_paths.c) walks random stacks both ways and
 * requires identical pcs.
 *
 * Readers depend on the cursor (cursor.h) and, for the link register,
 * link_register.h; never on the walk, and none calls another: a frame one
 * reader cannot cross is named in its answer (SNAP__STEP_SIGNAL).
 */
#ifndef SNAP_CAPTURE_READERS_H
#define SNAP_CAPTURE_READERS_H

#include "capture/arch.h"
#include "capture/cfi.h"
#include "capture/cursor.h"

extern const snap__reader_t snap__async_reader;
extern const snap__reader_t snap__cfi_reader;
extern const snap__reader_t snap__signal_reader;
extern const snap__reader_t snap__record_reader;

/* A frame record: [saved fp, return address]. */
#define SNAP__RECORD_SIZE (2 * sizeof(uintptr_t))

/* The frame record at fp for a frame whose stack pointer is sp: aligned, at
   or above sp, both words inside the bounds (snap__stack_read). *ra keeps
   its pac bits. */
static inline bool snap__record_at(uintptr_t sp, uintptr_t hi, uintptr_t fp,
                                   uintptr_t *saved_fp, uintptr_t *ra) {
  uintptr_t rec[2];
  if (fp % SNAP__FP_ALIGN || !snap__stack_read(sp, hi, fp, rec, 2))
    return false;
  *saved_fp = rec[0], *ra = rec[1];
  return true;
}

/* The frame-record rule (Apple Libc's __thread_stack_pcs): the caller of
   the frame (pc, sp, fp) is the record at fp, if snap__record_at accepts it
   and its return address is not 0: pc = that return address, sp = just
   above the record, fp = the saved fp. False ends the records. */
static inline bool snap__record_next(uintptr_t *pc, uintptr_t *sp,
                                     uintptr_t *fp, uintptr_t hi) {
  uintptr_t saved_fp, ra;
  if (!snap__record_at(*sp, hi, *fp, &saved_fp, &ra))
    return false;
  ra = snap__strip_pac(ra);
  if (ra == 0)
    return false;
  *pc = ra;
  *sp = *fp + SNAP__RECORD_SIZE;
  *fp = snap__untag_fp(saved_fp);
  return true;
}

/* snap__record_next for the records-only loop (walk.c), which asks it of
   every frame: lim is the stack's top less a record (the highest record
   start inside [sp, hi)), and *fp may still carry the Swift async tag,
   which the caller strips only when this says no: a tagged value lies
   above every user-space stack (tag bits 60-63), so it never passes the
   bound. Same answer as snap__record_next once untagged; three compares
   and no tag test a frame, where the general rule has five and one. */
static inline bool snap__record_next_raw(uintptr_t *pc, uintptr_t *sp,
                                         uintptr_t *fp, uintptr_t lim) {
  uintptr_t at = *fp;
  if (at % SNAP__FP_ALIGN || at < *sp || at > lim)
    return false;
  uintptr_t ra = snap__strip_pac(snap__stack_word(at + sizeof(uintptr_t)));
  if (ra == 0)
    return false;
  *pc = ra;
  *sp = at + SNAP__RECORD_SIZE;
  *fp = snap__stack_word(at);
  return true;
}

/* Whether, under a frame-record rule with CFA offset k (0: not one), the
   caller of the frame (sp, fp) is the record at fp with CFA fp + k: the
   record lies at or above sp (so its slots are not freed stack) and the
   CFA above sp (the stack moves up). Then snap__rule_next's answer is
   snap__record_next's, with sp = fp + k; the walk's fast path confirms
   records in bulk by this. */
static inline bool snap__record_rule_holds(uintptr_t sp, uintptr_t fp,
                                           intptr_t k) {
  return k != 0 && fp >= sp && fp + (uintptr_t)k > sp;
}

/* The call-frame-information rule: the caller of the frame at regs by an
   ordinary rule (rule->cfa SP or FP). SNAP__STEP_OK with *next filled, else
   SNAP__STEP_END. The stack must move up (a leaf still holding its return
   address in lr may share its caller's CFA), every slot is read with
   snap__stack_read, and a return address of 0 ends the stack.

   A saved fp below sp has been loaded back already: an epilogue's `pop
   %rbp` moves the CFA but leaves rbp's rule at its slot (GCC writes no
   restore there; over 5 700 such rows in Debian's x86_64 libc, each right
   after a pop or leave), and the slot, now free stack, is outside the
   bounds. fp holds the caller's value then. */
static inline int snap__rule_next(const snap__rule_t *rule,
                                  const snap__regs_t *regs, uintptr_t hi,
                                  snap__regs_t *next) {
  intptr_t k = snap__rule_record_cfa(rule);
  if (snap__record_rule_holds(regs->sp, regs->fp, k)) {
    /* The record at fp: what the general case below computes for this
       rule (fp saved at fp, not below sp; ra at fp + 8), by the
       frame-record rule itself. */
    uintptr_t pc = regs->pc, sp = regs->sp, fp = regs->fp;
    if (!snap__record_next(&pc, &sp, &fp, hi))
      return SNAP__STEP_END;
    next->pc = pc;
    next->sp = regs->fp + (uintptr_t)k;
    next->fp = fp;
    next->lr = 0;
    next->lr_valid = false;
    return SNAP__STEP_OK;
  }
  uintptr_t base = rule->cfa == SNAP__CFA_SP ? regs->sp : regs->fp;
  uintptr_t cfa = base + (intptr_t)rule->cfa_off;
  uintptr_t ra, fp = regs->fp;
  bool fp_saved =
      rule->fp == SNAP__FP_AT_CFA && cfa + (intptr_t)rule->fp_off >= regs->sp;
  if (cfa < regs->sp || (cfa == regs->sp && rule->ra != SNAP__RA_IN_LR))
    return SNAP__STEP_END;
  switch (rule->ra) {
  case SNAP__RA_UNDEFINED:
    return SNAP__STEP_END; /* the outermost frame (_start, thread start) */
  case SNAP__RA_IN_LR:
    /* Only a stopped thread's own frame can still hold it in lr. */
    if (!regs->lr_valid)
      return SNAP__STEP_END;
    ra = regs->lr;
    break;
  default:
    if (!snap__stack_read(regs->sp, hi, cfa + (intptr_t)rule->ra_off, &ra, 1))
      return SNAP__STEP_END;
    break;
  }
  if (fp_saved &&
      !snap__stack_read(regs->sp, hi, cfa + (intptr_t)rule->fp_off, &fp, 1))
    return SNAP__STEP_END;
  ra = snap__strip_pac(ra);
  if (ra == 0)
    return SNAP__STEP_END;
  next->pc = ra;
  next->sp = cfa;
  next->fp = snap__untag_fp(fp);
  next->lr = 0;
  next->lr_valid = false;
  return SNAP__STEP_OK;
}

#endif /* SNAP_CAPTURE_READERS_H */
