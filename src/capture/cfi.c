/*
 * cfi.c — reads .eh_frame call-frame information, async-signal-safely.
 *
 * Algorithm, for one pc (steps 1 and 2 alone also give the bounds of the
 * function holding pc, which tell a stale link register from a live one):
 *  1. Binary-search the image's .eh_frame_hdr table (sorted pairs of
 *     [initial location, FDE address], both 4-byte offsets from the header)
 *     for the last FDE starting at or before pc.
 *  2. Decode that FDE and its CIE (augmentation "z", pointer encodings
 *     'R'/'P'/'L', signal frames 'S', arm64 B-key 'B').
 *  3. Run the CIE's initial instructions, then the FDE's, stopping at the
 *     first row past pc, tracking only what the walker uses: the CFA rule and
 *     where the return address and the frame pointer were saved.
 *
 * Why our own and not libgcc or libunwind: the walk starts from given
 * registers (another thread's, stopped at any instruction), and libgcc's
 * unwinder starts only from its own caller (_Unwind_Backtrace); and both
 * read an image's tables as trusted memory, unchecked: a malformed table,
 * or one a dlclose unmaps mid-walk, faults in the stopped window. Here
 * every read is bounded, and the tables were located outside the stopped
 * window (images.c). (Not the loader lock: libgcc >= 12 finds FDEs
 * through glibc's lock-free _dl_find_object.)
 *
 * Safety: every byte read is checked against [unwind_lo, unwind_hi), the
 * read-only segment holding the tables; malformed tables end in
 * SNAP__CFA_NONE, never a wild read. Tables of an image record the walk
 * made from the loader's lock-free answer (read_safely: the image table
 * did not know the image, live_images.h) are copied through
 * snap__plat_read, which cannot fault: their bounds are the whole mapping,
 * holes included, and a dlclose may unmap them at any instant. No
 * allocation, no lock, no libc call at any optimisation level: no
 * memcpy/memset, and no struct copy or zeroing large enough for a compiler
 * to make one; the one call out is snap__plat_read, for those records
 * (tests/capture/cfi_imports.cmake reads the object's imports with nm).
 * DWARF expressions: a CFA expression that reduces to sp + constant at the
 * pc (the PLT stub's) is evaluated; register rules given as expressions are
 * not, and the walker falls back to frame records there. A CIE marked 'S'
 * is reported as a signal frame, which the platform decodes.
 */
#include "capture/cfi.h"

#include <stddef.h>

#include "capture/arch.h"
#include "platform/platform.h"

/* Bounded byte reader over one segment; with `safe`, through a window of
   WINDOW bytes copied by snap__plat_read (on Linux a process_vm_readv
   system call, ~1 us: a copy per field would make one lookup cost ms). */
#define WINDOW 64
typedef struct rd {
  uintptr_t p, lo, hi;
  bool bad;
  bool safe;
  uintptr_t win_at; /* the window holds [win_at, win_at + win_len) */
  size_t win_len;
  uint8_t win[WINDOW];
} rd_t;

static bool rd_ok(rd_t *r, size_t n) {
  if (r->bad || r->p < r->lo || r->p > r->hi || r->hi - r->p < n) {
    r->bad = true;
    return false;
  }
  return true;
}

/* Unaligned little-endian loads (the tables pack their fields). Not
   memcpy: at -O0 and under ThreadSanitizer that is a call into libc (or the
   sanitizer's interceptor), and this file promises none. Loads through
   these types are one instruction at every optimisation level; may_alias
   because the bytes are not objects of these types. */
typedef uint16_t __attribute__((aligned(1), may_alias)) u16_bytes;
typedef uint32_t __attribute__((aligned(1), may_alias)) u32_bytes;
typedef uint64_t __attribute__((aligned(1), may_alias)) u64_bytes;

/* n (<= 8) bytes at r->p, little-endian, through the window, refilled
   from r->p when it does not hold them; a refill that meets unmapped memory
   retries with just the n bytes (a table may end right before a hole).
   Assembled by shifts: a byte-copy loop could become a memcpy call. */
static __attribute__((noinline)) uint64_t rd_window(rd_t *r, size_t n) {
  if (r->p < r->win_at || r->p - r->win_at > r->win_len ||
      r->win_len - (r->p - r->win_at) < n) {
    size_t len = r->hi - r->p < WINDOW ? (size_t)(r->hi - r->p) : WINDOW;
    if (!snap__plat_read(r->p, r->win, len)) {
      len = n;
      if (!snap__plat_read(r->p, r->win, len)) {
        r->win_len = 0;
        r->bad = true;
        return 0;
      }
    }
    r->win_at = r->p;
    r->win_len = len;
  }
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++)
    v |= (uint64_t)r->win[r->p - r->win_at + i] << (8 * i);
  return v;
}

