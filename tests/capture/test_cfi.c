/*
 * test_cfi.c — the call-frame-information reader on unwind tables built
 * byte by byte here (an .eh_frame_hdr search table, CIEs and FDEs), so each
 * rule it must derive is known exactly: a prologue (CFA moving from sp to
 * fp), remember/restore state around an early return, the x86_64 PLT stub's
 * CFA expression (its value depends on the pc), a signal frame ('S'), the
 * outermost frame (return address undefined), gaps between functions, and
 * corrupt headers.
 *
 * And a step by such a rule where it once failed (issue 12, defect 6): the
 * epilogue of a function built without frame pointers, as GCC writes it
 * for glibc's _int_free/__libc_free — just after `pop %rbp` the CFA is
 * sp + 8 while rbp's rule still names its slot at CFA - 16, below sp. The
 * walker, given that rule through its cache, must step to the caller (rbp
 * already holds the caller's value) and on along the caller's record; it
 * used to stop there with a one-frame stack.
 */
#include <string.h>

#include "capture/arch.h"
#include "capture/cfi.h"
#include "capture/rule_cache.h"
#include "capture/walk.h"
#include "check.h"

static unsigned char g_buf[4096];
static size_t g_len;

static size_t put(const void *p, size_t n) {
  size_t at = g_len;
  if (n)
    memcpy(g_buf + g_len, p, n);
  g_len += n;
  return at;
}
static size_t u8(unsigned v) {
  unsigned char b = (unsigned char)v;
  return put(&b, 1);
}
static size_t u32(uint32_t v) { return put(&v, 4); }
static void patch32(size_t at, uint32_t v) { memcpy(g_buf + at, &v, 4); }
static void uleb(uint64_t v) {
  do {
    unsigned b = v & 0x7f;
    v >>= 7;
    u8(b | (v ? 0x80 : 0));
  } while (v);
}

#define CODE 0x1000 /* functions live at g_buf + CODE (never executed) */

static size_t cie(const char *aug) {
  size_t len_at = u32(0), start = g_len;
  u32(0); /* CIE id */
  u8(1);  /* version */
  put(aug, strlen(aug) + 1);
  uleb(1);  /* code alignment */
  u8(0x78); /* data alignment -8 */
  u8(SNAP__DW_RA);
  uleb(1);  /* augmentation data length */
  u8(0x1b); /* FDE pointers: pcrel sdata4 */
  u8(0x0c); /* def_cfa sp, 8 */
  uleb(SNAP__DW_SP);
  uleb(8);
  u8(0x80 | SNAP__DW_RA); /* RA saved at cfa - 8 */
  uleb(1);
  while ((g_len - start) % 8)
    u8(0);
  patch32(len_at, (uint32_t)(g_len - start));
  return len_at;
}

/* An FDE for [CODE + off, + range) with instructions; returns its offset. */
static size_t fde(size_t cie_at, uint32_t off, uint32_t range,
                  const unsigned char *insn, size_t n) {
  size_t len_at = u32(0), start = g_len;
  u32((uint32_t)(g_len - cie_at));
  size_t pc_at = g_len;
  u32((uint32_t)((CODE + off) - pc_at)); /* pcrel */
  u32(range);
  uleb(0);
  put(insn, n);
  while ((g_len - start) % 8)
    u8(0);
  patch32(len_at, (uint32_t)(g_len - start));
  return len_at;
}

typedef struct {
  size_t at;
  uint32_t off;
} fde_ref_t;

static void check_rule(const snap__image_t *img, uint32_t off, int cfa,
                       int cfa_off, int ra, int fp, int line) {
  snap__rule_t r;
  snap__cfi_find_rule(img, img->unwind_lo + CODE + off, &r);
  bool ok = r.cfa == cfa &&
            (cfa == SNAP__CFA_NONE || cfa == SNAP__CFA_SIGNAL ||
             (r.cfa_off == cfa_off && r.ra == ra &&
              (r.ra != SNAP__RA_AT_CFA || r.ra_off == -8) && r.fp == fp &&
              (fp != SNAP__FP_AT_CFA || r.fp_off == -16)));
  CHECK(ok,
        "line %d, pc +0x%x: got cfa kind %d off %d, ra kind %d off %d, fp "
        "kind %d off %d",
        line, off, r.cfa, r.cfa_off, r.ra, r.ra_off, r.fp, r.fp_off);
}
#define RULE(off, cfa, cfa_off, ra, fp)                                        \
  check_rule(&img, off, cfa, cfa_off, ra, fp, __LINE__)

/* Hands the walker the tables' rule for CODE + off, as cfi_step would after
   a lookup in a real image (these tables belong to no loaded image): filed
   under the generation's salt and the live identity of the pc's image
   (live_images.h). */
