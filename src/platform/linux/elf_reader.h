/*
 * elf_reader.h — function names out of an ELF image held in memory.
 *
 * A pure parser over a byte buffer: no file I/O, no system call, no global
 * state, so the fuzzer can drive it with any bytes. elf_symbols.c reads the
 * files into buffers it owns. Every pointer the reader hands back (names,
 * the build-id) points into that buffer and lives as long as it does —
 * until snap__elf_detach copies what lookups need into a block of the
 * parse's own, after which the buffer may be freed.
 *
 * Only ELF64 little-endian is read (x86_64 and aarch64 Linux, the targets);
 * anything else, ELF32 included, parses as "unknown".
 */
#ifndef SNAP_PLATFORM_LINUX_ELF_READER_H
#define SNAP_PLATFORM_LINUX_ELF_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One function: [addr, end) in the file's virtual addresses. */
typedef struct snap__elf_sym {
  uint64_t addr;
  uint64_t end;     /* addr + size; for a size-0 symbol the next symbol or
                       the end of its section */
  const char *name; /* into the buffer's string table, NUL-terminated */
} snap__elf_sym_t;

/* A section a pc must never be named for a neighbour in: a PLT. */
typedef struct snap__elf_plt {
  uint64_t addr, size; /* virtual range */
  uint64_t offset;     /* file offset of its bytes; 0 with size_in_file 0 */
  uint64_t size_in_file;
  uint64_t entsize; /* sh_entsize as the linker wrote it */
  bool got_slots;   /* .plt.got: its entries jump through .got */
} snap__elf_plt_t;

typedef struct snap__elf_rela {
  uint64_t offset, count; /* Elf64_Rela array inside the buffer */
} snap__elf_rela_t;

#define SNAP__ELF_MAX_PLT 4
#define SNAP__ELF_MAX_RELA 4

typedef struct snap__elf {
  const uint8_t *data; /* the buffer parsed, or after detach: owned */
  size_t size;
  uint8_t *owned;   /* detach's block (data points into it), or NULL */
  uint16_t machine; /* e_machine: EM_X86_64, EM_AARCH64, ... */
  uint16_t type;    /* e_type: ET_EXEC, ET_DYN, ... */

  /* Functions sorted by addr, one per address (aliases resolved), owned
     (malloc'ed) by this struct. */
  snap__elf_sym_t *syms;
  size_t nsyms;
  /* Per function, syms[i].addr and .end minus syms[0].addr, when every
     one fits in 32 bits (else NULL): what a lookup searches, 8 bytes a
     function instead of 24, so a big image's search stays in the CPU's
     caches. Owned. */
  uint32_t *keys;
  /* With keys: where a search starts. buckets[b] is the first function
     whose key start is >= b << bucket_shift, for b in [0, nbuckets], the
     last one nsyms; about one bucket a function, so a lookup reads two
     words and searches a few keys, not log2(nsyms) of them all over
     memory (each a cache miss in a big library). NULL: search all keys.
     Owned. */
  uint32_t *buckets;
  size_t nbuckets;
  unsigned bucket_shift;
  bool from_symtab; /* the names came from .symtab (not only .dynsym) */

  /* For PLT names: .dynsym and the relocations that point into it. */
  uint64_t dynsym_off, dynsym_count;
  uint64_t dynstr_off, dynstr_size;
  snap__elf_plt_t plt[SNAP__ELF_MAX_PLT];
  int nplt;
  snap__elf_rela_t rela[SNAP__ELF_MAX_RELA];
  int nrela;

  /* Set by snap__elf_parse_lazy until snap__elf_index builds syms: a
     lookup (snap__elf_lookup) then scans the symbol table itself, section
     sym_index of the section headers at sh_off (sh_num of them). */
  bool lazy;
  uint64_t sh_off, sh_num, sym_index;
  /* For a lazy parse whose buffer lacks the symbol table's bytes (the
     file copy's biggest part: elf_symbols.c leaves it in the file until
     the image is indexed, so a first lookup reads it once, in pieces,
     into memory already in the CPU's caches, instead of copying it into
     fresh pages): NULL, or where the scan gets them. It returns a
     pointer to the file's bytes from off on and sets *got (<= want, a
     whole number of symbols or fewer); NULL or *got 0: they cannot be
     read (the file changed), and the scan answers nothing rather than
     half. */
  const uint8_t *(*syms_window)(void *ctx, uint64_t off, uint64_t want,
                                uint64_t *got);
  void *syms_ctx;

  const uint8_t *build_id; /* NULL if none */
  size_t build_id_len;
  const char *debuglink; /* .gnu_debuglink file name, NULL if none */
  uint32_t debuglink_crc;
} snap__elf_t;

