/*
 * dwarf_lines.c — address -> file:line (and the inlined calls around it)
 * for stacksnap-symbolicate, read by elfutils' libdw as addr2line reads
 * them.
 *
 * Owns: opening an in-memory ELF file with libelf (elf_memory: the tool
 * reads files whole by descriptor, after their build id was checked, so
 * libdw never opens a path a report named), the budget check of what its
 * compressed sections inflate to, and the lookups. libdw does the DWARF
 * (versions 2 to 5, 64-bit DWARF, SHF_COMPRESSED and .zdebug_* sections,
 * forms addr2line reads) instead of our own reader: it is what elfutils'
 * eu-addr2line and systemd-coredump run over every distro's debug files,
 * and OSS-Fuzz fuzzes it.
 *
 * Algorithm:
 *  1. elf_memory over the caller's buffer; every section named .debug_* or
 *     .zdebug_* must be PROGBITS (or NOBITS), and those that are
 *     compressed declare their inflated size in their header (Elf64_Chdr's
 *     ch_size, or "ZLIB" + a big-endian size): their sum must fit
 *     max_inflate before anything is inflated. .debug_str and
 *     .debug_line_str must end in a NUL (libdw 0.188 assumes it), then
 *     dwarf_begin_elf.
 *  2. Lookup: the compile unit holding the address (dwarf_addrdie, by
 *     .debug_aranges; else each unit's ranges, dwarf_haspc, as binutils
 *     does when a producer wrote no aranges), then its line row at or
 *     below the address (dwarf_getsrc_die) and the row's path
 *     (dwarf_linesrc: comp_dir/dir/name as addr2line joins them).
 *  3. Inlined calls: the function holding the address (the unit's
 *     DW_TAG_subprogram whose ranges hold it), then the
 * DW_TAG_inlined_subroutines holding it in that function, nested (searched
 * through every block, as binutils does: gcc leaves some blocks with empty
 * ranges), each with its name (through its abstract origin) and its
 * DW_AT_call_file/DW_AT_call_line.
 *
 * Must not: read a file, call the OS, or keep global state beyond libelf's
 * version handshake (elf_version, idempotent). libdw reports errors as
 * values; an address it cannot place is SNAP_DWL_ENOTFOUND.
 */
#include "dwarf_lines.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INLINED_PATHS 16

struct snap__dwarf_lines {
  Elf *elf;
  Dwarf *dw;
  char *path; /* the last joined path answered (lookup's out->file) */
  char *inlined_path[MAX_INLINED_PATHS]; /* the last inlined() answer's */
};

const char *snap__dwarf_lines_version(void) {
  static char text[64];
  if (!text[0])
    snprintf(text, sizeof text, "libdw (elfutils) %s", dwfl_version(NULL));
  return text;
}

const char *snap__dwarf_lines_strerror(int code) {
  switch (code) {
#define SNAP__DWL_CASE(name, value, text)                                      \
  case value: return text;
    SNAP_DWL_ERROR_MAP(SNAP__DWL_CASE)
#undef SNAP__DWL_CASE
  default: return "unknown error";
  }
}

/* The inflated size a compressed debug section declares; false when the
   section is not compressed (0 added) or its header is broken. */
static bool inflated_size(Elf_Scn *scn, const GElf_Shdr *sh, const char *name,
                          uint64_t *size, bool *broken) {
  *size = 0;
  if (sh->sh_type == SHT_NOBITS)
    return false;
  if (sh->sh_flags & SHF_COMPRESSED) {
    GElf_Chdr ch;
    if (!gelf_getchdr(scn, &ch)) {
      *broken = true;
      return false;
    }
    *size = ch.ch_size;
    return true;
  }
  if (strncmp(name, ".zdebug", 7) != 0)
    return false;
  Elf_Data *d = elf_rawdata(scn, NULL);
  if (!d || !d->d_buf || d->d_size < 12 || memcmp(d->d_buf, "ZLIB", 4) != 0) {
    *broken = true;
    return false;
  }
  const unsigned char *p = (const unsigned char *)d->d_buf + 4;
  for (int i = 0; i < 8; i++)
    *size = *size << 8 | p[i];
  return true;
}

