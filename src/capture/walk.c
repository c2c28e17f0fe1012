/*
 * walk.c — the walk: frame 0 out, then, frame by frame, the first reader of
 * the table (readers.h) that knows the caller moves the cursor there, and
 * the caller goes out through the emitter.
 *
 * A walk is bounded three ways: the output buffer (max), a step budget
 * (2 * SNAP_MAX_FRAMES, so a skip or an app-only filter cannot make it
 * endless), and the readers' own rule that the stack pointer moves up.
 * Each entry hands the walk the top of its own frame (ENTRY_TOP): no
 * signal frame may lead the walk under it, into the walker's own state.
 *
 * The fast path takes the frames where the table's answer is known without
 * asking it: with SNAP_CAPTURE_FP_ONLY and no link register pending, the
 * record reader's rule (snap__record_next) in batches; otherwise, where
 * the rule cache holds an ordinary rule for the pc, the CFI reader's rule
 * (snap__rule_next, its frame-record case confirmed in bulk by
 * snap__record_rule_holds). These are the readers' own inline functions
 * (readers.h), so the two paths cannot drift apart;
 * tests/capture/test_walk_paths.c walks random stacks both ways and
 * requires the same pcs. Anything else (a cache miss, a signal frame, a
 * link register, Swift async frames) goes through the table.
 *
 * Must not: allocate, lock, or read memory except through the cursor.
 */
#include "capture/walk.h"

#include "capture/readers.h"
#include "capture/rule_cache.h"

#define STEP_BUDGET (2 * SNAP_MAX_FRAMES)
#define BATCH SNAP__RECORD_BATCH

/* The top of the calling entry's frame: its CFA, the caller's sp before
   the call. Everything below it on this stack is the walker's own (its
   state, its frames), written while the walk reads; the signal reader lets
   no signal frame lead there (signal_frames.c). GCC gives the CFA on every
   target and clang on x86_64; clang on arm64 gives the frame record's
   address, with the callee-saved registers (x19-x28, d8-d15: 144 bytes at
   most) above it, so there the bound adds both. A bound a little above the
   CFA is as good: a real interrupted frame lies above the kernel's signal
   frame, over a kilobyte higher. A macro: it must expand in the entry. */
#if defined(__clang__) && defined(__aarch64__)
#define ENTRY_TOP()                                                            \
  ((uintptr_t)__builtin_frame_address(0) + 2 * sizeof(uintptr_t) + 144)
#else
#define ENTRY_TOP() ((uintptr_t)__builtin_dwarf_cfa())
#endif

/* The readers, in the order they are asked. The signal reader comes right
   after the CFI reader, whose SNAP__STEP_SIGNAL it answers; a reader that
   has not run for a frame (flags) is passed over. */
static const snap__reader_t *const k_readers[] = {
    &snap__async_reader,
    &snap__cfi_reader,
    &snap__signal_reader,
    &snap__record_reader,
};
#define N_READERS (sizeof k_readers / sizeof k_readers[0])

/* One frame through the table. */
static int read_frame(snap__cursor_t *c, snap__emitter_t *e) {
  c->signal_frame = false;
  for (size_t i = 0; i < N_READERS; i++) {
    const snap__reader_t *r = k_readers[i];
    if ((c->flags & r->needs) != r->needs || (c->flags & r->skips))
      continue;
    int res = r->step(c, e);
    if (res == SNAP__STEP_SIGNAL) {
      c->signal_frame = true; /* for the signal reader, next in line */
      continue;
    }
    if (res != SNAP__STEP_DECLINE)
      return res;
  }
  return SNAP__STEP_END;
}

/* Fast path, SNAP_CAPTURE_FP_ONLY: only the record reader runs (the CFI and
   signal readers skip FP_ONLY, the async reader needs ASYNC), and with no
   link register it is exactly snap__record_next. Records are read a batch
   at a time and emitted at once (straight into the caller's buffer when
   the emitter has nothing to skip or filter). Returns the frames advanced
   (at most budget); *more is false once the emitter is full, *ended true
   where the records end: there the table's one reader would answer
   SNAP__STEP_END by the same rule, so the walk need not ask it. */
