/*
 * elf_reader.c — function names, PLT entries, the build-id and the
 * debuglink out of an ELF64 little-endian image held in a byte buffer.
 *
 * Owns: the parse and the lookups; nothing else. Must not: read a file,
 * call the OS, keep global state, or trust one byte of the input. It runs
 * over files an attacker may have put in a library path and over whatever
 * the fuzzer makes, so every read goes through in_file() (offset and length
 * checked against the buffer, overflow-proof), every count is checked
 * against what the buffer could hold before anything is allocated, and
 * every field is copied out with memcpy (the buffer may sit at any
 * alignment). Anything structurally wrong makes the image "unknown"
 * (-1 from the parse), never a guess; one bad symbol only drops that symbol.
 *
 * Algorithm:
 *  1. Section headers: .symtab if there is one, else .dynsym (a stripped
 *     file still exports its public functions). ELF32 and big-endian give
 *     -1: the targets (x86_64, aarch64 Linux) are ELF64 LE.
 *  2. Keep defined STT_FUNC / STT_GNU_IFUNC symbols that lie inside their
 *     section; sort by address (a radix sort of one word a symbol: the
 *     address above the symbol's index); of aliases at one address
 *     keep one name (GLOBAL over WEAK over LOCAL, then fewer leading
 *     underscores, then
 *     shorter, then strcmp: "malloc" over "__libc_malloc", and the same
 *     answer every run) with the largest size. A size-0 symbol runs to the
 *     next symbol or the end of its section.
 *  3. Names stay in the buffer (until snap__elf_detach copies the ones
 *     kept): a string table counts only if its last byte
 *     is NUL, so any in-range offset has its terminator inside the table
 *     (checked once per table, not once per name: a hostile table of long
 *     unterminated strings cannot make the parse quadratic).
 *  4. Lookup: binary search for the last start <= pc (over 32-bit start
 *     and end offsets from the first function when they fit: 8 bytes a
 *     function to touch, not 24); a pc at or past that
 *     function's end is not that function (a gap, or code without a
 *     symbol), unless a function starting just before encloses it (nested
 *     or overlapping symbols, looked for a few entries back). A lazy
 *     parse (snap__elf_parse_lazy) sorts nothing until snap__elf_index:
 *     its lookups find the same answer in one pass over the table (scan:
 *     the few highest function starts <= pc, aliases merged as in 2, and
 *     the lowest start above it), which tests/symbols/test_elf_scan.c
 *     checks against the index.
 *  5. PLT: a pc in .plt, .plt.sec or .plt.got is never given to a
 *     neighbouring function. Its entry's instructions say which GOT slot it
 *     jumps through (x86_64: jmp *disp32(%rip), after endbr64 / bnd;
 *     aarch64: adrp x16 +
 *     ldr x17,[x16,#off], after bti c), and the JUMP_SLOT / GLOB_DAT
 *     relocation of that slot names the .dynsym symbol: "<sym>@plt".
 *     Anything else in a PLT (the resolver stub PLT0, undecodable bytes, a
 *     slot no relocation names) is unknown. That reloc search is linear in
 *     the relocation count; it runs only for pcs inside a PLT.
 *  6. Build-id from SHT_NOTE sections, else PT_NOTE segments;
 *     .gnu_debuglink: file name and CRC32.
 */
#include "platform/linux/elf_reader.h"

#include <elf.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef EM_AARCH64
#define EM_AARCH64 183
#endif
#ifndef STT_GNU_IFUNC
#define STT_GNU_IFUNC 10
#endif

/* More symbols than any real image has (a large C++ library has a few
   million); past it the file is taken as hostile. */
#define MAX_SYMS (1u << 24)
/* How far back a lookup looks for an enclosing function. */
#define ENCLOSING_LOOKBACK 8

static bool in_file(const snap__elf_t *e, uint64_t off, uint64_t len) {
  return off <= e->size && len <= e->size - off;
}

static bool get(const snap__elf_t *e, uint64_t off, void *dst, size_t len) {
  if (!in_file(e, off, len))
    return false;
  memcpy(dst, e->data + off, len);
  return true;
}

/* Section headers, read one at a time (never an array sized by e_shnum). */
typedef struct shdrs {
  uint64_t off, num;
} shdrs_t;

static bool shdr(const snap__elf_t *e, const shdrs_t *s, uint64_t i,
                 Elf64_Shdr *out) {
  return i < s->num && get(e, s->off + i * sizeof *out, out, sizeof *out);
}

/* A string table is usable only if its bytes are in the file and its last
   byte is NUL (see the head comment, step 3). */
