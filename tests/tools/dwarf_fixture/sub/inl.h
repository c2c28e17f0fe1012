/* inl.h — code in a header (fixture of test_dwarf_lines): rows whose file
   is an include file, inlined at -O2 into callers in two other files. */
#ifndef DWL_FIXTURE_INL_H
#define DWL_FIXTURE_INL_H

static inline unsigned dwl_mix(unsigned x) {
  x ^= x >> 7;
  x *= 0x9e3779b1u;
  x ^= x >> 13;
  return x;
}

static inline unsigned dwl_sum(const unsigned *v, int n) {
  unsigned s = 0;
  for (int i = 0; i < n; i++)
    s += dwl_mix(v[i]) + (unsigned)i;
  return s;
}

#endif
