/*
 * test_dwarf_lines.c — tools/symbolicate/dwarf_lines.c against binutils'
 * addr2line, and over broken files.
 *
 * Oracle: for each fixture built by dwarf_tests.cmake (gcc and clang,
 * DWARF 2/4/5 and 64-bit DWARF, -O0/-O1/-O2, a program of two units with
 * code in a header and a shared library, split by objcopy --only-keep-debug,
 * plus unstripped files, and libc's own debug file where libc6-dbg is
 * installed), the addresses are every function's first, second
 * and last byte and 5 random ones inside each (from the file's .symtab),
 * 400 random addresses inside .text and
 * a few outside any code. `addr2line -e FILE` reads them all on stdin; every
 * answer must be ours: same path, same line, same discriminator; "??:0" /
 * "??:?" where we find nothing (and nothing else may be missing).
 * Hostile: truncations, random bytes, mutations of the debug sections and
 * hand-broken line headers give an error code or an index, never a crash;
 * compressed sections (objcopy --compress-debug-sections, both kinds) give
 * SNAP_DWL_ECOMPRESSED. Synthetic files: the joined paths' budget
 * (ELIMIT, and the same file with a short directory opening), and
 * DW_FORM_strp paths in a DWARF 5 header (which addr2line cannot read).
 *
 * argv: DWL_FIXTURES (oracle files), DWL_COMPRESSED (files that must be
 * refused), DWL_ADDR2LINE — compile definitions from dwarf_tests.cmake.
 */
#include "check.h"
#include "xorshift.h"

#include "../../tools/symbolicate/dwarf_lines.h"

