/*
 * arch.h — what the walker needs to know about the CPU, one block per
 * architecture: DWARF register numbers, frame-record alignment, how to strip
 * pointer-authentication bits, and how to read the current pc/sp/fp.
 *
 * Must not: name an operating system. Architecture is not platform: the
 * arm64 block serves Linux and Apple alike.
 */
#ifndef SNAP_CAPTURE_ARCH_H
#define SNAP_CAPTURE_ARCH_H

#include <stdint.h>

#include "platform/platform.h"

#if defined(__x86_64__)

#define SNAP__ARCH_NAME "x86_64"
#define SNAP__DW_FP 6  /* rbp */
#define SNAP__DW_SP 7  /* rsp */
#define SNAP__DW_RA 16 /* return address column */
#define SNAP__DW_PC 16 /* rip: the same number */
/* A frame record is [saved rbp, return address] at rbp. Frames are 16-byte
   aligned by the ABI, but hand-written code keeps only 8: accept 8. */
#define SNAP__FP_ALIGN 8u

static inline uintptr_t snap__strip_pac(uintptr_t p) { return p; }

/* The registers at this point of the calling function. Always inline: the pc
   and sp must be read in the same function whose frame they describe. */
#define SNAP__REGS_HERE(r)                                                     \
  do {                                                                         \
    uintptr_t pc_, sp_;                                                        \
    __asm__ volatile("leaq 0(%%rip), %0\n\tmovq %%rsp, %1"                     \
                     : "=r"(pc_), "=r"(sp_));                                  \
    (r)->pc = pc_;                                                             \
    (r)->sp = sp_;                                                             \
    (r)->fp = (uintptr_t)__builtin_frame_address(0);                           \
    (r)->lr = 0;                                                               \
    (r)->lr_valid = false;                                                     \
  } while (0)

#elif defined(__aarch64__)

#define SNAP__ARCH_NAME "arm64"
#define SNAP__DW_FP 29 /* x29 */
#define SNAP__DW_SP 31 /* sp */
#define SNAP__DW_RA 30 /* x30, the link register */
#define SNAP__DW_PC 32 /* pc, in DWARF expressions */
#define SNAP__FP_ALIGN 8u

/* Pointer authentication signs return addresses in their top bits. The
   number of bits depends on the configured virtual address size, so a fixed
   mask would be wrong: let the CPU strip them. XPACLRI lives in the HINT
   space, so CPUs without pointer authentication execute it as a NOP (and then
   there is nothing to strip). On Apple the compiler's ptrauth_strip is the
   same instruction family. */
static inline uintptr_t snap__strip_pac(uintptr_t p) {
  register uintptr_t x30 __asm__("x30") = p;
  __asm__("hint #7" /* xpaclri */ : "+r"(x30));
  return x30;
}

#define SNAP__REGS_HERE(r)                                                     \
  do {                                                                         \
    uintptr_t pc_, sp_;                                                        \
    __asm__ volatile("adr %0, .\n\tmov %1, sp" : "=r"(pc_), "=r"(sp_));        \
    (r)->pc = pc_;                                                             \
    (r)->sp = sp_;                                                             \
    (r)->fp = (uintptr_t)__builtin_frame_address(0);                           \
    (r)->lr = 0;                                                               \
    (r)->lr_valid = false;                                                     \
  } while (0)

#else
#error "stacksnap: unsupported architecture (x86_64 and arm64 are supported)"
#endif

/* Swift marks a frame record that has an async context below it by setting
   bits 63:60 of the saved frame pointer to 0b0001. */
#define SNAP__ASYNC_TAG_SHIFT 60
#define SNAP__ASYNC_TAG 0x1u

static inline int snap__is_async_tagged(uintptr_t saved_fp) {
  return (saved_fp >> SNAP__ASYNC_TAG_SHIFT) == SNAP__ASYNC_TAG;
}

/* A saved frame pointer as an address: without the async tag. A branch
   the processor predicts (tags are rare), not a conditional move: the
   untagged fp is the next record's address, and a frame-record walk is a
   chain of such loads, so every cycle here is a cycle per frame. */
static inline uintptr_t snap__untag_fp(uintptr_t saved_fp) {
  if (__builtin_expect(snap__is_async_tagged(saved_fp), 0)) {
    /* An empty asm: compilers do not turn a block holding one into a
       conditional move. */
    __asm__("" : "+r"(saved_fp));
    return saved_fp & ~((uintptr_t)0xF << SNAP__ASYNC_TAG_SHIFT);
  }
  return saved_fp;
}

/* What ends right before a return address ra: a call, and where it goes.
   SNAP__CALL_NONE: no call instruction ends at ra; SNAP__CALL_INDIRECT: a
   call through a register or memory (target unknown); SNAP__CALL_DIRECT:
   a call to *target. Code bytes are read through snap__plat_read. */
enum { SNAP__CALL_NONE, SNAP__CALL_INDIRECT, SNAP__CALL_DIRECT };
static inline int snap__call_before(uintptr_t ra, uintptr_t *target) {
#if defined(__x86_64__)
  unsigned char b[8]; /* b[7] is the byte at ra - 1 */
  if (ra < sizeof b || !snap__plat_read(ra - sizeof b, b, sizeof b))
    return SNAP__CALL_NONE;
  if (b[3] == 0xe8) { /* call rel32 */
    int32_t rel = (int32_t)((uint32_t)b[4] | (uint32_t)b[5] << 8 |
                            (uint32_t)b[6] << 16 | (uint32_t)b[7] << 24);
    *target = ra + (uintptr_t)(intptr_t)rel;
    return SNAP__CALL_DIRECT;
  }
  /* ff /2: call r/m64. ModRM reg field 2; lengths by mod and r/m. */
  if ((b[6] == 0xff && (b[7] & 0xf8) == 0xd0) || /* call reg */
      (b[6] == 0xff && (b[7] & 0xf8) == 0x10 &&  /* call [reg] */
       (b[7] & 7) != 4 && (b[7] & 7) != 5) ||
      (b[5] == 0xff && (b[6] & 0xf8) == 0x50 && (b[6] & 7) != 4) ||
      (b[4] == 0xff && b[5] == 0x54) || /* [sib+d8] */
      (b[2] == 0xff &&
       (b[3] == 0x15 || ((b[3] & 0xf8) == 0x90 && (b[3] & 7) != 4))) ||
      (b[1] == 0xff && b[2] == 0x94)) /* [sib+d32] */
    return SNAP__CALL_INDIRECT;
  return SNAP__CALL_NONE;
#elif defined(__aarch64__)
  uint32_t w;
  if (ra < 4 || !snap__plat_read(ra - 4, &w, sizeof w))
    return SNAP__CALL_NONE;
  if ((w & 0xfc000000u) == 0x94000000u) { /* bl imm26 */
    int32_t imm = (int32_t)(w << 6) >> 6;
    *target = ra - 4 + (uintptr_t)((intptr_t)imm * 4);
    return SNAP__CALL_DIRECT;
  }
  if ((w & 0xfffffc1fu) == 0xd63f0000u || /* blr */
      (w & 0xfffff81fu) == 0xd63f081fu || /* blraaz, blrabz */
      (w & 0xfffff800u) == 0xd73f0800u)   /* blraa, blrab */
    return SNAP__CALL_INDIRECT;
  return SNAP__CALL_NONE;
#endif
}

#endif /* SNAP_CAPTURE_ARCH_H */
