/*
 * test_elf_names.c — names from the Linux ELF provider (snap__plat_symbolize,
 * called directly) against oracles made outside it:
 *
 *  - a library of 50 000 generated functions (every third local): 1 000
 *    random pcs inside random functions name the function nm lists there,
 *    at the address nm gives;
 *  - this executable (PIE, and the non-PIE build of the same file), its
 *    static functions included: the same against nm of itself;
 *  - its PLT: every byte of .plt / .plt.sec / .plt.got is named "<x>@plt"
 *    exactly as objdump labels that entry, or not at all, never for a
 *    neighbour; every entry objdump labels is named at its first byte;
 *  - libc's internal (local, 't') functions, named only by libc6-dbg's
 *    debug file, against nm of that file (found by build-id at build time).
 *    The arm64 cross build has no libc6-dbg for arm64: there the oracle is
 *    nm -D of libc (exported functions only), and the test says so;
 *  - the vdso, which has no file: clock_gettime's vdso entry as the dynamic
 *    linker finds it (dlsym in "linux-vdso.so.1"), and every function nm
 *    lists in a dump of the vdso's memory. qemu-user 7.2 (the arm64 runs)
 *    provides no vdso: the test checks that there is none rather than
 *    skipping quietly;
 *  - file:line for a static function against addr2line (x86_64, where
 *    libdw is installed; the arm64 build has no libdw header).
 *
 * Prints rough timings: first use of an image (map + parse + sort, debug
 * file search for libc) and the cost of one lookup in a batch.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "platform/platform.h"
#include "test_clock.h"
#include "xorshift.h"

#ifndef ELF_BIG_LIB
#error "built by tests/symbols/elf.cmake"
#endif

typedef uintptr_t (*elf_static_fn)(uintptr_t);
extern const elf_static_fn elf_statics[8];

/* ---- nm output ---------------------------------------------------------- */

typedef struct nmsym {
  uint64_t addr, size;
  char type;
  char *name;
} nmsym_t;

typedef struct nmtab {
  nmsym_t *s;
  size_t n;
} nmtab_t;

static int nm_cmp(const void *pa, const void *pb) {
  const nmsym_t *a = pa, *b = pb;
  return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* Lines "addr size type name" or "addr type name" (GNU nm omits a size of
   0). strip_version: nm -D appends "@VERSION" from .gnu.version, which is
   not part of the .dynsym name. */
static nmtab_t nm_parse(FILE *f, bool strip_version) {
  nmtab_t t = {0};
  size_t cap = 0;
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    char *tok[4];
    int k = 0;
    for (char *p = strtok(line, " \t\n"); p && k < 4; p = strtok(NULL, " \t\n"))
      tok[k++] = p;
    nmsym_t s = {0};
    if (k == 4) {
      s.addr = strtoull(tok[0], NULL, 16);
      s.size = strtoull(tok[1], NULL, 16);
      s.type = tok[2][0];
      s.name = tok[3];
    } else if (k == 3) {
      s.addr = strtoull(tok[0], NULL, 16);
      s.type = tok[1][0];
      s.name = tok[2];
    } else {
      continue;
    }
    s.name = strdup(s.name);
    if (strip_version && strchr(s.name, '@'))
      *strchr(s.name, '@') = '\0';
    if (t.n == cap) {
      cap = cap ? 2 * cap : 1024;
      t.s = realloc(t.s, cap * sizeof *t.s);
    }
    t.s[t.n++] = s;
  }
  qsort(t.s, t.n, sizeof *t.s, nm_cmp);
  return t;
}

static nmtab_t nm_load(const char *path, bool strip_version) {
  FILE *f = fopen(path, "r");
  CHECK(f != NULL, "oracle %s missing", path);
  if (!f)
    return (nmtab_t){0};
  nmtab_t t = nm_parse(f, strip_version);
  fclose(f);
  return t;
}

static void nm_free(nmtab_t *t) {
  for (size_t i = 0; i < t->n; i++)
    free(t->s[i].name);
  free(t->s);
  *t = (nmtab_t){0};
}

static bool is_func(char type) { return type && strchr("tTwWi", type); }