static bool strtab_ok(const snap__elf_t *e, const Elf64_Shdr *sh) {
  return sh->sh_type == SHT_STRTAB && sh->sh_size > 0 &&
         in_file(e, sh->sh_offset, sh->sh_size) &&
         e->data[sh->sh_offset + sh->sh_size - 1] == '\0';
}

static const char *str_at(const snap__elf_t *e, uint64_t tab_off,
                          uint64_t tab_size, uint64_t name) {
  if (name >= tab_size)
    return NULL;
  return (const char *)e->data + tab_off + name;
}

static uint64_t align_up(uint64_t v, uint64_t a) {
  return (v + (a - 1)) & ~(a - 1); /* callers keep v far below UINT64_MAX */
}

/* ---- Symbols ------------------------------------------------------------ */

/* What the sort orders: (addr - lowest addr) << ibits | the symbol's index
   in its table. One word a symbol, so the sort moves 8 bytes, not a
   40-byte record with its name and sizes: a first lookup in a big library
   was mostly moving, and faulting in, those records. The rest of a symbol
   is read again from its table, for the ones kept. */
typedef uint64_t sym_key_t;

static unsigned leading_underscores(const char *s) {
  unsigned n = 0;
  while (s[n] == '_')
    n++;
  return n;
}

/* Which name an address with aliases goes by: GLOBAL over WEAK over LOCAL,
   then fewer leading underscores, then shorter, then strcmp ("malloc"
   over "__libc_malloc", and the same answer every run). < 0: a wins. */
static int prefer(unsigned ra, const char *a, unsigned rb, const char *b) {
  if (ra != rb)
    return ra < rb ? -1 : 1;
  unsigned ua = leading_underscores(a), ub = leading_underscores(b);
  if (ua != ub)
    return ua < ub ? -1 : 1;
  size_t la = strlen(a), lb = strlen(b);
  if (la != lb)
    return la < lb ? -1 : 1;
  return strcmp(a, b);
}

/* LSD radix sort of k[0..n) on bits [lo_bit, 64), 11 bits a pass, skipping
   digits that are the same in every key (a library's code spans a few MiB:
   two or three passes). tmp: scratch of n keys. Returns the sorted array
   (k or tmp). */
#define RADIX_BITS 11
static sym_key_t *radix_sort(sym_key_t *k, sym_key_t *tmp, size_t n,
                             unsigned lo_bit) {
  uint64_t diff = 0;
  for (size_t i = 0; i < n; i++)
    diff |= k[i] ^ k[0];
  const uint64_t mask = (1u << RADIX_BITS) - 1;
  for (unsigned shift = lo_bit; shift < 64; shift += RADIX_BITS) {
    if (!((diff >> shift) & mask))
      continue; /* one digit for all: this pass would change nothing */
    size_t count[(1u << RADIX_BITS) + 1] = {0};
    for (size_t i = 0; i < n; i++)
      count[((k[i] >> shift) & mask) + 1]++;
    for (size_t d = 1; d <= mask + 1; d++)
      count[d] += count[d - 1];
    for (size_t i = 0; i < n; i++)
      tmp[count[(k[i] >> shift) & mask]++] = k[i];
    sym_key_t *t = k;
    k = tmp, tmp = t;
  }
  return k;
}

static unsigned bind_rank(unsigned char info) {
  switch (ELF64_ST_BIND(info)) {
  case STB_GLOBAL: return 0;
  case STB_WEAK: return 1;
  case STB_LOCAL: return 2;
  default: return 3;
  }
}

/* Section shndx's address range [addr, end), remembered for the last
   section asked (symbols come in runs of one section). False when the
   section cannot hold a function. */
typedef struct sec_memo {
  uint64_t shndx, addr, end;
} sec_memo_t;

static bool section_range(const snap__elf_t *e, const shdrs_t *sh,
                          uint64_t shndx, sec_memo_t *m) {
  if (m->shndx != shndx) {
    Elf64_Shdr sec;
    m->shndx = shndx;
    m->addr = m->end = 0;
    if (shdr(e, sh, shndx, &sec) && sec.sh_size > 0 &&
        sec.sh_addr + sec.sh_size > sec.sh_addr) {
      m->addr = sec.sh_addr;
      m->end = sec.sh_addr + sec.sh_size;
    }
  }
  return m->end != 0;
}

/* Symbol i of the table at off, if it names a defined function inside its
   section; that section's range then in *sec. */
