/*
 * elf_reader.c — the parse of an ELF64 little-endian image held in a byte
 * buffer: which tables count, and, once parsed, detaching from the buffer.
 * The lookups are elf_functions.c's (function names), elf_plt.c's (PLT
 * entries) and elf_notes.c's (the build-id and the debuglink); what they
 * share is in elf_reader_parts.h.
 *
 * Owns: snap__elf_parse, snap__elf_parse_lazy, snap__elf_index,
 * snap__elf_detach, snap__elf_free. Must not: read a file, call the OS,
 * keep global state, or trust one byte of the input. It runs over files
 * an attacker may have put in a library path and over whatever the fuzzer
 * makes (elf_reader_parts.h says how every read is bounded). Anything
 * structurally wrong makes the image "unknown" (-1 from the parse), never
 * a guess; one bad symbol only drops that symbol.
 *
 * Algorithm:
 *  1. Section headers, read one at a time (never an array sized by
 *     e_shnum): .symtab if there is one, else .dynsym (a stripped file
 *     still exports its public functions); the PLT sections, .dynsym and
 *     the relocations that name PLT slots; notes and .gnu_debuglink.
 *     ELF32 and big-endian give -1: the targets (x86_64, aarch64 Linux)
 *     are ELF64 LE.
 *  2. A full parse sorts the functions now (elf_functions.c); a lazy one
 *     only checks the table the lookups will scan, and sorts on
 *     snap__elf_index.
 *  3. Detach: the names kept, the build-id, the debuglink and the PLT's
 *     tables copied into one block of the parse's own, so the caller may
 *     free the buffer.
 */
#include "platform/linux/elf_reader.h"

#include <elf.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "platform/linux/elf_reader_parts.h"

/* The checks load_syms makes before it reads a symbol: what a lazy parse
   must know holds before its lookups scan the table. */
static bool syms_usable(const snap__elf_t *e, const shdrs_t *sh,
                        const Elf64_Shdr *sym) {
  Elf64_Shdr str;
  return sym->sh_entsize == sizeof(Elf64_Sym) &&
         in_file(e, sym->sh_offset, sym->sh_size) &&
         sym->sh_size / sizeof(Elf64_Sym) <= MAX_SYMS &&
         shdr(e, sh, sym->sh_link, &str) && strtab_ok(e, &str);
}

