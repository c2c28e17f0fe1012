/*
 * cfi_program.c — runs the call-frame instructions of a CIE and an FDE up
 * to a pc (step 3 of cfi.c's algorithm), tracking only what the walker
 * uses: the CFA rule, and where the return address and the frame pointer
 * were saved. A CFA given as a DWARF expression is evaluated when it
 * reduces to sp plus a constant at that pc (the PLT stub's); register
 * rules given as expressions are not.
 *
 * Owns: snap__cfi_run and the expression evaluator. Must not: trust the
 * instructions (every read through cfi_reader.h; the remember-state stack,
 * the expression stack and the instruction count are bounded, so a
 * hostile program ends in false, never a wild read or an endless loop);
 * allocate, lock or call libc: it runs in the stopped window
 * (tests/capture/cfi_imports.cmake checks this object's imports too).
 */
#include <stddef.h>

#include "capture/arch.h"
#include "capture/cfi_program.h"
#include "capture/cfi_reader.h"

#define STATE_STACK 8

static void set_reg(row_t *row, uint64_t col, uint8_t kind, int64_t off) {
  if (col == SNAP__DW_FP) {
    row->fp_kind = kind;
    row->fp_off = off;
  }
  if (col == SNAP__DW_RA) {
    row->ra_kind = kind;
    row->ra_off = off;
  }
}

static void restore_reg(row_t *row, const row_t *init, uint64_t col) {
  if (col == SNAP__DW_FP) {
    row->fp_kind = init->fp_kind;
    row->fp_off = init->fp_off;
  }
  if (col == SNAP__DW_RA) {
    row->ra_kind = init->ra_kind;
    row->ra_off = init->ra_off;
  }
}

static void set_cfa_reg(row_t *row, uint64_t reg) {
  row->cfa_kind = reg == SNAP__DW_SP   ? REG_CFA_SP
                  : reg == SNAP__DW_FP ? REG_CFA_FP
                                       : REG_CFA_OTHER;
}

/* A CFA given as a DWARF expression. Compilers and linkers write them for
   code whose frame size depends on where in it the pc is — the x86_64 PLT
   stub says CFA = rsp + 8 + ((rip & 15) >= 11 ? 8 : 0). With the pc known,
   such an expression is sp plus a constant, which is what this evaluates:
   values are tracked as constants or as "sp + constant", the pc register
   reads as pc, and any other register or an operation on sp other than
   adding or subtracting a constant fails (the walker then falls back). */
#define EXPR_STACK 8
static bool eval_cfa_expr(rd_t *r, uintptr_t end, uintptr_t pc,
                          int64_t *sp_off) {
  struct {
    bool sp;
    uint64_t v;
  } st[EXPR_STACK];
  int n = 0;
  for (int budget = 0; r->p < end && budget < 64; budget++) {
    uint8_t op = rd_u8(r);
    uint64_t k;
    if (op >= 0x30 && op <= 0x4f) { /* lit0..lit31 */
      k = op - 0x30;
      goto push_const;
    }
    if ((op >= 0x70 && op <= 0x8f) || op == 0x92) { /* breg0..31, bregx */
      uint64_t reg = op == 0x92 ? rd_uleb(r) : (uint64_t)(op - 0x70);
      int64_t off = rd_sleb(r);
      if (n == EXPR_STACK)
        return false;
      if (reg == SNAP__DW_SP)
        st[n].sp = true, st[n++].v = (uint64_t)off;
      else if (reg == SNAP__DW_PC)
        st[n].sp = false, st[n++].v = pc + (uint64_t)off;
      else
        return false;
      continue;
    }
    switch (op) {
    case 0x08: k = rd_u8(r); goto push_const; /* const1u */
    case 0x09: k = (uint64_t)(int8_t)rd_u8(r); goto push_const;
    case 0x0a: k = rd_u(r, 2); goto push_const;
    case 0x0b: k = (uint64_t)(int16_t)rd_u(r, 2); goto push_const;
    case 0x0c: k = rd_u(r, 4); goto push_const;
    case 0x0d: k = (uint64_t)(int32_t)rd_u(r, 4); goto push_const;
    case 0x10: k = rd_uleb(r); goto push_const;           /* constu */
    case 0x11: k = (uint64_t)rd_sleb(r); goto push_const; /* consts */
    case 0x23:                                            /* plus_uconst */
      if (n < 1)
        return false;
      st[n - 1].v += rd_uleb(r);
      continue;
    default: break;
    }
    /* Binary operators. */
    if (n < 2)
      return false;
    uint64_t a = st[n - 2].v, b = st[n - 1].v, v;
    bool asp = st[n - 2].sp, bsp = st[n - 1].sp, sp = false;
    if (op == 0x22) { /* plus */
      if (asp && bsp)
        return false;
      v = a + b, sp = asp || bsp;
    } else if (op == 0x1c) { /* minus */
      if (bsp)
        return false;
      v = a - b, sp = asp;
    } else {
      if (asp || bsp)
        return false;
      switch (op) {
      case 0x1a: v = a & b; break;
      case 0x1e: v = a * b; break;
      case 0x21: v = a | b; break;
      case 0x24: v = b < 64 ? a << b : 0; break;
      case 0x25: v = b < 64 ? a >> b : 0; break;
      case 0x27: v = a ^ b; break;
      case 0x29: v = a == b; break;
      case 0x2a: v = (int64_t)a >= (int64_t)b; break;
      case 0x2b: v = (int64_t)a > (int64_t)b; break;
      case 0x2c: v = (int64_t)a <= (int64_t)b; break;
      case 0x2d: v = (int64_t)a < (int64_t)b; break;
      case 0x2e: v = a != b; break;
      default: return false;
      }
    }
    n--;
    st[n - 1].sp = sp, st[n - 1].v = v;
    continue;
  push_const:
    if (n == EXPR_STACK)
      return false;
    st[n].sp = false, st[n++].v = k;
  }
  if (r->bad || r->p != end || n < 1 || !st[n - 1].sp)
    return false;
  *sp_off = (int64_t)st[n - 1].v;
  return true;
}