/* Binding rank as nm's letter shows it (0 global, 1 weak, 2 local); -1 for
   an IFUNC, whose letter hides the binding. */
static int nm_rank(char type) {
  if (type == 'i')
    return -1;
  if (type == 'W' || type == 'w')
    return 1;
  return type >= 'A' && type <= 'Z' ? 0 : 2;
}

/* ---- The provider ------------------------------------------------------- */

static char g_name[4096];
static uintptr_t g_sym;
static int g_calls;

static void on_name(int index, const char *name, uintptr_t sym, void *ctx) {
  (void)index, (void)ctx;
  snprintf(g_name, sizeof g_name, "%s", name);
  g_sym = sym;
  g_calls++;
}

static bool name_of(uintptr_t addr, uintptr_t base, const char *path) {
  snap__plat_sym_query_t q = {
      .addr = addr, .image_base = base, .image_path = path};
  g_calls = 0;
  g_name[0] = '\0';
  g_sym = 0;
  CHECK_EQ(snap__plat_symbolize(&q, 1, on_name, NULL), SNAP_OK);
  CHECK(g_calls <= 1, "%d callbacks for one query", g_calls);
  return g_calls == 1;
}

/* xorshift64*: a fixed seed, so a failure reproduces. */
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) { return snap_xorshift(&g_rng); }