static int parse(snap__elf_t *e, const void *data, size_t size, bool lazy) {
  memset(e, 0, sizeof *e);
  e->data = data;
  e->size = size;
  Elf64_Ehdr eh;
  if (!data || !header(e, &eh) || eh.e_shentsize != sizeof(Elf64_Shdr) ||
      eh.e_shoff == 0)
    goto fail;
  e->machine = eh.e_machine;
  e->type = eh.e_type;

  /* Extended numbering: counts too big for the header live in section 0. */
  shdrs_t sh = {eh.e_shoff, 1};
  Elf64_Shdr s0;
  if (!shdr(e, &sh, 0, &s0))
    goto fail;
  uint64_t num = eh.e_shnum ? eh.e_shnum : s0.sh_size;
  uint64_t strndx = eh.e_shstrndx == SHN_XINDEX ? s0.sh_link : eh.e_shstrndx;
  if (num == 0 || num > (size - eh.e_shoff) / sizeof(Elf64_Shdr))
    goto fail;
  sh.num = num;
  Elf64_Shdr names;
  bool names_ok = shdr(e, &sh, strndx, &names) && strtab_ok(e, &names);

  uint64_t symtab = 0, dynsym = 0;
  for (uint64_t i = 1; i < num; i++) {
    Elf64_Shdr s;
    if (!shdr(e, &sh, i, &s))
      goto fail;
    if (s.sh_type == SHT_SYMTAB && !symtab)
      symtab = i;
    if (s.sh_type == SHT_DYNSYM && !dynsym)
      dynsym = i;
    if (s.sh_type == SHT_NOTE)
      snap__elf_scan_notes(e, s.sh_offset, s.sh_size, s.sh_addralign);
    const char *nm =
        names_ok ? str_at(e, names.sh_offset, names.sh_size, s.sh_name) : NULL;
    if (!nm)
      continue;
    if (strcmp(nm, ".gnu_debuglink") == 0)
      snap__elf_read_debuglink(e, &s);
    if ((strcmp(nm, ".plt") == 0 || strcmp(nm, ".plt.sec") == 0 ||
         strcmp(nm, ".plt.got") == 0) &&
        e->nplt < SNAP__ELF_MAX_PLT && s.sh_addr + s.sh_size >= s.sh_addr) {
      snap__elf_plt_t *p = &e->plt[e->nplt++];
      *p = (snap__elf_plt_t){
          s.sh_addr, s.sh_size,    0,
          0,         s.sh_entsize, strcmp(nm, ".plt.got") == 0};
      if (s.sh_type == SHT_PROGBITS && in_file(e, s.sh_offset, s.sh_size)) {
        p->offset = s.sh_offset;
        p->size_in_file = s.sh_size;
      }
    }
  }
  if (!e->build_id)
    snap__elf_scan_phdr_notes(e, &eh);

  /* .dynsym and its relocations, for PLT names. A bad one only costs the
     PLT names. */
  Elf64_Shdr ds, dstr;
  if (dynsym && shdr(e, &sh, dynsym, &ds) &&
      ds.sh_entsize == sizeof(Elf64_Sym) &&
      in_file(e, ds.sh_offset, ds.sh_size) && shdr(e, &sh, ds.sh_link, &dstr) &&
      strtab_ok(e, &dstr)) {
    e->dynsym_off = ds.sh_offset;
    e->dynsym_count = ds.sh_size / sizeof(Elf64_Sym);
    e->dynstr_off = dstr.sh_offset;
    e->dynstr_size = dstr.sh_size;
    /* A .plt or .plt.sec entry jumps through a .got.plt slot, whose
       relocation is in .rela.plt (SHF_INFO_LINK, or by name); only a
       .plt.got entry jumps through .got, relocated in .rela.dyn. Without
       a .plt.got, .rela.dyn (8 MiB in libLLVM) names nothing here. */
    bool plt_got = false;
    for (int i = 0; i < e->nplt; i++)
      plt_got |= e->plt[i].got_slots;
    for (uint64_t i = 1; i < num && e->nrela < SNAP__ELF_MAX_RELA; i++) {
      Elf64_Shdr s;
      if (!shdr(e, &sh, i, &s) || s.sh_type != SHT_RELA ||
          s.sh_link != dynsym || s.sh_entsize != sizeof(Elf64_Rela) ||
          !in_file(e, s.sh_offset, s.sh_size))
        continue;
      const char *nm =
          names_ok ? str_at(e, names.sh_offset, names.sh_size, s.sh_name)
                   : NULL;
      if (!plt_got && !(s.sh_flags & SHF_INFO_LINK) &&
          !(nm && strcmp(nm, ".rela.plt") == 0))
        continue;
      e->rela[e->nrela++] =
          (snap__elf_rela_t){s.sh_offset, s.sh_size / sizeof(Elf64_Rela)};
    }
  }

  Elf64_Shdr syms;
  uint64_t pick = symtab ? symtab : dynsym;
  if (!pick || !shdr(e, &sh, pick, &syms) ||
      (lazy ? !syms_usable(e, &sh, &syms)
            : snap__elf_load_syms(e, &sh, &syms) != 0))
    goto fail;
  e->from_symtab = symtab != 0;
  e->lazy = lazy;
  e->sh_off = sh.off, e->sh_num = sh.num, e->sym_index = pick;
  return 0;
fail:
  snap__elf_free(e);
  return -1;
}

int snap__elf_parse(snap__elf_t *e, const void *data, size_t size) {
  return parse(e, data, size, false);
}

