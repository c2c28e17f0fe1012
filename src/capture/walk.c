/*
 * walk.c — the cursor loop: readers in order, frames out.
 *
 * A walk is bounded three ways: the output buffer (max), a step budget
 * (2 * SNAP_MAX_FRAMES, so a skip or an app-only filter cannot make it
 * endless), and the readers' own rule that the stack pointer moves up.
 *
 * Most frames go through record_run (frame records, confirmed in bulk
 * against the cached unwind rules) and fast_step (one cached ordinary
 * rule): inline copies of the readers' common cases. The readers
 * themselves, through step(), handle everything else.
 *
 * Must not: allocate, lock, or read memory outside the cursor's rules.
 */
#include "capture/walk.h"

#include <string.h>

#include "capture/arch.h"
#include "capture/rule_cache.h"

void snap__cursor_set_regs(snap__cursor_t *c, const snap__regs_t *regs,
                           bool exact) {
  c->regs = *regs;
  c->regs.pc = snap__strip_pac(regs->pc);
  c->regs.fp = snap__untag_fp(regs->fp);
  if (c->regs.lr_valid)
    c->regs.lr = snap__strip_pac(regs->lr);
  c->exact = exact;
}

void snap__cursor_init(snap__cursor_t *c, const snap__regs_t *regs, bool exact,
                       unsigned flags, uintptr_t hi) {
  snap__cursor_set_regs(c, regs, exact);
  c->flags = flags;
  c->signal_frames = 0;
  c->images = NULL;
  snap__live_init(&c->live);
  c->salt = snap__rule_cache_salt(snap__images_current_generation());
  c->lo = regs->sp;
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

/* Whether a return address lies in app code (looked up at the call). */
static bool is_app(snap__cursor_t *c, uintptr_t ret) {
  const snap__image_t *img = snap__cursor_image(c, ret - 1);
  return img && img->in_app;
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
        snap__cursor_image(e->cursor, exact ? pc : pc - 1);
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
    /* Only where unwind tables had nothing: checking code costs a read. */
    if (snap__at_signal_trampoline(c))
      return snap__signal_step(c);
  }
  return snap__frame_records_step(c);
}

/* Whether the next step hands out the link register as the caller: by
   the unwind rule where there is one (the leaf's return address still in
   lr), by the frame-record reader's judgement where there is none. */
static bool lr_pending(snap__cursor_t *c) {
  if (!c->regs.lr_valid)
    return false;
  if (!(c->flags & SNAP_CAPTURE_FP_ONLY)) {
    snap__rule_t rule;
    snap__cfi_rule_here(c, &rule);
    if (rule.cfa == SNAP__CFA_SP || rule.cfa == SNAP__CFA_FP)
      return rule.ra == SNAP__RA_IN_LR;
    if (rule.cfa == SNAP__CFA_SIGNAL)
      return false; /* the kernel's frame comes next, not lr */
  }
  return snap__frame_records_lr_live(c);
}

/* One step for the frames record_run leaves — code without frame
   pointers, like libc's — kept to locals and inline code because it is much
   of a capture's time: the rule is in the cache and ordinary (CFA from sp or
   fp, return address and fp saved at offsets from it). The checks are
   cfi_step's. Anything else — a cache miss, a signal frame, a link
   register, unknown bounds, a saved fp below sp (an epilogue past its
   pop, which cfi_step knows how to read) — declines, and the general step
   runs. */