/* Whether the string sections libdw reads with strlen (.debug_str,
   .debug_line_str) end in a NUL, inflated first where compressed (after
   the budget check): libdw 0.188 trusts it, and a hostile file's last
   string would take it past the section's end. */
static bool strings_terminated(Elf *elf, size_t shstrndx) {
  for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn;
       scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    const char *name =
        gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
    if (!name)
      return false;
    bool gnu = strncmp(name, ".zdebug_", 8) == 0;
    const char *base = name + (gnu ? 8 : 7);
    if ((!gnu && strncmp(name, ".debug_", 7) != 0) ||
        (strcmp(base, "str") != 0 && strcmp(base, "line_str") != 0) ||
        sh.sh_type == SHT_NOBITS)
      continue;
    if ((sh.sh_flags & SHF_COMPRESSED) ? elf_compress(scn, 0, 0) < 0
        : gnu                          ? elf_compress_gnu(scn, 0, 0) < 0
                                       : false)
      return false;
    Elf_Data *d = elf_getdata(scn, NULL);
    if (!d || (d->d_size > 0 &&
               (!d->d_buf || ((const char *)d->d_buf)[d->d_size - 1] != 0)))
      return false;
  }
  return true;
}

int snap__dwarf_lines_open(void *buf, size_t len, uint64_t max_inflate,
                           uint64_t *inflated, snap__dwarf_lines_t **out) {
  if (inflated)
    *inflated = 0;
  if (!out)
    return SNAP_DWL_EINVAL;
  *out = NULL;
  if (!buf)
    return SNAP_DWL_EINVAL;
  elf_version(EV_CURRENT);
  Elf *elf = elf_memory(buf, len);
  if (!elf)
    return SNAP_DWL_ENOTELF;
  if (elf_kind(elf) != ELF_K_ELF) {
    elf_end(elf);
    return SNAP_DWL_ENOTELF;
  }
  size_t shstrndx;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) {
    elf_end(elf);
    return SNAP_DWL_EMALFORMED;
  }
  uint64_t total = 0;
  bool broken = false, has_lines = false;
  for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn && !broken;
       scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    const char *name =
        gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
    if (!name) {
      broken = true;
      break;
    }
    if (strncmp(name, ".debug_", 7) != 0 && strncmp(name, ".zdebug_", 8) != 0)
      continue;
    /* A debug section is bytes (PROGBITS), or absent (NOBITS). Another
       type makes libelf convert it into a buffer of exactly its size,
       which libdw 0.188 then reads strings past (fuzz_dwarf_lines found
       it: a .debug_line_str typed SHT_REL). */
    if (sh.sh_type != SHT_PROGBITS && sh.sh_type != SHT_NOBITS) {
      broken = true;
      break;
    }
    has_lines |= strcmp(name + (name[1] == 'z' ? 8 : 7), "line") == 0 &&
                 sh.sh_type != SHT_NOBITS;
    uint64_t n;
    if (inflated_size(scn, &sh, name, &n, &broken)) {
      if (n > UINT64_MAX - total) {
        broken = true;
        break;
      }
      total += n;
    }
  }
  if (inflated)
    *inflated = total;
  int rc = broken                ? SNAP_DWL_EMALFORMED
           : !has_lines          ? SNAP_DWL_ENOLINES
           : total > max_inflate ? SNAP_DWL_ELIMIT
                                 : SNAP_DWL_OK;
  if (rc == SNAP_DWL_OK && !strings_terminated(elf, shstrndx))
    rc = SNAP_DWL_EMALFORMED;
  Dwarf *dw =
      rc == SNAP_DWL_OK ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
  if (rc == SNAP_DWL_OK && !dw)
    rc = SNAP_DWL_EMALFORMED;
  snap__dwarf_lines_t *dl = rc == SNAP_DWL_OK ? calloc(1, sizeof *dl) : NULL;
  if (rc == SNAP_DWL_OK && !dl)
    rc = SNAP_DWL_ENOMEM;
  if (rc != SNAP_DWL_OK) {
    if (dw)
      dwarf_end(dw);
    elf_end(elf);
    return rc;
  }
  dl->elf = elf;
  dl->dw = dw;
  *out = dl;
  return SNAP_DWL_OK;
}

