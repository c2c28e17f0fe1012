/* util.c — a second translation unit in a subdirectory (fixture of
   test_dwarf_lines): static and global functions, a loop, a switch. */
#include "inl.h"

static unsigned dwl_step(unsigned x, int k) {
  switch (k % 4) {
  case 0: return x + 1;
  case 1: return x * 3;
  case 2: return x ^ 0x55u;
  default: return dwl_mix(x);
  }
}

unsigned dwl_util(unsigned seed, int rounds) {
  unsigned v[8];
  for (int i = 0; i < 8; i++)
    v[i] = dwl_step(seed + (unsigned)i, i + rounds);
  return dwl_sum(v, 8);
}
