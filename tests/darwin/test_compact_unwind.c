/*
 * test_compact_unwind.c — function bounds from __unwind_info
 * (src/platform/darwin/compact_unwind.c), on Linux.
 *
 * Real tables: argv[2..] are Mach-O files ld64.lld linked for iOS arm64 in
 * check-darwin's build. The section is found by macho_ranges.c (checked
 * against llvm-objdump's section headers), and every entry llvm-objdump
 * --unwind-info (argv[1], the outside oracle) prints must come back as
 * [its offset, the next one's) for its first byte, its last and its middle;
 * offsets before the first entry and from the end sentinel on are unknown.
 *
 * Crafted tables: a regular and a compressed page, tables big enough to
 * make the search probe, and hostile sizes and offsets; every table is
 * read from a heap copy of exactly its size through a read function that
 * fails the test on any request outside it (ASan guards the copy too), and
 * every prefix of a table is tried as the whole section.
 */
#define _POSIX_C_SOURCE 200809L /* popen */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "platform/darwin/compact_unwind.h"
#include "platform/darwin/macho_ranges.h"
#include "platform/platform.h"

typedef struct sect {
  const unsigned char *bytes;
  size_t size;
  unsigned reads;
  unsigned fail_at; /* this read (1-based) fails; 0: none */
} sect_t;

static bool read_sect(void *ctx, uint32_t off, void *dst, size_t n) {
  sect_t *s = ctx;
  CHECK((uint64_t)off + n <= s->size, "read [%u, +%zu) outside %zu bytes", off,
        n, s->size);
  if ((uint64_t)off + n > s->size)
    return false;
  s->reads++;
  if (s->reads == s->fail_at)
    return false;
  memcpy(dst, s->bytes + off, n);
  return true;
}

/* find() on a heap copy of exactly size bytes (tables of up to 64 KiB:
   the big ones are searched in place, the read function's bounds check
   standing guard alone). */
static bool find(const unsigned char *b, size_t size, uint64_t target,
                 uint32_t *lo, uint32_t *hi, unsigned *reads) {
  unsigned char *copy = NULL;
  if (size <= 65536) {
    copy = malloc(size ? size : 1);
    memcpy(copy, b, size);
    b = copy;
  }
  sect_t s = {b, size, 0, 0};
  bool ok = snap__cu_find(read_sect, &s, size, target, lo, hi);
  if (reads)
    *reads = s.reads;
  free(copy);
  return ok;
}

/* ---- Real tables, with llvm-objdump as the oracle ---------------------- */

static unsigned char *slurp(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)n);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return b;
}

#define MAX_FUNCS 100000

typedef struct oracle {
  uint32_t off[MAX_FUNCS]; /* second-level entries, in order */
  int n;
  uint32_t top[4096]; /* first-level function offsets, sentinel last */
  int ntop;
  uint64_t sect_size, sect_addr;
} oracle_t;

static bool run_objdump(const char *objdump, const char *path, oracle_t *o) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' --macho --unwind-info --section-headers '%s'",
           objdump, path);
  FILE *p = popen(cmd, "r");
  if (!p)
    return false;
  char line[512];
  bool top = false, second = false;
  o->n = o->ntop = 0;
  o->sect_size = o->sect_addr = 0;
  while (fgets(line, sizeof line, p)) {
    unsigned long long a, b;
    unsigned idx, x;
    char name[64];
    if (sscanf(line, " %u %63s %llx %llx", &idx, name, &a, &b) == 4 &&
        strcmp(name, "__unwind_info") == 0) {
      o->sect_size = a, o->sect_addr = b;
    } else if (strstr(line, "Top level indices:")) {
      top = true;
    } else if (strstr(line, "LSDA descriptors:")) {
      top = false;
    } else if (strstr(line, "Second level indices:")) {
      second = true;
    } else if (top &&
               sscanf(line, " [%u]: function offset=%x", &idx, &x) == 2) {
      if (o->ntop < 4096)
        o->top[o->ntop++] = x;
    } else if (second &&
               sscanf(line, " [%u]: function offset=%x", &idx, &x) == 2) {
      if (o->n < MAX_FUNCS)
        o->off[o->n++] = x;
    }
  }
  return pclose(p) == 0;
}

