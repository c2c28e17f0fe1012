/*
 * test_decimal.c — the library's one decimal formatter (src/decimal.c)
 * against glibc's printf, the oracle: the edges (0, 9, 10, every power of
 * ten and its neighbours, UINT64_MAX, INT64_MIN, INT64_MAX, -1), a million
 * values spread over every magnitude, and snap__dec_fixed at every width
 * 0..20 against "%0*" of v mod 10^width. Also that nothing is written past
 * the NUL (or, for fixed, past width).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "decimal.h"
#include "xorshift.h"

#define CANARY '\x5a'

static void check_u64(uint64_t v) {
  char want[32], got[SNAP__DEC_MAX + 1];
  int wn = snprintf(want, sizeof want, "%" PRIu64, v);
  memset(got, CANARY, sizeof got);
  size_t n = snap__dec_u64(got, v);
  CHECK(n == (size_t)wn && strcmp(got, want) == 0 &&
            got[SNAP__DEC_MAX] == CANARY,
        "u64 %s: got \"%.*s\" (%zu)", want, (int)n, got, n);
}

static void check_i64(int64_t v) {
  char want[32], got[SNAP__DEC_MAX + 1];
  int wn = snprintf(want, sizeof want, "%" PRId64, v);
  memset(got, CANARY, sizeof got);
  size_t n = snap__dec_i64(got, v);
  CHECK(n == (size_t)wn && strcmp(got, want) == 0 &&
            got[SNAP__DEC_MAX] == CANARY,
        "i64 %s: got \"%.*s\" (%zu)", want, (int)n, got, n);
}

static void check_fixed(uint64_t v, size_t width) {
  uint64_t mod = 1;
  for (size_t i = 0; i < width && i < 20; i++)
    mod *= 10;
  char want[32] = "";
  if (width > 0)
    snprintf(want, sizeof want, "%0*" PRIu64, (int)width,
             width >= 20 ? v : v % mod);
  char got[24];
  memset(got, CANARY, sizeof got);
  snap__dec_fixed(got, v, width);
  CHECK(memcmp(got, want, width) == 0 && got[width] == CANARY,
        "fixed %" PRIu64 " width %zu: want \"%s\", got \"%.*s\"", v, width,
        want, (int)width, got);
}

int main(void) {
  uint64_t edges[] = {0,
                      1,
                      9,
                      10,
                      11,
                      99,
                      100,
                      UINT64_MAX,
                      UINT64_MAX - 1,
                      (uint64_t)INT64_MAX,
                      (uint64_t)INT64_MAX + 1};
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
    check_u64(edges[i]);
    check_i64((int64_t)edges[i]); /* the top half: negative */
  }
  check_i64(INT64_MIN);
  check_i64(INT64_MIN + 1);
  check_i64(INT64_MAX);
  check_i64(-1);
  for (uint64_t p = 1, i = 0; i < 20; i++, p *= 10) {
    check_u64(p - 1), check_u64(p), check_u64(p + 1);
    check_i64(-(int64_t)(p % (uint64_t)INT64_MAX));
  }
  uint64_t seed = 0x9e3779b97f4a7c15u;
  for (int i = 0; i < 1000000; i++) {
    uint64_t r = snap_xorshift(&seed);
    uint64_t v = r >> (r % 64); /* every magnitude, not only 20 digits */
    check_u64(v);
    check_i64((int64_t)v);
    check_i64(-(int64_t)(v >> 1));
    if (i % 100 == 0)
      for (size_t w = 0; w <= 20; w++)
        check_fixed(v, w);
  }
  for (size_t w = 0; w <= 20; w++) {
    check_fixed(0, w);
    check_fixed(UINT64_MAX, w);
    check_fixed(7, w);
  }
  return check_result("test_decimal");
}