/* Parses data[0..size). Returns 0 and fills *e (call snap__elf_free later),
   or -1 when the image cannot be named (not ELF64 LE, truncated, absurd
   counts or offsets, no usable symbol table); then *e holds nothing to
   free. Keeps one array, bounded by the number of symbol entries the
   buffer can hold (and, while sorting, scratch of that order). [setup] */
int snap__elf_parse(snap__elf_t *e, const void *data, size_t size);
/* The same without building the sorted function array: e->lazy, and
   lookups scan the symbol table (snap__elf_lookup) until snap__elf_index.
   A first lookup in a big image then costs one pass over its table, not a
   sort of it (60 k functions: ~0.5 M instructions, not ~20 M). [setup] */
int snap__elf_parse_lazy(snap__elf_t *e, const void *data, size_t size);
/* Builds what snap__elf_parse builds for a lazy e (then not lazy). 0, or
   -1 when it cannot (out of memory, a hostile table, or the table not in
   the buffer: syms_window set): e stays lazy and its lookups keep
   scanning. [setup] */
int snap__elf_index(snap__elf_t *e);
void snap__elf_free(snap__elf_t *e);

/* The GNU build-id note of an ELF64 little-endian file in data[0..size),
   as snap__elf_parse finds it (SHT_NOTE sections, else PT_NOTE
   segments), also in a file without any symbol table: *id points into
   data. 0, or -1 when there is none. [setup] */
int snap__elf_build_id(const void *data, size_t size, const uint8_t **id,
                       size_t *len);

/* Makes a parsed e independent of the buffer it was parsed from: the
   function names, the PLT bytes, the relocations and .dynsym/.dynstr that
   name PLT entries, the build-id and the debuglink are copied into one
   block e owns (e->data then points there), and the buffer may go. Memory:
   the names of the functions (not of every symbol, nor the rest of the
   file), plus the PLT's naming tables when the image has a PLT. Returns 0,
   or -1 when out of memory (e then still uses the buffer). [setup] */
int snap__elf_detach(snap__elf_t *e);

/* The function holding vaddr (a file virtual address). Returns it, or NULL.
   O(log n). When none holds it, *floor (if not NULL) receives the end of
   the nearest function below vaddr (0 if none): no function starts in
   (floor, vaddr] except ones without symbols. */
const snap__elf_sym_t *snap__elf_find(const snap__elf_t *e, uint64_t vaddr,
                                      uint64_t *floor);

/* snap__elf_find for an e parsed either way: for a lazy one, the same
   answer found by one pass over its symbol table, written to *scratch
   (the result points there). */
const snap__elf_sym_t *snap__elf_lookup(const snap__elf_t *e, uint64_t vaddr,
                                        uint64_t *floor,
                                        snap__elf_sym_t *scratch);

/* PLT: whether vaddr lies in .plt, .plt.sec or .plt.got. */
bool snap__elf_in_plt(const snap__elf_t *e, uint64_t vaddr);

/* Names a PLT entry "<sym>@plt" into buf, *entry = its first byte. Returns
   1 when named, 0 when vaddr is in a PLT but its target is unknown (the
   caller must then name nothing: never a neighbouring function), -1 when
   vaddr is not in a PLT of this image. */
int snap__elf_plt_name(const snap__elf_t *e, uint64_t vaddr, char *buf,
                       size_t size, uint64_t *entry);

#endif /* SNAP_PLATFORM_LINUX_ELF_READER_H */