#include <elf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
  if (buf && n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- The test's own small ELF walk (section headers, .symtab) ---------- */

static const Elf64_Shdr *section(const unsigned char *f, size_t len,
                                 const char *want) {
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f;
  if (len < sizeof *eh || eh->e_shoff + (uint64_t)eh->e_shnum * 64 > len)
    return NULL;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(f + eh->e_shoff);
  const char *names = (const char *)f + sh[eh->e_shstrndx].sh_offset;
  for (unsigned i = 0; i < eh->e_shnum; i++)
    if (strcmp(names + sh[i].sh_name, want) == 0)
      return &sh[i];
  return NULL;
}

typedef struct addrs {
  uint64_t *v;
  size_t n, cap;
} addrs_t;

static void add(addrs_t *a, uint64_t x) {
  if (a->n == a->cap) {
    a->cap = a->cap ? a->cap * 2 : 256;
    a->v = realloc(a->v, a->cap * sizeof *a->v);
    if (!a->v)
      abort();
  }
  a->v[a->n++] = x;
}

static void pick_addresses(const unsigned char *f, size_t len, addrs_t *a,
                           uint64_t *rng) {
  const Elf64_Shdr *symtab = section(f, len, ".symtab");
  const Elf64_Shdr *text = section(f, len, ".text");
  CHECK(symtab && text, "no .symtab or .text");
  if (!symtab || !text)
    return;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(f + ((Elf64_Ehdr *)f)->e_shoff);
  const char *strs = (const char *)f + sh[symtab->sh_link].sh_offset;
  const Elf64_Sym *sym = (const Elf64_Sym *)(f + symtab->sh_offset);
  size_t nsym = symtab->sh_size / sizeof *sym, funcs = 0;
  /* A big file (libc) gives about 1500 of its functions. */
  size_t stride = nsym / 3000 + 1;
  for (size_t i = 0; i < nsym; i++) {
    if (ELF64_ST_TYPE(sym[i].st_info) != STT_FUNC || sym[i].st_value == 0 ||
        i % stride != 0)
      continue;
    (void)strs;
    funcs++;
    add(a, sym[i].st_value);
    add(a, sym[i].st_value + 1);
    for (int k = 0; k < 6 && sym[i].st_size > 1; k++)
      add(a, sym[i].st_value + (k == 0 ? sym[i].st_size - 1
                                       : snap_xorshift(rng) % sym[i].st_size));
  }
  CHECK(funcs >= 1, "no function in .symtab");
  for (int i = 0; i < 400; i++)
    add(a, text->sh_addr + snap_xorshift(rng) % text->sh_size);
  /* Outside any sequence: below the image, past its text, far away. */
  add(a, 0);
  add(a, 0x10);
  add(a, text->sh_addr + text->sh_size + 0x4000);
  add(a, 0x7fff00000000ull);
  add(a, 0xfffffffffffff000ull);
}

/* ---- Oracle ------------------------------------------------------------- */

typedef struct tally {
  size_t total, equal, both_none, unit_only;
} tally_t;

static void oracle_file(const char *path, const char *addr2line, uint64_t *rng,
                        tally_t *all) {
  size_t len;
  unsigned char *f = read_all(path, &len);
  CHECK(f != NULL, "cannot read %s", path);
  if (!f)
    return;
  double t0 = now_s();
  snap__dwarf_lines_t *dl = NULL;
  int rc = snap__dwarf_lines_open(f, len, &dl);
  double t1 = now_s();
  CHECK(rc == SNAP_DWL_OK, "%s: %s", path, snap__dwarf_lines_strerror(rc));
  if (rc != SNAP_DWL_OK) {
    free(f);
    return;
  }
  addrs_t a = {0};
  pick_addresses(f, len, &a, rng);
  free(f); /* the index owns what it returns */

  char tmpl[] = "/tmp/test_dwarf_lines.XXXXXX";
  int fd = mkstemp(tmpl);
  CHECK(fd >= 0, "mkstemp");
  FILE *in = fdopen(fd, "w");
  for (size_t i = 0; i < a.n; i++)
    fprintf(in, "%#llx\n", (unsigned long long)a.v[i]);
  fclose(in);
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' -e '%s' < '%s' 2>/dev/null", addr2line, path,
           tmpl);
  FILE *p = popen(cmd, "r");
  CHECK(p != NULL, "popen %s", cmd);
  tally_t t = {0, 0, 0, 0};
  char line[8192];
  for (size_t i = 0; p && i < a.n && fgets(line, sizeof line, p); i++) {
    line[strcspn(line, "\n")] = 0;
    /* "path:line", "path:line (discriminator d)", "path:?", "??:0". */
    unsigned disc = 0;
    char *d = strstr(line, " (discriminator ");
    if (d) {
      disc = (unsigned)strtoul(d + 16, NULL, 10);
      *d = 0;
    }
    char *colon = strrchr(line, ':');
    CHECK(colon != NULL, "addr2line said \"%s\"", line);
    if (!colon)
      continue;
    *colon = 0;
    const char *want_file = line, *want_line = colon + 1;
    bool none = strcmp(want_file, "??") == 0;
    snap__dwarf_line_t got;
    int lr = snap__dwarf_lines_lookup(dl, a.v[i], &got);
    t.total++;
    if (lr == SNAP_DWL_ENOTFOUND) {
      /* addr2line names a unit whose ranges hold the address but whose
         line table does not ("crtstuff.c:?": gcc's crt objects have a
         unit and no lines): no line either way. */
      bool unit_only = !none && strcmp(want_line, "?") == 0;
      CHECK(none || unit_only, "%s %#llx: addr2line %s:%s, we found nothing",
            path, (unsigned long long)a.v[i], want_file, want_line);
      t.both_none += none;
      t.unit_only += unit_only;
      continue;
    }
    CHECK(lr == SNAP_DWL_OK, "lookup: %s", snap__dwarf_lines_strerror(lr));
    if (lr != SNAP_DWL_OK)
      continue;
    char got_line[16];
    if (got.line)
      snprintf(got_line, sizeof got_line, "%u", got.line);
    else
      snprintf(got_line, sizeof got_line, "?");
    bool eq = strcmp(got.file, want_file) == 0 &&
              strcmp(got_line, want_line) == 0 && got.discriminator == disc;
    CHECK(eq, "%s %#llx: addr2line %s:%s (d %u), we %s:%s (d %u)", path,
          (unsigned long long)a.v[i], want_file, want_line, disc, got.file,
          got_line, got.discriminator);
    t.equal += eq;
  }
  if (p)
    CHECK(pclose(p) == 0, "%s failed", cmd);
  unlink(tmpl);
  CHECK(t.total == a.n, "addr2line answered %zu of %zu", t.total, a.n);
  printf("%s: %zu addresses: %zu file:line equal to addr2line's, %zu "
         "??:0 in both, %zu unit:? (no line) in addr2line and none here; "
         "%zu rows, %zu sequences, open %.2f ms\n",
         path, t.total, t.equal, t.both_none, t.unit_only,
         snap__dwarf_lines_rows(dl), snap__dwarf_lines_sequences(dl),
         (t1 - t0) * 1e3);
  CHECK(t.equal + t.both_none + t.unit_only == t.total,
        "%s: every answer accounted for", path);
  CHECK(t.equal > a.n / 4, "%s: too few addresses with lines", path);
  all->unit_only += t.unit_only;
  all->total += t.total;
  all->equal += t.equal;
  all->both_none += t.both_none;
  free(a.v);
  snap__dwarf_lines_close(dl);
}

