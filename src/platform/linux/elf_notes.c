/*
 * elf_notes.c — what identifies an ELF image and its debug file: the GNU
 * build-id (from SHT_NOTE sections, else PT_NOTE segments) and the
 * .gnu_debuglink (a file name and the CRC32 of that file).
 *
 * Owns: the note and debuglink readers the parse calls, and
 * snap__elf_build_id, the same answer without a parse (for a caller that
 * wants only the id). Must not: read a file, call the OS, keep global
 * state, or trust one byte (elf_reader_parts.h: every read bounded; a
 * note whose sizes run past its section is ignored).
 */
#include <elf.h>
#include <stddef.h>
#include <string.h>

#include "platform/linux/elf_reader.h"
#include "platform/linux/elf_reader_parts.h"

void snap__elf_scan_notes(snap__elf_t *e, uint64_t off, uint64_t len,
                          uint64_t align) {
  if (!in_file(e, off, len) || e->build_id)
    return;
  align = align == 8 ? 8 : 4;
  uint64_t pos = 0;
  while (len - pos >= 12) {
    uint32_t nhdr[3]; /* namesz, descsz, type */
    memcpy(nhdr, e->data + off + pos, sizeof nhdr);
    uint64_t name = pos + 12;
    uint64_t desc = name + align_up(nhdr[0], align);
    if (desc > len)
      return;
    uint64_t next = desc + align_up(nhdr[1], align);
    if (next > len || desc + nhdr[1] > len)
      return;
    if (nhdr[2] == NT_GNU_BUILD_ID && nhdr[0] == 4 &&
        memcmp(e->data + off + name, "GNU", 4) == 0 && nhdr[1] > 0 &&
        nhdr[1] <= 64) {
      e->build_id = e->data + off + desc;
      e->build_id_len = nhdr[1];
      return;
    }
    pos = next;
  }
}

void snap__elf_read_debuglink(snap__elf_t *e, const Elf64_Shdr *s) {
  if (s->sh_type != SHT_PROGBITS || !in_file(e, s->sh_offset, s->sh_size))
    return;
  const char *name = (const char *)e->data + s->sh_offset;
  const char *nul = memchr(name, '\0', s->sh_size);
  if (!nul || nul == name || memchr(name, '/', (size_t)(nul - name)))
    return; /* a file name, not a path */
  uint64_t crc_off = align_up((uint64_t)(nul - name) + 1, 4);
  if (crc_off > s->sh_size || s->sh_size - crc_off < 4)
    return;
  e->debuglink = name;
  e->debuglink_crc = le32(e->data + s->sh_offset + crc_off);
}

void snap__elf_scan_phdr_notes(snap__elf_t *e, const Elf64_Ehdr *eh) {
  if (eh->e_phentsize != sizeof(Elf64_Phdr) ||
      !in_file(e, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr)))
    return;
  for (unsigned i = 0; i < eh->e_phnum && !e->build_id; i++) {
    Elf64_Phdr ph;
    memcpy(&ph, e->data + eh->e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type == PT_NOTE)
      snap__elf_scan_notes(e, ph.p_offset, ph.p_filesz, ph.p_align);
  }
}

int snap__elf_build_id(const void *data, size_t size, const uint8_t **id,
                       size_t *len) {
  snap__elf_t e;
  memset(&e, 0, sizeof e);
  e.data = data;
  e.size = size;
  Elf64_Ehdr eh;
  if (!data || !header(&e, &eh))
    return -1;
  shdrs_t sh = {eh.e_shoff, 1};
  Elf64_Shdr s0, s;
  if (eh.e_shentsize == sizeof(Elf64_Shdr) && eh.e_shoff != 0 &&
      eh.e_shoff < size && shdr(&e, &sh, 0, &s0)) {
    uint64_t num = eh.e_shnum ? eh.e_shnum : s0.sh_size;
    if (num <= (size - eh.e_shoff) / sizeof(Elf64_Shdr)) {
      sh.num = num;
      for (uint64_t i = 1; i < num && !e.build_id; i++)
        if (shdr(&e, &sh, i, &s) && s.sh_type == SHT_NOTE)
          snap__elf_scan_notes(&e, s.sh_offset, s.sh_size, s.sh_addralign);
    }
  }
  if (!e.build_id)
    snap__elf_scan_phdr_notes(&e, &eh);
  *id = e.build_id;
  *len = e.build_id_len;
  return e.build_id ? 0 : -1;
}
