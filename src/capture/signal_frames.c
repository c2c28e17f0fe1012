/*
 * signal_frames.c — the signal-frame reader: crossing the frame the kernel
 * pushed to run a signal handler, back into the code the signal interrupted.
 *
 * A handler returns into a signal-return trampoline, whose stack holds the
 * interrupted registers (a ucontext). The frame is this reader's when the
 * CFI reader found the trampoline's unwind entry (the 'S' augmentation,
 * cfi.c: the cursor's signal_frame) or, where it has none (qemu-user puts
 * it on a page of its own), when its instructions say so, as libgcc
 * recognises it; the platform reads the registers out of the frame. After
 * the crossing the pc is exact: it is where the signal landed, not a
 * return address.
 *
 * Must not: cross more than a few signal frames in one walk: this is the one
 * place a walk may move to another stack (sigaltstack), so the usual "the
 * stack only moves up" bound does not hold here. Must not lead the walk
 * into the walker's own frames: on the walker's own stack, a real
 * interrupted sp lies above the signal frame, above the handler and so
 * above the walk's entry (the cursor's walker_top); below it are the
 * walker's state and frames, written while it reads (and the free stack
 * under them), so a frame pointing there is corrupt and ends the walk.
 */
#include "capture/readers.h"

#define MAX_SIGNAL_FRAMES 4

/* Whether sp, the interrupted sp a signal frame names, lies under the
   walk's entry on the walker's own stack: in the walker's live frames
   (between this frame and the entry's top), or lower on the same stack. */
static bool under_walker(const snap__cursor_t *c, uintptr_t sp) {
  if (sp >= c->walker_top)
    return false; /* also when walker_top is 0: unknown */
  if (sp >= (uintptr_t)__builtin_frame_address(0))
    return true;
  uintptr_t lo, hi, wlo, whi;
  return snap__plat_own_stack_bounds(sp, &lo, &hi) &&
         snap__plat_own_stack_bounds(c->walker_top - 1, &wlo, &whi) &&
         hi == whi;
}

/* A signal-return trampoline that no unwind entry describes, recognised by
   its code. Checked last: looking at code costs a read. */
static bool at_trampoline(const snap__cursor_t *c) {
  return c->signal_frames < MAX_SIGNAL_FRAMES && !c->exact &&
         snap__plat_is_sigreturn(c->regs.pc);
}

static int signal_step(snap__cursor_t *c, snap__emitter_t *e) {
  (void)e;
  if (!c->signal_frame && !at_trampoline(c))
    return SNAP__STEP_DECLINE;
  snap__regs_t next;
  if (c->signal_frames >= MAX_SIGNAL_FRAMES ||
      !snap__plat_sigframe_regs(c->regs.sp, &next) || next.pc == 0 ||
      under_walker(c, next.sp))
    return SNAP__STEP_END;
  c->signal_frames++;
  /* The interrupted code runs on the thread's own stack (the handler may
     have run on an alternate one). Only that stack gets direct reads: the
     frame's sp came out of memory, and a corrupt one could point at any
     mapping. Anything else is walked with checked reads. */
  uintptr_t lo;
  if (!snap__plat_own_stack_bounds(next.sp, &lo, &c->hi))
    c->hi = 0;
  snap__cursor_set_regs(c, &next, true);
  return SNAP__STEP_OK;
}

const snap__reader_t snap__signal_reader = {"signal frames", 0,
                                            SNAP_CAPTURE_FP_ONLY, signal_step};