void snap__dwarf_lines_close(snap__dwarf_lines_t *dl) {
  if (!dl)
    return;
  dwarf_end(dl->dw);
  elf_end(dl->elf);
  free(dl->path);
  for (int i = 0; i < MAX_INLINED_PATHS; i++)
    free(dl->inlined_path[i]);
  free(dl);
}

/* The compile unit whose code holds addr: by .debug_aranges, else by each
   unit's own ranges (clang writes no aranges by default). */
static bool unit_of(snap__dwarf_lines_t *dl, uint64_t addr, Dwarf_Die *cu) {
  if (dwarf_addrdie(dl->dw, addr, cu))
    return true;
  Dwarf_Off off = 0, next;
  size_t header;
  while (dwarf_nextcu(dl->dw, off, &next, &header, NULL, NULL, NULL) == 0) {
    if (dwarf_offdie(dl->dw, off + header, cu) && dwarf_haspc(cu, addr) > 0)
      return true;
    off = next;
  }
  return false;
}

/* file as addr2line prints it: libdw joins the line table's directory and
   name; when that is relative, addr2line (bfd's concat_filename) also puts
   the unit's DW_AT_comp_dir in front, even of a directory that repeats it
   (Debian's libc: "./csu" + "./csu/init-first.c"). The joined text goes
   to *slot (replacing what was there). NULL when out of memory. */
static const char *join(Dwarf_Die *cu, const char *file, char **slot) {
  Dwarf_Attribute attr;
  const char *comp =
      dwarf_attr(cu, DW_AT_comp_dir, &attr) ? dwarf_formstring(&attr) : NULL;
  size_t cl = comp ? strlen(comp) : 0;
  if (file[0] == '/' || !cl)
    return file;
  size_t fl = strlen(file);
  char *p = malloc(cl + fl + 2);
  if (!p)
    return NULL;
  memcpy(p, comp, cl);
  p[cl] = '/';
  memcpy(p + cl + 1, file, fl + 1);
  free(*slot);
  *slot = p;
  return p;
}

int snap__dwarf_lines_lookup(snap__dwarf_lines_t *dl, uint64_t addr,
                             snap__dwarf_line_t *out) {
  if (!dl || !out)
    return SNAP_DWL_EINVAL;
  memset(out, 0, sizeof *out);
  Dwarf_Die cu;
  if (!unit_of(dl, addr, &cu))
    return SNAP_DWL_ENOTFOUND;
  Dwarf_Line *line = dwarf_getsrc_die(&cu, addr);
  const char *file = line ? dwarf_linesrc(line, NULL, NULL) : NULL;
  Dwarf_Addr at;
  if (!file || dwarf_lineaddr(line, &at) != 0 || at > addr)
    return SNAP_DWL_ENOTFOUND;
  file = join(&cu, file, &dl->path);
  if (!file)
    return SNAP_DWL_ENOMEM;
  int n = 0;
  unsigned int u = 0;
  out->file = file;
  out->line = dwarf_lineno(line, &n) == 0 && n > 0 ? (uint32_t)n : 0;
  out->column = dwarf_linecol(line, &n) == 0 && n > 0 ? (uint32_t)n : 0;
  out->discriminator = dwarf_linediscriminator(line, &u) == 0 ? u : 0;
  out->row_address = at;
  return SNAP_DWL_OK;
}

/* A DIE's name, through DW_AT_abstract_origin / DW_AT_specification. */
static const char *die_name(Dwarf_Die *die) {
  Dwarf_Attribute attr;
  const char *name = NULL;
  if (dwarf_attr_integrate(die, DW_AT_name, &attr))
    name = dwarf_formstring(&attr);
  return name;
}

