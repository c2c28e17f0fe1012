/*
 * test_elf_hostile.c — the ELF reader over broken and malicious files:
 * truncated at many lengths, absurd header and section fields, string
 * tables without a NUL, symbols pointing outside their tables and
 * sections, garbage in the PLT, random byte flips. The reader must answer
 * "unknown" (parse -1, or no name) and never read outside the buffer: each
 * mutant sits in a buffer malloc'ed to its exact size, so under ASan a
 * one-byte overread is a failure. The same holds through the provider
 * (snap__plat_symbolize over a hostile file on disk).
 *
 * The originals are a small generated library (300 functions and a few
 * PLT entries), the 50k-function one (through the provider) and this
 * executable (its PLT);
 * positions to corrupt are found by this file's own small section-header
 * walk (it only aims the damage; the expected answers do not come from it).
 */
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "platform/linux/elf_reader.h"
#include "platform/platform.h"
#include "xorshift.h"

#ifndef ELF_BIG_LIB
#error "built by tests/symbols/elf.cmake"
#endif

typedef struct buf {
  uint8_t *p;
  size_t n;
} buf_t;

static buf_t slurp(const char *path) {
  buf_t b = {0};
  int fd = open(path, O_RDONLY);
  struct stat st;
  CHECK(fd >= 0 && fstat(fd, &st) == 0, "open %s", path);
  if (fd < 0)
    return b;
  b.n = (size_t)st.st_size;
  b.p = malloc(b.n);
  size_t got = 0;
  while (got < b.n) {
    ssize_t r = read(fd, b.p + got, b.n - got);
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  close(fd);
  CHECK_EQ(got, b.n);
  return b;
}

static buf_t copy_of(const buf_t *b, size_t n) {
  buf_t c = {malloc(n ? n : 1), n};
  memcpy(c.p, b->p, n < b->n ? n : b->n);
  return c;
}

static uint64_t g_rng = 0x243F6A8885A308D3ull;
static uint64_t rnd(void) { return snap_xorshift(&g_rng); }

/* Parses, and if that works, looks up every symbol start, end and middle
   and every PLT byte: whatever the answers, nothing may be read out of
   bounds. Returns the parse result. */
static int exercise(const buf_t *b) {
  snap__elf_t e;
  int rc = snap__elf_parse(&e, b->p, b->n);
  if (rc != 0)
    return rc;
  if (rnd() & 1) /* what elf_symbols.c does before it frees the file copy */
    (void)snap__elf_detach(&e);
  char name[512];
  uint64_t entry, floor;
  for (size_t i = 0; i < e.nsyms; i += 1 + e.nsyms / 512) {
    const snap__elf_sym_t *s = snap__elf_find(&e, e.syms[i].addr, &floor);
    CHECK(s && s->name, "a listed symbol is found");
    snap__elf_find(&e, e.syms[i].end, &floor);
    snap__elf_find(&e, e.syms[i].addr + (e.syms[i].end - e.syms[i].addr) / 2,
                   &floor);
  }
  for (int p = 0; p < e.nplt; p++)
    for (uint64_t v = 0; v < e.plt[p].size && v < 4096; v++)
      snap__elf_plt_name(&e, e.plt[p].addr + v, name, sizeof name, &entry);
  snap__elf_plt_name(&e, rnd(), name, sizeof name, &entry);
  snap__elf_find(&e, rnd(), &floor);
  snap__elf_free(&e);
  return 0;
}

/* ---- Aiming: this file's own minimal header walk ------------------------ */

static Elf64_Ehdr *ehdr(const buf_t *b) { return (Elf64_Ehdr *)b->p; }
static Elf64_Shdr *shdr(const buf_t *b, unsigned i) {
  return (Elf64_Shdr *)(b->p + ehdr(b)->e_shoff) + i;
}
static int section_of_type(const buf_t *b, uint32_t type) {
  for (unsigned i = 0; i < ehdr(b)->e_shnum; i++)
    if (shdr(b, i)->sh_type == type)
      return (int)i;
  return -1;
}
static int section_named(const buf_t *b, const char *name) {
  const char *names =
      (const char *)b->p + shdr(b, ehdr(b)->e_shstrndx)->sh_offset;
  for (unsigned i = 0; i < ehdr(b)->e_shnum; i++)
    if (strcmp(names + shdr(b, i)->sh_name, name) == 0)
      return (int)i;
  return -1;
}

/* One mutation of the header or a section header, expected to make the
   whole image unknown. */
static void expect_unknown(const buf_t *orig, const char *what,
                           void (*mutate)(buf_t *, int), int arg) {
  buf_t m = copy_of(orig, orig->n);
  mutate(&m, arg);
  CHECK(exercise(&m) == -1, "%s: parsed", what);
  free(m.p);
}

static void m_shnum(buf_t *b, int v) { ehdr(b)->e_shnum = (uint16_t)v; }
static void m_shoff_end(buf_t *b, int v) {
  ehdr(b)->e_shoff = b->n - (size_t)v;
}
static void m_shoff_huge(buf_t *b, int v) {
  ehdr(b)->e_shoff = UINT64_MAX - (uint64_t)v;
}
static void m_shentsize(buf_t *b, int v) { ehdr(b)->e_shentsize = (uint16_t)v; }
static void m_class32(buf_t *b, int v) {
  (void)v;
  b->p[EI_CLASS] = ELFCLASS32;
}
static void m_bigendian(buf_t *b, int v) {
  (void)v;
  b->p[EI_DATA] = ELFDATA2MSB;
}
static void m_magic(buf_t *b, int v) { b->p[v] ^= 0x20; }
static void m_extended(buf_t *b, int v) {
  (void)v;
  ehdr(b)->e_shnum = 0; /* the count is then section 0's sh_size */
  shdr(b, 0)->sh_size = UINT64_MAX / 2;
}
static void m_symtab_size(buf_t *b, int v) {
  Elf64_Shdr *s = shdr(b, (unsigned)section_of_type(b, SHT_SYMTAB));
  s->sh_size = v ? UINT64_MAX - 7 : b->n; /* wraps / runs off the end */
}
static void m_symtab_offset(buf_t *b, int v) {
  Elf64_Shdr *s = shdr(b, (unsigned)section_of_type(b, SHT_SYMTAB));
  s->sh_offset = v ? UINT64_MAX - 100 : b->n - 8;
}
static void m_symtab_link(buf_t *b, int v) {
  shdr(b, (unsigned)section_of_type(b, SHT_SYMTAB))->sh_link = (uint32_t)v;
}
static void m_symtab_entsize(buf_t *b, int v) {
  shdr(b, (unsigned)section_of_type(b, SHT_SYMTAB))->sh_entsize = (uint64_t)v;
}
static void m_strtab_nonul(buf_t *b, int v) {
  (void)v;
  Elf64_Shdr *s = shdr(b, (unsigned)section_of_type(b, SHT_SYMTAB));
  Elf64_Shdr *str = shdr(b, s->sh_link);
  memset(b->p + str->sh_offset, 'A', str->sh_size); /* no NUL anywhere */
}
static void m_strtab_lastbyte(buf_t *b, int v) {
  (void)v;
  Elf64_Shdr *s = shdr(b, (unsigned)section_of_type(b, SHT_SYMTAB));
  Elf64_Shdr *str = shdr(b, s->sh_link);
  b->p[str->sh_offset + str->sh_size - 1] = 'A';
}
static void m_strtab_huge(buf_t *b, int v) {
  (void)v;
  Elf64_Shdr *s = shdr(b, (unsigned)section_of_type(b, SHT_SYMTAB));
  shdr(b, s->sh_link)->sh_size = UINT64_MAX;
}

/* ---- The checks --------------------------------------------------------- */

static void check_truncation(const buf_t *orig) {
  /* Every length. The section headers sit at the end of what ld writes,
     so every cut loses them. */
  for (size_t n = 0; n < orig->n; n++) {
    buf_t t = copy_of(orig, n);
    CHECK(exercise(&t) == -1, "truncated at %zu: parsed", n);
    free(t.p);
  }
  CHECK(exercise(orig) == 0, "the original parses");
}

static void check_bad_symbols(const buf_t *orig) {
  snap__elf_t e;
  CHECK(snap__elf_parse(&e, orig->p, orig->n) == 0, "original");
  size_t before = e.nsyms;
  snap__elf_free(&e);
  int si = section_of_type(orig, SHT_SYMTAB);
  CHECK(si > 0, "a .symtab to damage");
  if (si <= 0)
    return;
  buf_t m = copy_of(orig, orig->n);
  Elf64_Shdr *s = shdr(&m, (unsigned)si);
  Elf64_Sym *sym = (Elf64_Sym *)(m.p + s->sh_offset);
  size_t count = s->sh_size / sizeof *sym;
  /* Three function symbols: a name past the string table, a value outside
     its section, a size that wraps (a sized function becomes unsized). */
  size_t hit[3], nhit = 0;
  for (size_t i = 1; i < count && nhit < 3; i++)
    if (ELF64_ST_TYPE(sym[i].st_info) == STT_FUNC && sym[i].st_size > 0 &&
        sym[i].st_shndx != SHN_UNDEF && i % 97 == 0)
      hit[nhit++] = i;
  CHECK_EQ(nhit, 3);
  if (nhit < 3) {
    free(m.p);
    return;
  }
  uint64_t addr0 = sym[hit[0]].st_value, addr1 = sym[hit[1]].st_value;
  sym[hit[0]].st_name = 0xFFFFFFF0u;
  sym[hit[1]].st_value = UINT64_MAX - 3;
  sym[hit[2]].st_size = UINT64_MAX - 2;
  CHECK(snap__elf_parse(&e, m.p, m.n) == 0, "bad symbols are dropped, "
                                            "not the image");
  CHECK_EQ(e.nsyms, before - 2);
  uint64_t floor;
  /* gen_funcs functions are sized, so the dropped ones are unknown, not
     their neighbours. */
  CHECK(snap__elf_find(&e, addr0, &floor) == NULL, "out-of-range name");
  CHECK(snap__elf_find(&e, addr1, &floor) == NULL, "out-of-section value");
  CHECK(snap__elf_find(&e, UINT64_MAX - 3, &floor) == NULL, "wild value");
  const snap__elf_sym_t *w = snap__elf_find(&e, sym[hit[2]].st_value, &floor);
  CHECK(w && w->end > w->addr && w->end != w->addr + (UINT64_MAX - 2),
        "a wrapping size is not trusted");
  snap__elf_free(&e);
  free(m.p);
}

static void check_fields(const buf_t *orig) {
  expect_unknown(orig, "e_shnum 0xffff", m_shnum, 0xffff);
  expect_unknown(orig, "e_shoff at the last bytes", m_shoff_end, 10);
  expect_unknown(orig, "e_shoff wraps", m_shoff_huge, 5);
  expect_unknown(orig, "e_shentsize 32", m_shentsize, 32);
  expect_unknown(orig, "ELF32", m_class32, 0);
  expect_unknown(orig, "big-endian", m_bigendian, 0);
  for (int i = 0; i < 4; i++)
    expect_unknown(orig, "bad magic", m_magic, i);
  expect_unknown(orig, "extended shnum absurd", m_extended, 0);
  expect_unknown(orig, "symtab size past the end", m_symtab_size, 0);
  expect_unknown(orig, "symtab size wraps", m_symtab_size, 1);
  expect_unknown(orig, "symtab offset at the end", m_symtab_offset, 0);
  expect_unknown(orig, "symtab offset wraps", m_symtab_offset, 1);
  expect_unknown(orig, "symtab sh_link absurd", m_symtab_link, 0x7fffffff);
  expect_unknown(orig, "symtab sh_link to section 0", m_symtab_link, 0);
  expect_unknown(orig, "symtab entsize 0", m_symtab_entsize, 0);
  expect_unknown(orig, "symtab entsize 1", m_symtab_entsize, 1);
  expect_unknown(orig, "string table without NUL", m_strtab_nonul, 0);
  expect_unknown(orig, "string table's last byte", m_strtab_lastbyte, 0);
  expect_unknown(orig, "string table size absurd", m_strtab_huge, 0);
}

/* This executable's PLT, with its instructions replaced by int3 and then
   its .dynsym names cut: every PLT byte is then unknown (0), never a
   neighbour's name, and never -1 ("not in a PLT", which would send the
   caller to the symbol table). */
static void check_plt_garbage(void) {
  buf_t orig = slurp("/proc/self/exe");
  if (!orig.p)
    return;
  int plt = section_named(&orig, ".plt");
  CHECK(plt > 0, "this executable has a .plt");
  if (plt <= 0) {
    free(orig.p);
    return;
  }
  for (int round = 0; round < 2; round++) {
    buf_t m = copy_of(&orig, orig.n);
    if (round == 0) {
      for (const char *n = ".plt"; n; n = n[4] ? NULL : ".plt.sec") {
        int i = section_named(&m, n);
        if (i > 0)
          memset(m.p + shdr(&m, (unsigned)i)->sh_offset, 0xcc,
                 shdr(&m, (unsigned)i)->sh_size);
      }
      int got = section_named(&m, ".plt.got");
      if (got > 0)
        memset(m.p + shdr(&m, (unsigned)got)->sh_offset, 0xcc,
               shdr(&m, (unsigned)got)->sh_size);
    } else {
      int ds = section_of_type(&m, SHT_DYNSYM);
      Elf64_Shdr *s = shdr(&m, (unsigned)ds);
      Elf64_Sym *sym = (Elf64_Sym *)(m.p + s->sh_offset);
      for (size_t i = 0; i < s->sh_size / sizeof *sym; i++)
        sym[i].st_name = 0xFFFFFF00u;
    }
    snap__elf_t e;
    CHECK(snap__elf_parse(&e, m.p, m.n) == 0, "parse");
    Elf64_Shdr *ps = shdr(&m, (unsigned)plt);
    char name[512];
    uint64_t entry;
    int bad = 0;
    for (uint64_t v = 0; v < ps->sh_size; v++)
      bad += snap__elf_plt_name(&e, ps->sh_addr + v, name, sizeof name,
                                &entry) != 0;
    CHECK_EQ(bad, 0);
    snap__elf_free(&e);
    free(m.p);
  }
  free(orig.p);
}

/* Random damage: 3000 mutants of 1..16 flipped bytes, aimed at the
   headers, the section headers and the symbol table. Only "no crash, no
   overread" is checked (by ASan and by exercise()). */
static void check_random_flips(const buf_t *orig) {
  const Elf64_Ehdr *eh = ehdr(orig);
  size_t zones[3][2] = {{0, sizeof(Elf64_Ehdr)},
                        {eh->e_shoff, (size_t)eh->e_shnum * sizeof(Elf64_Shdr)},
                        {0, 0}};
  int si = section_of_type(orig, SHT_SYMTAB);
  if (si > 0)
    zones[2][0] = shdr(orig, (unsigned)si)->sh_offset,
    zones[2][1] = shdr(orig, (unsigned)si)->sh_size;
  int parsed = 0;
  for (int k = 0; k < 3000; k++) {
    buf_t m = copy_of(orig, orig->n);
    int flips = 1 + (int)(rnd() % 16);
    for (int f = 0; f < flips; f++) {
      size_t *z = zones[rnd() % 3];
      if (z[1] == 0)
        continue;
      m.p[z[0] + rnd() % z[1]] ^= (uint8_t)(1u << (rnd() % 8));
    }
    parsed += exercise(&m) == 0;
    free(m.p);
  }
  printf("random flips: %d of 3000 mutants still parse\n", parsed);
}

static int g_named;
static void on_name(int index, const char *name, uintptr_t addr, void *ctx) {
  (void)index, (void)name, (void)addr, (void)ctx;
  g_named++;
}

/* Through the provider: hostile files on disk name nothing. */
static void check_provider(const buf_t *orig) {
  snap__elf_t e;
  CHECK(snap__elf_parse(&e, orig->p, orig->n) == 0, "parse");
  uint64_t inside = e.nsyms ? e.syms[e.nsyms / 2].addr + 1 : 0;
  snap__elf_free(&e);
  void (*mutants[])(buf_t *, int) = {m_shnum, m_strtab_lastbyte,
                                     m_symtab_offset, m_class32};
  int args[] = {0xffff, 0, 1, 0};
  for (int k = 0; k < 5; k++) {
    char path[] = "/tmp/snap_hostile_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    if (fd < 0)
      return;
    size_t n = k < 4 ? orig->n : orig->n / 2; /* 4: truncated */
    buf_t m = copy_of(orig, n);
    if (k < 4)
      mutants[k](&m, args[k]);
    CHECK(write(fd, m.p, m.n) == (ssize_t)m.n, "write");
    close(fd);
    free(m.p);
    uintptr_t base = 0x10000000;
    snap__plat_sym_query_t q = {base + inside, base, path, 0};
    g_named = 0;
    CHECK_EQ(snap__plat_symbolize(&q, 1, on_name, NULL), SNAP_OK);
    CHECK(g_named == 0, "hostile file %d named something", k);
    unlink(path);
  }
  /* An empty file and a directory. */
  snap__plat_sym_query_t q = {0x10001000, 0x10000000, "/dev/null", 0};
  g_named = 0;
  snap__plat_symbolize(&q, 1, on_name, NULL);
  q.image_path = "/tmp";
  snap__plat_symbolize(&q, 1, on_name, NULL);
  CHECK_EQ(g_named, 0);
}

int main(void) {
  buf_t small = slurp(ELF_SMALL_LIB), big = slurp(ELF_BIG_LIB);
  if (!small.p || !big.p)
    return check_result("test_elf_hostile");
  check_truncation(&small);
  check_fields(&small);
  check_fields(&big);
  check_bad_symbols(&small);
  check_random_flips(&small);
  check_plt_garbage();
  check_provider(&big);
  free(small.p);
  free(big.p);
  return check_result("test_elf_hostile");
}
