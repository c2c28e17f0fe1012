/*
 * elf_seed.c — the C part of the small test library (test_elf_hostile's
 * victim, fuzz_elf's seed): it calls into libc, so the library has .plt
 * entries, .rela.plt / .rela.dyn relocations and a .dynsym to name them
 * from: mutants and fuzz inputs reach the PLT decoder, not only the symbol
 * table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int snap_elf_seed_entry(const char *s);
int snap_elf_seed_entry(const char *s) {
  size_t len = strlen(s) + 1;
  char *copy = malloc(len);
  if (!copy)
    return -1;
  memcpy(copy, s, len);
  int n = puts(copy) + (int)len;
  free(copy);
  return n;
}