/* The reads one lookup may take: the header, the page's header, and per
   level a binary search that probes single offsets until at most 64
   candidates remain (halving, rounded up), then reads them at once. So
   4 + ceil(log2(n / 64)) per level of n entries: logarithmic in the
   table's size, whatever the linker puts in a page (up to 1021 entries in
   a 4 KiB compressed page). */
static unsigned search_reads(uint32_t n) {
  unsigned probes = 0;
  for (uint64_t covered = 64; covered < n; covered *= 2)
    probes++;
  return probes + 1;
}

static void check_real(const char *objdump, const char *path) {
  static oracle_t o;
  CHECK(run_objdump(objdump, path, &o), "%s --unwind-info %s", objdump, path);
  size_t size;
  unsigned char *b = slurp(path, &size);
  CHECK(b != NULL, "cannot read %s", path);
  if (!b)
    return;
  snap__macho_info_t m;
  CHECK(snap__macho_parse(b, size, &m), "parse %s", path);
  CHECK(m.unwind_info_addr == o.sect_addr && m.unwind_info_size == o.sect_size,
        "%s: __unwind_info at %#llx size %#llx, llvm-objdump says %#llx %#llx",
        path, (unsigned long long)m.unwind_info_addr,
        (unsigned long long)m.unwind_info_size, (unsigned long long)o.sect_addr,
        (unsigned long long)o.sect_size);
  CHECK(o.n >= 1 && o.ntop >= 2, "%s: %d entries, %d pages", path, o.n, o.ntop);
  /* __TEXT starts at file offset 0: the section's file offset is its
     address minus __TEXT's. */
  uint64_t at = m.unwind_info_addr - m.text_vmaddr;
  CHECK(at + m.unwind_info_size <= size, "section inside the file");
  if (o.n == 0 || o.ntop < 2 || at + m.unwind_info_size > size) {
    free(b);
    return;
  }
  const unsigned char *sec = b + at;
  size_t ssize = (size_t)m.unwind_info_size;
  uint32_t sentinel = o.top[o.ntop - 1];
  unsigned max_reads = 0, max_bound = 0, page_max = 0;
  for (int i = 0; i < o.n; i++) {
    uint32_t lo = o.off[i], hi = i + 1 < o.n ? o.off[i + 1] : sentinel;
    /* A page's last entry ends at the next page's first function. */
    for (int t = 1; t < o.ntop; t++)
      if (o.top[t] > lo && o.top[t] < hi)
        hi = o.top[t];
    /* The entries of lo's page: those between its first-level offsets. */
    uint32_t page_lo = 0, page_hi = sentinel, page_n = 0;
    for (int t = 0; t + 1 < o.ntop; t++)
      if (o.top[t] <= lo && lo < o.top[t + 1])
        page_lo = o.top[t], page_hi = o.top[t + 1];
    for (int j = 0; j < o.n; j++)
      page_n += o.off[j] >= page_lo && o.off[j] < page_hi;
    unsigned bound = 2 + search_reads((uint32_t)o.ntop) + search_reads(page_n);
    if (bound > max_bound)
      max_bound = bound;
    if (page_n > page_max)
      page_max = page_n;
    uint64_t probes[3] = {lo, lo + (hi - lo) / 2, (uint64_t)hi - 1};
    for (int k = 0; k < 3; k++) {
      uint32_t s = 0, e = 0;
      unsigned reads = 0;
      bool ok = find(sec, ssize, probes[k], &s, &e, &reads);
      CHECK(ok && s == lo && e == hi,
            "%s: %#llx -> %d [%#x, %#x), llvm-objdump [%#x, %#x)", path,
            (unsigned long long)probes[k], ok, s, e, lo, hi);
      CHECK(reads <= bound,
            "%s: %#llx: %u reads, a binary search over %d first-level and "
            "%u page entries takes at most %u",
            path, (unsigned long long)probes[k], reads, o.ntop, page_n, bound);
      if (reads > max_reads)
        max_reads = reads;
    }
  }
  uint32_t s, e;
  CHECK(!find(sec, ssize, o.off[0] - 1, &s, &e, NULL), "before the first");
  CHECK(!find(sec, ssize, sentinel, &s, &e, NULL), "at the end sentinel");
  CHECK(!find(sec, ssize, sentinel + 0x1000, &s, &e, NULL), "past the end");
  CHECK(!find(sec, ssize, 0, &s, &e, NULL), "the header");
  printf("%s: %d entries in %d page(s) (at most %u in one) looked up, at "
         "most %u reads (bound %u)\n",
         path, o.n, o.ntop - 1, page_max, max_reads, max_bound);

  /* Every prefix of the real section as the whole section: no read
     outside it, and an answer only if it is the true one. */
  uint64_t mid = o.off[o.n / 2];
  uint32_t want_s, want_e;
  CHECK(find(sec, ssize, mid, &want_s, &want_e, NULL), "mid entry");
  for (size_t n = 0; n < ssize; n++) {
    if (find(sec, n, mid, &s, &e, NULL))
      CHECK(s == want_s && e == want_e, "prefix %zu: [%#x, %#x)", n, s, e);
  }
  free(b);
}