/* Inlined: every caller passes a constant n, so the switch folds to one
   load. Little-endian targets only (x86_64, arm64). */
static inline __attribute__((always_inline)) uint64_t rd_u(rd_t *r, size_t n) {
  if (!rd_ok(r, n))
    return 0;
  uint64_t v;
  if (r->safe) {
    v = rd_window(r, n);
    if (r->bad)
      return 0;
    r->p += n;
    return v;
  }
  switch (n) {
  case 1: v = *(const uint8_t *)r->p; break;
  case 2: v = *(const u16_bytes *)r->p; break;
  case 4: v = *(const u32_bytes *)r->p; break;
  default: v = *(const u64_bytes *)r->p; break; /* 8: the only other size */
  }
  r->p += n;
  return v;
}

static uint8_t rd_u8(rd_t *r) { return (uint8_t)rd_u(r, 1); }

static uint64_t rd_uleb(rd_t *r) {
  uint64_t v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    uint8_t b = rd_u8(r);
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80) || r->bad)
      return v;
  }
  r->bad = true; /* longer than any 64-bit value */
  return 0;
}

static int64_t rd_sleb(rd_t *r) {
  int64_t v = 0;
  unsigned shift = 0;
  uint8_t b;
  do {
    if (shift >= 64) {
      r->bad = true;
      return 0;
    }
    b = rd_u8(r);
    v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
    shift += 7;
  } while ((b & 0x80) && !r->bad);
  if (shift < 64 && (b & 0x40))
    v = (int64_t)((uint64_t)v | (~(uint64_t)0 << shift)); /* sign-extend */
  return v;
}

/* Factored offsets times alignment factors. Hostile tables can make the
   product overflow; wrap (as the hardware would) instead of invoking
   undefined behaviour, and let the range checks reject the result. */
static int64_t scaled(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a * (uint64_t)b);
}

/* DW_EH_PE_* pointer encodings. */
#define PE_OMIT 0xff
#define PE_FMT(e) ((e)&0x0f)
#define PE_APP(e) ((e)&0x70)
#define PE_INDIRECT 0x80

static uint64_t rd_encoded(rd_t *r, uint8_t enc, uintptr_t datarel) {
  if (enc == PE_OMIT) {
    r->bad = true;
    return 0;
  }
  uintptr_t at = r->p;
  uint64_t v;
  switch (PE_FMT(enc)) {
  case 0x00: v = rd_u(r, sizeof(uintptr_t)); break; /* absptr */
  case 0x01: v = rd_uleb(r); break;
  case 0x02: v = rd_u(r, 2); break;
  case 0x03: v = rd_u(r, 4); break;
  case 0x04: v = rd_u(r, 8); break;
  case 0x09: v = (uint64_t)rd_sleb(r); break;
  case 0x0a: v = (uint64_t)(int64_t)(int16_t)rd_u(r, 2); break;
  case 0x0b: v = (uint64_t)(int64_t)(int32_t)rd_u(r, 4); break;
  case 0x0c: v = rd_u(r, 8); break;
  default: r->bad = true; return 0;
  }
  switch (PE_APP(enc)) {
  case 0x00: break;
  case 0x10: v += at; break;        /* pcrel */
  case 0x30: v += datarel; break;   /* datarel: from the .eh_frame_hdr */
  default: r->bad = true; return 0; /* textrel/funcrel/aligned: unused */
  }
  if (enc & PE_INDIRECT)
    r->bad = true; /* would dereference a data pointer: not needed here */
  return v;
}

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
   call at -O0 (clang), and this file calls no libc function. */
static void row_copy(row_t *to, const row_t *from) {
  to->cfa_kind = from->cfa_kind;
  to->cfa_off = from->cfa_off;
  to->ra_kind = from->ra_kind;
  to->fp_kind = from->fp_kind;
  to->ra_off = from->ra_off;
  to->fp_off = from->fp_off;
}

#define STATE_STACK 8

