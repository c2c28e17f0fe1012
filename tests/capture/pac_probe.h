/*
 * pac_probe.h — whether this CPU signs pointers, for the pointer-
 * authentication tests: sign a known pointer with PACIA1716, a HINT-space
 * instruction (a no-op on CPUs without pointer authentication, so it is
 * safe to ask anywhere), and see whether it changed.
 */
#ifndef SNAP_TEST_PAC_PROBE_H
#define SNAP_TEST_PAC_PROBE_H

#include <stdint.h>

static inline int pac_cpu_signs(void) {
#if defined(__aarch64__)
  register uintptr_t x17 __asm__("x17") = 0x1000;
  register uintptr_t x16 __asm__("x16") = 0;
  __asm__ volatile("hint #8" /* pacia1716 */ : "+r"(x17) : "r"(x16));
  return x17 != 0x1000;
#else
  return 0;
#endif
}

#endif /* SNAP_TEST_PAC_PROBE_H */
