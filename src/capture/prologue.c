/*
 * prologue.c — the frame record of a function reached through a pointer,
 * found from its prologue (snap__prologue_record).
 *
 * Why: a quiet walk (capture.c) starts from the sp and pc the kernel
 * publishes, without fp. Call-frame information crosses libc's frames from
 * sp alone and arrives in the first app function built with frame
 * pointers, whose rule counts from fp (CFA = fp + 16). fp_recover.c finds
 * that function's record by scanning the stack, but can trust a candidate
 * only behind a direct call to the function: a function reached through a
 * pointer (a pool's job, a callback) keeps stale records of earlier calls
 * among its locals, and a scan cannot tell them from its own. Its own
 * record has one place, though: the prologue put it there. A prologue that
 * pushes fp, sets fp to the stack pointer, saves registers and reserves its
 * locals leaves the record a fixed distance above the body's stack
 * pointer, and that distance is in the prologue's instructions. Read them,
 * and the record is one slot, not a scan.
 *
 * What is read (the shapes gcc and clang emit with frame pointers; any
 * other instruction ends the prologue, and one that moves sp in a way not
 * listed makes the answer "unknown"):
 *   x86-64: [endbr64] push %rbp; mov %rsp,%rbp; push of registers (gcc's
 *     callee-saved saves, clang's `push %rax` for 8 bytes of locals);
 *     sub $imm,%rsp (imm8 or imm32), with gcc's stack-clash probes
 *     (`orq $0,(%rsp)`) between several. The record is at rbp; the body's
 *     sp is rbp - 8 * pushes - reserved.
 *   arm64: [paciasp | pacibsp | bti] then, in any order, stores of pairs
 *     or registers to sp (with pre-index writeback: sp moves), sub sp, sp,
 *     #imm, stp x29, x30, [sp, #k] and mov x29, sp / add x29, sp, #k, and
 *     register moves; the record is where x29 was set and x29, x30 were
 *     stored; the body's sp is where the last of them left it.
 * A function that moves sp again in its body (alloca, a variable-length
 * array, stack realignment) is not told apart by its prologue: fp_recover.c
 * still checks the slot holds a return address right after a call (to this
 * function, where the call is direct) and that the function's own rule
 * agrees, so a wrong slot ends the walk rather than adding frames.
 *
 * Must not: read code except through snap__plat_read, allocate, or lock.
 */
#include "capture/prologue.h"

#include <stddef.h>

#include "platform/platform.h"

/* Enough bytes for the longest prologue read (x86-64: endbr64, push, mov,
   six pushes, two probed subs; arm64: 16 instructions). */
#define CODE_BYTES 64

/* Up to CODE_BYTES of code at start (fewer where its mapping ends). */
static size_t read_code(uintptr_t start, unsigned char *buf) {
  for (size_t n = CODE_BYTES; n >= 16; n /= 2)
    if (snap__plat_read(start, buf, n))
      return n;
  return 0;
}

#if defined(__x86_64__)

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

bool snap__prologue_record(uintptr_t start, uintptr_t pc, uintptr_t *off) {
  unsigned char b[CODE_BYTES];
  size_t n = read_code(start, b), i = 0;
  if (n < 16)
    return false;
  if (b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa)
    i = 4;          /* endbr64 */
  if (b[i] != 0x55) /* push %rbp */
    return false;
  i++;
  /* mov %rsp,%rbp: 48 89 e5, or 48 8b ec */
  if (!(b[i] == 0x48 && ((b[i + 1] == 0x89 && b[i + 2] == 0xe5) ||
                         (b[i + 1] == 0x8b && b[i + 2] == 0xec))))
    return false;
  i += 3;
  uintptr_t below = 0; /* bytes from the record down to the body's sp */
  for (;;) {
    if (i + 2 <= n && b[i] == 0x41 && b[i + 1] >= 0x50 && b[i + 1] <= 0x57) {
      below += 8, i += 2; /* push %r8..%r15 */
    } else if (i < n && b[i] >= 0x50 && b[i] <= 0x57 && b[i] != 0x54 &&
               b[i] != 0x55) {
      below += 8, i += 1; /* push of a register, not %rsp or %rbp */
    } else {
      break;
    }
  }
  for (;;) {
    if (i + 4 <= n && b[i] == 0x48 && b[i + 1] == 0x83 && b[i + 2] == 0xec) {
      below += b[i + 3], i += 4; /* sub $imm8,%rsp (imm8 is sign-extended:
                                    a compiler reserves with 0..0x7f) */
      if (b[i - 1] & 0x80)
        return false;
    } else if (i + 7 <= n && b[i] == 0x48 && b[i + 1] == 0x81 &&
               b[i + 2] == 0xec) {
      uint32_t imm = le32(b + i + 3);
      if (imm & 0x80000000u)
        return false;
      below += imm, i += 7; /* sub $imm32,%rsp */
    } else {
      break;
    }
    /* gcc's stack-clash probe of the page just reserved: orq $0,(%rsp) */
    if (i + 5 <= n && b[i] == 0x48 && b[i + 1] == 0x83 && b[i + 2] == 0x0c &&
        b[i + 3] == 0x24 && b[i + 4] == 0x00)
      i += 5;
  }
  if (i + 4 > n)
    return false; /* the prologue may go on past what was read */
  /* What ends the prologue must not move sp in a way read above: and
     $imm,%rsp (realignment: 48 83 e4, 48 81 e4), lea into %rsp (48 8d 64
     24 / 48 8d a4 24), a probe loop's lea into %r11 (4c 8d 9c 24). */
  if (b[i] == 0x48 && (b[i + 1] == 0x83 || b[i + 1] == 0x81) &&
      b[i + 2] == 0xe4)
    return false;
  if (b[i] == 0x48 && b[i + 1] == 0x8d && (b[i + 2] & 0x38) == 0x20)
    return false;
  if (b[i] == 0x4c && b[i + 1] == 0x8d && (b[i + 2] & 0x38) == 0x18)
    return false;
  if (pc <= start + i)
    return false; /* pc inside the prologue: sp is not yet the body's */
  *off = below;
  return true;
}

