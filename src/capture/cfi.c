/*
 * cfi.c — reads .eh_frame call-frame information, async-signal-safely:
 * finds the FDE and CIE that describe a pc, and turns the row
 * cfi_program.c computes into the walker's rule.
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
 *     where the return address and the frame pointer were saved
 *     (cfi_program.c).
 * Every byte is read through cfi_reader.h, the bounded reader this file
 * and cfi_program.c share.
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
 * (tests/capture/cfi_imports.cmake reads the imports of this object and of
 * cfi_program.c's with nm).
 * DWARF expressions: a CFA expression that reduces to sp + constant at the
 * pc (the PLT stub's) is evaluated; register rules given as expressions are
 * not, and the walker falls back to frame records there. A CIE marked 'S'
 * is reported as a signal frame, which the platform decodes.
 */
#include "capture/cfi.h"

#include <stddef.h>

#include "capture/arch.h"
#include "capture/cfi_program.h"
#include "capture/cfi_reader.h"

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
  if (!snap__cfi_run(&cr, cie.insn_end, &cie, pc_begin, pc, &init, NULL))
    return;
  row_copy(&row, &init);
  if (!snap__cfi_run(&r, fde_end, &cie, pc_begin, pc, &row, &init))
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
