/*
 * fp_recover.c — the frame pointer a walk was not given: finding the frame
 * record of a function whose unwind rule counts from fp, when fp is
 * unknown (snap__fp_recover).
 *
 * Why: a thread sampled without a signal (SNAP_CAPTURE_QUIET, capture.c)
 * starts from the sp and pc the kernel publishes, not fp. Call-frame
 * information crosses libc's frames from sp alone, but the first app
 * function built with frame pointers (CFA = fp + K) ends the walk: the
 * libc functions under it never saved fp, so its value is the live
 * register nobody published. Its frame record is still on the stack,
 * between sp and the CFA.
 *
 * Algorithm: read the words above sp (SCAN_BYTES, through snap__plat_read:
 * the stack is another thread's); each aligned word P is a candidate fp
 * when [P] [P + 8] reads as a record whose return address
 *   - lies in an executable range of a loaded image,
 *   - follows a DIRECT call (snap__call_before) whose target is the first
 *     byte of this very function (its FDE's pc_begin),
 *   - is the one the function's own rule finds from P (snap__rule_next).
 * The first candidate from sp up wins. Why only direct calls: between sp
 * and the record lie the function's uninitialised locals, where the
 * frames of earlier calls left whole stale chains ([fp, return address]
 * pairs that unwind consistently to real outer frames). Seen: a stale
 * record of clock_gettime's (which calls the vDSO through a register)
 * accepted as the caller of a function that later called poll. Only the
 * slot a call to this function pushed holds a return address right after
 * a call to it, so a function reached through a pointer, a PLT stub or a
 * tail call is not recovered and ends the walk: shorter, never wrong.
 *
 * Must not: read the stack except through snap__plat_read, allocate, or
 * lock. Runs on the sampler's thread, never in the stopped window.
 */
#include "capture/fp_recover.h"

#include "capture/arch.h"
#include "capture/readers.h"

#define SCAN_BYTES 2048

/* As many words above sp as read, up to SCAN_BYTES: a stack may end
   sooner. */
static size_t read_above(uintptr_t sp, uintptr_t *buf) {
  for (size_t n = SCAN_BYTES; n >= 64; n /= 2)
    if (snap__plat_read(sp, buf, n))
      return n / sizeof *buf;
  return 0;
}

bool snap__fp_recover(const snap__regs_t *at, bool exact, unsigned flags,
                      snap__regs_t *caller) {
  if (at->fp != 0 || at->sp % sizeof(uintptr_t))
    return false;
  snap__cursor_t c;
  snap__cursor_init(&c, at, exact, flags & ~SNAP_CAPTURE_FP_ONLY, 0);
  bool found = false;
  snap__rule_t rule;
  snap__cursor_rule(&c, &rule);
  uintptr_t pc = snap__cursor_lookup_pc(&c), start, end;
  snap__image_t scratch;
  const snap__image_t *img = snap__cursor_unwind_image(&c, pc, &scratch);
  if (rule.cfa == SNAP__CFA_FP && img &&
      snap__cfi_function_bounds(img, pc, &start, &end)) {
    uintptr_t words[SCAN_BYTES / sizeof(uintptr_t)];
    size_t n = read_above(at->sp, words);
    for (size_t i = 0; i + 1 < n && !found; i++) {
      uintptr_t p = at->sp + i * sizeof(uintptr_t);
      uintptr_t ra = snap__strip_pac(words[i + 1]), target = 0;
      if (p % SNAP__FP_ALIGN || ra == 0 || !snap__cursor_image(&c, ra - 1))
        continue;
      int call = snap__call_before(ra, &target);
      if (call != SNAP__CALL_DIRECT || target != start)
        continue;
      snap__regs_t regs = *at, next;
      regs.fp = p;
      if (snap__rule_next(&rule, &regs, 0, &next) == SNAP__STEP_OK &&
          next.pc == ra) {
        *caller = next;
        found = true;
      }
    }
  }
  snap__cursor_done(&c);
  return found;
}
