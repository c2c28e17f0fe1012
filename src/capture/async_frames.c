/*
 * async_frames.c — the Swift async reader (the async half of Apple Libc's
 * thread_stack_async_pcs).
 *
 * A Swift async function's frame record is "extended": the saved fp has bits
 * 63:60 = 0b0001 and the word just below the record holds the task's async
 * context. Contexts form the logical call chain: word 0 is the parent
 * context, word 1 the pc where the parent resumes. With SNAP_CAPTURE_ASYNC
 * the walk follows that chain instead of the OS stack (which beyond this
 * point is only the executor's machinery).
 *
 * Resume pcs are the first instruction of a continuation funclet; symbolizers
 * look up return addresses at pc - 1, so each is stored + 1 (as Apple does).
 *
 * The tagged record at fp must be the current frame's own. Apple's walker
 * may assume it (every function keeps a record there); on Linux a function
 * without frame pointers (Debian's libc) leaves fp at an ancestor's record,
 * so a task blocked in usleep() has fp at its async function's record while
 * the cursor is still in libc. Taking the chain there would put the async
 * function's callers in place of libc's frames and of the async function's
 * own frame (seen with Swift 6.3 on x86_64: tests/swift). So the frame's
 * unwind rule decides: the record is its own when the rule restores the
 * caller's fp from exactly the word fp points to. Without a rule the record
 * reader would take the record as the frame's own, and so does this.
 *
 * Contexts live on the heap, not the stack: every context read goes through
 * snap__plat_read. The chain is bounded by the output buffer and a hop
 * budget, and a context pointer must be aligned.
 *
 * Pointer authentication (arm64e): the prologue of a Swift async function
 * stores its context at fp - 8 signed with the DB key, discriminated by the
 * slot's address blended with 0xc31a (LLVM's AArch64 frame lowering; see
 * docs/apple.md), and the context's own words are signed too (parent: DA,
 * resume pc: IA). System code does this even in an arm64 app, so every one
 * of them is stripped before use, whatever the build.
 *
 * A chain that yields nothing (its first context unreadable, or no resume
 * pc) is no reason to end the stack: the reader then declines and the walk
 * goes on along the OS stack, which is still well-formed below an extended
 * record. A chain that yields frames is the rest of the stack: the reader
 * emits it and answers SNAP__STEP_EMITTED.
 *
 * Must not: follow an unaligned or unreadable context.
 */
#include "capture/link_register.h"
#include "capture/readers.h"

/* Whether the record at fp is the current frame's own: by the frame's
   unwind rule, the caller's fp is saved exactly at fp (x86_64: CFA = rbp +
   16, rbp at CFA - 16; arm64 GCC: CFA = x29 + frame size, x29 at CFA -
   frame size; Swift's async prologues alike). A rule that keeps the
   caller's fp in its register (libc without frame pointers) or saves it
   elsewhere says the record is an ancestor's. Without an ordinary rule
   (Apple's images, JIT code, FP_ONLY) the record is taken as the frame's
   own, as the frame-record reader would. */
static bool owns_record(snap__cursor_t *c, uintptr_t fp) {
  if (c->flags & SNAP_CAPTURE_FP_ONLY)
    return true;
  snap__rule_t rule;
  snap__cursor_rule(c, &rule);
  if (rule.cfa == SNAP__CFA_SIGNAL)
    return false; /* a trampoline: the kernel's frame comes first */
  if (rule.cfa != SNAP__CFA_SP && rule.cfa != SNAP__CFA_FP)
    return true;
  if (rule.fp != SNAP__FP_AT_CFA)
    return false;
  uintptr_t cfa = (rule.cfa == SNAP__CFA_SP ? c->regs.sp : c->regs.fp) +
                  (intptr_t)rule.cfa_off;
  return cfa + (intptr_t)rule.fp_off == fp;
}

/* If the current frame is a Swift extended frame whose chain should be
   followed, returns true with the first async context in *ctx. */
static bool async_frame(snap__cursor_t *c, uintptr_t *ctx) {
  uintptr_t fp = c->regs.fp, saved_fp;
  if (fp % SNAP__FP_ALIGN || fp < c->regs.sp + sizeof(uintptr_t) ||
      !snap__cursor_read(c, fp, &saved_fp) || !snap__is_async_tagged(saved_fp))
    return false;
  if (!snap__plat_async_task_active())
    return false; /* a stray tag outside any task: walk the OS stack */
  if (!owns_record(c, fp))
    return false; /* an ancestor's record: unwind this frame first */
  uintptr_t context;
  if (!snap__cursor_read(c, fp - sizeof(uintptr_t), &context) ||
      !(context = snap__strip_pac(context)))
    return false;
  *ctx = context;
  return true;
}

/* Emits the async context chain starting at ctx (resume pc + 1 for each).
   Returns the number of contexts it followed: 0 when the first one is
   unreadable. */
static int async_chain(snap__emitter_t *e, uintptr_t ctx) {
  int hops = 0;
  while (hops < 2 * SNAP_MAX_FRAMES && ctx) {
    uintptr_t words[2]; /* parent, resume pc */
    if (ctx % sizeof(uintptr_t) || !snap__plat_read(ctx, words, sizeof words))
      break;
    uintptr_t resume = snap__strip_pac(words[1]);
    if (!resume)
      break;
    hops++;
    if (!snap__emit(e, resume + 1, false))
      break;
    ctx = snap__strip_pac(words[0]);
  }
  return hops;
}

/* The async chain replaces the rest of the OS stack, but only once a
   pending link register has been handed out (it names the async function a
   leaf was called from), and only if it yields a frame. */
static int async_step(snap__cursor_t *c, snap__emitter_t *e) {
  uintptr_t ctx;
  if (snap__lr_pending(c) || !async_frame(c, &ctx) || async_chain(e, ctx) == 0)
    return SNAP__STEP_DECLINE;
  return SNAP__STEP_EMITTED;
}

const snap__reader_t snap__async_reader = {"Swift async contexts",
                                           SNAP_CAPTURE_ASYNC, 0, async_step};