/* Runs instructions [r->p, end) from location `loc`, stopping before the row
   that starts past `target`. init is the CIE's row (for DW_CFA_restore);
   NULL while running the CIE's own instructions. Returns false on garbage. */
bool snap__cfi_run(rd_t *r, uintptr_t end, const cie_t *cie, uintptr_t loc,
                   uintptr_t target, row_t *row, const row_t *init) {
  row_t stack[STATE_STACK];
  int depth = 0;
  /* A bound on instructions keeps a hostile loop of nops finite. */
  for (int budget = 0; r->p < end && budget < 4096; budget++) {
    uint8_t op = rd_u8(r);
    uint64_t col, delta = 0;
    bool advance = false;
    switch (op >> 6) {
    case 1: /* DW_CFA_advance_loc */
      delta = (op & 0x3f) * cie->code_align;
      advance = true;
      break;
    case 2: /* DW_CFA_offset */
      set_reg(row, op & 0x3f, R_OFFSET,
              scaled((int64_t)rd_uleb(r), cie->data_align));
      break;
    case 3: /* DW_CFA_restore */
      if (init)
        restore_reg(row, init, op & 0x3f);
      break;
    default:
      switch (op) {
      case 0x00: break; /* nop */
      case 0x01: {      /* set_loc */
        uint64_t to = rd_encoded(r, cie->fde_enc, 0);
        if (to > target)
          return !r->bad;
        loc = (uintptr_t)to;
        break;
      }
      case 0x02:
        delta = rd_u8(r) * cie->code_align;
        advance = true;
        break;
      case 0x03:
        delta = rd_u(r, 2) * cie->code_align;
        advance = true;
        break;
      case 0x04:
        delta = rd_u(r, 4) * cie->code_align;
        advance = true;
        break;
      case 0x05: /* offset_extended */
        col = rd_uleb(r);
        set_reg(row, col, R_OFFSET,
                scaled((int64_t)rd_uleb(r), cie->data_align));
        break;
      case 0x06: /* restore_extended */
        col = rd_uleb(r);
        if (init)
          restore_reg(row, init, col);
        break;
      case 0x07: set_reg(row, rd_uleb(r), R_UNDEF, 0); break;
      case 0x08: set_reg(row, rd_uleb(r), R_SAME, 0); break;
      case 0x09: /* register: saved in another register */
        col = rd_uleb(r);
        (void)rd_uleb(r);
        set_reg(row, col, R_UNSUPPORTED, 0);
        break;
      case 0x0a: /* remember_state */
        if (depth == STATE_STACK)
          return false;
        row_copy(&stack[depth++], row);
        break;
      case 0x0b: /* restore_state */
        /* Restores the CFA rule too: GCC's libgcc and LLVM's libunwind both
           do, and GCC's epilogue CFI relies on it. */
        if (depth == 0)
          return false;
        row_copy(row, &stack[--depth]);
        break;
      case 0x0c: /* def_cfa */
        set_cfa_reg(row, rd_uleb(r));
        row->cfa_off = (int64_t)rd_uleb(r);
        break;
      case 0x0d: set_cfa_reg(row, rd_uleb(r)); break; /* def_cfa_register */
      case 0x0e: row->cfa_off = (int64_t)rd_uleb(r); break;
      case 0x0f: { /* def_cfa_expression */
        uint64_t len = rd_uleb(r);
        uintptr_t expr_end = r->p + len;
        int64_t off;
        if (expr_end >= r->p && eval_cfa_expr(r, expr_end, target, &off)) {
          row->cfa_kind = REG_CFA_SP;
          row->cfa_off = off;
        } else {
          row->cfa_kind = REG_CFA_EXPR;
        }
        r->p = expr_end;
        break;
      }
      case 0x10:   /* expression */
      case 0x16: { /* val_expression */
        col = rd_uleb(r);
        uint64_t len = rd_uleb(r);
        set_reg(row, col, R_UNSUPPORTED, 0);
        r->p += len;
        break;
      }
      case 0x11: /* offset_extended_sf */
        col = rd_uleb(r);
        set_reg(row, col, R_OFFSET, scaled(rd_sleb(r), cie->data_align));
        break;
      case 0x12: /* def_cfa_sf */
        set_cfa_reg(row, rd_uleb(r));
        row->cfa_off = scaled(rd_sleb(r), cie->data_align);
        break;
      case 0x13: row->cfa_off = scaled(rd_sleb(r), cie->data_align); break;
      case 0x14: /* val_offset */
      case 0x15: /* val_offset_sf */
        col = rd_uleb(r);
        (void)(op == 0x14 ? (int64_t)rd_uleb(r) : rd_sleb(r));
        set_reg(row, col, R_UNSUPPORTED, 0);
        break;
      case 0x2d: break; /* AArch64 negate_ra_state: we strip PAC anyway */
      case 0x2e: (void)rd_uleb(r); break; /* GNU_args_size */
      case 0x2f:                          /* GNU_negative_offset_extended */
        col = rd_uleb(r);
        set_reg(row, col, R_OFFSET,
                scaled((int64_t)(0 - rd_uleb(r)), cie->data_align));
        break;
      default: return false; /* unknown opcode: operands unknown too */
      }
    }
    if (r->bad)
      return false;
    if (advance) {
      if (loc + delta > target)
        return true;
      loc += delta;
    }
  }
  return !r->bad;
}
