/*
 * walk.c — the cursor loop: readers in order, frames out.
 *
 * A walk is bounded three ways: the output buffer (max), a step budget
 * (2 * SNAP_MAX_FRAMES, so a skip or an app-only filter cannot make it
 * endless), and the readers' own rule that the stack pointer moves up.
 *
 * Must not: allocate, lock, or read memory outside the cursor's rules.
 */
#include "capture/walk.h"

#include "capture/arch.h"

void snap__cursor_init(snap__cursor_t *c, const snap__regs_t *regs, bool exact,
                       unsigned flags, uintptr_t hi,
                       const snap__images_t *images) {
  c->regs = *regs;
  c->regs.pc = snap__strip_pac(regs->pc);
  c->regs.fp = snap__untag_fp(regs->fp);
  if (c->regs.lr_valid)
    c->regs.lr = snap__strip_pac(regs->lr);
  c->exact = exact;
  c->flags = flags;
  c->signal_frames = 0;
  c->images = images;
  c->generation = snap__images_generation(images);
  c->lo = regs->sp;
  c->hi = hi > regs->sp ? hi : 0;
}

bool snap__cursor_read(const snap__cursor_t *c, uintptr_t addr,
                       uintptr_t *out) {
  if (addr % sizeof(uintptr_t) || addr < c->lo)
    return false;
  if (c->hi == 0)
    return snap__plat_read(addr, out, sizeof *out);
  if (addr >= c->hi || c->hi - addr < sizeof(uintptr_t))
    return false;
  *out = *(const uintptr_t *)addr;
  return true;
}

bool snap__emit(snap__emitter_t *e, uintptr_t pc, bool exact) {
  if (e->n >= e->max)
    return false;
  if (e->skip > 0) {
    e->skip--;
    return true;
  }
  if (e->app_only) {
    const snap__image_t *img =
        snap__images_find(e->images, exact ? pc : pc - 1);
    if (!img || !img->in_app)
      return true;
  }
  e->pcs[e->n++] = pc;
  return e->n < e->max;
}

static int step(snap__cursor_t *c) {
  if (!(c->flags & SNAP_CAPTURE_FP_ONLY)) {
    int r = snap__cfi_step(c);
    if (r != SNAP__STEP_DECLINE)
      return r;
  }
  return snap__frame_records_step(c);
}

int snap__walk_bounded(const snap__regs_t *regs, bool exact, unsigned flags,
                       uintptr_t hi, uintptr_t *pcs, int max, int skip) {
  const snap__images_t *images = snap__images_acquire();
  snap__cursor_t c;
  snap__cursor_init(&c, regs, exact, flags, hi, images);
  snap__emitter_t e = {
      pcs, max, 0, skip, (flags & SNAP_CAPTURE_APP_ONLY) != 0, images};

  bool more = snap__emit(&e, c.regs.pc, c.exact);
  for (int steps = 0; more && steps < 2 * SNAP_MAX_FRAMES; steps++) {
    uintptr_t ctx;
    if ((flags & SNAP_CAPTURE_ASYNC) && snap__async_frame(&c, &ctx)) {
      snap__async_chain(&e, ctx);
      break;
    }
    if (step(&c) != SNAP__STEP_OK)
      break;
    more = snap__emit(&e, c.regs.pc, c.exact);
  }
  snap__images_release(images);
  return e.n;
}

int snap__walk(const snap__regs_t *regs, bool exact, unsigned flags,
               uintptr_t *pcs, int max, int skip) {
  uintptr_t lo, hi;
  if (!snap__plat_stack_bounds(regs->sp, &lo, &hi))
    hi = 0;
  return snap__walk_bounded(regs, exact, flags, hi, pcs, max, skip);
}
