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
 * a call to it. Before the scan, the one slot the function's prologue put
 * its record in (prologue.c) is tried, accepted by the same checks but
 * behind any call (a direct one still only to this function): one read,
 * and the only way to a function reached through a pointer. What neither
 * finds (a PLT stub, a tail call, a prologue not read) ends the walk:
 * shorter, never wrong. The
 * answer says so (SNAP__FP_LOST), and capture.c signals such a thread
 * where its wait is one a signal cannot change.
 *
 * Must not: read the stack except through snap__plat_read, allocate, or
 * lock. Runs on the sampler's thread, never in the stopped window.
 */
#include "capture/fp_recover.h"

#include "capture/arch.h"
#include "capture/prologue.h"
#include "capture/readers.h"

/* How far above sp the record is looked for: the function's frame (its
   locals and saved registers; ASan's read interceptor alone keeps 2 KiB
   there), read a chunk at a time so the usual few-word frames cost one
   read. */
#define SCAN_BYTES (16 * 1024)
#define CHUNK_WORDS 128
/* The farthest a prologue's record may lie above the body's sp (a frame
   of pages of locals; beyond it, a prologue read wrong). */
#define PROLOGUE_MAX (1u << 20)

/* Up to CHUNK_WORDS words at addr, fewer where the stack ends. */
static size_t read_chunk(uintptr_t addr, uintptr_t *buf) {
  for (size_t n = CHUNK_WORDS; n >= 2; n /= 2)
    if (snap__plat_read(addr, buf, n * sizeof *buf))
      return n;
  return 0;
}

/* Whether the record at p ([saved fp, ra]) is this function's, called by
   a direct call to start; then *next is its caller. */
static bool is_record(snap__cursor_t *c, const snap__rule_t *rule,
                      const snap__regs_t *at, uintptr_t start, uintptr_t p,
                      uintptr_t ra_word, snap__regs_t *next) {
  uintptr_t ra = snap__strip_pac(ra_word), target = 0;
  if (p % SNAP__FP_ALIGN || ra == 0 || !snap__cursor_image(c, ra - 1))
    return false;
  if (snap__call_before(ra, &target) != SNAP__CALL_DIRECT || target != start)
    return false;
  snap__regs_t regs = *at;
  regs.fp = p;
  return snap__rule_next(rule, &regs, 0, next) == SNAP__STEP_OK &&
         next->pc == ra;
}

/* The record where the function's prologue put it (prologue.c), for a
   function the scan could not vouch for (reached through a pointer): the
   one slot, accepted as is_record accepts one, but behind any call to it
   (a direct one still only to start). */
static bool at_prologue_slot(snap__cursor_t *c, const snap__rule_t *rule,
                             const snap__regs_t *at, uintptr_t start,
                             snap__regs_t *next) {
  uintptr_t off, rec[2], target = 0;
  if (!snap__prologue_record(start, at->pc, &off) || off > PROLOGUE_MAX ||
      !snap__plat_read(at->sp + off, rec, sizeof rec))
    return false;
  uintptr_t p = at->sp + off, ra = snap__strip_pac(rec[1]);
  if (p % SNAP__FP_ALIGN || ra == 0 || !snap__cursor_image(c, ra - 1))
    return false;
  int call = snap__call_before(ra, &target);
  if (call == SNAP__CALL_NONE || (call == SNAP__CALL_DIRECT && target != start))
    return false;
  snap__regs_t regs = *at;
  regs.fp = p;
  return snap__rule_next(rule, &regs, 0, next) == SNAP__STEP_OK &&
         next->pc == ra;
}

snap__fp_recover_t snap__fp_recover(const snap__regs_t *at, bool exact,
                                    unsigned flags, snap__regs_t *caller) {
  if (at->fp != 0 || at->sp % sizeof(uintptr_t))
    return SNAP__FP_NOT_NEEDED;
  snap__cursor_t c;
  snap__cursor_init(&c, at, exact, flags & ~SNAP_CAPTURE_FP_ONLY, 0);
  bool found = false, needed;
  snap__rule_t rule;
  snap__cursor_rule(&c, &rule);
  uintptr_t pc = snap__cursor_lookup_pc(&c), start = 0, end;
  snap__image_t scratch;
  const snap__image_t *img = snap__cursor_unwind_image(&c, pc, &scratch);
  needed = rule.cfa == SNAP__CFA_FP;
  /* The prologue's slot first: one read where the scan costs a checked
     read per KiB up to the record (all SCAN_BYTES of them for a function
     reached through a pointer, which the scan cannot vouch for). */
  if (needed && img && snap__cfi_function_bounds(img, pc, &start, &end))
    found = at_prologue_slot(&c, &rule, at, start, caller);
  if (needed && !found && start) {
    uintptr_t words[CHUNK_WORDS + 1];
    uintptr_t at_addr = at->sp;
    size_t have = 0; /* words[0] carries the previous chunk's last word */
    while (!found && at_addr - at->sp < SCAN_BYTES) {
      size_t n = read_chunk(at_addr, words + have);
      if (n == 0)
        break;
      uintptr_t base = at_addr - have * sizeof(uintptr_t);
      size_t total = have + n;
      for (size_t i = 0; i + 1 < total && !found; i++)
        found = is_record(&c, &rule, at, start, base + i * sizeof(uintptr_t),
                          words[i + 1], caller);
      words[0] = words[total - 1];
      have = 1;
      at_addr += n * sizeof(uintptr_t);
      if (n < CHUNK_WORDS)
        break; /* the stack ended */
    }
  }
  snap__cursor_done(&c);
  return found    ? SNAP__FP_RECOVERED
         : needed ? SNAP__FP_LOST
                  : SNAP__FP_NOT_NEEDED;
}