int snap__elf_parse_lazy(snap__elf_t *e, const void *data, size_t size) {
  return parse(e, data, size, true);
}

int snap__elf_index(snap__elf_t *e) {
  if (!e->lazy)
    return 0;
  if (e->syms_window) /* the table is not in the buffer yet */
    return -1;
  shdrs_t sh = {e->sh_off, e->sh_num};
  Elf64_Shdr syms;
  if (!shdr(e, &sh, e->sym_index, &syms) ||
      snap__elf_load_syms(e, &sh, &syms) != 0)
    return -1;
  e->lazy = false;
  return 0;
}

/* ---- Detaching from the buffer ------------------------------------------ */

/* Appends data[off, off + len) to the block at *at; returns its new offset. */
static uint64_t keep(uint8_t *blk, size_t *at, const uint8_t *data,
                     uint64_t off, uint64_t len) {
  uint64_t where = *at;
  if (len)
    memcpy(blk + *at, data + off, (size_t)len);
  *at += (size_t)len;
  return where;
}

int snap__elf_detach(snap__elf_t *e) {
  if (e->owned)
    return 0;
  /* Every range below was checked against the buffer by the parse: each
     term is at most the buffer's size. The names are not: many symbols
     may share one long name. Real images' names add up to less than their
     string table, so past twice the buffer the file is taken as hostile
     and keeps its buffer (-1). */
  bool plt = e->nplt > 0;
  uint64_t need = e->build_id_len;
  if (e->debuglink)
    need += strlen(e->debuglink) + 1;
  if (plt) {
    for (int i = 0; i < e->nplt; i++)
      need += e->plt[i].size_in_file;
    for (int i = 0; i < e->nrela; i++)
      need += e->rela[i].count * sizeof(Elf64_Rela);
    need += e->dynsym_count * sizeof(Elf64_Sym) + e->dynstr_size;
  }
  for (size_t i = 0; i < e->nsyms; i++) {
    need += strlen(e->syms[i].name) + 1;
    if (need > 2 * (uint64_t)e->size + 4096)
      return -1;
  }
  uint8_t *blk = malloc(need ? (size_t)need : 1);
  if (!blk)
    return -1;
  size_t at = 0;
  const uint8_t *d = e->data;
  for (size_t i = 0; i < e->nsyms; i++) {
    const char *name = e->syms[i].name;
    size_t len = strlen(name) + 1;
    memcpy(blk + at, name, len);
    e->syms[i].name = (const char *)blk + at;
    at += len;
  }
  if (e->build_id)
    e->build_id = blk + keep(blk, &at, e->build_id, 0, e->build_id_len);
  if (e->debuglink)
    e->debuglink =
        (const char *)blk + keep(blk, &at, (const uint8_t *)e->debuglink, 0,
                                 strlen(e->debuglink) + 1);
  if (plt) {
    for (int i = 0; i < e->nplt; i++)
      if (e->plt[i].size_in_file)
        e->plt[i].offset =
            keep(blk, &at, d, e->plt[i].offset, e->plt[i].size_in_file);
    for (int i = 0; i < e->nrela; i++)
      e->rela[i].offset = keep(blk, &at, d, e->rela[i].offset,
                               e->rela[i].count * sizeof(Elf64_Rela));
    e->dynsym_off =
        keep(blk, &at, d, e->dynsym_off, e->dynsym_count * sizeof(Elf64_Sym));
    e->dynstr_off = keep(blk, &at, d, e->dynstr_off, e->dynstr_size);
  } else {
    e->nrela = 0; /* nothing to name without a PLT */
    e->dynsym_off = e->dynsym_count = e->dynstr_off = e->dynstr_size = 0;
  }
  e->data = blk;
  e->size = at;
  e->owned = blk;
  return 0;
}

void snap__elf_free(snap__elf_t *e) {
  free(e->syms);
  free(e->keys);
  free(e->buckets);
  free(e->owned);
  memset(e, 0, sizeof *e);
}
