/*
 * walk.h — the frame cursor: a thread's registers moving up its stack, one
 * frame per step, through an ordered list of frame readers:
 *
 *   1. Swift async contexts (async_frames.c), with SNAP_CAPTURE_ASYNC, at an
 *      extended frame record: the rest of the walk follows the context chain
 *      (once a pending link register has been handed out: it is the caller
 *      of a leaf, and that caller's record is the extended one);
 *   2. call-frame information (cfi_step.c, over cfi.c and rule_cache.h),
 *      where the image has unwind tables and the pc has a rule;
 *   3. signal frames (signal_frames.c), at a signal-return trampoline;
 *   4. frame records (frame_records.c): [saved fp, return address] at fp.
 *
 * Rules every reader keeps (design.md rule 2): a stack read is aligned and
 * inside [lo, hi); when hi is 0 (bounds unknown) it goes through
 * snap__plat_read instead; a direct read is snap__stack_word, which no
 * sanitizer checks. The stack pointer only moves up. Everything here is
 * [signal-safe].
 *
 * The image table is taken lazily: a walk whose every rule is in the rule
 * cache (the common case for a repeated call site) never touches it. A
 * range of the table is used only while the platform says its image still
 * holds the pc, and cached rules are filed under that image's identity
 * (live_images.h): the table may be older than the last dlclose.
 */
#ifndef SNAP_CAPTURE_WALK_H
#define SNAP_CAPTURE_WALK_H

#include <stdbool.h>
#include <stdint.h>

#include "capture/live_images.h"
#include "images/images.h"
#include "platform/platform.h"

typedef struct snap__cursor {
  snap__regs_t regs; /* the current frame; regs.pc has been emitted */
  bool exact;        /* regs.pc is where the thread stopped, not a return
                        address (frame 0, or right after a signal frame) */
  uintptr_t lo, hi;  /* direct stack reads only inside [lo, hi) */
  unsigned flags;    /* SNAP_CAPTURE_* */
  int signal_frames; /* kernel signal frames crossed so far */
  uint64_t salt;     /* rule-cache salt of the image generation in use */
  const snap__images_t *images; /* NULL until first needed */
  snap__live_memo_t live;       /* which image holds a pc now */
} snap__cursor_t;

enum snap__step {
  SNAP__STEP_END = 0,    /* outermost frame reached, or nothing trustworthy */
  SNAP__STEP_OK = 1,     /* regs now describe the caller */
  SNAP__STEP_DECLINE = 2 /* this reader has nothing to say: try the next */
};

/* Sets up a cursor at regs (already stopped there) with stack bounds
   [regs->sp, hi); hi == 0 means unknown. */
void snap__cursor_init(snap__cursor_t *c, const snap__regs_t *regs, bool exact,
                       unsigned flags, uintptr_t hi);
/* Moves the cursor to regs (pac bits and async tag stripped). */
void snap__cursor_set_regs(snap__cursor_t *c, const snap__regs_t *regs,
                           bool exact);
/* Drops the image-table reference, if one was taken. */
void snap__cursor_done(snap__cursor_t *c);
/* The image table, taken on first use. */
const snap__images_t *snap__cursor_images(snap__cursor_t *c);
/* The table's range holding pc if the image it describes still holds pc
   (live_images.h), else NULL. */
const snap__image_t *snap__cursor_image(snap__cursor_t *c, uintptr_t pc);
/* The same for reading unwind tables: where the table has no valid range,
   a record of the live image made in *scratch (read_safely). */
const snap__image_t *snap__cursor_unwind_image(snap__cursor_t *c, uintptr_t pc,
                                               snap__image_t *scratch);
/* The rule-cache salt for pc (live_images.h). */
static inline uint64_t snap__cursor_salt(snap__cursor_t *c, uintptr_t pc) {
  return snap__live_salt(&c->live, c->salt, pc);
}

