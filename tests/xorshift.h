/*
 * xorshift.h — the tests' and benchmarks' one pseudo-random generator
 * (xorshift64*): reproducible, so a failing address set comes back on the
 * next run. Each user keeps its own state.
 */
#ifndef SNAP_TEST_XORSHIFT_H
#define SNAP_TEST_XORSHIFT_H

#include <stdint.h>

static inline uint64_t snap_xorshift(uint64_t *state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1Dull;
}

#endif