typedef struct cie {
  uint64_t code_align;
  int64_t data_align;
  uint64_t ra_col;
  uint8_t fde_enc;
  bool has_z, signal;
  uintptr_t insn, insn_end;
} cie_t;

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
static bool run(rd_t *r, uintptr_t end, const cie_t *cie, uintptr_t loc,
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

static bool parse_cie(rd_t *r, uintptr_t cie_at, cie_t *cie) {
  r->p = cie_at;
  uint64_t len = rd_u(r, 4);
  if (len == 0xffffffffu || len == 0)
    return false; /* 64-bit DWARF never appears in .eh_frame in practice */
  uintptr_t end = r->p + len;
  if (rd_u(r, 4) != 0) /* CIE id is 0 in .eh_frame */
    return false;
  uint8_t version = rd_u8(r);
  if (version != 1 && version != 3)
    return false;
  char aug[8];
  size_t alen = 0;
  for (;;) {
    char c = (char)rd_u8(r);
    if (r->bad || alen == sizeof aug)
      return false;
    aug[alen++] = c;
    if (!c)
      break;
  }
  cie->code_align = rd_uleb(r);
  cie->data_align = rd_sleb(r);
  cie->ra_col = version == 1 ? rd_u8(r) : rd_uleb(r);
  cie->fde_enc = 0; /* absptr */
  cie->has_z = aug[0] == 'z';
  cie->signal = false;
  if (cie->has_z) {
    uint64_t zlen = rd_uleb(r);
    uintptr_t zend = r->p + zlen;
    bool known = true;
    for (size_t i = 1; aug[i] && known; i++) {
      switch (aug[i]) {
      case 'R': cie->fde_enc = rd_u8(r); break;
      case 'L': (void)rd_u8(r); break;
      case 'P': (void)rd_encoded(r, rd_u8(r) & 0x7f, 0); break;
      case 'S': cie->signal = true; break;
      case 'B':
      case 'G': break;
      default: known = false; break; /* its data is skipped with zend */
      }
    }
    r->p = zend;
  } else if (aug[0]) {
    return false; /* pre-'z' augmentations carry data we cannot size */
  }
  cie->insn = r->p;
  cie->insn_end = end;
  return !r->bad && cie->ra_col == SNAP__DW_RA && cie->code_align != 0 &&
         end <= r->hi;
}

/* Step 1: binary search of .eh_frame_hdr. Returns the FDE address or 0. */
static uintptr_t find_fde(rd_t *r, uintptr_t hdr, uintptr_t pc) {
  r->p = hdr;
  uint8_t version = rd_u8(r), ptr_enc = rd_u8(r), count_enc = rd_u8(r),
          table_enc = rd_u8(r);
  if (r->bad || version != 1 || ptr_enc == PE_OMIT)
    return 0;
  (void)rd_encoded(r, ptr_enc, hdr);             /* eh_frame_ptr: not needed */
  if (count_enc == PE_OMIT || table_enc != 0x3b) /* datarel|sdata4 */
    return 0;
  uint64_t count = rd_encoded(r, count_enc, hdr);
  uintptr_t table = r->p;
  if (r->bad || count == 0 || count > (r->hi - table) / 8)
    return 0;
  uint64_t lo = 0, hi = count;
  while (hi - lo > 1) { /* invariant: entry lo starts at or before pc */
    uint64_t mid = lo + (hi - lo) / 2;
    r->p = table + mid * 8;
    uintptr_t start = hdr + (uintptr_t)(int64_t)(int32_t)rd_u(r, 4);
    if (start <= pc)
      lo = mid;
    else
      hi = mid;
  }
  r->p = table + lo * 8;
  uintptr_t start = hdr + (uintptr_t)(int64_t)(int32_t)rd_u(r, 4);
  uintptr_t fde = hdr + (uintptr_t)(int64_t)(int32_t)rd_u(r, 4);
  if (r->bad || start > pc)
    return 0;
  return fde;
}

/* Steps 1 and 2 up to the FDE's instructions: the FDE covering pc, its
   CIE, and the function range [*pc_begin, *pc_begin + *pc_range) it
   describes; r is left at the FDE's instructions, *fde_end past them.
   False when no FDE covers pc (a gap between FDEs included). */
static bool find_fde_for(const snap__image_t *img, uintptr_t pc, rd_t *r,
                         rd_t *cr, cie_t *cie, uintptr_t *pc_begin,
                         uintptr_t *pc_range, uintptr_t *fde_end) {
  if (!img || !img->unwind_hdr)
    return false;
  r->p = 0, r->lo = img->unwind_lo, r->hi = img->unwind_hi, r->bad = false;
  r->safe = img->read_safely, r->win_at = 0, r->win_len = 0; /* empty */
  uintptr_t fde = find_fde(r, img->unwind_hdr, pc);
  if (!fde)
    return false;
  r->p = fde;
  uint64_t len = rd_u(r, 4);
  if (r->bad || len == 0 || len == 0xffffffffu)
    return false;
  *fde_end = r->p + len;
  uintptr_t cie_ptr_at = r->p;
  uint64_t cie_off = rd_u(r, 4);
  if (r->bad || cie_off == 0 || cie_off > cie_ptr_at)
    return false;
  cr->lo = r->lo, cr->hi = r->hi, cr->bad = false; /* not *cr = *r: rd_u */
  cr->safe = r->safe, cr->win_at = 0, cr->win_len = 0;
  if (!parse_cie(cr, cie_ptr_at - (uintptr_t)cie_off, cie))
    return false;
  *pc_begin = (uintptr_t)rd_encoded(r, cie->fde_enc, 0);
  *pc_range = (uintptr_t)rd_encoded(r, cie->fde_enc & 0x0f, 0);
  if (r->bad || pc < *pc_begin || pc - *pc_begin >= *pc_range)
    return false; /* a gap between FDEs: pc has no unwind info */
  if (cie->has_z)
    r->p += rd_uleb(r);
  return !r->bad && *fde_end <= r->hi;
}

bool snap__cfi_function_bounds(const snap__image_t *img, uintptr_t pc,
                               uintptr_t *start, uintptr_t *end) {
  rd_t r, cr;
  cie_t cie;
  uintptr_t begin, range, fde_end;
  if (!find_fde_for(img, pc, &r, &cr, &cie, &begin, &range, &fde_end))
    return false;
  *start = begin;
  /* A corrupt range must not wrap: pc - begin < range already holds. */
  *end = range > UINTPTR_MAX - begin ? UINTPTR_MAX : begin + range;
  return true;
}

void snap__cfi_find_rule(const snap__image_t *img, uintptr_t pc,
                         snap__rule_t *out) {
  /* Field by field, not memset or a compound literal (a memset call at
     -O0): see rd_u. */
  out->cfa = SNAP__CFA_NONE, out->ra = SNAP__RA_UNDEFINED;
  out->fp = SNAP__FP_SAME, out->cfa_off = out->ra_off = out->fp_off = 0;
  rd_t r, cr;
  cie_t cie;
  uintptr_t pc_begin, pc_range, fde_end;
  if (!find_fde_for(img, pc, &r, &cr, &cie, &pc_begin, &pc_range, &fde_end))
    return;
  if (cie.signal) {
    out->cfa = SNAP__CFA_SIGNAL;
    return;
  }

  /* Step 3: run the programs up to pc. */
  row_t init, row;
  init.cfa_kind = REG_CFA_OTHER, init.cfa_off = 0;
  init.ra_kind = init.fp_kind = R_SAME, init.ra_off = init.fp_off = 0;
  cr.p = cie.insn;
  if (!run(&cr, cie.insn_end, &cie, pc_begin, pc, &init, NULL))
    return;
  row_copy(&row, &init);
  if (!run(&r, fde_end, &cie, pc_begin, pc, &row, &init))
    return;

  if (row.cfa_kind != REG_CFA_SP && row.cfa_kind != REG_CFA_FP)
    return;
  if (row.cfa_off < INT32_MIN || row.cfa_off > INT32_MAX ||
      row.ra_off < INT32_MIN || row.ra_off > INT32_MAX ||
      row.fp_off < INT32_MIN || row.fp_off > INT32_MAX)
    return;
  switch (row.ra_kind) {
  case R_OFFSET: out->ra = SNAP__RA_AT_CFA; break;
  case R_UNDEF: out->ra = SNAP__RA_UNDEFINED; break;
  case R_SAME: out->ra = SNAP__RA_IN_LR; break;
  default: return;
  }
  switch (row.fp_kind) {
  case R_OFFSET: out->fp = SNAP__FP_AT_CFA; break;
  case R_SAME:
  case R_UNDEF: out->fp = SNAP__FP_SAME; break;
  default: return;
  }
  out->cfa = row.cfa_kind == REG_CFA_SP ? SNAP__CFA_SP : SNAP__CFA_FP;
  out->cfa_off = (int32_t)row.cfa_off;
  out->ra_off = (int32_t)row.ra_off;
  out->fp_off = (int32_t)row.fp_off;
}
