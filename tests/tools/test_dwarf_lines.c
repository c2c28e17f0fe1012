/*
 * test_dwarf_lines.c — tools/symbolicate/dwarf_lines.c (elfutils' libdw
 * over a file in memory) against binutils' addr2line, and over broken
 * files.
 *
 * Oracle: for each fixture built by dwarf_tests.cmake (gcc and clang,
 * DWARF 2/4/5 and 64-bit DWARF, -O0/-O1/-O2, a program of two units with
 * code in a header and a shared library, split by objcopy --only-keep-debug,
 * plus unstripped files, the same debug file compressed both ways, and
 * libc's own debug file as libc6-dbg ships it, compressed), the addresses
 * are every function's first, second and last byte and 5 random ones
 * inside each (from the file's .symtab), 400 random addresses inside .text
 * and a few outside any code. `addr2line -e FILE` reads them all on stdin;
 * every answer must be ours: same path, same line, same discriminator.
 * Where binutils 2.40 and we differ, llvm-addr2line must say what we say:
 * binutils 2.40 gives DWARF 5 rows before a sequence's first set_file the
 * file 0 (the standard, gdb, llvm and libdw: file 1): in libc that names
 * libc-start.c for __libc_start_call_main's lines in
 * libc_start_call_main.h. Those are counted apart ("llvm agrees").
 * Inlined calls: snap__dwarf_lines_inlined against `addr2line -f -i`'s
 * call sites. Hostile: truncations, random bytes and mutations of the
 * debug sections give an error code or an index, never a crash; string
 * sections that are not PROGBITS or lack their last NUL are refused (what
 * libdw 0.188 overreads); the inflation budget gives SNAP_DWL_ELIMIT
 * before anything is inflated.
 *
 * DWL_FIXTURES (oracle files), DWL_COMPRESSED, DWL_ADDR2LINE,
 * DWL_LLVM_ADDR2LINE — compile definitions from dwarf_tests.cmake.
 */
#include "check.h"
#include "test_clock.h"
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
  size_t total, equal, both_none, unit_only, llvm_agrees;
} tally_t;

/* Runs `tool ARGS -e path` over the addresses; returns the popen'd output
   (the caller pcloses) and the temporary file to unlink. */
static FILE *run_oracle(const char *tool, const char *args, const char *path,
                        const addrs_t *a, char *tmpl) {
  int fd = mkstemp(tmpl);
  CHECK(fd >= 0, "mkstemp");
  FILE *in = fdopen(fd, "w");
  for (size_t i = 0; i < a->n; i++)
    fprintf(in, "%#llx\n", (unsigned long long)a->v[i]);
  fclose(in);
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' %s -e '%s' < '%s' 2>/dev/null", tool, args,
           path, tmpl);
  FILE *p = popen(cmd, "r");
  CHECK(p != NULL, "popen %s", cmd);
  return p;
}

/* "path:line" or "path:line (discriminator d)" into its parts. */
static bool split_answer(char *line, const char **file, const char **lno,
                         unsigned *disc) {
  line[strcspn(line, "\n")] = 0;
  *disc = 0;
  char *d = strstr(line, " (discriminator ");
  if (d) {
    *disc = (unsigned)strtoul(d + 16, NULL, 10);
    *d = 0;
  }
  char *colon = strrchr(line, ':');
  if (!colon)
    return false;
  *colon = 0;
  *file = line;
  *lno = colon + 1;
  return true;
}

