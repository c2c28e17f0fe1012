/*
 * test_prologue.c — snap__prologue_record (src/capture/prologue.c) against
 * the compiler's own frames: for functions of several shapes (a few locals,
 * many registers kept across calls, kilobytes and pages of locals, nothing
 * but a call), the distance the prologue reader gives from the body's
 * stack pointer to the frame record must be what the function itself sees
 * (__builtin_frame_address(0) minus its stack pointer), at a return
 * address inside its body. Built by gcc and clang, with sanitizers, for
 * arm64 with and without pointer authentication: each emits its own
 * prologues. Where the reader says "unknown" it must say so, never a wrong
 * distance; outside the sanitizers (whose frames realign and reserve
 * differently) it must know every shape here.
 *
 * And the reader's refusals: a pc inside the prologue, code that is no
 * frame-pointer prologue, and prologues laid out by hand that move sp in a
 * way it does not follow.
 */
#include <stdint.h>
#include <string.h>

#include "capture/arch.h"
#include "capture/prologue.h"
#include "check.h"

typedef struct seen {
  uintptr_t fp, sp, pc;
} seen_t;

/* Keeps what it is given alive and opaque to the optimiser. */
__attribute__((noinline)) void opaque(volatile void *p) {
  __asm__ volatile("" : : "r"(p) : "memory");
}

/* Its caller's return address: a pc in the caller's body. */
__attribute__((noinline)) uintptr_t here(void) {
  return snap__strip_pac((uintptr_t)__builtin_return_address(0));
}

#if defined(__x86_64__)
#define SP_NOW(v) __asm__ volatile("movq %%rsp, %0" : "=r"(v))
#else
#define SP_NOW(v) __asm__ volatile("mov %0, sp" : "=r"(v))
#endif

#define SEE(s)                                                                 \
  do {                                                                         \
    (s)->pc = here();                                                          \
    SP_NOW((s)->sp);                                                           \
    (s)->fp = (uintptr_t)__builtin_frame_address(0);                           \
  } while (0)

__attribute__((noinline)) void shape_call(seen_t *s) {
  SEE(s);
  opaque(s);
}

__attribute__((noinline)) void shape_small(seen_t *s) {
  int x = 1;
  opaque(&x);
  SEE(s);
  opaque(&x);
}

__attribute__((noinline)) long shape_regs(seen_t *s, long a, long b, long c,
                                          long d, long e) {
  long x = a * 3, y = b * 5, z = c * 7, u = d * 11, v = e * 13;
  opaque(s);
  SEE(s);
  opaque(s);
  return x + y + z + u + v + a + b + c + d + e;
}

__attribute__((noinline)) void shape_kib(seen_t *s) {
  volatile char buf[3000];
  memset((char *)buf, 1, sizeof buf);
  opaque(buf);
  SEE(s);
  opaque(buf);
}

__attribute__((noinline)) void shape_pages(seen_t *s) {
  volatile char buf[70000];
  buf[0] = 1;
  buf[sizeof buf - 1] = 2;
  opaque(buf);
  SEE(s);
  opaque(buf);
}

/* A sanitizer's instrumentation realigns and reserves frames in its own
   way: there the reader may say "unknown" (never wrong). */
#if SNAP_TEST_TSAN || SNAP_TEST_ASAN
#define MUST_KNOW 0
#else
#define MUST_KNOW 1
#endif

static void check_shape(const char *name, void *fn, const seen_t *s) {
  uintptr_t start = (uintptr_t)fn, off = 0;
  bool known = snap__prologue_record(start, s->pc, &off);
  printf("%-12s fp - sp = %5lu, reader: %s %lu\n", name,
         (unsigned long)(s->fp - s->sp), known ? "known" : "unknown",
         (unsigned long)off);
  if (MUST_KNOW)
    CHECK(known, "%s: the prologue was not read", name);
  if (known)
    CHECK(off == s->fp - s->sp, "%s: offset %lu, the frame says %lu", name,
          (unsigned long)off, (unsigned long)(s->fp - s->sp));
  /* A pc inside the prologue: the body's sp is not set yet. */
  CHECK(!snap__prologue_record(start, start, &off), "%s: pc at entry", name);
}

