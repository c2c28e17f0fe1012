/*
 * cursor.h — the frame cursor: a thread's registers moving up its stack,
 * the one bounded read every stack access goes through, what the unwind
 * tables say about the cursor's pc, and the emitter the walk's pcs go out
 * through. The frame readers (readers.h) and the walk (walk.c) build on
 * this; it knows no reader.
 *
 * Rules the cursor keeps for every reader (design.md rule 2): a stack read
 * is aligned and inside [regs.sp, hi): the stack pointer is the floor,
 * because the stack only moves up (every step sets sp to the caller's, at
 * or above the current one; only a signal frame may move to another stack,
 * and then the bounds are learnt again). When hi is 0 (bounds unknown) the
 * read goes through snap__plat_read instead. A direct read is
 * snap__stack_word, which no sanitizer checks.
 *
 * The image table is taken lazily: a walk whose every rule is in the rule
 * cache (the common case for a repeated call site) never touches it. A
 * range of the table is used only while the platform says its image still
 * holds the pc, and cached rules are filed under that image's identity
 * (live_images.h): the table may be older than the last dlclose.
 *
 * Everything here is [signal-safe]: no allocation, no lock; the one libc
 * call is snap__emit_returns' memcpy (async-signal-safe, POSIX.1-2017;
 * pre-bound on Apple, tests/darwin/window_imports.txt).
 */
#ifndef SNAP_CAPTURE_CURSOR_H
#define SNAP_CAPTURE_CURSOR_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "capture/cfi.h"
#include "capture/live_images.h"
#include "images/images.h"
#include "platform/platform.h"

typedef struct snap__cursor {
  snap__regs_t regs; /* the current frame; regs.pc has been emitted */
  bool exact;        /* regs.pc is where the thread stopped, not a return
                        address (frame 0, or right after a signal frame) */
  bool signal_frame; /* a reader found the kernel's signal frame at regs:
                        the signal reader crosses it (walk.c sets it) */
  uintptr_t hi;      /* direct stack reads only below hi; 0: unknown */
  unsigned flags;    /* SNAP_CAPTURE_* */
  int signal_frames; /* kernel signal frames crossed so far */
  uint64_t salt;     /* rule-cache salt of the image generation in use */
  const snap__images_t *images; /* NULL until first needed */
  snap__live_memo_t live;       /* which image holds a pc now */

  /* The top of the walk's entry frame (walk.c): below it, on this thread's
     stack, the walker's own frames, where no signal frame may lead
     (signal_frames.c). 0: unknown. */
  uintptr_t walker_top;
} snap__cursor_t;

/* A reader's answer for one frame. */
enum snap__step {
  SNAP__STEP_END = 0,     /* outermost frame reached, or nothing trustworthy */
  SNAP__STEP_OK = 1,      /* regs now describe the caller */
  SNAP__STEP_DECLINE = 2, /* this reader has nothing to say: try the next */
  SNAP__STEP_SIGNAL = 3,  /* a signal frame is here: the signal reader's */
  SNAP__STEP_EMITTED = 4  /* the reader emitted the rest of the stack */
};

/* Sets up a cursor at regs (already stopped there) with stack bounds
   [regs->sp, hi); hi == 0 means unknown. walker_top starts 0 (the walk
   sets it). */
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
/* The rule-cache salt for pc: the generation's, mixed with the live
   identity of pc's image (live_images.h). */
static inline uint64_t snap__cursor_salt(snap__cursor_t *c, uintptr_t pc) {
  return snap__live_salt(&c->live, c->salt, pc);
}

/* The pc to look rules and images up with: a return address minus one lands
   in the call instruction, which matters when a call is the last
   instruction of a function (noreturn callees). */
static inline uintptr_t snap__cursor_lookup_pc(const snap__cursor_t *c) {
  return c->exact ? c->regs.pc : c->regs.pc - 1;
}

/* The unwind rule at the cursor's pc: the rule cache, else cfi.c (and the
   answer is cached, "no rule" included). cfa NONE when there is none. */
void snap__cursor_rule(snap__cursor_t *c, snap__rule_t *rule);

/* ---- The bounded read --------------------------------------------------- */

/* The one direct read of a stack word. Why it is not AddressSanitizer's (or
   HWASan's) to check: the word belongs to another frame, and in an
   instrumented app that frame's arrays have poisoned redzones; a frame
   pointer that is really an ordinary register (code without frame pointers
   keeps buffer addresses in it) or a stale slot can land the walker in one.
   The read is within the stack's bounds (the callers check), so it cannot
   fault; the sanitizer would only report the app for the walker's
   legitimate look. Not always_inline: compilers do not inline an unchecked
   function into a checked caller (GCC refuses always_inline there), so
   under a sanitizer this is a call; elsewhere it inlines to one load. The
   callers' own locals stay checked. */
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