/* The DW_TAG_inlined_subroutines holding addr under die, outermost
   first, into chain[*n ...] (at most MAX_DEPTH). Every block is searched,
   not only those whose ranges hold addr: gcc may leave a lexical block an
   empty DW_AT_ranges around inlined code (libdw's dwarf_getscopes then
   stops there; binutils searches the inlined calls of the whole
   function, as here). Bounded: MAX_DEPTH levels, *budget DIEs in all
   (hostile DWARF). True when a call was found under die. */
#define MAX_DEPTH 64
#define MAX_DIES 100000
static bool inlined_chain(Dwarf_Die *die, uint64_t addr, int depth, int *budget,
                          Dwarf_Die *chain, size_t *n) {
  Dwarf_Die child;
  if (depth >= MAX_DEPTH || dwarf_child(die, &child) != 0)
    return false;
  do {
    if (--*budget < 0)
      return false;
    int tag = dwarf_tag(&child);
    if (tag == DW_TAG_inlined_subroutine) {
      if (dwarf_haspc(&child, addr) > 0 && *n < MAX_DEPTH) {
        chain[(*n)++] = child;
        inlined_chain(&child, addr, depth + 1, budget, chain, n);
        return true;
      }
    } else if (tag == DW_TAG_lexical_block || tag == DW_TAG_try_block ||
               tag == DW_TAG_catch_block || tag == DW_TAG_with_stmt) {
      if (inlined_chain(&child, addr, depth + 1, budget, chain, n))
        return true;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

/* The concrete function (DW_TAG_subprogram with code) holding addr among
   die's children, through namespaces and classes (C++). dwarf_getscopes
   would answer, for inlined code, the abstract origin's scopes instead. */
static bool function_of(Dwarf_Die *die, uint64_t addr, int depth, int *budget,
                        Dwarf_Die *out) {
  Dwarf_Die child;
  if (depth >= MAX_DEPTH || dwarf_child(die, &child) != 0)
    return false;
  do {
    if (--*budget < 0)
      return false;
    int tag = dwarf_tag(&child);
    if (tag == DW_TAG_subprogram && dwarf_haspc(&child, addr) > 0) {
      *out = child;
      return true;
    }
    if ((tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
         tag == DW_TAG_structure_type || tag == DW_TAG_module) &&
        function_of(&child, addr, depth + 1, budget, out))
      return true;
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

size_t snap__dwarf_lines_inlined(snap__dwarf_lines_t *dl, uint64_t addr,
                                 snap__dwarf_inline_t *out, size_t max) {
  Dwarf_Die cu, fn;
  if (!dl || !unit_of(dl, addr, &cu))
    return 0;
  /* The function holding addr, then the inlined calls in it that hold
     addr. */
  Dwarf_Die chain[MAX_DEPTH];
  size_t n = 0;
  int budget = MAX_DIES;
  if (function_of(&cu, addr, 0, &budget, &fn))
    inlined_chain(&fn, addr, 0, &budget, chain, &n);
  Dwarf_Files *files = NULL;
  size_t nfiles = 0;
  if (n > 0 && dwarf_getsrcfiles(&cu, &files, &nfiles) != 0)
    files = NULL;
  for (size_t k = 0; k < n && k < max; k++) {
    Dwarf_Die *d = &chain[n - 1 - k]; /* innermost first */
    Dwarf_Attribute attr;
    Dwarf_Word file = 0, line = 0;
    if (dwarf_attr(d, DW_AT_call_file, &attr))
      dwarf_formudata(&attr, &file);
    if (dwarf_attr(d, DW_AT_call_line, &attr))
      dwarf_formudata(&attr, &line);
    out[k].function = die_name(d);
    const char *f =
        files && file < nfiles ? dwarf_filesrc(files, file, NULL, NULL) : NULL;
    out[k].file =
        f && k < MAX_INLINED_PATHS ? join(&cu, f, &dl->inlined_path[k]) : f;
    out[k].line = line <= UINT32_MAX ? (uint32_t)line : 0;
  }
  return n;
}
