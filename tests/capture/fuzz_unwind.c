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
 * Built with the library's sources and -fsanitize=fuzzer,address,undefined,
 * so any read outside the input, any overflow and any hang (libFuzzer's
 * timeout) is a finding. CI runs it for a fixed time (SNAP_FUZZ_SECONDS).
 */
#include <stdlib.h>
#include <string.h>

#include "capture/cfi.h"
#include "capture/walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
    uintptr_t pcs[64], slow[64];
    unsigned flags = (unsigned)(b >> 61) & SNAP_CAPTURE_ALL_FLAGS;
    int got = snap__walk_bounded(&regs, b & 1, flags, lo + n, pcs, 64, 0);
    if (data[0] & 2) {
      int want =
          snap__walk_bounded_readers(&regs, b & 1, flags, lo + n, slow, 64, 0);
      if (got != want || memcmp(pcs, slow, (size_t)got * sizeof *pcs) != 0)
        abort();
    }
  }
  free(buf);
  return 0;
}