/* Whether `size` bytes at addr may be read directly for a frame whose
   stack pointer is sp: aligned, inside [sp, hi). hi must be known. */
static inline bool snap__stack_span(uintptr_t sp, uintptr_t hi, uintptr_t addr,
                                    size_t size) {
  return addr % sizeof(uintptr_t) == 0 && addr >= sp && addr < hi &&
         hi - addr >= size;
}

/* The bounded read: `n` (1 or 2) stack words at addr for a frame whose
   stack pointer is sp, directly when snap__stack_span allows, through the
   checked read (word by word) when hi is 0 (bounds unknown). Every reader
   and the walk's fast path read the stack through this. */
static inline bool snap__stack_read(uintptr_t sp, uintptr_t hi, uintptr_t addr,
                                    uintptr_t *out, int n) {
  if (hi == 0) {
    /* Through a local: handing out itself to the call would keep the
       caller's variable in memory on the direct path too. */
    for (int i = 0; i < n; i++) {
      uintptr_t word, at = addr + (uintptr_t)i * sizeof(uintptr_t);
      if (at % sizeof(uintptr_t) || at < sp ||
          !snap__plat_read(at, &word, sizeof word))
        return false;
      out[i] = word;
    }
    return true;
  }
  if (!snap__stack_span(sp, hi, addr, (size_t)n * sizeof(uintptr_t)))
    return false;
  for (int i = 0; i < n; i++)
    out[i] = snap__stack_word(addr + (uintptr_t)i * sizeof(uintptr_t));
  return true;
}

/* One stack word at the cursor's frame. */
static inline bool snap__cursor_read(const snap__cursor_t *c, uintptr_t addr,
                                     uintptr_t *out) {
  return snap__stack_read(c->regs.sp, c->hi, addr, out, 1);
}

/* ---- The emitter -------------------------------------------------------- */

/* Where walks put their pcs: applies skip, SNAP_CAPTURE_APP_ONLY and max. */
typedef struct snap__emitter {
  uintptr_t *pcs;
  int max, n, skip;
  bool app_only;
  snap__cursor_t *cursor; /* for the image table, when app_only */
} snap__emitter_t;

/* Whether pc (exact, or a return address) lies in app code. */
bool snap__emit_is_app(snap__emitter_t *e, uintptr_t pc, bool exact);

/* One pc: skipped while skip lasts, then dropped unless app code (with
   app_only), then stored. Returns false once the buffer is full. */
static inline bool snap__emit(snap__emitter_t *e, uintptr_t pc, bool exact) {
  if (e->n >= e->max)
    return false;
  if (e->skip > 0) {
    e->skip--;
    return true;
  }
  if (e->app_only && !snap__emit_is_app(e, pc, exact))
    return true;
  e->pcs[e->n++] = pc;
  return e->n < e->max;
}

/* Where up to `want` return addresses may be written straight into the
   caller's buffer: when nothing is left to skip, nothing is filtered and
   they all fit, emitting them is storing them in order. NULL otherwise;
   after writing k there, snap__emit_stored(e, k). */
static inline uintptr_t *snap__emit_slots(snap__emitter_t *e, int want) {
  if (e->skip > 0 || e->app_only || e->max - e->n < want)
    return NULL;
  return e->pcs + e->n;
}

/* The k return addresses written at snap__emit_slots are emitted. Returns
   false once the buffer is full. */
static inline bool snap__emit_stored(snap__emitter_t *e, int k) {
  e->n += k;
  return e->n < e->max;
}

/* k return addresses, in order: exactly snap__emit(e, ras[i], false) for
   each until the buffer is full, with the filter-free case as one copy.
   Returns false once the buffer is full. */
static inline bool snap__emit_returns(snap__emitter_t *e, const uintptr_t *ras,
                                      int k) {
  int i = 0;
  if (e->n >= e->max)
    return false;
  if (!e->app_only) {
    int skipped = e->skip < k ? e->skip : k;
    e->skip -= skipped;
    i = skipped;
    int room = e->max - e->n, take = k - i < room ? k - i : room;
    memcpy(e->pcs + e->n, ras + i, (size_t)take * sizeof *ras);
    e->n += take;
    return e->n < e->max;
  }
  for (; i < k; i++)
    if (!snap__emit(e, ras[i], false))
      return false;
  return e->n < e->max;
}

/* ---- Frame readers ------------------------------------------------------ */

/* A frame reader: knows one way of finding the caller of the cursor's
   frame. The walk tries the readers of its table in order (readers.h);
   a reader that does not apply answers SNAP__STEP_DECLINE. `needs`: flags
   the reader runs only with; `skips`: flags it never runs with. */
typedef struct snap__reader {
  const char *name;
  unsigned needs, skips;
  int (*step)(snap__cursor_t *c, snap__emitter_t *e);
} snap__reader_t;

#endif /* SNAP_CAPTURE_CURSOR_H */