static inline int fast_step(snap__cursor_t *c, uintptr_t *pc, uintptr_t *sp,
                            uintptr_t *fp, bool exact) {
  uintptr_t cfa, ra, next_fp = *fp, lookup = exact ? *pc : *pc - 1;
  snap__rule_t rule;
  if (!snap__rule_cache_get(lookup, snap__cursor_salt(c, lookup), &rule) ||
      rule.ra != SNAP__RA_AT_CFA ||
      (rule.cfa != SNAP__CFA_SP && rule.cfa != SNAP__CFA_FP))
    return SNAP__STEP_DECLINE;
  cfa = (rule.cfa == SNAP__CFA_SP ? *sp : *fp) + (intptr_t)rule.cfa_off;
  if (cfa <= *sp || !snap__cursor_read(c, cfa + (intptr_t)rule.ra_off, &ra))
    return SNAP__STEP_DECLINE;
  if (rule.fp == SNAP__FP_AT_CFA &&
      !snap__cursor_read(c, cfa + (intptr_t)rule.fp_off, &next_fp))
    return SNAP__STEP_DECLINE;
  ra = snap__strip_pac(ra);
  if (ra == 0)
    return SNAP__STEP_DECLINE; /* let the general step decide the end */
  *pc = ra;
  *sp = cfa;
  *fp = snap__untag_fp(next_fp);
  return SNAP__STEP_OK;
}

/* Frame records in bulk: the common case of a stack of frame-pointer code.
   Phase 1 follows the records as a bare frame-pointer loop would (aligned,
   inside the bounds, strictly upward); phase 2 confirms, for each frame,
   that its function really keeps its record at fp (its cached rule is a
   record rule) and learns its CFA. Phase 2's lookups do not depend on each
   other, so the processor overlaps them, where one-frame-at-a-time CFI
   waits for each. The frames accepted are exactly those the CFI reader
   would produce; the first unconfirmed one is left to the other readers.
   With SNAP_CAPTURE_FP_ONLY there is no phase 2. Returns the number of
   frames advanced; their pcs go to out. */
#define RECORD_BATCH SNAP__RECORD_BATCH
static inline int record_run(snap__cursor_t *c, uintptr_t *pc, uintptr_t *sp,
                             uintptr_t *fp, bool *exact,
                             uintptr_t out[RECORD_BATCH],
                             uintptr_t fps[RECORD_BATCH + 1]) {
  uintptr_t f = *fp, floor = *sp;
  int k = 0;
  fps[0] = f;
  while (k < RECORD_BATCH) { /* phase 1 */
    if (f % SNAP__FP_ALIGN || f < floor || f >= c->hi || c->hi - f < 16)
      break;
    uintptr_t ra = snap__strip_pac(snap__stack_word(f + sizeof(uintptr_t)));
    if (!ra)
      break;
    out[k++] = ra;
    floor = f + 16;
    f = fps[k] = snap__untag_fp(snap__stack_word(f));
  }
  int good = k;
  uintptr_t next_sp = *sp;
  if (!(c->flags & SNAP_CAPTURE_FP_ONLY)) { /* phase 2 */
    good = 0;
    uintptr_t frame_sp = *sp;
    for (int i = 0; i < k; i++) {
      uintptr_t lookup = i == 0 ? (*exact ? *pc : *pc - 1) : out[i - 1] - 1;
      intptr_t cfa_off =
          snap__rule_cache_record_cfa(lookup, snap__cursor_salt(c, lookup));
      uintptr_t cfa = fps[i] + (uintptr_t)cfa_off;
      if (!cfa_off || cfa <= frame_sp || cfa > c->hi)
        break;
      frame_sp = cfa;
      good++;
    }
    next_sp = frame_sp;
  } else if (k > 0) {
    next_sp = fps[k - 1] + 16;
  }
  if (good == 0)
    return 0;
  *pc = out[good - 1];
  *sp = next_sp;
  *fp = fps[good];
  *exact = false;
  return good;
}