static void cache_rule(const snap__image_t *img, uint32_t off) {
  snap__rule_t r;
  uintptr_t pc = img->unwind_lo + CODE + off;
  snap__cfi_find_rule(img, pc, &r);
  snap__plat_ident_t id;
  snap__plat_image_ident(pc, &id);
  snap__rule_cache_put(
      pc, snap__rule_cache_salt(snap__images_current_generation()) ^ id.id, &r);
}

/* A thread stopped at the epilogue pc CODE + 0x51a (after `pop %rbp`),
   called from CODE + 0x30 (a frame-pointer function), called from CODE +
   0x200 (the outermost frame). */
static void check_epilogue_step(const snap__image_t *img) {
  uintptr_t code = img->unwind_lo + CODE;
  uintptr_t ret1 = code + 0x30 + 1, ret2 = code + 0x200 + 1;
  cache_rule(img, 0x51a);
  cache_rule(img, 0x30);
  cache_rule(img, 0x200);
  uintptr_t stack[16];
  memset(stack, 0, sizeof stack);
  stack[1] = 0x5eed; /* the popped rbp's slot: below sp, freed */
  stack[2] = ret1;   /* sp: the return address */
  stack[6] = 0;      /* the caller's record: saved rbp, */
  stack[7] = ret2;   /* return address */
  snap__regs_t regs = {0};
  regs.pc = code + 0x51a;
  regs.sp = (uintptr_t)&stack[2];
  regs.fp = (uintptr_t)&stack[6]; /* popped: the caller's rbp */
  /* Both paths: the batch loop (no flags) and the general step (ASYNC). */
  const unsigned flag_sets[] = {0, SNAP_CAPTURE_ASYNC};
  for (int i = 0; i < 2; i++) {
    unsigned flags = flag_sets[i];
    uintptr_t pcs[8];
    int n = snap__walk_bounded(&regs, true, flags, (uintptr_t)&stack[16], pcs,
                               8, 0);
    CHECK(n == 3 && pcs[0] == regs.pc && pcs[1] == ret1 && pcs[2] == ret2,
          "a stack stopped after pop %%rbp, flags %u: %d frames (3 expected)",
          flags, n);
  }
}