/* The one direct read of a stack word, for every reader. Why it is not
   AddressSanitizer's (or HWASan's) to check: the word belongs to another
   frame, and in an instrumented app that frame's arrays have poisoned
   redzones; a frame pointer that is really an ordinary register (code
   without frame pointers keeps buffer addresses in it) or a stale slot can
   land the walker in one. The read is within the stack's bounds (the
   callers check), so it cannot fault; the sanitizer would only report the
   app for the walker's legitimate look. Not always_inline: compilers do not
   inline an unchecked function into a checked caller (GCC refuses
   always_inline there), so under a sanitizer this is a call; elsewhere it
   inlines to one load. The callers' own locals stay checked. */
#if defined(__has_attribute)
#if __has_attribute(no_sanitize_address)
#define SNAP__STACK_READ_ATTRS __attribute__((no_sanitize_address))
#endif
#endif
#ifndef SNAP__STACK_READ_ATTRS
#define SNAP__STACK_READ_ATTRS
#endif
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 11)
#define SNAP__STACK_READ_HWASAN __attribute__((no_sanitize("hwaddress")))
#else
#define SNAP__STACK_READ_HWASAN
#endif
SNAP__STACK_READ_ATTRS SNAP__STACK_READ_HWASAN static inline uintptr_t
snap__stack_word(uintptr_t addr) {
  return *(const uintptr_t *)addr;
}

/* One stack word: aligned, inside the bounds, or through the checked read
   when the bounds are unknown. */
static inline bool snap__cursor_read(const snap__cursor_t *c, uintptr_t addr,
                                     uintptr_t *out) {
  if (addr % sizeof(uintptr_t) || addr < c->lo)
    return false;
  if (c->hi == 0)
    return snap__plat_read(addr, out, sizeof *out);
  if (addr >= c->hi || c->hi - addr < sizeof(uintptr_t))
    return false;
  *out = snap__stack_word(addr);
  return true;
}

/* The pc to look rules and images up with: a return address minus one lands
   in the call instruction, which matters when a call is the last
   instruction of a function (noreturn callees). */
static inline uintptr_t snap__cursor_lookup_pc(const snap__cursor_t *c) {
  return c->exact ? c->regs.pc : c->regs.pc - 1;
}

int snap__cfi_step(snap__cursor_t *c);
/* The unwind rule at the cursor's pc, through the rule cache; cfa NONE
   when there is none. */
struct snap__rule;
void snap__cfi_rule_here(snap__cursor_t *c, struct snap__rule *rule);
int snap__frame_records_step(snap__cursor_t *c);
/* Whether the frame-record reader takes the pending link register as the
   caller (see frame_records.c). */
bool snap__frame_records_lr_live(snap__cursor_t *c);
/* Crosses the kernel's signal frame at the current pc (a trampoline). */
int snap__signal_step(snap__cursor_t *c);
/* True if the current pc is a signal-return trampoline that no unwind
   entry describes (recognised by its code). */
bool snap__at_signal_trampoline(const snap__cursor_t *c);

/* If the current frame is a Swift extended frame and the async chain should
   be followed, returns true with the first async context in *ctx. */
bool snap__async_frame(snap__cursor_t *c, uintptr_t *ctx);

/* Where walks put their pcs: applies skip, SNAP_CAPTURE_APP_ONLY and max. */
typedef struct snap__emitter {
  uintptr_t *pcs;
  int max, n, skip;
  bool app_only;
  snap__cursor_t *cursor; /* for the image table, when app_only */
} snap__emitter_t;

/* Returns false once the buffer is full. */
bool snap__emit(snap__emitter_t *e, uintptr_t pc, bool exact);

/* Emits the async context chain starting at ctx (resume pc + 1 for each).
   Returns the number of contexts it followed: 0 when the first one is
   unreadable, and then the walk goes on along the OS stack. */
int snap__async_chain(snap__emitter_t *e, uintptr_t ctx);

/* Frames the walk's frame-record run confirms in one batch. */
#define SNAP__RECORD_BATCH 32

/* Everything a walk keeps, in one block the caller provides: a sampled
   thread walks inside a signal handler on its own stack, which may be
   nearly full, so the sampler hands this in with the request instead
   (capture.c); the handler's frame stays small. */
typedef struct snap__walk_state {
  snap__cursor_t cursor;
  snap__emitter_t emitter;
  uintptr_t batch[SNAP__RECORD_BATCH];   /* return addresses of a run */
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

#endif /* SNAP_CAPTURE_WALK_H */
