/*
 * decimal.c — integers into decimal text (decimal.h says who may call it:
 * everyone, in a signal handler too).
 *
 * Why not printf: it is not async-signal-safe (the audit preload formats
 * pids and counts in handlers of fatal signals), the sampling path must
 * not call it, and its format parsing was a tenth of a long trace's
 * export time (export_chrome.c writes millions of numbers). Six files once
 * each had a copy of the loop below.
 *
 * Algorithm: digits from the lowest, into a scratch array from its end,
 * then copied forward. Arithmetic and stores only (a compiler may turn the
 * copy into memcpy, which POSIX lists as async-signal-safe).
 */
#include "decimal.h"

size_t snap__dec_u64(char *out, uint64_t v) {
  char tmp[20];
  size_t n = sizeof tmp;
  do {
    tmp[--n] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  size_t len = sizeof tmp - n;
  for (size_t i = 0; i < len; i++)
    out[i] = tmp[n + i];
  out[len] = '\0';
  return len;
}

size_t snap__dec_i64(char *out, int64_t v) {
  if (v >= 0)
    return snap__dec_u64(out, (uint64_t)v);
  out[0] = '-';
  /* Negated in unsigned arithmetic: -INT64_MIN does not fit an int64_t. */
  return 1 + snap__dec_u64(out + 1, (uint64_t)0 - (uint64_t)v);
}

void snap__dec_fixed(char *out, uint64_t v, size_t width) {
  for (size_t i = width; i > 0; i--) {
    out[i - 1] = (char)('0' + v % 10);
    v /= 10;
  }
}
