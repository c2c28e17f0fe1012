/*
 * cursor.c — the cursor's out-of-line parts (the design is in cursor.h):
 * setting it up and moving it, the image table taken on first use (each
 * range checked against the live image, live_images.h), the unwind rule at
 * its pc, and the app-code test of the emitter.
 *
 * Must not: allocate, lock, or read the stack (the readers do, through
 * snap__stack_read).
 */
#include "capture/cursor.h"

#include "capture/arch.h"
#include "capture/rule_cache.h"

void snap__cursor_set_regs(snap__cursor_t *c, const snap__regs_t *regs,
                           bool exact) {
  c->regs.pc = snap__strip_pac(regs->pc);
  c->regs.sp = regs->sp;
  c->regs.fp = snap__untag_fp(regs->fp);
  c->regs.lr_valid = regs->lr_valid;
  c->regs.lr = regs->lr_valid ? snap__strip_pac(regs->lr) : 0;
  c->exact = exact;
}

void snap__cursor_init(snap__cursor_t *c, const snap__regs_t *regs, bool exact,
                       unsigned flags, uintptr_t hi) {
  snap__cursor_set_regs(c, regs, exact);
  c->signal_frame = false;
  c->flags = flags;
  c->signal_frames = 0;
  c->walker_top = 0;
  c->images = NULL;
  snap__live_init(&c->live);
  /* No rule is asked for with FP_ONLY (the CFI reader skips it, and so do
     the rule questions of async_frames.c and link_register.c): no salt. */
  c->salt = flags & SNAP_CAPTURE_FP_ONLY
                ? 0
                : snap__rule_cache_salt(snap__images_current_generation());
  c->hi = hi > regs->sp ? hi : 0;
}

const snap__images_t *snap__cursor_images(snap__cursor_t *c) {
  if (!c->images) {
    c->images = snap__images_acquire();
    /* Rules found from now on come from this table: file them under its
       generation (it can only be newer than the one read at init). */
    c->salt = snap__rule_cache_salt(snap__images_generation(c->images));
  }
  return c->images;
}

const snap__image_t *snap__cursor_image(snap__cursor_t *c, uintptr_t pc) {
  return snap__live_image(&c->live,
                          snap__images_find(snap__cursor_images(c), pc), pc);
}

const snap__image_t *snap__cursor_unwind_image(snap__cursor_t *c, uintptr_t pc,
                                               snap__image_t *scratch) {
  const snap__image_t *img = snap__cursor_image(c, pc);
  return img ? img : snap__live_unwind_record(&c->live, pc, scratch);
}

void snap__cursor_done(snap__cursor_t *c) {
  if (c->images)
    snap__images_release(c->images);
  c->images = NULL;
}

void snap__cursor_rule(snap__cursor_t *c, snap__rule_t *rule) {
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

bool snap__emit_is_app(snap__emitter_t *e, uintptr_t pc, bool exact) {
  const snap__image_t *img = snap__cursor_image(e->cursor, exact ? pc : pc - 1);
  return img && img->in_app;
}
