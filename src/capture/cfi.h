/*
 * cfi.h — the call-frame-information reader: what the compiler's unwind
 * tables (.eh_frame) say about one pc, reduced to the rule the walker needs
 * to go one frame up.
 */
#ifndef SNAP_CAPTURE_CFI_H
#define SNAP_CAPTURE_CFI_H

#include <stdbool.h>
#include <stdint.h>

#include "images/images.h"

enum snap__cfa_kind {
  SNAP__CFA_NONE = 0,  /* no usable rule here: use frame records */
  SNAP__CFA_SP = 1,    /* CFA = sp + cfa_off */
  SNAP__CFA_FP = 2,    /* CFA = fp + cfa_off */
  SNAP__CFA_SIGNAL = 3 /* a signal-return trampoline: the kernel's frame */
};

enum snap__ra_kind {
  SNAP__RA_UNDEFINED = 0, /* outermost frame: the walk is complete */
  SNAP__RA_AT_CFA = 1,    /* return address at CFA + ra_off */
  SNAP__RA_IN_LR = 2      /* still in the link register (arm64 leaf) */
};

enum snap__fp_kind {
  SNAP__FP_SAME = 0,  /* the caller's fp is the current fp */
  SNAP__FP_AT_CFA = 1 /* saved at CFA + fp_off */
};

typedef struct snap__rule {
  uint8_t cfa; /* enum snap__cfa_kind */
  uint8_t ra;  /* enum snap__ra_kind */
  uint8_t fp;  /* enum snap__fp_kind */
  int32_t cfa_off;
  int32_t ra_off;
  int32_t fp_off;
} snap__rule_t;

/* A frame-record rule: CFA = fp + K, the caller's fp saved at CFA - K and
   the return address at CFA - K + 8, i.e. the record [saved fp, return
   address] sits at fp, as every frame-pointer prologue leaves it (x86_64:
   K = 16; arm64: the frame size on Linux, 16 on Apple). Returns K, else 0. */
static inline intptr_t snap__rule_record_cfa(const snap__rule_t *rule) {
  intptr_t k = rule->cfa_off;
  if (rule->cfa != SNAP__CFA_FP || rule->ra != SNAP__RA_AT_CFA ||
      rule->fp != SNAP__FP_AT_CFA || k < 2 * (intptr_t)sizeof(uintptr_t) ||
      rule->fp_off != -k ||
      rule->ra_off != rule->fp_off + (intptr_t)sizeof(uintptr_t))
    return 0;
  return k;
}

/* The rule at lookup_pc (the exact pc for an interrupted frame, the return
   address minus one for a caller) in img's .eh_frame. Always fills *out;
   SNAP__CFA_NONE when the tables are missing, malformed or use a feature
   this reader does not evaluate (DWARF expressions). Every read stays inside
   [img->unwind_lo, img->unwind_hi). [signal-safe] */
void snap__cfi_find_rule(const snap__image_t *img, uintptr_t lookup_pc,
                         snap__rule_t *out);

/* The function holding pc as its FDE describes it: [*start, *end) =
   [pc_begin, pc_begin + pc_range). False when no FDE covers pc. Reads as
   snap__cfi_find_rule does. [signal-safe] */
bool snap__cfi_function_bounds(const snap__image_t *img, uintptr_t pc,
                               uintptr_t *start, uintptr_t *end);

#endif /* SNAP_CAPTURE_CFI_H */