/* The first entry with addr > a. */
static size_t upper(const nmtab_t *t, uint64_t a) {
  size_t lo = 0, hi = t->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (t->s[mid].addr <= a)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* `samples` random pcs inside random sized functions of t (of the letters
   in `types`), each named as nm says. A pc is used only when nm makes the
   answer unambiguous: no other symbol of any kind starts between the
   function's start and the pc, and no earlier function encloses it. Among
   aliases, the name must be one nm lists there, of the strongest binding. */
/* Code ranges (objdump -h sections flagged CODE), to keep out symbols
   nm letters like functions that are not code (a weak TLS variable shows
   as 'W'). n == 0: no filter. */
typedef struct ranges {
  uint64_t lo[64], hi[64];
  int n;
} ranges_t;

static bool in_ranges(const ranges_t *r, uint64_t a) {
  for (int i = 0; i < r->n; i++)
    if (a >= r->lo[i] && a < r->hi[i])
      return true;
  return r->n == 0;
}

static const ranges_t no_ranges = {{0}, {0}, 0};

/* nm spells a versioned .symtab symbol "memcpy@@GLIBC_2.14"; the provider
   names the function, without the linker's version. */
static bool same_name(const char *nm_name, const char *got) {
  const char *at = strchr(nm_name, '@');
  size_t len = at ? (size_t)(at - nm_name) : strlen(nm_name);
  return strlen(got) == len && strncmp(nm_name, got, len) == 0;
}

static void check_random(const char *label, const nmtab_t *t, const char *types,
                         const ranges_t *code, uintptr_t base, const char *path,
                         int samples) {
  size_t *pick = malloc((t->n + 1) * sizeof *pick), np = 0;
  for (size_t i = 0; i < t->n; i++)
    if (t->s[i].size > 0 && strchr(types, t->s[i].type) &&
        in_ranges(code, t->s[i].addr))
      pick[np++] = i;
  CHECK(np > 0, "%s: no functions in the oracle", label);
  int checked = 0, tries = 0, failed = 0;
  while (np > 0 && checked < samples && tries++ < samples * 50 && failed < 20) {
    const nmsym_t *f = &t->s[pick[rnd() % np]];
    uint64_t pc = f->addr + rnd() % f->size;
    size_t hi = upper(t, pc);
    bool ambiguous = false;
    for (size_t k = hi; k-- > 0 && !ambiguous;) {
      const nmsym_t *o = &t->s[k];
      if (o->addr > f->addr)
        ambiguous = true; /* starts in (start, pc] */
      else if (o->addr < f->addr) {
        ambiguous = is_func(o->type) && o->addr + o->size > pc;
        if (hi - k > 64)
          break;
      }
    }
    if (ambiguous)
      continue;
    checked++;
    bool found = name_of(base + pc, base, path);
    int best = 3, mine = -2;
    bool listed = false, has_ifunc = false;
    for (size_t k = hi; k-- > 0 && t->s[k].addr == f->addr;) {
      if (!is_func(t->s[k].type))
        continue;
      int r = nm_rank(t->s[k].type);
      has_ifunc |= r < 0;
      if (r >= 0 && r < best)
        best = r;
      if (found && same_name(t->s[k].name, g_name))
        listed = true, mine = r;
    }
    bool ok = found && listed && g_sym == base + f->addr &&
              (has_ifunc || mine == best);
    CHECK(ok, "%s: pc %#llx (in %s at %#llx): got %s at %#llx", label,
          (unsigned long long)pc, f->name, (unsigned long long)f->addr,
          found ? g_name : "(nothing)",
          (unsigned long long)(g_sym - (found ? base : 0)));
    failed += !ok;
  }
  CHECK(checked >= samples / 2, "%s: only %d of %d pcs were unambiguous", label,
        checked, samples);
  printf("%s: %d pcs checked\n", label, checked);
  free(pick);
}

/* ---- Images as the loader sees them -------------------------------------- */

typedef struct found {
  const char *want; /* substring of the name; "" = the main program */
  uintptr_t base;
  char path[4096];
  bool ok;
} found_t;

static int find_image(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  found_t *f = arg;
  const char *name = info->dlpi_name ? info->dlpi_name : "";
  if (f->want[0] ? strstr(name, f->want) != NULL : name[0] == '\0') {
    f->base = info->dlpi_addr;
    snprintf(f->path, sizeof f->path, "%s", name);
    f->ok = true;
    return 1;
  }
  return 0;
}

static found_t image(const char *want) {
  found_t f = {want, 0, "", false};
  dl_iterate_phdr(find_image, &f);
  return f;
}

/* ---- The parts ---------------------------------------------------------- */

static void check_big_library(void) {
  void *h = dlopen(ELF_BIG_LIB, RTLD_NOW | RTLD_LOCAL);
  CHECK(h != NULL, "dlopen %s: %s", ELF_BIG_LIB, dlerror());
  if (!h)
    return;
  struct link_map *lm = NULL;
  CHECK(dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm, "dlinfo");
  nmtab_t t = nm_load(ELF_BIG_NM, false);
  size_t funcs = 0;
  for (size_t i = 0; i < t.n; i++)
    funcs += strncmp(t.s[i].name, "snapbig_", 8) == 0;
  CHECK_EQ(funcs, 50000);

  /* First use: map + parse + sort of 50 000 symbols. */
  const nmsym_t *some = &t.s[t.n / 2];
  double t0 = mono_s();
  name_of(lm->l_addr + some->addr, lm->l_addr, lm->l_name);
  printf("timing: first use of the 50k-function library %.2f ms\n",
         (mono_s() - t0) * 1e3);
  check_random("50k library", &t, "tT", &no_ranges, lm->l_addr, lm->l_name,
               1000);

  /* One batch of 1000: the cost of a lookup once the image is parsed. */
  enum { N = 1000 };
  static snap__plat_sym_query_t q[N];
  for (int i = 0; i < N; i++) {
    const nmsym_t *f = &t.s[rnd() % t.n];
    q[i] = (snap__plat_sym_query_t){.addr = lm->l_addr + f->addr,
                                    .image_base = lm->l_addr,
                                    .image_path = lm->l_name};
  }
  g_calls = 0;
  t0 = mono_s();
  snap__plat_symbolize(q, N, on_name, NULL);
  double dt = mono_s() - t0;
  CHECK(g_calls >= N * 9 / 10, "batch named %d of %d", g_calls, N);
  printf("timing: %.0f ns per lookup (batch of %d)\n", dt * 1e9 / N, N);

  /* Past the end of a sized function, in the padding before the next one,
     is not that function. gen_funcs aligns functions to 4 bytes. */
  int gaps = 0;
  for (size_t i = 0; i + 1 < t.n && gaps < 50; i++) {
    const nmsym_t *a = &t.s[i], *b = &t.s[i + 1];
    if (a->size == 0 || a->addr + a->size >= b->addr || !is_func(a->type))
      continue;
    gaps++;
    bool found =
        name_of(lm->l_addr + a->addr + a->size, lm->l_addr, lm->l_name);
    CHECK(!found, "gap after %s named %s", a->name, g_name);
  }
  CHECK(gaps > 0, "no padding between functions to test");
  nm_free(&t);
  dlclose(h);
}

static void check_executable(const found_t *exe) {
  nmtab_t t = nm_load(ELF_SELF_NM, false);
  /* objdump -h: "Idx Name Size VMA ...", then a line of flags. */
  ranges_t code = {{0}, {0}, 0};
  FILE *f = fopen(ELF_SELF_SECTIONS, "r");
  char line[1024];
  unsigned long long size = 0, vma = 0;
  while (f && fgets(line, sizeof line, f)) {
    unsigned idx;
    char name[64];
    if (sscanf(line, "%u %63s %llx %llx", &idx, name, &size, &vma) == 4)
      continue;
    if (strstr(line, "CODE") && size && code.n < 64)
      code.lo[code.n] = vma, code.hi[code.n++] = vma + size;
    size = 0;
  }
  if (f)
    fclose(f);
  CHECK(code.n > 0, "no code sections in %s", ELF_SELF_SECTIONS);
  check_random("executable", &t, "tTW", &code, exe->base, exe->path, 1000);

  /* The static functions by name, as nm spells them. */
  for (int i = 0; i < 8; i++) {
    CHECK(elf_statics[i](i) != 12345, "keep the call");
    uint64_t vaddr = (uintptr_t)elf_statics[i] - exe->base;
    size_t hi = upper(&t, vaddr);
    const nmsym_t *s = hi ? &t.s[hi - 1] : NULL;
    CHECK(s && s->addr == vaddr && s->type == 't', "nm lists elf_static_%d", i);
    bool found = name_of((uintptr_t)elf_statics[i] + 1, exe->base, exe->path);
    CHECK(found && s && strcmp(g_name, s->name) == 0 &&
              g_sym == (uintptr_t)elf_statics[i],
          "static %d: %s", i, found ? g_name : "(nothing)");
  }
  nm_free(&t);
}

typedef struct label {
  uint64_t addr;
  char name[512];
} label_t;

static void check_plt(const found_t *exe) {
  /* Ranges from objdump -h: "Idx Name Size VMA LMA File-off Algn". */
  FILE *f = fopen(ELF_SELF_SECTIONS, "r");
  CHECK(f != NULL, "%s", ELF_SELF_SECTIONS);
  if (!f)
    return;
  uint64_t lo[4], hi[4];
  int nsec = 0;
  char line[1024];
  while (fgets(line, sizeof line, f) && nsec < 4) {
    unsigned idx;
    char name[64];
    unsigned long long size, vma;
    if (sscanf(line, "%u %63s %llx %llx", &idx, name, &size, &vma) == 4 &&
        (!strcmp(name, ".plt") || !strcmp(name, ".plt.sec") ||
         !strcmp(name, ".plt.got")))
      lo[nsec] = vma, hi[nsec++] = vma + size;
  }
  fclose(f);
  CHECK(nsec > 0, "the executable has no PLT to test");

  /* Entry labels from objdump -d: "0000000000001030 <puts@plt>:". */
  static label_t labels[4096];
  int nl = 0;
  f = fopen(ELF_SELF_PLT, "r");
  CHECK(f != NULL, "%s", ELF_SELF_PLT);
  while (f && fgets(line, sizeof line, f) && nl < 4096) {
    unsigned long long a;
    char name[512];
    if (sscanf(line, "%llx <%511[^>]>:", &a, name) == 2)
      labels[nl].addr = a, snprintf(labels[nl++].name, 512, "%s", name);
  }
  if (f)
    fclose(f);

  int entries = 0, named_first = 0, named = 0;
  for (int s = 0; s < nsec; s++) {
    for (uint64_t v = lo[s]; v < hi[s]; v++) {
      const label_t *cover = NULL; /* objdump's entry holding v */
      for (int k = 0; k < nl; k++)
        if (labels[k].addr <= v && labels[k].addr >= lo[s] &&
            (!cover || labels[k].addr > cover->addr))
          cover = &labels[k];
      size_t len = cover ? strlen(cover->name) : 0;
      bool entry = len > 4 && strcmp(cover->name + len - 4, "@plt") == 0;
      bool found = name_of(exe->base + v, exe->base, exe->path);
      named += found;
      if (entry && cover->addr == v) {
        entries++;
        named_first += found;
      }
      if (!found)
        continue;
      CHECK(entry && strcmp(g_name, cover->name) == 0 &&
                g_sym == exe->base + cover->addr,
            "PLT byte %#llx named %s at %#llx; objdump: %s",
            (unsigned long long)v, g_name,
            (unsigned long long)(g_sym - exe->base),
            cover ? cover->name : "(no entry)");
    }
  }
  CHECK(entries > 0, "objdump labels no PLT entry");
  CHECK_EQ(named_first, entries);
  printf("PLT: %d entries, %d bytes named\n", entries, named);
}

static void check_libc(void) {
  found_t libc = image("/libc.so.6");
  CHECK(libc.ok, "libc not found among the images");
  if (!libc.ok)
    return;
  nmtab_t t = nm_load(ELF_LIBC_NM, !ELF_LIBC_FROM_DEBUG);
  double t0 = mono_s();
  name_of(libc.base + t.s[t.n / 2].addr, libc.base, libc.path);
  printf("timing: first use of libc (with its debug file search) %.2f ms\n",
         (mono_s() - t0) * 1e3);
#if ELF_LIBC_FROM_DEBUG
  /* Local functions exist only in libc6-dbg's .symtab. */
  check_random("libc internal (t)", &t, "t", &no_ranges, libc.base, libc.path,
               300);
  check_random("libc", &t, "tTWi", &no_ranges, libc.base, libc.path, 300);
#else
#if defined(__x86_64__)
  CHECK(0, "libc6-dbg's debug file for libc was not found at build time: "
           "libc's internal functions cannot be checked");
#endif
  /* arm64 cross build: no libc6-dbg:arm64 here, so only .dynsym names. */
  printf("libc: no debug file for this architecture; checking exported "
         "(.dynsym) names only\n");
  check_random("libc exported", &t, "TWi", &no_ranges, libc.base, libc.path,
               300);
#endif
  nm_free(&t);
}

static void check_vdso(void) {
  uintptr_t at = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
  found_t vdso = image("linux-vdso");
  void *h = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!at) {
    /* qemu-user before 8.1 maps no vdso; then the loader lists none. */
    CHECK(!vdso.ok && !h, "no AT_SYSINFO_EHDR, yet a vdso image");
#if defined(__x86_64__)
    CHECK(0, "no vdso on x86_64");
#endif
    printf("vdso: none in this process (emulator); nothing to name\n");
    return;
  }
  CHECK(vdso.ok && h, "vdso at %#lx not listed by the loader",
        (unsigned long)at);
  if (!vdso.ok || !h)
    return;
#if defined(__x86_64__)
  const char *entry = "__vdso_clock_gettime", *alias = "clock_gettime";
#else
  const char *entry = "__kernel_clock_gettime", *alias = entry;
#endif
  uintptr_t fn = (uintptr_t)dlsym(h, entry);
  CHECK(fn != 0, "dlsym(vdso, %s)", entry);
  bool found = name_of(fn + 1, vdso.base, vdso.path);
  CHECK(found && (!strcmp(g_name, entry) || !strcmp(g_name, alias)) &&
            g_sym == fn,
        "vdso clock_gettime: %s", found ? g_name : "(nothing)");

  /* Every function nm lists in a dump of the vdso's pages. */
  uintptr_t lo = 0, hi = 0;
  FILE *maps = fopen("/proc/self/maps", "r");
  char line[512];
  while (maps && fgets(line, sizeof line, maps))
    if (strstr(line, "[vdso]"))
      sscanf(line, "%lx-%lx", &lo, &hi);
  if (maps)
    fclose(maps);
  CHECK(lo == at && hi > lo, "[vdso] mapping");
  char tmp[] = "/tmp/snap_vdso_XXXXXX";
  int fd = mkstemp(tmp);
  CHECK(fd >= 0 && lo && write(fd, (void *)lo, hi - lo) == (ssize_t)(hi - lo),
        "dump the vdso");
  if (fd >= 0)
    close(fd);
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' -D -S --defined-only '%s'", ELF_NM_TOOL, tmp);
  FILE *p = popen(cmd, "r");
  nmtab_t t = p ? nm_parse(p, true) : (nmtab_t){0};
  if (p)
    pclose(p);
  unlink(tmp);
  check_random("vdso", &t, "TW", &no_ranges, vdso.base, vdso.path, 20);
  nm_free(&t);
}