static void oracle_file(const char *path, uint64_t *rng, tally_t *all) {
  size_t len;
  unsigned char *f = read_all(path, &len);
  CHECK(f != NULL, "cannot read %s", path);
  if (!f)
    return;
  addrs_t a = {0};
  pick_addresses(f, len, &a, rng);
  double t0 = mono_s();
  snap__dwarf_lines_t *dl = NULL;
  int rc = snap__dwarf_lines_open(f, len, UINT64_MAX, NULL, &dl);
  double t1 = mono_s();
  CHECK(rc == SNAP_DWL_OK, "%s: %s", path, snap__dwarf_lines_strerror(rc));
  if (rc != SNAP_DWL_OK) {
    free(f);
    free(a.v);
    return;
  }
  char tmpl[] = "/tmp/test_dwarf_lines.XXXXXX";
  char tmpl2[] = "/tmp/test_dwarf_lines.XXXXXX";
  FILE *p = run_oracle(DWL_ADDR2LINE, "", path, &a, tmpl);
  FILE *q = run_oracle(DWL_LLVM_ADDR2LINE, "", path, &a, tmpl2);
  tally_t t = {0};
  char line[8192], other[8192];
  for (size_t i = 0; p && q && i < a.n && fgets(line, sizeof line, p); i++) {
    if (!fgets(other, sizeof other, q))
      other[0] = 0;
    const char *want_file, *want_line, *llvm_file = "", *llvm_line = "";
    unsigned disc, llvm_disc;
    CHECK(split_answer(line, &want_file, &want_line, &disc),
          "addr2line said \"%s\"", line);
    if (!split_answer(other, &llvm_file, &llvm_line, &llvm_disc))
      llvm_file = llvm_line = "";
    bool none = strcmp(want_file, "??") == 0;
    snap__dwarf_line_t got;
    int lr = snap__dwarf_lines_lookup(dl, a.v[i], &got);
    t.total++;
    if (lr == SNAP_DWL_ENOTFOUND) {
      /* addr2line names a unit whose ranges hold the address but whose
         line table does not ("crtstuff.c:?": gcc's crt objects have a
         unit and no lines): no line either way. Counted with them: */
      bool unit_only = !none && strcmp(want_line, "?") == 0;
      /* "<unknown>": a row whose file index is outside the table
         (hand5.s): libdw drops such a row. */
      bool unknown = strcmp(want_file, "<unknown>") == 0;
      unit_only |= unknown;
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
    bool llvm = !eq && strcmp(got.file, llvm_file) == 0 &&
                strcmp(got_line, llvm_line) == 0;
    CHECK(eq || llvm,
          "%s %#llx: addr2line %s:%s (d %u), llvm-addr2line %s:%s, we %s:%s "
          "(d %u)",
          path, (unsigned long long)a.v[i], want_file, want_line, disc,
          llvm_file, llvm_line, got.file, got_line, got.discriminator);
    t.equal += eq;
    t.llvm_agrees += llvm;
  }
  if (p)
    CHECK(pclose(p) == 0, "%s failed on %s", DWL_ADDR2LINE, path);
  if (q)
    pclose(q);
  unlink(tmpl);
  unlink(tmpl2);
  CHECK(t.total == a.n, "addr2line answered %zu of %zu", t.total, a.n);
  printf("%s: %zu addresses: %zu file:line equal to addr2line's, %zu to "
         "llvm-addr2line's only, %zu ??:0 in both, %zu unit:? (no line) in "
         "addr2line and none here; open %.2f ms\n",
         path, t.total, t.equal, t.llvm_agrees, t.both_none, t.unit_only,
         (t1 - t0) * 1e3);
  CHECK(t.equal + t.llvm_agrees + t.both_none + t.unit_only == t.total,
        "%s: every answer accounted for", path);
  CHECK(t.equal > a.n / 4, "%s: too few addresses with lines", path);
  all->unit_only += t.unit_only;
  all->total += t.total;
  all->equal += t.equal;
  all->both_none += t.both_none;
  all->llvm_agrees += t.llvm_agrees;
  free(a.v);
  snap__dwarf_lines_close(dl);
  free(f);
}

/* Inlined calls: `addr2line -f -i` prints, per address, the function and
   file:line of the innermost code, then for each inlined call the
   function it was inlined into and the call's file:line. The call sites
   must be ours, in order (the names: ours is the inlined function, the
   one addr2line printed just before). */
static void inlined_file(const char *path, uint64_t *rng) {
  size_t len;
  unsigned char *f = read_all(path, &len);
  CHECK(f != NULL, "cannot read %s", path);
  if (!f)
    return;
  addrs_t a = {0};
  pick_addresses(f, len, &a, rng);
  snap__dwarf_lines_t *dl = NULL;
  CHECK_EQ(snap__dwarf_lines_open(f, len, UINT64_MAX, NULL, &dl), SNAP_DWL_OK);
  /* A sentinel after each address: addr2line's answer for 0 is "??". */
  addrs_t b = {0};
  for (size_t i = 0; i < a.n; i++) {
    add(&b, a.v[i]);
    add(&b, 0);
  }
  char tmpl[] = "/tmp/test_dwarf_lines.XXXXXX";
  FILE *p = dl ? run_oracle(DWL_ADDR2LINE, "-f -i", path, &b, tmpl) : NULL;
  size_t with_calls = 0, calls = 0;
  char fn[8192], loc[8192];
  for (size_t i = 0; p && i < a.n; i++) {
    /* Read pairs up to the sentinel's "??" / "??:0". */
    static char names[16][8192], sites[16][8192];
    int n = 0;
    while (fgets(fn, sizeof fn, p) && fgets(loc, sizeof loc, p)) {
      fn[strcspn(fn, "\n")] = 0;
      loc[strcspn(loc, "\n")] = 0;
      if (strcmp(fn, "??") == 0 && strcmp(loc, "??:0") == 0)
        break;
      if (n < 16) {
        snprintf(names[n], sizeof names[n], "%s", fn);
        char *d = strstr(loc, " (discriminator ");
        if (d)
          *d = 0;
        snprintf(sites[n], sizeof sites[n], "%s", loc);
      }
      n++;
    }
    snap__dwarf_inline_t in[16];
    size_t got = snap__dwarf_lines_inlined(dl, a.v[i], in, 16);
    size_t want = n > 0 ? (size_t)n - 1 : 0;
    if (want == 0 && got == 0)
      continue;
    CHECK(got == want, "%s %#llx: %zu inlined calls, addr2line -i %zu", path,
          (unsigned long long)a.v[i], got, want);
    for (size_t k = 0; k < got && k < want && k < 16; k++) {
      char site[8300];
      snprintf(site, sizeof site, "%s:%u", in[k].file ? in[k].file : "??",
               in[k].line);
      CHECK(strcmp(site, sites[k + 1]) == 0 &&
                (!in[k].function || strcmp(in[k].function, names[k]) == 0),
            "%s %#llx call %zu: addr2line %s in %s, we %s in %s", path,
            (unsigned long long)a.v[i], k, sites[k + 1], names[k], site,
            in[k].function ? in[k].function : "?");
    }
    with_calls++;
    calls += got;
  }
  if (p) {
    /* Read to the end first: a tool whose output is left unread dies of
       SIGPIPE at pclose, which is no verdict on the file. */
    while (fgets(fn, sizeof fn, p))
      ;
    int st = pclose(p);
    CHECK(st == 0, "addr2line -i failed on %s (status %#x)", path,
          (unsigned)st);
  }
  unlink(tmpl);
  printf("%s: %zu of %zu addresses in inlined code, %zu calls, as "
         "addr2line -i\n",
         path, with_calls, a.n, calls);
  CHECK(with_calls > 0, "%s: no inlined code met", path);
  free(a.v);
  free(b.v);
  snap__dwarf_lines_close(dl);
  free(f);
}

static void same_answers(const char *p64, const char *p32, uint64_t *rng) {
  size_t l64, l32;
  unsigned char *f64 = read_all(p64, &l64), *f32 = read_all(p32, &l32);
  CHECK(f64 && f32, "cannot read %s or %s", p64, p32);
  snap__dwarf_lines_t *d64 = NULL, *d32 = NULL;
  if (f64 && f32) {
    CHECK_EQ(snap__dwarf_lines_open(f64, l64, UINT64_MAX, NULL, &d64),
             SNAP_DWL_OK);
    CHECK_EQ(snap__dwarf_lines_open(f32, l32, UINT64_MAX, NULL, &d32),
             SNAP_DWL_OK);
  }
  addrs_t a = {0};
  if (d64 && d32)
    pick_addresses(f32, l32, &a, rng);
  size_t same = 0, found = 0;
  for (size_t i = 0; i < a.n; i++) {
    snap__dwarf_line_t x, y;
    int r64 = snap__dwarf_lines_lookup(d64, a.v[i], &x);
    char xf[4096];
    snprintf(xf, sizeof xf, "%s", r64 == SNAP_DWL_OK ? x.file : "-");
    int r32 = snap__dwarf_lines_lookup(d32, a.v[i], &y);
    bool eq = r64 == r32 &&
              (r64 != SNAP_DWL_OK ||
               (strcmp(xf, y.file) == 0 && x.line == y.line &&
                x.column == y.column && x.discriminator == y.discriminator));
    CHECK(eq, "%#llx: 64-bit DWARF %d %s:%u, 32-bit %d %s:%u",
          (unsigned long long)a.v[i], r64, xf, r64 ? 0 : x.line, r32,
          r32 ? "-" : y.file, r32 ? 0 : y.line);
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
         rc == SNAP_DWL_ENOLINES || rc == SNAP_DWL_EMALFORMED ||
         rc == SNAP_DWL_ELIMIT;
}

/* Opens a copy (exactly len bytes on the heap, so ASan sees any overread)
   and looks a few addresses up. */
static int try_open(const unsigned char *buf, size_t len, uint64_t max_inflate,
                    uint64_t *rng) {
  unsigned char *copy = malloc(len ? len : 1);
  memcpy(copy, buf, len);
  snap__dwarf_lines_t *dl = NULL;
  int rc = snap__dwarf_lines_open(copy, len, max_inflate, NULL, &dl);
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
    snap__dwarf_inline_t in[4];
    (void)snap__dwarf_lines_inlined(dl, x, in, 4);
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
  CHECK_EQ(try_open(f, len, UINT64_MAX, rng), SNAP_DWL_OK);
  CHECK_EQ(try_open(f, 0, UINT64_MAX, rng), SNAP_DWL_ENOTELF);
  CHECK_EQ(try_open((const unsigned char *)"\177ELF", 4, UINT64_MAX, rng),
           SNAP_DWL_ENOTELF);

  /* Every truncation (in steps): section headers at the end, so errors. */
  size_t step = len / 700 + 1, truncs = 0;
  for (size_t n = 0; n < len; n += step, truncs++)
    CHECK(try_open(f, n, UINT64_MAX, rng) != SNAP_DWL_OK,
          "truncated at %zu opened", n);

  /* Random bytes behind a valid ELF header. */
  unsigned char *r = malloc(len);
  for (int i = 0; i < 200; i++) {
    size_t n = 64 + snap_xorshift(rng) % 4096;
    if (n > len)
      n = len;
    memcpy(r, f, 64);
    for (size_t k = 64; k < n; k++)
      r[k] = (unsigned char)snap_xorshift(rng);
    try_open(r, n, UINT64_MAX, rng);
  }

  /* Mutations inside the sections libdw reads. */
  const char *names[] = {".debug_line",     ".debug_info", ".debug_abbrev",
                         ".debug_line_str", ".debug_str",  ".debug_aranges"};
  size_t opened = 0, mutations = 0;
  for (size_t s = 0; s < sizeof names / sizeof names[0]; s++) {
    const Elf64_Shdr *sh = section(f, len, names[s]);
    if (!sh || sh->sh_size == 0)
      continue;
    for (int i = 0; i < 300; i++, mutations++) {
      memcpy(r, f, len);
      int flips = 1 + (int)(snap_xorshift(rng) % 4);
      for (int k = 0; k < flips; k++) {
        uint64_t at = sh->sh_offset + snap_xorshift(rng) % sh->sh_size;
        uint64_t v = snap_xorshift(rng);
        r[at] = (v & 0x300) == 0       ? 0xff
                : (v & 0x300) == 0x100 ? 0
                                       : (unsigned char)v;
      }
      opened += try_open(r, len, UINT64_MAX, rng) == SNAP_DWL_OK;
    }
  }

  /* No line table at all: its name changed. */
  const Elf64_Shdr *line = section(f, len, ".debug_line");
  CHECK(line != NULL, "no .debug_line");
  if (line) {
    memcpy(r, f, len);
    const Elf64_Shdr *sh0 =
        (const Elf64_Shdr *)(f + ((Elf64_Ehdr *)f)->e_shoff);
    r[sh0[((Elf64_Ehdr *)f)->e_shstrndx].sh_offset + line->sh_name + 1] = 'X';
    CHECK_EQ(try_open(r, len, UINT64_MAX, rng), SNAP_DWL_ENOLINES);
  }
  /* What libdw 0.188 reads past a buffer's end (fuzz_dwarf_lines found
     the first; its input is in fuzz_corpus_dwarf/line_str_as_rel): a
     string section of another type than PROGBITS (libelf converts it into
     a buffer of exactly its size), and one whose last string has no NUL.
     Refused before libdw reads them. */
  const char *strs[] = {".debug_line_str", ".debug_str"};
  for (size_t k = 0; k < 2; k++) {
    const Elf64_Shdr *sh = section(f, len, strs[k]);
    CHECK(sh && sh->sh_size > 0, "no %s", strs[k]);
    if (!sh || sh->sh_size == 0)
      continue;
    memcpy(r, f, len);
    ((Elf64_Shdr *)(r + ((const unsigned char *)sh - f)))->sh_type = SHT_REL;
    CHECK_EQ(try_open(r, len, UINT64_MAX, rng), SNAP_DWL_EMALFORMED);
    memcpy(r, f, len);
    r[sh->sh_offset + sh->sh_size - 1] = 'x';
    CHECK_EQ(try_open(r, len, UINT64_MAX, rng), SNAP_DWL_EMALFORMED);
  }
  printf("hostile %s: %zu truncations, 200 random, %zu mutations (%zu "
         "still opened): no crash\n",
         path, truncs, mutations, opened);
  free(r);
  free(f);
}

/* Compressed files: read (the oracle above holds them), and the budget
   holds before anything is inflated: the sizes their headers declare, a
   budget one byte short gives ELIMIT, the exact one opens. */
static void compressed(const char *path, uint64_t *rng) {
  size_t len;
  unsigned char *f = read_all(path, &len);
  CHECK(f != NULL, "cannot read %s", path);
  if (!f)
    return;
  /* libelf rewrites the section headers of the buffer it inflates: a
     copy. */
  unsigned char *copy = malloc(len);
  memcpy(copy, f, len);
  uint64_t inflated = 0;
  snap__dwarf_lines_t *dl = NULL;
  int rc = snap__dwarf_lines_open(copy, len, UINT64_MAX, &inflated, &dl);
  CHECK(rc == SNAP_DWL_OK && inflated > 0, "%s: %s, inflates to %llu", path,
        snap__dwarf_lines_strerror(rc), (unsigned long long)inflated);
  snap__dwarf_lines_close(dl);
  free(copy);
  CHECK_EQ(try_open(f, len, inflated - 1, rng), SNAP_DWL_ELIMIT);
  CHECK_EQ(try_open(f, len, inflated, rng), SNAP_DWL_OK);
  printf("%s: compressed debug sections inflate to %llu bytes: read; "
         "budget %llu: %s\n",
         path, (unsigned long long)inflated, (unsigned long long)(inflated - 1),
         snap__dwarf_lines_strerror(SNAP_DWL_ELIMIT));
  free(f);
}

int main(void) {
  uint64_t rng = 0x5eed15d3a4f00d01ull;
  tally_t all = {0};
  char fixtures[] = DWL_FIXTURES " " DWL_COMPRESSED;
  for (char *save, *p = strtok_r(fixtures, " ", &save); p;
       p = strtok_r(NULL, " ", &save))
    oracle_file(p, &rng, &all);
  printf("all: %zu addresses: %zu file:line equal to addr2line's, %zu to "
         "llvm-addr2line's (binutils 2.40's DWARF 5 file 0), %zu ??:0 in "
         "both, %zu unit:? in addr2line and none here, 0 different\n",
         all.total, all.equal, all.llvm_agrees, all.both_none, all.unit_only);
  CHECK(all.total > 1000, "too few addresses: %zu", all.total);

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

  char inl[] = DWL_INLINED;
  for (char *save, *p = strtok_r(inl, " ", &save); p;
       p = strtok_r(NULL, " ", &save))
    inlined_file(p, &rng);

  char comp[] = DWL_COMPRESSED;
  for (char *save, *p = strtok_r(comp, " ", &save); p;
       p = strtok_r(NULL, " ", &save))
    compressed(p, &rng);

  hostile(DWL_HOSTILE, &rng);
  return check_result("test_dwarf_lines");
}
