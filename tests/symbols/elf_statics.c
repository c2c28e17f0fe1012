/*
 * elf_statics.c — static functions for test_elf_names: they exist only in
 * the executable's .symtab (nm shows them as 't'), so naming them proves
 * the provider reads .symtab and not just the exported .dynsym. The table
 * keeps them alive; the test calls them so none is folded away.
 */
#include <stdint.h>

#define STATIC_FN(n)                                                           \
  __attribute__((noinline)) static uintptr_t elf_static_##n(uintptr_t x) {     \
    __asm__ volatile("" : "+r"(x));                                            \
    return x * (n + 3) + (x >> (n % 7));                                       \
  }
STATIC_FN(0)
STATIC_FN(1)
STATIC_FN(2)
STATIC_FN(3)
STATIC_FN(4)
STATIC_FN(5)
STATIC_FN(6)
STATIC_FN(7)

typedef uintptr_t (*elf_static_fn)(uintptr_t);
const elf_static_fn elf_statics[8] = {
    elf_static_0, elf_static_1, elf_static_2, elf_static_3,
    elf_static_4, elf_static_5, elf_static_6, elf_static_7,
};