#elif defined(__aarch64__)

bool snap__prologue_record(uintptr_t start, uintptr_t pc, uintptr_t *off) {
  uint32_t w[CODE_BYTES / 4];
  size_t n = read_code(start, (unsigned char *)w) / 4, i = 0;
  if (n < 4)
    return false;
  /* Offsets from the entry sp (sp only goes down here). */
  intptr_t sp = 0, fp = 1, rec = 2; /* fp, rec: not yet set (odd) */
  for (; i < n; i++) {
    uint32_t x = w[i];
    unsigned rt = x & 31, rn = (x >> 5) & 31, rt2 = (x >> 10) & 31;
    if (x == 0xd503233fu || x == 0xd503237fu || /* paciasp, pacibsp */
        (x & 0xffffff3fu) == 0xd503241fu ||     /* bti, bti c/j/jc */
        x == 0xd503201fu)                       /* nop */
      continue;
    if ((x & 0xffc00000u) == 0xa9800000u && rn == 31) {
      /* stp xA, xB, [sp, #imm]!: sp moves, then the pair is stored */
      intptr_t imm = ((intptr_t)((int32_t)(x << 10) >> 25)) * 8;
      if (imm > 0)
        return false;
      sp += imm;
      if (rt == 29 && rt2 == 30)
        rec = sp;
      continue;
    }
    if (((x & 0xffc00000u) == 0xa9000000u ||  /* stp x, x, [sp, #imm] */
         (x & 0xffc00000u) == 0x6d000000u) && /* stp d, d, [sp, #imm] */
        rn == 31) {
      intptr_t imm = ((intptr_t)((int32_t)(x << 10) >> 25)) * 8;
      if ((x & 0xffc00000u) == 0xa9000000u && rt == 29 && rt2 == 30)
        rec = sp + imm;
      continue;
    }
    if ((x & 0xffe00c00u) == 0xf8000c00u && rn == 31) {
      /* str x, [sp, #imm]!: sp moves */
      intptr_t imm = (intptr_t)((int32_t)(x << 11) >> 23);
      if (imm > 0)
        return false;
      sp += imm;
      continue;
    }
    if (((x & 0xffc00000u) == 0xf9000000u ||  /* str x, [sp, #uimm] */
         (x & 0xffc00000u) == 0xfd000000u) && /* str d, [sp, #uimm] */
        rn == 31)
      continue;
    if ((x & 0xff8003ffu) == 0xd10003ffu) { /* sub sp, sp, #imm{, lsl 12} */
      intptr_t imm = (intptr_t)((x >> 10) & 0xfff) << ((x >> 22) & 1 ? 12 : 0);
      sp -= imm;
      continue;
    }
    if ((x & 0xff8003ffu) == 0x910003fdu) { /* add x29, sp, #imm (mov) */
      intptr_t imm = (intptr_t)((x >> 10) & 0xfff) << ((x >> 22) & 1 ? 12 : 0);
      fp = sp + imm;
      continue;
    }
    if ((x & 0xffe0ffe0u) == 0xaa0003e0u && rt != 29) /* mov xd, xm */
      continue;
    break;
  }
  if (i == n)
    return false; /* the prologue may go on past what was read */
  uint32_t x = w[i];
  /* What ends it must not write sp or x29: an add/sub immediate or an
     extended-register add/sub into sp (Rd 31 without flags: with them Rd
     31 is xzr), nor anything into register 29. */
  bool to_sp =
      (x & 31) == 31 && !(x & 0x20000000u) &&
      ((x & 0x1f000000u) == 0x11000000u || (x & 0x1f200000u) == 0x0b200000u);
  /* ... nor a load or store that writes back to sp (a pair or a
     register, pre- or post-indexed: the d registers' saves among them) */
  unsigned rn_end = (x >> 5) & 31;
  bool pair_wb = ((x >> 27) & 7) == 5 && ((x >> 23) & 1) == 1;
  bool reg_wb = ((x >> 27) & 7) == 7 && ((x >> 24) & 3) == 0 &&
                !(x & (1u << 21)) && ((x >> 10) & 1) == 1;
  if (to_sp || (x & 31) == 29 || (rn_end == 31 && (pair_wb || reg_wb)))
    return false;
  if (fp & 1 || rec != fp || fp < sp)
    return false; /* no record at x29 */
  if (pc <= start + 4 * i)
    return false; /* pc inside the prologue */
  *off = (uintptr_t)(fp - sp);
  return true;
}

#endif