static int fast_records(snap__walk_state_t *st, int budget, bool *more,
                        bool *ended) {
  snap__cursor_t *const c = &st->cursor;
  uintptr_t pc = c->regs.pc, sp = c->regs.sp, fp = c->regs.fp;
  const uintptr_t hi = c->hi;
  int done = 0;
  while (done < budget) {
    int want = budget - done < BATCH ? budget - done : BATCH, k = 0;
    /* Straight into the caller's buffer when the emitter allows. */
    uintptr_t *out = snap__emit_slots(&st->emitter, want);
    uintptr_t *to = out ? out : st->batch;
    if (hi) /* the same rule, compiled knowing every read is direct */
      while (k < want && snap__record_next(&pc, &sp, &fp, hi))
        to[k++] = pc;
    else
      while (k < want && snap__record_next(&pc, &sp, &fp, 0))
        to[k++] = pc;
    done += k;
    if (k > 0)
      c->exact = false;
    *more = out ? snap__emit_stored(&st->emitter, k)
                : snap__emit_returns(&st->emitter, st->batch, k);
    *ended = k < want;
    if (!*more || *ended)
      break;
  }
  c->regs.pc = pc, c->regs.sp = sp, c->regs.fp = fp;
  return done;
}

/* Fast path, with call-frame information: where the rule cache holds an
   ordinary rule for the pc, the CFI reader — the first to run without
   ASYNC — applies exactly snap__rule_next. Most frames of frame-pointer
   code go in bulk: records are read ahead (snap__record_next), then each
   is confirmed by its cached rule being a record rule that holds there
   (snap__record_rule_holds, the test snap__rule_next itself makes). The
   confirmations do not depend on each other, so the processor overlaps
   their cache lookups, where one rule at a time waits for each. The first
   frame not confirmed gets snap__rule_next on its cached rule (code
   without frame pointers, like libc's), then records are read ahead again.
   Returns the frames advanced (at most budget); *more is false once the
   emitter is full. */
static int fast_rules(snap__walk_state_t *st, int budget, bool *more) {
  snap__cursor_t *const c = &st->cursor;
  snap__regs_t regs = c->regs;
  bool exact = c->exact;
  const uintptr_t hi = c->hi;
  int done = 0;
  while (done < budget) {
    int want = budget - done < BATCH ? budget - done : BATCH, k = 0;
    uintptr_t pc = regs.pc, sp = regs.sp, fp = regs.fp;
    st->fps[0] = fp;
    while (k < want && snap__record_next(&pc, &sp, &fp, hi)) {
      st->batch[k++] = pc;
      st->fps[k] = fp;
    }
    int good = 0;
    uintptr_t frame_sp = regs.sp;
    for (; good < k; good++) {
      uintptr_t key =
          good == 0 ? (exact ? regs.pc : regs.pc - 1) : st->batch[good - 1] - 1;
      intptr_t cfa_off =
          snap__rule_cache_record_cfa(key, snap__cursor_salt(c, key));
      if (!snap__record_rule_holds(frame_sp, st->fps[good], cfa_off))
        break;
      frame_sp = st->fps[good] + (uintptr_t)cfa_off;
    }
    if (good > 0) {
      regs.pc = st->batch[good - 1];
      regs.sp = frame_sp;
      regs.fp = st->fps[good];
      exact = false;
      done += good;
      if (!(*more = snap__emit_returns(&st->emitter, st->batch, good)))
        break;
      if (good == want)
        continue;
    }
    if (done >= budget)
      break;
    snap__rule_t rule;
    snap__regs_t next;
    uintptr_t key = exact ? regs.pc : regs.pc - 1;
    if (!snap__rule_cache_get(key, snap__cursor_salt(c, key), &rule) ||
        (rule.cfa != SNAP__CFA_SP && rule.cfa != SNAP__CFA_FP) ||
        snap__rule_next(&rule, &regs, hi, &next) != SNAP__STEP_OK)
      break;
    regs = next;
    exact = false;
    done++;
    if (!(*more = snap__emit(&st->emitter, regs.pc, false)))
      break;
  }
  c->regs = regs;
  c->exact = exact;
  return done;
}

