/* lib.c — the fixture shared library of test_dwarf_lines. */
#include "../sub/inl.h"

static unsigned dwl_lib_helper(unsigned x) { return dwl_mix(x) ^ 3u; }

unsigned dwl_lib_entry(const unsigned *v, int n) {
  unsigned s = dwl_sum(v, n);
  for (int i = 0; i < n; i++)
    s += dwl_lib_helper(v[i]);
  return s;
}
