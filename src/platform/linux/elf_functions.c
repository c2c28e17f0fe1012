/*
 * elf_functions.c — function symbols of a parsed ELF image: the sorted
 * index, and the lookup of the function holding an address (sorted, or
 * by one scan of the table for a lazy parse).
 *
 * Owns: snap__elf_load_syms (for the parse), snap__elf_find,
 * snap__elf_lookup. Must not: read a file, call the OS, keep global
 * state, or trust the table (elf_reader_parts.h: every read bounded).
 *
 * Algorithm:
 *  1. Keep defined STT_FUNC / STT_GNU_IFUNC symbols that lie inside their
 *     section; sort by address (a radix sort of one word a symbol: the
 *     address above the symbol's index); of aliases at one address
 *     keep one name (GLOBAL over WEAK over LOCAL, then fewer leading
 *     underscores, then
 *     shorter, then strcmp: "malloc" over "__libc_malloc", and the same
 *     answer every run) with the largest size. A size-0 symbol runs to the
 *     next symbol or the end of its section.
 *  2. Names stay in the buffer (until snap__elf_detach copies the ones
 *     kept): a string table counts only if its last byte
 *     is NUL, so any in-range offset has its terminator inside the table
 *     (checked once per table, not once per name: a hostile table of long
 *     unterminated strings cannot make the parse quadratic).
 *  3. Lookup: binary search for the last start <= pc (over 32-bit start
 *     and end offsets from the first function when they fit: 8 bytes a
 *     function to touch, not 24), within the few functions of the pc's
 *     bucket (about one function a bucket: two words read, then a few
 *     keys, where a search over all of them took ~17 probes, the last
 *     ones cache misses in a big library); a pc at or past that
 *     function's end is not that function (a gap, or code without a
 *     symbol), unless a function starting just before encloses it (nested
 *     or overlapping symbols, looked for a few entries back). A lazy
 *     parse (snap__elf_parse_lazy) sorts nothing until snap__elf_index:
 *     its lookups find the same answer in one pass over the table (scan:
 *     the few highest function starts <= pc, aliases merged as in 1, and
 *     the lowest start above it), which tests/symbols/test_elf_scan.c
 *     checks against the index.
 */
#include <elf.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "platform/linux/elf_reader.h"
#include "platform/linux/elf_reader_parts.h"

/* How far back a lookup looks for an enclosing function. */
#define ENCLOSING_LOOKBACK 8

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

/* The symbol whose bytes are at raw, if it names a defined function
   inside its section; that section's range then in *sec. */
static bool func_sym_at(const snap__elf_t *e, const shdrs_t *sh,
                        const uint8_t *raw, const Elf64_Shdr *str,
                        sec_memo_t *sec, Elf64_Sym *s) {
  memcpy(s, raw, sizeof *s);
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

/* The same for symbol i of the table at off in the buffer. */
static bool func_sym(const snap__elf_t *e, const shdrs_t *sh, uint64_t off,
                     uint64_t i, const Elf64_Shdr *str, sec_memo_t *sec,
                     Elf64_Sym *s) {
  return func_sym_at(e, sh, e->data + off + i * sizeof *s, str, sec, s);
}

/* The buckets over e->keys (elf_reader.h): the smallest power-of-two
   width (>= 16 bytes) that makes at most one bucket a function, so they
   cost 4 bytes a function at most. Out of memory: none (the search then
   runs over every key). */
static void make_buckets(snap__elf_t *e) {
  size_t m = e->nsyms;
  uint32_t last = e->keys[2 * (m - 1)];
  unsigned shift = 4;
  while (shift < 32 && ((uint64_t)last >> shift) + 1 > m)
    shift++;
  size_t nb = (size_t)((uint64_t)last >> shift) + 1;
  uint32_t *b = malloc((nb + 1) * sizeof *b);
  if (!b)
    return;
  size_t i = 0;
  for (size_t k = 0; k < nb; k++) {
    uint64_t from = (uint64_t)k << shift;
    while (i < m && e->keys[2 * i] < from)
      i++;
    b[k] = (uint32_t)i;
  }
  b[nb] = (uint32_t)m;
  e->buckets = b;
  e->nbuckets = nb;
  e->bucket_shift = shift;
}

int snap__elf_load_syms(snap__elf_t *e, const shdrs_t *sh,
                        const Elf64_Shdr *sym) {
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
  make_buckets(e);
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
    if (rel > UINT32_MAX) { /* past every key */
      lo = e->nsyms;
    } else if (e->buckets) {
      /* The first start above rel is at or after the first in rel's
         bucket, and at or before the first in the next one. */
      size_t b = (size_t)(rel >> e->bucket_shift);
      if (b >= e->nbuckets)
        lo = e->nsyms;
      else
        lo = e->buckets[b], hi = e->buckets[b + 1];
      /* The answer is most often the bucket's first function or the one
         just below it: fetch their entries (the name pointer, a cache
         miss in a big library, then the name's own) while the keys are
         searched, not after (a lookup in libLLVM: ~6 % less time). */
      if (lo > 0 && lo <= e->nsyms)
        __builtin_prefetch(&e->syms[lo - 1]);
      if (lo < e->nsyms)
        __builtin_prefetch(&e->syms[lo]);
    }
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
       own entry is read only for the answer (fetched above). */
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
  /* The table in windows: the buffer's whole table at once, or what
     syms_window gives (elf_reader.h). */
  const uint8_t *win = NULL;
  uint64_t win_at = 0, win_n = 0; /* symbols [win_at, win_at + win_n) */
  for (uint64_t i = 0; i < count; i++) {
    if (i == win_at + win_n) {
      uint64_t got = count - i;
      if (!e->syms_window) {
        win = e->data + sym.sh_offset + i * sizeof(Elf64_Sym);
      } else {
        win = e->syms_window(e->syms_ctx, sym.sh_offset + i * sizeof s,
                             got * sizeof s, &got);
        got = win ? got / sizeof s : 0;
        if (got == 0) { /* the file changed: no answer rather than half */
          if (floor)
            *floor = 0;
          return NULL;
        }
      }
      win_at = i, win_n = got;
    }
    /* Most symbols can change nothing here (above the lowest start seen
       above vaddr, or below the lowest kept): those are passed over on
       two fields, before func_sym's checks (a pass over 60 k symbols:
       ~0.6 M instructions, not ~4.5 M). */
    const uint8_t *raw = win + (i - win_at) * sizeof(Elf64_Sym);
    uint64_t value;
    memcpy(&value, raw + offsetof(Elf64_Sym, st_value), sizeof value);
    if (value > vaddr ? value >= above
                      : nt == ENCLOSING_LOOKBACK && value < top[nt - 1].at)
      continue;
    if (!func_sym_at(e, &sh, raw, &str, &memo, &s))
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