static bool func_sym(const snap__elf_t *e, const shdrs_t *sh, uint64_t off,
                     uint64_t i, const Elf64_Shdr *str, sec_memo_t *sec,
                     Elf64_Sym *s) {
  memcpy(s, e->data + off + i * sizeof *s, sizeof *s);
  unsigned type = ELF64_ST_TYPE(s->st_info);
  if (type != STT_FUNC && type != STT_GNU_IFUNC)
    return false;
  if (s->st_shndx == SHN_UNDEF || s->st_shndx >= SHN_LORESERVE)
    return false; /* undefined, absolute, common, or an extended index */
  if (s->st_name >= str->sh_size ||
      e->data[str->sh_offset + s->st_name] == '\0')
    return false;
  /* A function outside its own section is a corrupt entry, not code. */
  return section_range(e, sh, s->st_shndx, sec) && s->st_value >= sec->addr &&
         s->st_value < sec->end;
}

static int load_syms(snap__elf_t *e, const shdrs_t *sh, const Elf64_Shdr *sym) {
  if (sym->sh_entsize != sizeof(Elf64_Sym) ||
      !in_file(e, sym->sh_offset, sym->sh_size))
    return -1;
  uint64_t count = sym->sh_size / sizeof(Elf64_Sym);
  if (count > MAX_SYMS)
    return -1;
  Elf64_Shdr str;
  if (!shdr(e, sh, sym->sh_link, &str) || !strtab_ok(e, &str))
    return -1;
  if (count == 0)
    return 0;
  const char *strs = (const char *)e->data + str.sh_offset;
  uint64_t off = sym->sh_offset;

  /* 1. The defined functions inside their sections: their addresses and
     indices, the span of their addresses. */
  sym_key_t *k = malloc(count * sizeof *k), *tmp = malloc(count * sizeof *tmp);
  if (!k || !tmp) {
    free(k), free(tmp);
    return -1;
  }
  size_t n = 0;
  uint64_t lo = UINT64_MAX, hi = 0;
  sec_memo_t memo = {UINT64_MAX, 0, 0};
  Elf64_Sym s;
  for (uint64_t i = 0; i < count; i++) {
    if (!func_sym(e, sh, off, i, &str, &memo, &s))
      continue;
    k[n] = s.st_value;
    tmp[n++] = i;
    lo = s.st_value < lo ? s.st_value : lo;
    hi = s.st_value > hi ? s.st_value : hi;
  }
  if (n == 0) {
    free(k), free(tmp);
    return 0;
  }

  /* 2. Sort by address: one word a symbol, (addr - lo) above the index.
     Stable (LSD), so aliases keep symbol-table order. */
  unsigned ibits = 1;
  while (((uint64_t)1 << ibits) < count)
    ibits++; /* count <= MAX_SYMS: at most 24 */
  unsigned span_bits = 0;
  while (span_bits < 64 && ((hi - lo) >> span_bits) != 0)
    span_bits++;
  snap__elf_sym_t *out = malloc(n * sizeof *out);
  uint8_t *unsized = calloc((n + 7) / 8, 1);
  if (!out || !unsized || ibits + span_bits > 64) {
    /* Out of memory, or functions spread over more than 2^40 bytes (no
       real image does): unknown rather than a slow path nothing tests. */
    free(k), free(tmp), free(out), free(unsized);
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    k[i] = (k[i] - lo) << ibits | tmp[i];
  const sym_key_t *sorted = radix_sort(k, tmp, n, ibits);
  const uint64_t imask = ((uint64_t)1 << ibits) - 1;

  /* 3. One entry per address: of a run of aliases the preferred name, and
     the run's largest size and section end stand for all of it. */
  size_t m = 0;
  for (size_t i = 0; i < n;) {
    uint64_t at = (sorted[i] >> ibits) + lo, size = 0, limit = 0;
    uint32_t best = 0;
    unsigned best_rank = 0;
    size_t j = i;
    for (; j < n && (sorted[j] >> ibits) + lo == at; j++) {
      (void)func_sym(e, sh, off, sorted[j] & imask, &str, &memo, &s);
      unsigned rank = bind_rank(s.st_info);
      if (j == i || prefer(rank, strs + s.st_name, best_rank, strs + best) < 0)
        best = s.st_name, best_rank = rank;
      uint64_t sz = s.st_value + s.st_size < s.st_value ? 0 : s.st_size;
      if (sz > size) /* a size that wraps counts as unsized */
        size = sz;
      if (memo.end > limit)
        limit = memo.end;
    }
    if (size == 0)
      unsized[m / 8] |= (uint8_t)(1u << (m % 8));
    out[m++] = (snap__elf_sym_t){at, size > 0 ? at + size : limit, strs + best};
    i = j;
  }
  /* A size-0 symbol runs to the next symbol or the end of its section. */
  for (size_t i = 0; i + 1 < m; i++)
    if ((unsized[i / 8] >> (i % 8) & 1) && out[i + 1].addr < out[i].end)
      out[i].end = out[i + 1].addr;
  free(tmp), free(unsized);
  if (m < n) { /* aliases merged: give the tail back */
    snap__elf_sym_t *shrunk = realloc(out, m * sizeof *out);
    if (shrunk)
      out = shrunk;
  }
  e->syms = out;
  e->nsyms = m;
  /* The search keys go where the sort keys were (8 bytes a function
     either way): memory already faulted in, not fresh pages. */
  uint64_t last_end = 0;
  for (size_t i = 0; i < m; i++)
    last_end = out[i].end > last_end ? out[i].end : last_end;
  if (last_end - out[0].addr > UINT32_MAX) {
    free(k); /* no keys: the slower search */
    return 0;
  }
  _Static_assert(sizeof(sym_key_t) == 2 * sizeof(uint32_t), "key reuse");
  uint32_t *keys = (uint32_t *)(void *)k;
  for (size_t i = 0; i < m; i++) {
    keys[2 * i] = (uint32_t)(out[i].addr - out[0].addr);
    keys[2 * i + 1] = (uint32_t)(out[i].end - out[0].addr);
  }
  uint32_t *shrunk = realloc(keys, 2 * m * sizeof *keys);
  e->keys = shrunk ? shrunk : keys;
  return 0;
}

const snap__elf_sym_t *snap__elf_find(const snap__elf_t *e, uint64_t vaddr,
                                      uint64_t *floor) {
  if (floor)
    *floor = 0;
  size_t lo = 0, hi = e->nsyms; /* first entry with addr > vaddr */
  uint64_t base = e->nsyms ? e->syms[0].addr : 0;
  if (e->keys) {
    if (vaddr < base)
      return NULL;
    uint64_t rel = vaddr - base;
    if (rel > UINT32_MAX) /* past every key */
      lo = e->nsyms;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (e->keys[2 * mid] <= (uint32_t)rel)
        lo = mid + 1;
      else
        hi = mid;
    }
  } else {
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (e->syms[mid].addr <= vaddr)
        lo = mid + 1;
      else
        hi = mid;
    }
  }
  if (lo == 0)
    return NULL;
  uint64_t below = 0;
  for (size_t k = 0; k < ENCLOSING_LOOKBACK && k < lo; k++) {
    size_t i = lo - 1 - k;
    /* The end from the key beside the start just searched: the symbol's
       own entry is one more cache miss, paid only for the answer. */
    uint64_t end = e->keys ? base + e->keys[2 * i + 1] : e->syms[i].end;
    if (vaddr < end)
      return &e->syms[i];
    if (end > below)
      below = end;
  }
  if (floor)
    *floor = below;
  return NULL;
}