/* ---- Crafted tables ---------------------------------------------------- */

typedef struct table {
  unsigned char b[4 << 20];
  size_t len;
} table_t;

static void put32(table_t *t, size_t at, uint32_t v) {
  if (at + 4 > sizeof t->b)
    abort(); /* the test's own table must fit */
  memcpy(t->b + at, &v, 4);
  if (at + 4 > t->len)
    t->len = at + 4;
}

static void put16(table_t *t, size_t at, uint16_t v) {
  if (at + 2 > sizeof t->b)
    abort();
  memcpy(t->b + at, &v, 2);
  if (at + 2 > t->len)
    t->len = at + 2;
}

/* A table of npages pages of `per` functions each, function f (counting
   from 0 across pages) at 0x1000 + f * 0x40; page p regular if p is even
   (or if all_regular), compressed if odd. Returns the end of the last
   function (the sentinel). */
static uint32_t build(table_t *t, uint32_t npages, uint32_t per,
                      bool all_regular) {
  memset(t, 0, sizeof *t);
  t->len = 0;
  uint32_t index_at = 28;
  put32(t, 0, 1);                    /* version */
  put32(t, 4, 28), put32(t, 8, 0);   /* no common encodings */
  put32(t, 12, 28), put32(t, 16, 0); /* no personalities */
  put32(t, 20, index_at);
  put32(t, 24, npages + 1);
  size_t page_at = index_at + (npages + 1) * 12;
  for (uint32_t p = 0; p < npages; p++) {
    uint32_t first = 0x1000 + p * per * 0x40;
    put32(t, index_at + p * 12, first);
    put32(t, index_at + p * 12 + 4, (uint32_t)page_at);
    put32(t, index_at + p * 12 + 8, 0);
    bool regular = all_regular || p % 2 == 0;
    if (regular) {
      put32(t, page_at, 2);
      put16(t, page_at + 4, 8);
      put16(t, page_at + 6, (uint16_t)per);
      for (uint32_t f = 0; f < per; f++) {
        put32(t, page_at + 8 + f * 8, first + f * 0x40);
        put32(t, page_at + 8 + f * 8 + 4, 0x04000000u);
      }
      page_at += 8 + per * 8;
    } else {
      put32(t, page_at, 3);
      put16(t, page_at + 4, 12);
      put16(t, page_at + 6, (uint16_t)per);
      put16(t, page_at + 8, (uint16_t)(12 + per * 4));
      put16(t, page_at + 10, 1);
      for (uint32_t f = 0; f < per; f++)
        put32(t, page_at + 12 + f * 4, f * 0x40);
      put32(t, page_at + 12 + per * 4, 0x02000000u);
      page_at += 12 + per * 4 + 4;
    }
  }
  uint32_t end = 0x1000 + npages * per * 0x40;
  put32(t, index_at + npages * 12, end);
  put32(t, index_at + npages * 12 + 4, 0);
  return end;
}

