/*
 * fuzz_unwind.c — libFuzzer harness for the two readers that parse data an
 * attacker (or a corrupt binary) controls:
 *
 *   mode 0: the CFI reader (rules, and function bounds) over a fake image
 *           whose .eh_frame_hdr and .eh_frame are the input bytes;
 *   mode 1: a whole walk over a stack that is the input bytes, its top bound
 *           the end of the input; with bit 1 of the first byte set, walked
 *           twice, with the fast path and through the reader table alone,
 *           and the two must give the same pcs (a difference aborts).
 *
 * The two walks must read the same memory. A signal frame in the input can
 * send a walk out of it, onto this thread's stack (CI's failure: the fast
 * walk and the table's read different words there). The library keeps a
 * walk out of the walker's own frames (signal_frames.c); the harness keeps
 * the frames above them alike in both walks: walk_twice runs both from one
 * call site (run_walk), through callers alike but for the entry they call
 * (walk_fast, walk_readers), on stack zeroed before each (scrub_stack),
 * with the arguments, pcs and counts on the heap and nothing of ours
 * changed in between. What a walk reads elsewhere through checked reads (a
 * signal frame naming heap or global memory) is the process's own; only
 * an input naming the exact address of something the walks write (their
 * pcs, the rule cache) could still tell the two apart.
 *
 * Built with the library's sources and -fsanitize=fuzzer,address,undefined,
 * so any read outside the input, any overflow and any hang (libFuzzer's
 * timeout) is a finding. CI runs it for a fixed time (SNAP_FUZZ_SECONDS).
 */
#include <stdlib.h>
#include <string.h>

#include "capture/cfi.h"
#include "capture/walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAXPCS 64

/* One differential walk: its arguments, and where its pcs go. */
typedef struct walk_args {
  const snap__regs_t *regs;
  bool exact;
  unsigned flags;
  uintptr_t hi;
  uintptr_t pcs[MAXPCS], first[MAXPCS]; /* this walk's pcs, the first's */
  int n, first_n;
} walk_args_t;

static walk_args_t *volatile g_args;
static void (*volatile g_walk)(void);
static volatile int g_round;

/* The two walks, alike but for the entry they call: their frames hold the
   same words in both walks (everything comes from *g_args). */
__attribute__((noinline)) static void walk_fast(void) {
  walk_args_t *a = g_args;
  a->n =
      snap__walk_bounded(a->regs, a->exact, a->flags, a->hi, a->pcs, MAXPCS, 0);
}

__attribute__((noinline)) static void walk_readers(void) {
  walk_args_t *a = g_args;
  a->n = snap__walk_bounded_readers(a->regs, a->exact, a->flags, a->hi, a->pcs,
                                    MAXPCS, 0);
}

/* The functions below are not instrumented: at -O0 the sanitizers and the
   fuzzer's coverage spill values to the stack, and these frames lie above
   the walker's. */
#define PLAIN noinline, no_sanitize("address", "undefined", "coverage")

/* Zeroes the stack below, where the walks' frames go next: the slots they
   do not write (padding, unused spill slots) then hold the same in both
   walks, not what the calls before each left there. */
__attribute__((PLAIN)) static void scrub_stack(void) {
  unsigned char pad[4096];
  memset(pad, 0, sizeof pad);
  __asm__ volatile("" : : "r"(pad) : "memory");
}

/* Sets the first walk's pcs aside. */
__attribute__((PLAIN)) static void keep_first(void) {
  walk_args_t *a = g_args;
  memcpy(a->first, a->pcs, sizeof a->pcs);
  a->first_n = a->n;
}

/* g_walk, from one call site: the return address above its frame is the
   same in both walks. */
__attribute__((PLAIN)) static void run_walk(void) { g_walk(); }

/* The fast walk, then the reader table's, from one frame that holds no
   round counter (g_round is a global) and one call site. */
__attribute__((PLAIN)) static void walk_twice(void) {
  for (g_round = 0; g_round < 2; g_round++) {
    if (g_round)
      keep_first();
    g_walk = g_round ? walk_readers : walk_fast;
    scrub_stack();
    run_walk();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2 * sizeof(uintptr_t) + 1)
    return 0;
  uint8_t mode = data[0] & 1;
  uintptr_t a, b;
  memcpy(&a, data + 1, sizeof a);
  memcpy(&b, data + 1 + sizeof a, sizeof b);
  size_t off = 1 + 2 * sizeof(uintptr_t);
  size_t n = size - off;
  /* A private, exactly sized copy: ASan flags a read one byte past it. */
  uint8_t *buf = malloc(n ? n : 1);
  memcpy(buf, data + off, n);
  uintptr_t lo = (uintptr_t)buf, hi = lo + n;

  if (mode == 0) {
    snap__image_t img = {0};
    img.start = lo;
    img.end = hi;
    img.unwind_hdr = lo;
    img.unwind_lo = lo;
    img.unwind_hi = hi;
    snap__rule_t rule;
    /* pc: somewhere near the table, as real pcs are near their tables. */
    uintptr_t pc = lo + (a % (n + 64)), start, end;
    snap__cfi_find_rule(&img, pc, &rule);
    /* The function bounds read the same tables: the FDE found must cover
       pc (a crash here is a finding too). */
    if (snap__cfi_function_bounds(&img, pc, &start, &end) &&
        (pc < start || pc >= end))
      abort();
  } else {
    n &= ~(sizeof(uintptr_t) - 1);
    snap__regs_t regs = {a, lo, lo + (b % (n + 1)), 0, (b >> 60) & 1};
    unsigned flags = (unsigned)(b >> 61) & SNAP_CAPTURE_ALL_FLAGS;
    if (data[0] & 2) {
      /* Everything in place before the walks: nothing in this frame
         changes until both are done. */
      walk_args_t *w = malloc(sizeof *w);
      w->regs = &regs, w->exact = b & 1, w->flags = flags, w->hi = lo + n;
      g_args = w;
      walk_twice();
      if (w->first_n != w->n ||
          memcmp(w->first, w->pcs, (size_t)w->n * sizeof(uintptr_t)) != 0)
        abort();
      free(w);
    } else {
      uintptr_t pcs[MAXPCS];
      snap__walk_bounded(&regs, b & 1, flags, lo + n, pcs, MAXPCS, 0);
    }
  }
  free(buf);
  return 0;
}
