/*
 * image_probe.c — the checks that come before a report may make the tool
 * read a file (see image_probe.h).
 *
 * Owns: the form of a report's build id (a report is hostile: an id of
 * "../../x" would be a path once joined into DIR/.build-id/xx/rest.debug),
 * and the bounded read of a file's build-id note. A report names files by
 * path; such a file is read whole only once its note says it is the
 * image's build (symbol_files.c): a report naming /etc/shadow, a FIFO or a
 * 4 GiB file costs a few small reads, and nothing of what they held is
 * shown.
 *
 * The walk mirrors snap__elf_build_id (src/platform/linux/elf_notes.c):
 * SHT_NOTE sections first, then PT_NOTE segments, the same note layout, so
 * that the probe and the full reader agree on every file within the
 * bounds (the fuzzer checks that they do).
 *
 * Must not: read more than SNAP__PROBE_MAX_READ bytes of a file, or any
 * piece beyond the file's size; allocate more than one piece at a time.
 */
#include "image_probe.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TABLE ((size_t)256 << 10) /* section or program headers */
#define MAX_NOTE ((size_t)64 << 10)   /* one SHT_NOTE / PT_NOTE */

bool snap__build_id_plausible(const char *id, char *out, size_t out_size) {
  size_t n = id ? strlen(id) : 0;
  if (n < 2 * SNAP__BUILD_ID_MIN_BYTES || n > 2 * SNAP__BUILD_ID_MAX_BYTES ||
      n % 2 || out_size <= n)
    return false;
  for (size_t i = 0; i < n; i++) {
    char c = id[i];
    if (c >= 'A' && c <= 'F')
      c = (char)(c - 'A' + 'a');
    else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
    out[i] = c;
  }
  out[n] = '\0';
  return true;
}

typedef struct probe {
  snap__probe_read_fn read;
  void *ctx;
  uint64_t size;
  snap__probe_t *out;
} probe_t;

/* A piece [off, off+len) of the file, malloc'ed; NULL when it lies
   outside the file, is over max or the budget (out->capped), or cannot
   be read. */
static uint8_t *piece(probe_t *p, uint64_t off, uint64_t len, size_t max) {
  if (len == 0 || off > p->size || len > p->size - off)
    return NULL;
  if (len > max || len > SNAP__PROBE_MAX_READ - p->out->bytes) {
    p->out->capped = true;
    return NULL;
  }
  uint8_t *buf = malloc((size_t)len);
  if (!buf)
    return NULL;
  p->out->bytes += (size_t)len;
  if (p->read(p->ctx, off, buf, (size_t)len) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

static uint64_t align_up(uint64_t v, uint64_t a) {
  return (v + a - 1) & ~(a - 1);
}

/* As elf_notes.c's snap__elf_scan_notes, over a piece. */
static bool scan_notes(probe_t *p, uint64_t off, uint64_t len, uint64_t align) {
  uint8_t *d = piece(p, off, len, MAX_NOTE);
  if (!d)
    return false;
  align = align == 8 ? 8 : 4;
  uint64_t pos = 0;
  bool found = false;
  while (!found && len - pos >= 12) {
    uint32_t nhdr[3]; /* namesz, descsz, type */
    memcpy(nhdr, d + pos, sizeof nhdr);
    uint64_t name = pos + 12;
    uint64_t desc = name + align_up(nhdr[0], align);
    if (desc > len)
      break;
    uint64_t next = desc + align_up(nhdr[1], align);
    if (next > len || desc + nhdr[1] > len)
      break;
    if (nhdr[2] == NT_GNU_BUILD_ID && nhdr[0] == 4 &&
        memcmp(d + name, "GNU", 4) == 0 && nhdr[1] > 0 &&
        nhdr[1] <= SNAP__BUILD_ID_MAX_BYTES) {
      memcpy(p->out->id, d + desc, nhdr[1]);
      p->out->id_len = nhdr[1];
      found = true;
    }
    pos = next;
  }
  free(d);
  return found;
}

static bool section_notes(probe_t *p, const Elf64_Ehdr *eh) {
  if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff == 0 ||
      eh->e_shoff >= p->size)
    return false;
  uint64_t num = eh->e_shnum;
  if (num == 0) { /* extended numbering: section 0's sh_size */
    Elf64_Shdr *s0 = (Elf64_Shdr *)piece(p, eh->e_shoff, sizeof *s0, MAX_TABLE);
    if (!s0)
      return false;
    num = s0->sh_size;
    free(s0);
  }
  if (num > (p->size - eh->e_shoff) / sizeof(Elf64_Shdr))
    return false;
  if (num > MAX_TABLE / sizeof(Elf64_Shdr)) {
    p->out->capped = true;
    return false;
  }
  Elf64_Shdr *sh =
      (Elf64_Shdr *)piece(p, eh->e_shoff, num * sizeof(Elf64_Shdr), MAX_TABLE);
  if (!sh)
    return false;
  bool found = false;
  for (uint64_t i = 1; i < num && !found; i++)
    if (sh[i].sh_type == SHT_NOTE)
      found = scan_notes(p, sh[i].sh_offset, sh[i].sh_size, sh[i].sh_addralign);
  free(sh);
  return found;
}

static bool segment_notes(probe_t *p, const Elf64_Ehdr *eh) {
  if (eh->e_phentsize != sizeof(Elf64_Phdr))
    return false;
  Elf64_Phdr *ph = (Elf64_Phdr *)piece(
      p, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr), MAX_TABLE);
  if (!ph)
    return false;
  bool found = false;
  for (unsigned i = 0; i < eh->e_phnum && !found; i++)
    if (ph[i].p_type == PT_NOTE)
      found = scan_notes(p, ph[i].p_offset, ph[i].p_filesz, ph[i].p_align);
  free(ph);
  return found;
}

int snap__probe_build_id(snap__probe_read_fn read, void *ctx,
                         uint64_t file_size, snap__probe_t *out) {
  memset(out, 0, sizeof *out);
  probe_t p = {read, ctx, file_size, out};
  Elf64_Ehdr *eh = (Elf64_Ehdr *)piece(&p, 0, sizeof *eh, sizeof *eh);
  if (!eh)
    return -1;
  bool elf = memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 &&
             eh->e_ident[EI_CLASS] == ELFCLASS64 &&
             eh->e_ident[EI_DATA] == ELFDATA2LSB;
  bool found = elf && (section_notes(&p, eh) || segment_notes(&p, eh));
  free(eh);
  if (!found)
    out->id_len = 0;
  return found ? 0 : -1;
}