/* One address of a lazy scan: the aliases at it merged as load_syms
   merges them. */
typedef struct cand {
  uint64_t at, size, limit;
  uint32_t name;
  unsigned rank;
} cand_t;

/* snap__elf_find's answer without syms: the ENCLOSING_LOOKBACK highest
   function addresses <= vaddr (each with its preferred alias, largest
   size and section end, as load_syms keeps them) and the lowest above
   it, gathered in one pass; then the same look back. */
static const snap__elf_sym_t *scan(const snap__elf_t *e, uint64_t vaddr,
                                   uint64_t *floor, snap__elf_sym_t *out) {
  shdrs_t sh = {e->sh_off, e->sh_num};
  Elf64_Shdr sym, str;
  if (!shdr(e, &sh, e->sym_index, &sym) || !shdr(e, &sh, sym.sh_link, &str))
    return NULL; /* checked by the parse: cannot be */
  const char *strs = (const char *)e->data + str.sh_offset;
  uint64_t count = sym.sh_size / sizeof(Elf64_Sym), above = UINT64_MAX;
  cand_t top[ENCLOSING_LOOKBACK]; /* by address, highest first */
  int nt = 0;
  sec_memo_t memo = {UINT64_MAX, 0, 0};
  Elf64_Sym s;
  for (uint64_t i = 0; i < count; i++) {
    /* Most symbols can change nothing here (above the lowest start seen
       above vaddr, or below the lowest kept): those are passed over on
       two fields, before func_sym's checks (a pass over 60 k symbols:
       ~0.6 M instructions, not ~4.5 M). */
    const uint8_t *raw = e->data + sym.sh_offset + i * sizeof(Elf64_Sym);
    uint64_t value;
    memcpy(&value, raw + offsetof(Elf64_Sym, st_value), sizeof value);
    if (value > vaddr ? value >= above
                      : nt == ENCLOSING_LOOKBACK && value < top[nt - 1].at)
      continue;
    if (!func_sym(e, &sh, sym.sh_offset, i, &str, &memo, &s))
      continue;
    uint64_t at = s.st_value;
    if (at > vaddr) {
      above = at < above ? at : above;
      continue;
    }
    if (nt == ENCLOSING_LOOKBACK && at < top[nt - 1].at)
      continue;
    int p = 0;
    while (p < nt && top[p].at > at)
      p++;
    unsigned rank = bind_rank(s.st_info);
    uint64_t sz = s.st_value + s.st_size < s.st_value ? 0 : s.st_size;
    if (p < nt && top[p].at == at) { /* an alias: table order, as sorted */
      cand_t *c = &top[p];
      if (prefer(rank, strs + s.st_name, c->rank, strs + c->name) < 0)
        c->name = s.st_name, c->rank = rank;
      c->size = sz > c->size ? sz : c->size;
      c->limit = memo.end > c->limit ? memo.end : c->limit;
      continue;
    }
    if (nt < ENCLOSING_LOOKBACK)
      nt++;
    memmove(&top[p + 1], &top[p], sizeof *top * (size_t)(nt - 1 - p));
    top[p] = (cand_t){at, sz, memo.end, s.st_name, rank};
  }
  uint64_t below = 0;
  for (int k = 0; k < nt; k++) {
    const cand_t *c = &top[k];
    uint64_t end = c->size > 0 ? c->at + c->size : c->limit;
    uint64_t next = k == 0 ? above : top[k - 1].at;
    if (c->size == 0 && next < end)
      end = next; /* a size-0 symbol runs to the next one */
    if (vaddr < end) {
      if (floor)
        *floor = 0;
      *out = (snap__elf_sym_t){c->at, end, strs + c->name};
      return out;
    }
    below = end > below ? end : below;
  }
  if (floor)
    *floor = below;
  return NULL;
}

