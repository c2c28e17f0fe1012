/*
 * walk.h — a whole walk: from a thread's registers to its pcs, through the
 * cursor (cursor.h) and the frame readers (readers.h). Everything here is
 * [signal-safe].
 */
#ifndef SNAP_CAPTURE_WALK_H
#define SNAP_CAPTURE_WALK_H

#include <stdbool.h>
#include <stdint.h>

#include "capture/cursor.h"
#include "platform/platform.h"

/* Frames the fast path reads ahead in one batch. */
#define SNAP__RECORD_BATCH 32

/* Everything a walk keeps, in one block the caller provides: a sampled
   thread walks inside a signal handler on its own stack, which may be
   nearly full, so the sampler hands this in with the request instead
   (capture.c); the handler's frame stays small. */
typedef struct snap__walk_state {
  snap__cursor_t cursor;
  snap__emitter_t emitter;
  uintptr_t batch[SNAP__RECORD_BATCH];   /* return addresses read ahead */
  uintptr_t fps[SNAP__RECORD_BATCH + 1]; /* and the records they came from */
} snap__walk_state_t;

/* The whole walk: emits regs.pc as frame 0, then every caller. Returns the
   number of pcs written. The stack's bounds come from the platform. */
int snap__walk(const snap__regs_t *regs, bool exact, unsigned flags,
               uintptr_t *pcs, int max, int skip);
/* The same with its state in *st (uninitialised on entry). */
int snap__walk_in(snap__walk_state_t *st, const snap__regs_t *regs, bool exact,
                  unsigned flags, uintptr_t *pcs, int max, int skip);

/* The same over a stack whose top is given: every direct read stays inside
   [regs->sp, hi). Tests feed it hostile stacks built in a buffer. */
int snap__walk_bounded(const snap__regs_t *regs, bool exact, unsigned flags,
                       uintptr_t hi, uintptr_t *pcs, int max, int skip);
/* The same with its state in *st: afterwards st->cursor.regs and
   st->cursor.exact describe the last frame emitted, where the walk
   ended (the quiet sample resumes from there, capture.c). */
int snap__walk_bounded_in(snap__walk_state_t *st, const snap__regs_t *regs,
                          bool exact, unsigned flags, uintptr_t hi,
                          uintptr_t *pcs, int max, int skip);
/* SNAP_CAPTURE_FP_ONLY alone (no filter, no async chains), frame 0 not
   exact-sensitive: the walk reduced to what it does then — frame 0, then
   the frame-record rule (snap__record_next, in the form with the bounds
   folded: snap__record_next_raw) until the records end, the
   buffer fills or the step budget runs out — with no cursor or emitter
   to set up, which was most of what a depth-32 FP-only capture cost over
   a bare frame-pointer loop. Returns the pcs written, or -1 where the
   whole walk is needed (a live link register; hi <= regs->sp, i.e.
   bounds unknown: checked reads). The bounded form is for the
   differential test (test_walk_paths). */
int snap__walk_records(const snap__regs_t *regs, uintptr_t *pcs, int max,
                       int skip);
int snap__walk_records_bounded(const snap__regs_t *regs, uintptr_t hi,
                               uintptr_t *pcs, int max, int skip);
/* The same without the fast path: every frame through the reader table.
   For the differential test, which requires the same pcs from both. */
int snap__walk_bounded_readers(const snap__regs_t *regs, bool exact,
                               unsigned flags, uintptr_t hi, uintptr_t *pcs,
                               int max, int skip);

#endif /* SNAP_CAPTURE_WALK_H */