static void same_answers(const char *p64, const char *p32, uint64_t *rng) {
  size_t l64, l32;
  unsigned char *f64 = read_all(p64, &l64), *f32 = read_all(p32, &l32);
  CHECK(f64 && f32, "cannot read %s or %s", p64, p32);
  snap__dwarf_lines_t *d64 = NULL, *d32 = NULL;
  if (f64 && f32) {
    CHECK_EQ(snap__dwarf_lines_open(f64, l64, &d64), SNAP_DWL_OK);
    CHECK_EQ(snap__dwarf_lines_open(f32, l32, &d32), SNAP_DWL_OK);
  }
  addrs_t a = {0};
  if (d64 && d32)
    pick_addresses(f32, l32, &a, rng);
  size_t same = 0, found = 0;
  for (size_t i = 0; i < a.n; i++) {
    snap__dwarf_line_t x, y;
    int r64 = snap__dwarf_lines_lookup(d64, a.v[i], &x);
    int r32 = snap__dwarf_lines_lookup(d32, a.v[i], &y);
    bool eq = r64 == r32 &&
              (r64 != SNAP_DWL_OK ||
               (strcmp(x.file, y.file) == 0 && x.line == y.line &&
                x.column == y.column && x.discriminator == y.discriminator));
    CHECK(eq, "%#llx: 64-bit DWARF %d %s:%u, 32-bit %d %s:%u",
          (unsigned long long)a.v[i], r64, r64 ? "-" : x.file, r64 ? 0 : x.line,
          r32, r32 ? "-" : y.file, r32 ? 0 : y.line);
    same += eq;
    found += eq && r64 == SNAP_DWL_OK;
  }
  printf("%s (64-bit DWARF) vs %s: %zu of %zu addresses the same (%zu with "
         "a line)\n",
         p64, p32, same, a.n, found);
  CHECK(found > a.n / 4, "too few lines in %s", p64);
  free(a.v);
  snap__dwarf_lines_close(d64);
  snap__dwarf_lines_close(d32);
  free(f64);
  free(f32);
}

/* ---- Hostile ------------------------------------------------------------ */

static bool valid_code(int rc) {
  return rc == SNAP_DWL_OK || rc == SNAP_DWL_ENOTELF ||
         rc == SNAP_DWL_ENOLINES || rc == SNAP_DWL_ECOMPRESSED ||
         rc == SNAP_DWL_EMALFORMED || rc == SNAP_DWL_EVERSION ||
         rc == SNAP_DWL_ELIMIT;
}