const snap__elf_sym_t *snap__elf_lookup(const snap__elf_t *e, uint64_t vaddr,
                                        uint64_t *floor,
                                        snap__elf_sym_t *scratch) {
  return e->lazy ? scan(e, vaddr, floor, scratch)
                 : snap__elf_find(e, vaddr, floor);
}

/* ---- PLT ---------------------------------------------------------------- */

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

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
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

/* ---- Notes and the debuglink -------------------------------------------- */

static void scan_notes(snap__elf_t *e, uint64_t off, uint64_t len,
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

static void read_debuglink(snap__elf_t *e, const Elf64_Shdr *s) {
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

static void scan_phdr_notes(snap__elf_t *e, const Elf64_Ehdr *eh) {
  if (eh->e_phentsize != sizeof(Elf64_Phdr) ||
      !in_file(e, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr)))
    return;
  for (unsigned i = 0; i < eh->e_phnum && !e->build_id; i++) {
    Elf64_Phdr ph;
    memcpy(&ph, e->data + eh->e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type == PT_NOTE)
      scan_notes(e, ph.p_offset, ph.p_filesz, ph.p_align);
  }
}

/* ---- The parse ----------------------------------------------------------- */

/* The ELF header, if the file is ELF64 little-endian (ELF32: unknown). */
static bool header(const snap__elf_t *e, Elf64_Ehdr *eh) {
  return get(e, 0, eh, sizeof *eh) &&
         memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 &&
         eh->e_ident[EI_CLASS] == ELFCLASS64 &&
         eh->e_ident[EI_DATA] == ELFDATA2LSB;
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
          scan_notes(&e, s.sh_offset, s.sh_size, s.sh_addralign);
    }
  }
  if (!e.build_id)
    scan_phdr_notes(&e, &eh);
  *id = e.build_id;
  *len = e.build_id_len;
  return e.build_id ? 0 : -1;
}

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
      scan_notes(e, s.sh_offset, s.sh_size, s.sh_addralign);
    const char *nm =
        names_ok ? str_at(e, names.sh_offset, names.sh_size, s.sh_name) : NULL;
    if (!nm)
      continue;
    if (strcmp(nm, ".gnu_debuglink") == 0)
      read_debuglink(e, &s);
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
    scan_phdr_notes(e, &eh);

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
      (lazy ? !syms_usable(e, &sh, &syms) : load_syms(e, &sh, &syms) != 0))
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
  shdrs_t sh = {e->sh_off, e->sh_num};
  Elf64_Shdr syms;
  if (!shdr(e, &sh, e->sym_index, &syms) || load_syms(e, &sh, &syms) != 0)
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
  free(e->owned);
  memset(e, 0, sizeof *e);
}
