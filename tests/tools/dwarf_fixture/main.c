/* main.c — the fixture program of test_dwarf_lines: calls into
   sub/util.c and the header's inline code; never run, only read. */
#include <stdio.h>
#include <stdlib.h>

#include "sub/inl.h"

unsigned dwl_util(unsigned seed, int rounds);

static unsigned dwl_local(int argc) {
  unsigned a[4] = {(unsigned)argc, 2, 3, 4};
  return dwl_sum(a, 4);
}

__attribute__((noinline)) static int dwl_cold_path(const char *why) {
  fprintf(stderr, "%s\n", why);
  return 2;
}

int main(int argc, char **argv) {
  unsigned r = dwl_local(argc);
  if (argc > 5)
    return dwl_cold_path(argv[0]);
  r += dwl_util(r, argc);
  printf("%u\n", r);
  return 0;
}