/* Opens a copy (exactly len bytes on the heap, so ASan sees any overread)
   and looks a few addresses up. */
static int try_open(const unsigned char *buf, size_t len, uint64_t *rng) {
  unsigned char *copy = malloc(len ? len : 1);
  memcpy(copy, buf, len);
  snap__dwarf_lines_t *dl = NULL;
  int rc = snap__dwarf_lines_open(copy, len, &dl);
  CHECK(valid_code(rc), "open gave %d", rc);
  CHECK((rc == SNAP_DWL_OK) == (dl != NULL), "rc %d with index %p", rc,
        (void *)dl);
  for (int i = 0; dl && i < 64; i++) {
    snap__dwarf_line_t l;
    uint64_t x = i < 32 ? snap_xorshift(rng) % 0x10000 : snap_xorshift(rng);
    int lr = snap__dwarf_lines_lookup(dl, x, &l);
    CHECK(lr == SNAP_DWL_OK || lr == SNAP_DWL_ENOTFOUND, "lookup %d", lr);
    if (lr == SNAP_DWL_OK)
      CHECK(l.file && l.row_address <= x, "row above the address");
  }
  snap__dwarf_lines_close(dl);
  free(copy);
  return rc;
}

static void hostile(const char *path, uint64_t *rng) {
  size_t len;
  unsigned char *f = read_all(path, &len);
  CHECK(f != NULL, "cannot read %s", path);
  if (!f)
    return;
  CHECK_EQ(try_open(f, len, rng), SNAP_DWL_OK);
  CHECK_EQ(try_open(f, 0, rng), SNAP_DWL_ENOTELF);
  CHECK_EQ(try_open((const unsigned char *)"\177ELF", 4, rng),
           SNAP_DWL_ENOTELF);

  /* Every truncation (in steps): headers at the end, so errors. */
  size_t step = len / 700 + 1, truncs = 0;
  for (size_t n = 0; n < len; n += step, truncs++)
    CHECK(try_open(f, n, rng) != SNAP_DWL_OK, "truncated at %zu opened", n);

  /* Random bytes behind a valid ELF header. */
  unsigned char *r = malloc(len);
  for (int i = 0; i < 200; i++) {
    size_t n = 64 + snap_xorshift(rng) % 4096;
    if (n > len)
      n = len;
    memcpy(r, f, 64);
    for (size_t k = 64; k < n; k++)
      r[k] = (unsigned char)snap_xorshift(rng);
    try_open(r, n, rng);
  }

  /* Mutations inside the sections the reader reads. */
  const char *names[] = {".debug_line", ".debug_info", ".debug_abbrev",
                         ".debug_line_str", ".debug_str"};
  size_t opened = 0, mutations = 0;
  for (size_t s = 0; s < sizeof names / sizeof names[0]; s++) {
    const Elf64_Shdr *sh = section(f, len, names[s]);
    if (!sh || sh->sh_size == 0)
      continue;
    for (int i = 0; i < 600; i++, mutations++) {
      memcpy(r, f, len);
      int flips = 1 + (int)(snap_xorshift(rng) % 4);
      for (int k = 0; k < flips; k++) {
        uint64_t at = sh->sh_offset + snap_xorshift(rng) % sh->sh_size;
        uint64_t v = snap_xorshift(rng);
        r[at] = (v & 0x300) == 0       ? 0xff
                : (v & 0x300) == 0x100 ? 0
                                       : (unsigned char)v;
      }
      opened += try_open(r, len, rng) == SNAP_DWL_OK;
    }
  }

  /* Hand-broken headers of the first line program (DWARF 5 layout:
     length 4, version 2, address and selector sizes 1 each, header
     length 4, min_inst, max_ops, default_is_stmt, line_base, line_range,
     opcode_base). */
  const Elf64_Shdr *line = section(f, len, ".debug_line");
  CHECK(line != NULL, "no .debug_line");
  if (line) {
    uint64_t o = line->sh_offset;
    unsigned version = f[o + 4] | f[o + 5] << 8;
    CHECK_EQ(version, 5);
    struct {
      uint64_t at;
      unsigned char bytes[4];
      size_t n;
      int want;
    } cases[] = {
        {4, {1, 0}, 2, SNAP_DWL_EVERSION},
        {4, {6, 0}, 2, SNAP_DWL_EVERSION},
        {0, {0xf5, 0xff, 0xff, 0xff}, 4, SNAP_DWL_EMALFORMED},
        {0, {0xff, 0xff, 0xff, 0x7f}, 4, SNAP_DWL_EMALFORMED},
        {8, {0xff, 0xff, 0xff, 0x0f}, 4, SNAP_DWL_EMALFORMED},
        {13, {0}, 1, SNAP_DWL_EMALFORMED}, /* max_ops 0 */
        {16, {0}, 1, SNAP_DWL_EMALFORMED}, /* line_range 0 */
        {17, {0}, 1, SNAP_DWL_EMALFORMED}, /* opcode_base 0 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      memcpy(r, f, len);
      memcpy(r + o + cases[i].at, cases[i].bytes, cases[i].n);
      CHECK_EQ(try_open(r, len, rng), cases[i].want);
    }
    /* Compressed by its flag; no line table at all. */
    Elf64_Shdr *rl = (Elf64_Shdr *)(r + ((const unsigned char *)line - f));
    memcpy(r, f, len);
    rl->sh_flags |= SHF_COMPRESSED;
    CHECK_EQ(try_open(r, len, rng), SNAP_DWL_ECOMPRESSED);
    memcpy(r, f, len);
    const Elf64_Shdr *sh0 =
        (const Elf64_Shdr *)(f + ((Elf64_Ehdr *)f)->e_shoff);
    r[sh0[((Elf64_Ehdr *)f)->e_shstrndx].sh_offset + rl->sh_name + 1] = 'X';
    CHECK_EQ(try_open(r, len, rng), SNAP_DWL_ENOLINES);
  }
  printf("hostile %s: %zu truncations, 200 random, %zu mutations (%zu "
         "still opened): no crash\n",
         path, truncs, mutations, opened);
  free(r);
  free(f);
}

/* ---- Synthetic files: limits, and forms no oracle reads ----------------- */

typedef struct buf {
  unsigned char *p;
  size_t n, cap;
} buf_t;

static void put(buf_t *b, const void *v, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2;
    b->p = realloc(b->p, b->cap);
    if (!b->p)
      abort();
  }
  memcpy(b->p + b->n, v, n);
  b->n += n;
}
static void put8(buf_t *b, unsigned v) {
  unsigned char c = (unsigned char)v;
  put(b, &c, 1);
}
static void put_le(buf_t *b, uint64_t v, int n) {
  for (int i = 0; i < n; i++)
    put8(b, (unsigned)(v >> (8 * i)) & 0xff);
}
static void put_uleb(buf_t *b, uint64_t v) {
  do {
    put8(b, (unsigned)(v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
}
static void put_str(buf_t *b, const char *s) { put(b, s, strlen(s) + 1); }

/* An ELF64 LE file of the given sections (name, bytes) and a .shstrtab. */
static unsigned char *make_elf(const char **names, buf_t *secs, int n,
                               size_t *len) {
  buf_t f = {0}, strtab = {0};
  put8(&strtab, 0);
  Elf64_Ehdr eh = {0};
  memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_DYN;
  eh.e_version = EV_CURRENT;
  eh.e_ehsize = sizeof eh;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  put(&f, &eh, sizeof eh);
  Elf64_Shdr sh[8] = {{0}};
  for (int i = 0; i < n; i++) {
    sh[i + 1].sh_name = (Elf64_Word)strtab.n;
    put_str(&strtab, names[i]);
    sh[i + 1].sh_type = SHT_PROGBITS;
    sh[i + 1].sh_offset = f.n;
    sh[i + 1].sh_size = secs[i].n;
    put(&f, secs[i].p, secs[i].n);
  }
  sh[n + 1].sh_name = (Elf64_Word)strtab.n;
  put_str(&strtab, ".shstrtab");
  sh[n + 1].sh_type = SHT_STRTAB;
  sh[n + 1].sh_offset = f.n;
  sh[n + 1].sh_size = strtab.n;
  put(&f, strtab.p, strtab.n);
  while (f.n % 8)
    put8(&f, 0);
  Elf64_Ehdr *e = (Elf64_Ehdr *)f.p;
  e->e_shoff = f.n;
  e->e_shnum = (Elf64_Half)(n + 2);
  e->e_shstrndx = (Elf64_Half)(n + 1);
  put(&f, sh, (size_t)(n + 2) * sizeof sh[0]);
  free(strtab.p);
  *len = f.n;
  return f.p;
}

/* A DWARF 4 line program: one include directory `dir`, `nfiles` files
   "f" in it, and one row per file at 0x1000 + i, in one sequence. */
static buf_t line_v4(const char *dir, unsigned nfiles) {
  buf_t b = {0};
  put_le(&b, 0, 4); /* unit_length, patched below */
  put_le(&b, 4, 2);
  size_t hlen_at = b.n;
  put_le(&b, 0, 4);
  size_t hstart = b.n;
  put8(&b, 1);    /* min_inst */
  put8(&b, 1);    /* max_ops */
  put8(&b, 1);    /* default_is_stmt */
  put8(&b, 0xfb); /* line_base -5 */
  put8(&b, 14);   /* line_range */
  put8(&b, 13);   /* opcode_base */
  const unsigned char lens[12] = {0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1};
  put(&b, lens, 12);
  put_str(&b, dir);
  put8(&b, 0);
  for (unsigned i = 0; i < nfiles; i++) {
    put_str(&b, "f");
    put_uleb(&b, 1);
    put_uleb(&b, 0);
    put_uleb(&b, 0);
  }
  put8(&b, 0);
  uint64_t hlen = b.n - hstart;
  memcpy(b.p + hlen_at, &(uint32_t){(uint32_t)hlen}, 4);
  put8(&b, 0); /* set_address 0x1000 */
  put8(&b, 9);
  put8(&b, 2);
  put_le(&b, 0x1000, 8);
  for (unsigned i = 0; i < nfiles; i++) {
    put8(&b, 4); /* set_file i + 1 */
    put_uleb(&b, i + 1);
    put8(&b, 1); /* copy */
    put8(&b, 2); /* advance_pc 1 */
    put_uleb(&b, 1);
  }
  put8(&b, 0);
  put8(&b, 1);
  put8(&b, 1); /* end_sequence */
  memcpy(b.p, &(uint32_t){(uint32_t)(b.n - 4)}, 4);
  return b;
}

static void synthetic(void) {
  /* The joined paths' budget: 20000 files in a 64 KiB directory would be
     1.3 GB of paths from a 300 KB file. The same with a short directory
     opens, and names each row by its file. */
  char *longdir = malloc(65537);
  memset(longdir, 'd', 65536);
  longdir[0] = '/';
  longdir[65536] = 0;
  const char *names[] = {".debug_line", ".debug_str"};
  for (int big = 1; big >= 0; big--) {
    buf_t line = line_v4(big ? longdir : "/d", 20000);
    size_t len;
    unsigned char *f = make_elf(names, &line, 1, &len);
    snap__dwarf_lines_t *dl = NULL;
    double t0 = now_s();
    int rc = snap__dwarf_lines_open(f, len, &dl);
    double t1 = now_s();
    if (big) {
      CHECK(rc == SNAP_DWL_ELIMIT, "%zu-byte file of 1.3 GB of paths: %s", len,
            snap__dwarf_lines_strerror(rc));
      printf("path budget: %zu-byte file naming 1.3 GB of paths: %s "
             "(%.1f ms)\n",
             len, snap__dwarf_lines_strerror(rc), (t1 - t0) * 1e3);
    } else {
      CHECK_EQ(rc, SNAP_DWL_OK);
      CHECK_EQ(snap__dwarf_lines_rows(dl), 20001);
      snap__dwarf_line_t l;
      CHECK_EQ(snap__dwarf_lines_lookup(dl, 0x1000 + 777, &l), SNAP_DWL_OK);
      CHECK(l.file && strcmp(l.file, "/d/f") == 0 && l.line == 1, "got %s:%u",
            l.file ? l.file : "-", l.line);
      CHECK_EQ(snap__dwarf_lines_lookup(dl, 0x1000 + 20000, &l),
               SNAP_DWL_ENOTFOUND);
    }
    snap__dwarf_lines_close(dl);
    free(f);
    free(line.p);
  }
  free(longdir);

  /* The abbreviation search's budget: 20000 units whose first DIE uses
     the last of 5000 abbreviations would search 600 MB. */
  {
    buf_t abbrev = {0}, info = {0}, line = line_v4("/d", 1);
    for (unsigned code = 1; code <= 5000; code++) {
      put_uleb(&abbrev, code);
      put_uleb(&abbrev, 0x11); /* DW_TAG_compile_unit */
      put8(&abbrev, 0);
      put8(&abbrev, 0);
      put8(&abbrev, 0);
    }
    put8(&abbrev, 0);
    for (int u = 0; u < 20000; u++) {
      put_le(&info, 9, 4); /* unit_length */
      put_le(&info, 4, 2); /* version */
      put_le(&info, 0, 4); /* abbrev offset */
      put8(&info, 8);
      put_uleb(&info, 5000);
    }
    const char *n3[] = {".debug_line", ".debug_info", ".debug_abbrev"};
    buf_t s3[3] = {line, info, abbrev};
    size_t len;
    unsigned char *f = make_elf(n3, s3, 3, &len);
    snap__dwarf_lines_t *dl = NULL;
    double t0 = now_s();
    int rc = snap__dwarf_lines_open(f, len, &dl);
    double t1 = now_s();
    CHECK(rc == SNAP_DWL_ELIMIT, "600 MB of abbreviation search: %s",
          snap__dwarf_lines_strerror(rc));
    printf("abbreviation budget: %zu-byte file, 600 MB to search: %s "
           "(%.1f ms)\n",
           len, snap__dwarf_lines_strerror(rc), (t1 - t0) * 1e3);
    snap__dwarf_lines_close(dl);
    free(f);
    free(abbrev.p);
    free(info.p);
    free(line.p);
  }

  /* DWARF 5 paths as DW_FORM_strp (addr2line 2.40 reads none), a
     directory index as data2, no .debug_info (no comp_dir). */
  buf_t str = {0};
  put_str(&str, "/s");
  put_str(&str, "x.c");
  buf_t b = {0};
  put_le(&b, 0, 4);
  put_le(&b, 5, 2);
  put8(&b, 8);
  put8(&b, 0);
  size_t hlen_at = b.n;
  put_le(&b, 0, 4);
  size_t hstart = b.n;
  const unsigned char hdr[] = {1, 1, 1, 0xfb, 14, 13, 0, 1, 1,
                               1, 1, 0, 0,    0,  1,  0, 0, 1};
  put(&b, hdr, sizeof hdr);
  put8(&b, 1); /* directories: path, strp */
  put_uleb(&b, 1);
  put_uleb(&b, 0x0e);
  put_uleb(&b, 1);
  put_le(&b, 0, 4);
  put8(&b, 2); /* files: path strp, directory_index data2 */
  put_uleb(&b, 1);
  put_uleb(&b, 0x0e);
  put_uleb(&b, 2);
  put_uleb(&b, 0x05);
  put_uleb(&b, 1);
  put_le(&b, 3, 4);
  put_le(&b, 0, 2);
  memcpy(b.p + hlen_at, &(uint32_t){(uint32_t)(b.n - hstart)}, 4);
  const unsigned char prog[] = {0, 9, 2, 0, 0x20, 0, 0,
                                0, 0, 0, 0, 3,    6, /* line 7 */
                                1,                   /* copy */
                                2, 4,                /* advance_pc 4 */
                                0, 1, 1};
  put(&b, prog, sizeof prog);
  memcpy(b.p, &(uint32_t){(uint32_t)(b.n - 4)}, 4);
  buf_t secs[2] = {b, str};
  size_t len;
  unsigned char *f = make_elf(names, secs, 2, &len);
  snap__dwarf_lines_t *dl = NULL;
  CHECK_EQ(snap__dwarf_lines_open(f, len, &dl), SNAP_DWL_OK);
  snap__dwarf_line_t l = {0};
  CHECK_EQ(snap__dwarf_lines_lookup(dl, 0x2003, &l), SNAP_DWL_OK);
  CHECK(l.file && strcmp(l.file, "/s/x.c") == 0 && l.line == 7,
        "strp paths: got %s:%u", l.file ? l.file : "-", l.line);
  CHECK_EQ(snap__dwarf_lines_lookup(dl, 0x2004, &l), SNAP_DWL_ENOTFOUND);
  snap__dwarf_lines_close(dl);
  /* A string offset out of .debug_str: malformed. */
  memcpy(b.p + hstart + sizeof hdr + 4, &(uint32_t){4096}, 4);
  free(f);
  secs[0] = b;
  f = make_elf(names, secs, 2, &len);
  CHECK_EQ(snap__dwarf_lines_open(f, len, &dl), SNAP_DWL_EMALFORMED);
  free(f);
  free(b.p);
  free(str.p);
}

int main(void) {
  uint64_t rng = 0x5eed15d3a4f00d01ull;
  tally_t all = {0, 0, 0, 0};
  char fixtures[] = DWL_FIXTURES;
  for (char *save, *p = strtok_r(fixtures, " ", &save); p;
       p = strtok_r(NULL, " ", &save))
    oracle_file(p, DWL_ADDR2LINE, &rng, &all);
  printf("all: %zu addresses: %zu file:line equal to addr2line's, %zu ??:0 "
         "in both, %zu unit:? in addr2line and none here, 0 different\n",
         all.total, all.equal, all.both_none, all.unit_only);

  /* 64-bit DWARF: addr2line 2.40 reads none of it (it answers "??:?"), so
     the oracle is the same program built with 32-bit DWARF (same code,
     checked against addr2line above): every answer the same. */
  char pairs[] = DWL_DWARF64_PAIRS;
  for (char *save, *p = strtok_r(pairs, " ", &save); p;
       p = strtok_r(NULL, " ", &save)) {
    char *eq = strchr(p, '=');
    CHECK(eq != NULL, "pair %s", p);
    if (eq) {
      *eq = 0;
      same_answers(p, eq + 1, &rng);
    }
  }
  CHECK(all.total > 1000, "too few addresses: %zu", all.total);

  char compressed[] = DWL_COMPRESSED;
  for (char *save, *p = strtok_r(compressed, " ", &save); p;
       p = strtok_r(NULL, " ", &save)) {
    size_t len;
    unsigned char *f = read_all(p, &len);
    CHECK(f != NULL, "cannot read %s", p);
    snap__dwarf_lines_t *dl = NULL;
    int rc = f ? snap__dwarf_lines_open(f, len, &dl) : 0;
    CHECK(rc == SNAP_DWL_ECOMPRESSED && !dl, "%s: %d (%s)", p, rc,
          snap__dwarf_lines_strerror(rc));
    printf("%s: %s\n", p, snap__dwarf_lines_strerror(rc));
    free(f);
  }

  hostile(DWL_HOSTILE, &rng);
  synthetic();
  return check_result("test_dwarf_lines");
}
