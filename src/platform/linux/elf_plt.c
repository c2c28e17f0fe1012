/*
 * elf_plt.c — names for addresses inside an ELF image's PLT:
 * "<sym>@plt".
 *
 * Owns: snap__elf_in_plt, snap__elf_plt_name. Must not: read a file, call
 * the OS, keep global state, or trust one byte (elf_reader_parts.h: every
 * read bounded).
 *
 * A pc in .plt, .plt.sec or .plt.got is never given to a neighbouring
 * function. Its entry's instructions say which GOT slot it jumps through
 * (x86_64: jmp *disp32(%rip), after endbr64 / bnd; aarch64: adrp x16 +
 * ldr x17,[x16,#off], after bti c), and the JUMP_SLOT / GLOB_DAT
 * relocation of that slot names the .dynsym symbol: "<sym>@plt".
 * Anything else in a PLT (the resolver stub PLT0, undecodable bytes, a
 * slot no relocation names) is unknown. That reloc search is linear in
 * the relocation count; it runs only for pcs inside a PLT.
 */
#include <elf.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "platform/linux/elf_reader.h"
#include "platform/linux/elf_reader_parts.h"

static const char *dynsym_name(const snap__elf_t *e, uint64_t index) {
  if (index == 0 || index >= e->dynsym_count)
    return NULL;
  Elf64_Sym s;
  memcpy(&s, e->data + e->dynsym_off + index * sizeof s, sizeof s);
  const char *name = str_at(e, e->dynstr_off, e->dynstr_size, s.st_name);
  return name && name[0] ? name : NULL;
}

static bool is_slot_reloc(const snap__elf_t *e, uint64_t info) {
  uint32_t type = (uint32_t)ELF64_R_TYPE(info);
  if (e->machine == EM_X86_64)
    return type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT;
  if (e->machine == EM_AARCH64)
    return type == 1026 /* R_AARCH64_JUMP_SLOT */ ||
           type == 1025 /* R_AARCH64_GLOB_DAT */;
  return false;
}

static const char *rela_name(const snap__elf_t *e, const snap__elf_rela_t *r,
                             uint64_t k) {
  Elf64_Rela rel;
  memcpy(&rel, e->data + r->offset + k * sizeof rel, sizeof rel);
  if (!is_slot_reloc(e, rel.r_info))
    return NULL;
  return dynsym_name(e, ELF64_R_SYM(rel.r_info));
}

static const char *got_slot_name(const snap__elf_t *e, uint64_t got) {
  for (int i = 0; i < e->nrela; i++) {
    const snap__elf_rela_t *r = &e->rela[i];
    for (uint64_t k = 0; k < r->count; k++) {
      uint64_t where;
      memcpy(&where, e->data + r->offset + k * sizeof(Elf64_Rela),
             sizeof where);
      if (where == got)
        return rela_name(e, r, k);
    }
  }
  return NULL;
}

/* x86_64: entries are sh_entsize apart (16; 8 in a non-IBT .plt.got).
   The lazy .plt behind a .plt.sec ("endbr64; push index; bnd jmp PLT0")
   names no slot: unknown, as is PLT0. */
static const char *plt_x86(const snap__elf_t *e, const snap__elf_plt_t *p,
                           uint64_t rel, uint64_t *entry) {
  uint64_t ent = (p->entsize == 8 || p->entsize == 16) ? p->entsize : 16;
  uint64_t start = rel - rel % ent;
  if (start >= p->size_in_file)
    return NULL;
  const uint8_t *b = e->data + p->offset + start;
  uint64_t avail =
      p->size_in_file - start < ent ? p->size_in_file - start : ent;
  *entry = p->addr + start;
  uint64_t i = 0;
  if (avail >= 4 && memcmp(b, "\xf3\x0f\x1e\xfa", 4) == 0)
    i = 4;                                            /* endbr64 */
  uint64_t j = i < avail && b[i] == 0xf2 ? i + 1 : i; /* bnd */
  if (j + 6 <= avail && b[j] == 0xff && b[j + 1] == 0x25) {
    int32_t disp = (int32_t)le32(b + j + 2);
    uint64_t got = p->addr + start + j + 6 + (uint64_t)(int64_t)disp;
    return got_slot_name(e, got);
  }
  return NULL;
}

/* aarch64: entries are 16 bytes (24 with bti c or autia1716, and not
   always aligned to that), so find the entry's adrp x16 instead: the last
   one at or before the pc whose entry (from its bti c, if any) starts at or
   before the pc. An entry is at most 6 instructions, so look 5 back. */
static const char *plt_a64(const snap__elf_t *e, const snap__elf_plt_t *p,
                           uint64_t rel, uint64_t *entry) {
  rel &= ~(uint64_t)3;
  const uint8_t *b = e->data + p->offset;
  for (uint64_t k = 0; k <= 6; k++) {
    if (rel + 4 < 4 * k)
      break;
    uint64_t q = rel + 4 - 4 * k;
    if (q > p->size_in_file || p->size_in_file - q < 8)
      continue;
    uint32_t adrp = le32(b + q), ldr = le32(b + q + 4);
    if ((adrp & 0x9f00001fu) != 0x90000010u || /* adrp x16, page */
        (ldr & 0xffc003ffu) != 0xf9400211u)    /* ldr x17, [x16, #off] */
      continue;
    uint64_t start = q;
    if (q >= 4 && le32(b + q - 4) == 0xd503245fu) /* bti c */
      start = q - 4;
    if (start > rel)
      continue; /* the next entry's: the pc is in this one's tail */
    uint64_t imm = ((adrp >> 29) & 3u) | (((adrp >> 5) & 0x7ffffu) << 2);
    int64_t page_delta = ((int64_t)(imm << 43) >> 43) * 4096; /* 21-bit */
    uint64_t page = (p->addr + q) & ~(uint64_t)0xfff;
    uint64_t got = page + (uint64_t)page_delta + ((ldr >> 10) & 0xfffu) * 8;
    *entry = p->addr + start;
    return got_slot_name(e, got);
  }
  return NULL;
}

bool snap__elf_in_plt(const snap__elf_t *e, uint64_t vaddr) {
  for (int i = 0; i < e->nplt; i++)
    if (vaddr >= e->plt[i].addr && vaddr - e->plt[i].addr < e->plt[i].size)
      return true;
  return false;
}

int snap__elf_plt_name(const snap__elf_t *e, uint64_t vaddr, char *buf,
                       size_t size, uint64_t *entry) {
  const snap__elf_plt_t *p = NULL;
  for (int i = 0; i < e->nplt && !p; i++)
    if (vaddr >= e->plt[i].addr && vaddr - e->plt[i].addr < e->plt[i].size)
      p = &e->plt[i];
  if (!p)
    return -1;
  if (p->size_in_file == 0)
    return 0; /* a debug file's NOBITS copy: in a PLT, bytes elsewhere */
  uint64_t start = 0;
  const char *name = NULL;
  if (e->machine == EM_X86_64)
    name = plt_x86(e, p, vaddr - p->addr, &start);
  else if (e->machine == EM_AARCH64)
    name = plt_a64(e, p, vaddr - p->addr, &start);
  if (!name)
    return 0;
  int len = snprintf(buf, size, "%s@plt", name);
  if (len < 0 || (size_t)len >= size)
    return 0; /* a cut name would be a wrong name */
  *entry = start;
  return 1;
}