int main(void) {
  /* Header, filled in once the FDEs exist. */
  u8(1), u8(0x1b), u8(0x03), u8(0x3b);
  size_t ptr_at = u32(0);
  size_t count_at = u32(0);
  size_t table_at = g_len;
  g_len += 6 * 8; /* room for six entries */
  size_t eh_frame = g_len;
  patch32(ptr_at, (uint32_t)(eh_frame - ptr_at));

  size_t c = cie("zR");
  const unsigned char prologue[] = {
      0x41, /* advance 1 */
      0x0e,
      16, /* def_cfa_offset 16 */
      0x80 | SNAP__DW_FP,
      2,    /* fp at cfa - 16 */
      0x43, /* advance 3 -> 4 */
      0x0d,
      SNAP__DW_FP, /* def_cfa_register fp */
      0x40 | 0x20, /* advance 32 -> 0x24 */
      0x0a,        /* remember_state */
      0x0c,
      SNAP__DW_SP,
      8,    /* def_cfa sp, 8 */
      0x41, /* advance 1 -> 0x25 */
      0x0b, /* restore_state */
  };
  const unsigned char plt[] = {
      0x0f,
      12, /* def_cfa_expression, 12 bytes: */
      0x70 + SNAP__DW_SP,
      8,
      0x92,
      SNAP__DW_PC,
      0,
      0x3f,
      0x1a,
      0x3b,
      0x2a,
      0x33,
      0x24,
      0x22 /* sp+8 + (((pc & 15) >= 11) << 3) */
  };
  const unsigned char outermost[] = {0x07, SNAP__DW_RA}; /* undefined RA */
  /* GCC's epilogue for a function without frame pointers (__libc_free's
     shape): push %rbp; sub $16,%rsp; ...; add $16,%rsp; pop %rbp; ret;
     then more body under the remembered state. No restore of rbp after
     the pop: its rule stays "at CFA - 16". */
  const unsigned char epilogue[] = {
      0x41, /* advance 1: after push %rbp */
      0x0e,
      16, /* def_cfa_offset 16 */
      0x80 | SNAP__DW_FP,
      2,    /* rbp at cfa - 16 */
      0x44, /* advance 4 -> 0x05: after sub $16,%rsp */
      0x0e,
      32,        /* def_cfa_offset 32 */
      0x40 | 20, /* advance 20 -> 0x19: after add $16,%rsp */
      0x0a,      /* remember_state */
      0x0e,
      16,   /* def_cfa_offset 16 */
      0x41, /* advance 1 -> 0x1a: after pop %rbp */
      0x0e,
      8,    /* def_cfa_offset 8 */
      0x41, /* advance 1 -> 0x1b: after ret */
      0x0b, /* restore_state */
  };
  fde_ref_t f[6];
  f[0] = (fde_ref_t){fde(c, 0x000, 0x40, prologue, sizeof prologue), 0x000};
  f[1] = (fde_ref_t){fde(c, 0x100, 0x20, plt, sizeof plt), 0x100};
  f[2] = (fde_ref_t){fde(c, 0x200, 0x10, outermost, sizeof outermost), 0x200};
  size_t sc = cie("zRS");
  f[3] = (fde_ref_t){fde(sc, 0x300, 0x10, NULL, 0), 0x300};
  f[4] = (fde_ref_t){fde(c, 0x400, 0x10, NULL, 0), 0x400};
  f[5] = (fde_ref_t){fde(c, 0x500, 0x30, epilogue, sizeof epilogue), 0x500};
  patch32(count_at, 6);
  for (int i = 0; i < 6; i++) {
    patch32(table_at + i * 8, CODE + f[i].off);
    patch32(table_at + i * 8 + 4, (uint32_t)f[i].at);
  }
  CHECK(g_len < CODE, "tables overflow the code");

  snap__image_t img = {0};
  img.unwind_hdr = img.unwind_lo = (uintptr_t)g_buf;
  img.unwind_hi = (uintptr_t)g_buf + g_len;

  const int SP = SNAP__CFA_SP, FP = SNAP__CFA_FP, AT = SNAP__RA_AT_CFA,
            SAME = SNAP__FP_SAME, SAVED = SNAP__FP_AT_CFA;
  RULE(0x00, SP, 8, AT, SAME);   /* entry */
  RULE(0x01, SP, 16, AT, SAVED); /* after push fp */
  RULE(0x03, SP, 16, AT, SAVED);
  RULE(0x04, FP, 16, AT, SAVED); /* after mov sp, fp */
  RULE(0x23, FP, 16, AT, SAVED);
  RULE(0x24, SP, 8, AT, SAVED);  /* early return: remembered state */
  RULE(0x25, FP, 16, AT, SAVED); /* restored, CFA rule included */
  RULE(0x3f, FP, 16, AT, SAVED);
  RULE(0x40, SNAP__CFA_NONE, 0, 0, 0); /* gap after the function */
  /* The PLT expression reads the pc: expect 8 or 16 by the real address. */
  for (uint32_t o = 0; o < 0x20; o++) {
    uintptr_t pc = (uintptr_t)g_buf + CODE + 0x100 + o;
    RULE(0x100 + o, SP, (pc & 15) >= 11 ? 16 : 8, AT, SAME);
  }
  RULE(0x200, SP, 8, SNAP__RA_UNDEFINED, SAME);
  RULE(0x300, SNAP__CFA_SIGNAL, 0, 0, 0);
  RULE(0x400, SP, 8, AT, SAME);
  RULE(0x410, SNAP__CFA_NONE, 0, 0, 0); /* past the last FDE */
  RULE(0x505, SP, 32, AT, SAVED);       /* the body */
  RULE(0x518, SP, 32, AT, SAVED);
  RULE(0x519, SP, 16, AT, SAVED); /* after add $16,%rsp */
  RULE(0x51a, SP, 8, AT, SAVED);  /* after pop %rbp: the slot is below sp */
  RULE(0x51b, SP, 32, AT, SAVED); /* the remembered state again */
  check_epilogue_step(&img);

  /* Corruption: every reader check must hold, every answer be "none". */
  snap__rule_t r;
  g_buf[0] = 2; /* header version */
  snap__cfi_find_rule(&img, (uintptr_t)g_buf + CODE, &r);
  CHECK_EQ(r.cfa, SNAP__CFA_NONE);
  g_buf[0] = 1;
  img.unwind_hi = (uintptr_t)g_buf + eh_frame + 8; /* truncated tables */
  snap__cfi_find_rule(&img, (uintptr_t)g_buf + CODE, &r);
  CHECK_EQ(r.cfa, SNAP__CFA_NONE);
  img.unwind_hi = (uintptr_t)g_buf + g_len;
  patch32(count_at, 0x7fffffff); /* absurd count */
  snap__cfi_find_rule(&img, (uintptr_t)g_buf + CODE, &r);
  CHECK_EQ(r.cfa, SNAP__CFA_NONE);
  return check_result("test_cfi");
}