static void on_line(const char *file, unsigned line, void *ctx) {
  char *out = ctx;
  const char *slash = strrchr(file, '/');
  snprintf(out, 512, "%s:%u", slash ? slash + 1 : file, line);
}

static void check_source_line(const found_t *exe) {
  uintptr_t pc = (uintptr_t)elf_statics[5];
  snap__plat_sym_query_t q = {
      .addr = pc, .image_base = exe->base, .image_path = exe->path};
  char ours[512] = "";
  int rc = snap__plat_source_line(&q, on_line, ours);
#if defined(__x86_64__)
  CHECK_EQ(rc, SNAP_OK); /* libdw is installed on the x86_64 host */
#endif
  if (rc == SNAP_EUNSUPPORTED) {
    printf("source lines: no libdw in this build\n");
    return;
  }
  char cmd[8192], theirs[4096] = "";
  snprintf(cmd, sizeof cmd, "'%s' -e '%s' %#lx", ELF_ADDR2LINE, exe->path,
           (unsigned long)(pc - exe->base));
  FILE *p = popen(cmd, "r");
  if (p && fgets(theirs, sizeof theirs, p)) {
    theirs[strcspn(theirs, " \n")] = '\0';
    const char *slash = strrchr(theirs, '/');
    memmove(theirs, slash ? slash + 1 : theirs,
            strlen(slash ? slash + 1 : theirs) + 1);
  }
  if (p)
    pclose(p);
  CHECK(strcmp(ours, theirs) == 0, "source line: ours %s, addr2line %s", ours,
        theirs);
  printf("source line: %s\n", ours);

  /* The same through the public API's flag. */
  const snap_stack_t *s = snap_symbolicate(
      &pc, 1, SNAP_SYMBOLICATE_EXACT_PC0 | SNAP_SYMBOLICATE_SOURCE_LINES);
  const snap_frame_t *f = snap_stack_frame(s, 0);
  char pub[512] = "";
  if (f && f->source_file)
    on_line(f->source_file, f->source_line, pub);
  CHECK(strcmp(pub, theirs) == 0, "snap_symbolicate source: %s, addr2line %s",
        pub, theirs);
  snap_stack_release(s);
}

int main(void) {
  found_t exe = image("");
  CHECK(exe.ok, "main program");
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  CHECK(n > 0, "readlink");
  if (n > 0) {
    self[n] = '\0';
    snprintf(exe.path, sizeof exe.path, "%s", self);
  }

  /* Nothing to name, nothing called. */
  CHECK(!name_of(0x1234, 0, NULL), "no image");
  CHECK(!name_of(0x1234, 0, "/nonexistent/lib.so"), "missing file");

  check_big_library();
  check_executable(&exe);
  check_plt(&exe);
  check_libc();
  check_vdso();
  /* In a child that leaves by _exit: libdw, once dlopen'ed, brings
     dynamic TLS (libelf's), and LeakSanitizer of clang 14 crashes reading
     the dynamic TLS of glibc 2.36 at exit ("Tracer caught signal 11"). */
  fflush(NULL);
  pid_t child = fork();
  if (child == 0) {
    check_source_line(&exe);
    fflush(NULL);
    _exit(check_failures ? 1 : 0);
  }
  int status = -1;
  CHECK(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
            WEXITSTATUS(status) == 0,
        "source-line check (child status %#x)", status);
  return check_result("test_elf_names");
}