static void check_all(const table_t *t, uint32_t end, unsigned max_reads,
                      const char *what) {
  uint32_t s, e;
  unsigned reads, worst = 0;
  for (uint32_t f = 0x1000; f < end; f += 0x40) {
    uint64_t probes[2] = {f, f + 0x3f};
    for (int k = 0; k < 2; k++) {
      bool ok = find(t->b, t->len, probes[k], &s, &e, &reads);
      CHECK(ok && s == f && e == f + 0x40, "%s: %#llx -> %d [%#x, %#x)", what,
            (unsigned long long)probes[k], ok, s, e);
      if (reads > worst)
        worst = reads;
    }
  }
  CHECK(!find(t->b, t->len, 0xfff, &s, &e, NULL), "%s: before the first", what);
  CHECK(!find(t->b, t->len, end, &s, &e, NULL), "%s: at the end", what);
  CHECK(!find(t->b, t->len, 0xffffffffu, &s, &e, NULL), "%s: far past", what);
  CHECK(!find(t->b, t->len, 0x100000000ull + 0x1000, &s, &e, NULL),
        "%s: beyond 32 bits", what);
  CHECK(worst <= max_reads, "%s: %u reads", what, worst);
}

static table_t g_t;

static void crafted(void) {
  uint32_t end = build(&g_t, 2, 3, false); /* one regular, one compressed */
  check_all(&g_t, end, 4, "regular+compressed");
  /* Every prefix: reads stay inside it; answers, if any, are right. */
  size_t full = g_t.len;
  for (size_t n = 0; n < full; n++)
    for (uint32_t pc = 0x1000; pc < end; pc += 0x20) {
      uint32_t s, e;
      if (find(g_t.b, n, pc, &s, &e, NULL))
        CHECK(s == (pc & ~0x3fu) && e == s + 0x40, "prefix %zu", n);
    }

  /* Big enough that both levels probe before the one run is read. */
  end = build(&g_t, 150, 1000, false);
  check_all(&g_t, end, 14, "150 pages x 1000");
  end = build(&g_t, 3, 1000, true);
  check_all(&g_t, end, 10, "regular 1000");
}