/* Hand-laid code the reader must refuse (no frame-pointer prologue, or one
   that moves sp in a way it does not follow). */
static void check_refusals(void) {
#if defined(__x86_64__)
  static const unsigned char no_fp[64] = {0x53, 0x48, 0x83, 0xec, 0x10, 0xc3};
  static const unsigned char realign[64] = {0x55, 0x48, 0x89, 0xe5, 0x48,
                                            0x83, 0xe4, 0xe0, 0xc3};
  static const unsigned char negative[64] = {0x55, 0x48, 0x89, 0xe5, 0x48,
                                             0x83, 0xec, 0xf0, 0xc3};
  static const unsigned char good[64] = {0x55, 0x48, 0x89, 0xe5, 0x53, 0x48,
                                         0x83, 0xec, 0x18, 0x90, 0xc3};
#else
  static const uint32_t no_fp[16] = {0xd10083ffu /* sub sp, sp, #32 */,
                                     0xd65f03c0u /* ret */};
  static const uint32_t realign[16] = {
      0xa9bf7bfdu /* stp x29, x30, [sp, #-16]! */, 0x910003fdu /* mov */,
      0xcb2063ffu /* sub sp, sp, x0 */, 0xd65f03c0u};
  static const uint32_t dsave[16] = {0xa9bf7bfdu, 0x910003fdu,
                                     0x6dbf27e8u /* stp d8, d9, [sp, #-16]! */,
                                     0xd65f03c0u};
  static const uint32_t negative[16] = {
      0xa9bf7bfdu, 0x910003fdu, 0x910043ffu /* add sp, sp, #16 */, 0xd65f03c0u};
  static const uint32_t good[16] = {0xd100c3ffu /* sub sp, sp, #48 */,
                                    0xa9027bfdu /* stp x29, x30, [sp, #32] */,
                                    0x910083fdu /* add x29, sp, #32 */,
                                    0xd503201fu /* nop */, 0xd65f03c0u};
#endif
  uintptr_t off = 0;
  CHECK(!snap__prologue_record((uintptr_t)no_fp, (uintptr_t)no_fp + 32, &off),
        "%s", "no frame-pointer prologue");
  CHECK(
      !snap__prologue_record((uintptr_t)realign, (uintptr_t)realign + 32, &off),
      "%s", "sp realigned");
  CHECK(!snap__prologue_record((uintptr_t)negative, (uintptr_t)negative + 32,
                               &off),
        "%s", "sp moved up");
#if defined(__aarch64__)
  CHECK(!snap__prologue_record((uintptr_t)dsave, (uintptr_t)dsave + 32, &off),
        "%s", "d registers saved with writeback to sp");
#endif
  CHECK(snap__prologue_record((uintptr_t)good, (uintptr_t)good + 32, &off),
        "%s", "the hand-laid good prologue");
#if defined(__x86_64__)
  CHECK_EQ(off, 32u); /* one push, 24 reserved */
#else
  CHECK_EQ(off, 32u);
#endif
}

int main(void) {
  seen_t s;
  shape_call(&s);
  check_shape("call", (void *)shape_call, &s);
  shape_small(&s);
  check_shape("small", (void *)shape_small, &s);
  (void)shape_regs(&s, 1, 2, 3, 4, 5);
  check_shape("registers", (void *)shape_regs, &s);
  shape_kib(&s);
  check_shape("3000 bytes", (void *)shape_kib, &s);
  shape_pages(&s);
  check_shape("70000 bytes", (void *)shape_pages, &s);
  check_refusals();
  return check_result("test_prologue");
}