static int walk(snap__walk_state_t *st, const snap__regs_t *regs, bool exact,
                unsigned flags, uintptr_t hi, uintptr_t *pcs, int max,
                int skip) {
  snap__cursor_t *const c = &st->cursor;
  snap__emitter_t *const e = &st->emitter;
  snap__cursor_init(c, regs, exact, flags, hi);
  *e = (snap__emitter_t){
      pcs, max, 0, skip, (flags & SNAP_CAPTURE_APP_ONLY) != 0, c};
  /* The fast step needs no async chain; and, checked at each entry
     because a signal frame can change them, known bounds (direct reads) and
     no pending link register. App-only filtering runs on its batches with
     the emitter's rule: skip first, then drop what is not app code. */
  bool fast_ok = !(flags & SNAP_CAPTURE_ASYNC);

  bool more = snap__emit(e, c->regs.pc, c->exact);
  for (int steps = 0; more && steps < 2 * SNAP_MAX_FRAMES; steps++) {
    if (fast_ok && c->hi && !c->regs.lr_valid) {
      uintptr_t pc = c->regs.pc, sp = c->regs.sp, fp = c->regs.fp;
      bool ex = c->exact;
      int n = e->n;
      bool apps = e->app_only;
      int left_to_skip = e->skip; /* a local: the copy loop below is hot */
      uintptr_t *const batch = st->batch;
      for (;;) {
        int got = record_run(c, &pc, &sp, &fp, &ex, batch, st->fps);
        int i = 0;
        for (; i < got && left_to_skip > 0; i++)
          left_to_skip--;
        if (!apps) {
          int take = got - i < max - n ? got - i : max - n;
          memcpy(pcs + n, batch + i, (size_t)take * sizeof *pcs);
          n += take;
        } else {
          for (; i < got && n < max; i++)
            if (is_app(c, batch[i]))
              pcs[n++] = batch[i];
        }
        steps += got;
        if (n == max || steps >= 2 * SNAP_MAX_FRAMES)
          break;
        if (got == RECORD_BATCH)
          continue;
        /* With FP_ONLY, record_run already took every record it could. */
        if ((flags & SNAP_CAPTURE_FP_ONLY) ||
            fast_step(c, &pc, &sp, &fp, ex) != SNAP__STEP_OK)
          break;
        steps++;
        ex = false;
        if (left_to_skip > 0)
          left_to_skip--;
        else if (!apps || is_app(c, pc))
          pcs[n++] = pc;
        if (n == max || steps >= 2 * SNAP_MAX_FRAMES)
          break;
      }
      c->lo = sp;
      c->regs.pc = pc, c->regs.sp = sp, c->regs.fp = fp, c->exact = ex;
      e->n = n;
      e->skip = left_to_skip;
      if (n == max || steps >= 2 * SNAP_MAX_FRAMES)
        break;
    }
    /* The async chain replaces the rest of the OS stack, but only once a
       pending link register has been handed out (it names the async
       function a leaf was called from), and only if it yields a frame. */
    uintptr_t ctx;
    if ((flags & SNAP_CAPTURE_ASYNC) && !lr_pending(c) &&
        snap__async_frame(c, &ctx) && snap__async_chain(e, ctx) > 0)
      break;
    if (step(c) != SNAP__STEP_OK)
      break;
    more = snap__emit(e, c->regs.pc, c->exact);
  }
  snap__cursor_done(c);
  return e->n;
}

int snap__walk_bounded(const snap__regs_t *regs, bool exact, unsigned flags,
                       uintptr_t hi, uintptr_t *pcs, int max, int skip) {
  snap__walk_state_t st;
  return walk(&st, regs, exact, flags, hi, pcs, max, skip);
}

int snap__walk_in(snap__walk_state_t *st, const snap__regs_t *regs, bool exact,
                  unsigned flags, uintptr_t *pcs, int max, int skip) {
  uintptr_t lo, hi;
  if (!snap__plat_stack_bounds(regs->sp, &lo, &hi))
    hi = 0;
  return walk(st, regs, exact, flags, hi, pcs, max, skip);
}

int snap__walk(const snap__regs_t *regs, bool exact, unsigned flags,
               uintptr_t *pcs, int max, int skip) {
  snap__walk_state_t st;
  return snap__walk_in(&st, regs, exact, flags, pcs, max, skip);
}