static void hostile(void) {
  uint32_t s, e;
  uint32_t end = build(&g_t, 2, 3, false);
  (void)end;
  table_t *t = &g_t;
  static table_t keep;
  keep = *t;
  const uint32_t pc = 0x1050;
#define FRESH() (*t = keep)
  FRESH(), put32(t, 0, 2); /* unknown version */
  CHECK(!find(t->b, t->len, pc, &s, &e, NULL), "version 2");
  FRESH(), put32(t, 24, 0xffffffffu); /* index count huge */
  CHECK(!find(t->b, t->len, pc, &s, &e, NULL), "huge index count");
  FRESH(), put32(t, 24, 1); /* no sentinel */
  CHECK(!find(t->b, t->len, pc, &s, &e, NULL), "one index entry");
  FRESH(), put32(t, 20, 0xfffffff0u); /* index past the section */
  CHECK(!find(t->b, t->len, pc, &s, &e, NULL), "index offset outside");
  FRESH(), put32(t, 28 + 4, 0x7ffffff0u); /* page past the section */
  CHECK(!find(t->b, t->len, pc, &s, &e, NULL), "page offset outside");
  FRESH(), put32(t, 28 + 4, (uint32_t)t->len - 4); /* header cut short */
  CHECK(!find(t->b, t->len, pc, &s, &e, NULL), "page header cut");
  size_t page0 = 28 + 3 * 12;
  FRESH(), put16(t, page0 + 4, 0xffff); /* entries past the section */
  CHECK(!find(t->b, t->len, pc, &s, &e, NULL), "entry offset outside");
  FRESH(), put16(t, page0 + 6, 0xffff); /* entry count past the section */
  CHECK(!find(t->b, t->len, pc, &s, &e, NULL), "entry count outside");
  FRESH(), put16(t, page0 + 6, 0); /* empty page */
  CHECK(!find(t->b, t->len, pc, &s, &e, NULL), "empty page");
  FRESH(), put32(t, page0, 7); /* unknown page kind */
  CHECK(!find(t->b, t->len, pc, &s, &e, NULL), "page kind 7");
  /* Entries out of order or outside their page: never bounds that miss
     the pc or leave the page. */
  FRESH(), put32(t, page0 + 8 + 8, 0x5000); /* 2nd entry past the page */
  for (uint32_t q = 0x1000; q < 0x10c0; q += 4)
    if (find(t->b, t->len, q, &s, &e, NULL))
      CHECK(s <= q && q < e && s >= 0x1000 && e <= 0x10c0,
            "unsorted: %#x -> [%#x, %#x)", q, s, e);
  FRESH(), put32(t, page0 + 8, 0x0800); /* 1st entry before its page */
  CHECK(!find(t->b, t->len, 0x900, &s, &e, NULL), "before page: 0x900");
  CHECK(!find(t->b, t->len, 0x1010, &s, &e, NULL), "before page: 0x1010");
  /* A read that fails (the image unmapped under us) at every step. */
  for (unsigned k = 1; k <= 4; k++) {
    FRESH();
    sect_t sc = {t->b, t->len, 0, k};
    CHECK(!snap__cu_find(read_sect, &sc, t->len, pc, &s, &e),
          "read %u failed but an answer came", k);
  }
  sect_t ok5 = {t->b, t->len, 0, 5}; /* four reads answer this one */
  CHECK(snap__cu_find(read_sect, &ok5, t->len, pc, &s, &e) && ok5.reads == 4,
        "%u reads", ok5.reads);
  CHECK(!snap__cu_find(read_sect, &(sect_t){t->b, 27, 0, 0}, 27, pc, &s, &e),
        "27 bytes");
  CHECK(!snap__cu_find(NULL, NULL, t->len, pc, &s, &e), "no read function");
}

/* ---- The platform entry point, over memory the test owns --------------- */

static const unsigned char *g_mem_lo;
static size_t g_mem_len;

/* Stands in for the Apple backend's vm_read_overwrite: only the table the
   test owns is readable. */
bool snap__plat_read(uintptr_t addr, void *dst, size_t n) {
  uintptr_t lo = (uintptr_t)g_mem_lo;
  if (addr < lo || n > g_mem_len || addr - lo > g_mem_len - n)
    return false;
  memcpy(dst, (const void *)addr, n);
  return true;
}

static void platform_entry(void) {
  build(&g_t, 2, 3, false);
  g_mem_lo = g_t.b, g_mem_len = g_t.len;
  uintptr_t base = 0x7000000000u; /* where the "image" is loaded */
  uintptr_t s, e;
  CHECK(snap__plat_function_bounds((uintptr_t)g_t.b, g_t.len, base,
                                   base + 0x1050, &s, &e) &&
            s == base + 0x1040 && e == base + 0x1080,
        "bounds of base+0x1050");
  CHECK(!snap__plat_function_bounds((uintptr_t)g_t.b, g_t.len, base, base - 4,
                                    &s, &e),
        "pc below the base");
  CHECK(!snap__plat_function_bounds(0, 0, base, base + 0x1050, &s, &e),
        "no index");
  g_mem_len = 0; /* the image is gone */
  CHECK(!snap__plat_function_bounds((uintptr_t)g_t.b, g_t.len, base,
                                    base + 0x1050, &s, &e),
        "unmapped index");
}

int main(int argc, char **argv) {
  crafted();
  hostile();
  platform_entry();
  if (argc >= 3)
    for (int i = 2; i < argc; i++)
      check_real(argv[1], argv[i]);
  else
    printf("no Mach-O files given: crafted tables only\n");
  return check_result("test_compact_unwind");
}
