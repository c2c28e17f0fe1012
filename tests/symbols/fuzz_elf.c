/*
 * fuzz_elf.c — libFuzzer harness for the ELF reader (elf_reader.c), the
 * parser that reads files anyone could have put in a library path.
 *
 * The input is the file. A private, exactly sized copy makes any read one
 * byte past it an ASan finding. When it parses, every kind of lookup runs:
 * each symbol's start, middle and end, every PLT byte (capped), the
 * addresses around the PLTs, and two addresses taken from the input's
 * first bytes. Inputs of odd length are detached first (snap__elf_detach)
 * and their buffer freed, so any lookup that still reads the input is a
 * use-after-free. Built only with SNAP_FUZZ_SECONDS > 0 (clang, the asan
 * configuration), seeded with a small library that has PLT entries.
 */
#include <stdlib.h>
#include <string.h>

#include "platform/linux/elf_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *buf = malloc(size ? size : 1);
  memcpy(buf, data, size);
  snap__elf_t e;
  if (snap__elf_parse(&e, buf, size) == 0) {
    if ((size & 1) && snap__elf_detach(&e) == 0) {
      free(buf);
      buf = NULL;
    }
    char name[256];
    uint64_t entry, floor;
    for (size_t i = 0; i < e.nsyms; i++) {
      const snap__elf_sym_t *s = &e.syms[i];
      if (!snap__elf_find(&e, s->addr, &floor) || strlen(s->name) == 0)
        __builtin_trap(); /* a listed symbol must be found, with a name */
      snap__elf_find(&e, s->addr + (s->end - s->addr) / 2, &floor);
      snap__elf_find(&e, s->end, &floor);
    }
    for (int p = 0; p < e.nplt; p++) {
      for (uint64_t v = 0; v < e.plt[p].size && v < 1024; v++)
        snap__elf_plt_name(&e, e.plt[p].addr + v, name, sizeof name, &entry);
      snap__elf_plt_name(&e, e.plt[p].addr - 1, name, sizeof name, &entry);
      snap__elf_in_plt(&e, e.plt[p].addr + e.plt[p].size);
    }
    if (size >= 16) {
      uint64_t a, b;
      memcpy(&a, data, 8);
      memcpy(&b, data + 8, 8);
      snap__elf_find(&e, a, &floor);
      snap__elf_plt_name(&e, b, name, sizeof name, &entry);
    }
    if (e.build_id && e.build_id_len)
      (void)(volatile uint8_t)e.build_id[e.build_id_len - 1];
    if (e.debuglink)
      (void)strlen(e.debuglink);
    snap__elf_free(&e);
  }
  free(buf);
  return 0;
}
