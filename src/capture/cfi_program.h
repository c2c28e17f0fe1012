/*
 * cfi_program.h — what cfi.c and cfi_program.c share: the CIE as parsed,
 * the row of the unwind table the walker needs, and the interpreter of
 * call-frame instructions that computes it.
 *
 * Owns: row_t, cie_t, snap__cfi_run. Must not: be included outside the
 * call-frame-information reader. [signal-safe], like all of it.
 */
#ifndef SNAP_CAPTURE_CFI_PROGRAM_H
#define SNAP_CAPTURE_CFI_PROGRAM_H

#include <stdbool.h>
#include <stdint.h>

#include "capture/cfi_reader.h"

/* The registers we track, by DWARF column. */
enum { REG_CFA_SP, REG_CFA_FP, REG_CFA_OTHER, REG_CFA_EXPR };
typedef struct row {
  uint8_t cfa_kind;
  int64_t cfa_off;
  uint8_t ra_kind, fp_kind; /* enum below */
  int64_t ra_off, fp_off;
} row_t;
enum { R_SAME, R_OFFSET, R_UNDEF, R_UNSUPPORTED };

/* Row copies field by field: a struct assignment this size is a memcpy
   call at -O0 (clang), and the reader calls no libc function. */
static inline void row_copy(row_t *to, const row_t *from) {
  to->cfa_kind = from->cfa_kind;
  to->cfa_off = from->cfa_off;
  to->ra_kind = from->ra_kind;
  to->fp_kind = from->fp_kind;
  to->ra_off = from->ra_off;
  to->fp_off = from->fp_off;
}

typedef struct cie {
  uint64_t code_align;
  int64_t data_align;
  uint64_t ra_col;
  uint8_t fde_enc;
  bool has_z, signal;
  uintptr_t insn, insn_end;
} cie_t;

/* Runs instructions [r->p, end) from location `loc`, stopping before the row
   that starts past `target`. init is the CIE's row (for DW_CFA_restore);
   NULL while running the CIE's own instructions. Returns false on garbage.
   [signal-safe] */
bool snap__cfi_run(rd_t *r, uintptr_t end, const cie_t *cie, uintptr_t loc,
                   uintptr_t target, row_t *row, const row_t *init);

#endif /* SNAP_CAPTURE_CFI_PROGRAM_H */
