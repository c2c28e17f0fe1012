/*
 * elf_reader_parts.h — what the parts of the ELF reader share: bounded
 * reads of the buffer, and the functions one part calls in another.
 *
 * The reader is split by what it reads: elf_reader.c (the parse: section
 * headers, which tables count; detaching from the buffer), elf_functions.c
 * (function symbols: the sorted index and the lookups), elf_plt.c (naming
 * PLT entries) and elf_notes.c (the build-id and the debuglink). All of
 * them keep elf_reader.h's promise: a pure parser over a byte buffer, no
 * file I/O, no system call, no global state, and not one byte of the input
 * trusted. Every read goes through in_file() (offset and length checked
 * against the buffer, overflow-proof), every count is checked against
 * what the buffer could hold before anything is allocated, and every
 * field is copied out with memcpy (the buffer may sit at any alignment).
 *
 * Owns: those checked accessors, as static inline functions (each part
 * reads through them in its loops, as it did when the reader was one
 * file). Must not: be included outside the reader's parts.
 */
#ifndef SNAP_PLATFORM_LINUX_ELF_READER_PARTS_H
#define SNAP_PLATFORM_LINUX_ELF_READER_PARTS_H

#include <elf.h>
#include <string.h>

#include "platform/linux/elf_reader.h"

#ifndef EM_AARCH64
#define EM_AARCH64 183
#endif
#ifndef STT_GNU_IFUNC
#define STT_GNU_IFUNC 10
#endif

/* More symbols than any real image has (a large C++ library has a few
   million); past it the file is taken as hostile. */
#define MAX_SYMS (1u << 24)

static inline bool in_file(const snap__elf_t *e, uint64_t off, uint64_t len) {
  return off <= e->size && len <= e->size - off;
}

static inline bool get(const snap__elf_t *e, uint64_t off, void *dst,
                       size_t len) {
  if (!in_file(e, off, len))
    return false;
  memcpy(dst, e->data + off, len);
  return true;
}

/* Section headers, read one at a time (never an array sized by e_shnum). */
typedef struct shdrs {
  uint64_t off, num;
} shdrs_t;

static inline bool shdr(const snap__elf_t *e, const shdrs_t *s, uint64_t i,
                        Elf64_Shdr *out) {
  return i < s->num && get(e, s->off + i * sizeof *out, out, sizeof *out);
}

/* A string table is usable only if its bytes are in the file and its last
   byte is NUL (see elf_functions.c's head comment, step 2). */
static inline bool strtab_ok(const snap__elf_t *e, const Elf64_Shdr *sh) {
  return sh->sh_type == SHT_STRTAB && sh->sh_size > 0 &&
         in_file(e, sh->sh_offset, sh->sh_size) &&
         e->data[sh->sh_offset + sh->sh_size - 1] == '\0';
}

static inline const char *str_at(const snap__elf_t *e, uint64_t tab_off,
                                 uint64_t tab_size, uint64_t name) {
  if (name >= tab_size)
    return NULL;
  return (const char *)e->data + tab_off + name;
}

static inline uint64_t align_up(uint64_t v, uint64_t a) {
  return (v + (a - 1)) & ~(a - 1); /* callers keep v far below UINT64_MAX */
}

static inline uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* The ELF header, if the file is ELF64 little-endian (ELF32: unknown). */
static inline bool header(const snap__elf_t *e, Elf64_Ehdr *eh) {
  return get(e, 0, eh, sizeof *eh) &&
         memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 &&
         eh->e_ident[EI_CLASS] == ELFCLASS64 &&
         eh->e_ident[EI_DATA] == ELFDATA2LSB;
}

/* elf_functions.c: reads the function symbols of the table sym (which
   shdrs sh locates) into e->syms, sorted. 0, or -1 with nothing kept. */
int snap__elf_load_syms(snap__elf_t *e, const shdrs_t *sh,
                        const Elf64_Shdr *sym);

/* elf_notes.c: the build-id among the notes at data[off, off + len); the
   .gnu_debuglink section s; the notes of the PT_NOTE segments. Each sets
   e's fields only when what it reads is whole. */
void snap__elf_scan_notes(snap__elf_t *e, uint64_t off, uint64_t len,
                          uint64_t align);
void snap__elf_read_debuglink(snap__elf_t *e, const Elf64_Shdr *s);
void snap__elf_scan_phdr_notes(snap__elf_t *e, const Elf64_Ehdr *eh);

#endif /* SNAP_PLATFORM_LINUX_ELF_READER_PARTS_H */