static int walk(snap__walk_state_t *st, const snap__regs_t *regs, bool exact,
                unsigned flags, uintptr_t hi, uintptr_t *pcs, int max, int skip,
                bool fast, uintptr_t top) {
  snap__cursor_t *const c = &st->cursor;
  snap__emitter_t *const e = &st->emitter;
  snap__cursor_init(c, regs, exact, flags, hi);
  c->walker_top = top;
  *e = (snap__emitter_t){
      pcs, max, 0, skip, (flags & SNAP_CAPTURE_APP_ONLY) != 0, c};
  /* The async reader must see every frame: no fast path with ASYNC. */
  fast = fast && !(flags & SNAP_CAPTURE_ASYNC);

  bool more = snap__emit(e, c->regs.pc, c->exact);
  int steps = 0;
  while (more && steps < STEP_BUDGET) {
    if (fast && !c->regs.lr_valid) {
      bool ended = false;
      steps += flags & SNAP_CAPTURE_FP_ONLY
                   ? fast_records(st, STEP_BUDGET - steps, &more, &ended)
                   : fast_rules(st, STEP_BUDGET - steps, &more);
      if (!more || ended || steps >= STEP_BUDGET)
        break;
    }
    steps++;
    if (read_frame(c, e) != SNAP__STEP_OK)
      break;
    more = snap__emit(e, c->regs.pc, c->exact);
  }
  snap__cursor_done(c);
  return e->n;
}

/* The top of the stack holding sp, 0 if the platform does not know it. */
static uintptr_t stack_hi(uintptr_t sp) {
  uintptr_t lo, hi;
  return snap__plat_stack_bounds(sp, &lo, &hi) ? hi : 0;
}

int snap__walk_records_bounded(const snap__regs_t *regs, uintptr_t hi,
                               uintptr_t *pcs, int max, int skip) {
  if (regs->lr_valid || hi <= regs->sp || hi < SNAP__RECORD_SIZE || max <= 0)
    return -1; /* the cursor's cases (hi 0: checked reads) */
  uintptr_t pc = snap__strip_pac(regs->pc), sp = regs->sp;
  uintptr_t fp = snap__untag_fp(regs->fp);
  int n = 0, steps = 0;
  if (skip > 0)
    skip--;
  else
    pcs[n++] = pc;
  /* The skipped frames, then as many as fit: each loop with one bound. */
  for (; skip > 0 && steps < STEP_BUDGET; skip--, steps++)
    if (!snap__record_next(&pc, &sp, &fp, hi))
      return n;
  int room = max - n < STEP_BUDGET - steps ? max - n : STEP_BUDGET - steps;
  uintptr_t *out = pcs + n, *end = out + room;
  const uintptr_t lim = hi - SNAP__RECORD_SIZE;
  while (out < end) {
    if (snap__record_next_raw(&pc, &sp, &fp, lim)) {
      *out++ = pc;
      continue;
    }
    uintptr_t untagged = snap__untag_fp(fp); /* a Swift async frame's */
    if (untagged == fp)
      break; /* the records end */
    fp = untagged;
  }
  return (int)(out - pcs);
}

int snap__walk_records(const snap__regs_t *regs, uintptr_t *pcs, int max,
                       int skip) {
  return snap__walk_records_bounded(regs, stack_hi(regs->sp), pcs, max, skip);
}

int snap__walk_bounded(const snap__regs_t *regs, bool exact, unsigned flags,
                       uintptr_t hi, uintptr_t *pcs, int max, int skip) {
  snap__walk_state_t st;
  return walk(&st, regs, exact, flags, hi, pcs, max, skip, true, ENTRY_TOP());
}

int snap__walk_bounded_in(snap__walk_state_t *st, const snap__regs_t *regs,
                          bool exact, unsigned flags, uintptr_t hi,
                          uintptr_t *pcs, int max, int skip) {
  return walk(st, regs, exact, flags, hi, pcs, max, skip, true, ENTRY_TOP());
}

int snap__walk_bounded_readers(const snap__regs_t *regs, bool exact,
                               unsigned flags, uintptr_t hi, uintptr_t *pcs,
                               int max, int skip) {
  snap__walk_state_t st;
  return walk(&st, regs, exact, flags, hi, pcs, max, skip, false, ENTRY_TOP());
}

int snap__walk_in(snap__walk_state_t *st, const snap__regs_t *regs, bool exact,
                  unsigned flags, uintptr_t *pcs, int max, int skip) {
  return walk(st, regs, exact, flags, stack_hi(regs->sp), pcs, max, skip, true,
              ENTRY_TOP());
}

int snap__walk(const snap__regs_t *regs, bool exact, unsigned flags,
               uintptr_t *pcs, int max, int skip) {
  /* Not through snap__walk_in: st must lie below the entry's top. */
  snap__walk_state_t st;
  return walk(&st, regs, exact, flags, stack_hi(regs->sp), pcs, max, skip, true,
              ENTRY_TOP());
}
