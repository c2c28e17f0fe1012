/*
 * test_elf_scan.c — a lazy parse's scanning lookup answers exactly as the
 * sorted index does (elf_reader.c: snap__elf_parse_lazy, snap__elf_index;
 * elf_functions.c: snap__elf_lookup).
 *
 * The oracle is the index itself: each file is parsed both ways, then
 * every function's first byte, last byte and end, one byte each side of
 * them, and random addresses over the whole span are looked up in both:
 * the same function (start, end, name) or none, and the same floor (where
 * Objective-C methods are looked for). Files: the generated 3 000-function
 * library (sizes 0 and aliases: tests/symbols/gen_funcs.sh), the small
 * library, this executable and the libc it runs on (from .dynsym when
 * stripped: then it names what the index names). Finally the lazy parse is
 * indexed and must hold the same table as the eager one.
 *
 * The lazy parse is checked once more with its .symtab's bytes left out
 * of its buffer and read through syms_window in uneven pieces, as the
 * provider's first lookups read them from the file: the same answers.
 *
 * The eager index's buckets (elf_reader.h: where a search starts) are
 * checked the same way against a search over every key: the same answer
 * at each address above, and at each bucket's first byte and the byte
 * before it.
 */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "platform/linux/elf_reader.h"
#include "xorshift.h"

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint8_t *slurp(const char *path, size_t *n) {
  int fd = open(path, O_RDONLY);
  struct stat st;
  CHECK(fd >= 0 && fstat(fd, &st) == 0, "open %s", path);
  if (fd < 0)
    return NULL;
  *n = (size_t)st.st_size;
  uint8_t *p = malloc(*n);
  size_t got = 0;
  while (p && got < *n) {
    ssize_t r = read(fd, p + got, *n - got);
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  close(fd);
  CHECK_EQ(got, *n);
  return p;
}

static long g_mismatches;

static void same(const char *path, const snap__elf_t *eager,
                 const snap__elf_t *lazy, uint64_t v) {
  uint64_t f1 = 7, f2 = 9;
  snap__elf_sym_t scratch;
  const snap__elf_sym_t *a = snap__elf_find(eager, v, &f1);
  const snap__elf_sym_t *b = snap__elf_lookup(lazy, v, &f2, &scratch);
  bool ok = f1 == f2 && !a == !b &&
            (!a || (a->addr == b->addr && a->end == b->end &&
                    strcmp(a->name, b->name) == 0));
  if (!ok && g_mismatches++ < 5)
    CHECK(ok,
          "%s at %#llx: index %s [%#llx, %#llx) floor %#llx, scan %s "
          "[%#llx, %#llx) floor %#llx",
          path, (unsigned long long)v, a ? a->name : "-",
          a ? (unsigned long long)a->addr : 0ull,
          a ? (unsigned long long)a->end : 0ull, (unsigned long long)f1,
          b ? b->name : "-", b ? (unsigned long long)b->addr : 0ull,
          b ? (unsigned long long)b->end : 0ull, (unsigned long long)f2);
}

/* The index's answer at v with its buckets, and without (every key
   searched): the same. */
static long g_bucket_mismatches;

static void same_without_buckets(const char *path, const snap__elf_t *eager,
                                 uint64_t v) {
  snap__elf_t all = *eager;
  all.buckets = NULL;
  uint64_t f1 = 7, f2 = 9;
  const snap__elf_sym_t *a = snap__elf_find(eager, v, &f1);
  const snap__elf_sym_t *b = snap__elf_find(&all, v, &f2);
  if ((a != b || f1 != f2) && g_bucket_mismatches++ < 5)
    CHECK(false,
          "%s at %#llx: bucketed %s floor %#llx, all keys %s floor %#llx", path,
          (unsigned long long)v, a ? a->name : "-", (unsigned long long)f1,
          b ? b->name : "-", (unsigned long long)f2);
}

/* A lazy parse whose buffer lacks its .symtab's bytes reads them through
   syms_window (elf_reader.h), as elf_symbols.c's first lookups do: pieces
   of uneven sizes, most not whole symbols, copied out of the file's bytes
   into a buffer; or none at all (fail: the file changed). */
typedef struct window_src {
  const uint8_t *data;
  size_t size;
  bool fail;
  long calls;
} window_src_t;

static const uint8_t *window(void *ctx, uint64_t off, uint64_t want,
                             uint64_t *got) {
  window_src_t *w = ctx;
  w->calls++;
  *got = 0;
  if (w->fail || off > w->size)
    return NULL;
  uint64_t piece =
      24 * (1 + snap_xorshift(&g_rng) % 40) + snap_xorshift(&g_rng) % 24;
  *got = piece < want ? piece : want;
  if (*got > w->size - off)
    *got = w->size - off;
  /* Copied, with junk after it: a scan must read nothing past *got. */
  static uint8_t buf[24 * 41];
  memset(buf, 0xa5, sizeof buf);
  memcpy(buf, w->data + off, (size_t)*got);
  return buf;
}

/* The streamed parse answers as the index does, at every address asked of
   the lazy one; with no bytes to be had it answers nothing (floor 0), and
   it cannot be indexed until its table is in the buffer. */
static void check_streamed(const char *path, const uint8_t *data, size_t n,
                           const snap__elf_t *eager) {
  snap__elf_t lazy;
  if (snap__elf_parse_lazy(&lazy, data, n) != 0 || !lazy.from_symtab) {
    if (lazy.lazy)
      snap__elf_free(&lazy);
    return; /* no .symtab: .dynsym is scanned, and it is always read */
  }
  Elf64_Shdr sym;
  memcpy(&sym, data + lazy.sh_off + lazy.sym_index * sizeof sym, sizeof sym);
  snap__elf_free(&lazy);
  uint8_t *holed = malloc(n);
  CHECK(holed != NULL, "memory");
  if (!holed)
    return;
  memcpy(holed, data, n);
  memset(holed + sym.sh_offset, 0, sym.sh_size); /* as read_parts leaves it */
  snap__elf_t st;
  window_src_t src = {data, n, false, 0};
  CHECK(snap__elf_parse_lazy(&st, holed, n) == 0, "%s parses without its table",
        path);
  st.syms_window = window;
  st.syms_ctx = &src;
  for (size_t i = 0; i < eager->nsyms; i++) {
    const snap__elf_sym_t *s = &eager->syms[i];
    const uint64_t at[] = {s->addr - 1, s->addr, s->end - 1, s->end};
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++)
      same(path, eager, &st, at[k]);
    if (eager->nsyms > 500)
      i += snap_xorshift(&g_rng) % (eager->nsyms / 100);
  }
  CHECK(src.calls > 0, "%s: the table was read through the window", path);
  CHECK(snap__elf_index(&st) != 0 && st.lazy,
        "%s: not indexed while its table is not in the buffer", path);
  src.fail = true;
  uint64_t floor = 7;
  snap__elf_sym_t scratch;
  const snap__elf_sym_t *s = eager->syms;
  CHECK(!snap__elf_lookup(&st, s->addr, &floor, &scratch) && floor == 0,
        "%s: no bytes, no answer", path);
  snap__elf_free(&st);
  free(holed);
}

static void check_file(const char *path) {
  size_t n;
  uint8_t *data = slurp(path, &n);
  if (!data)
    return;
  snap__elf_t eager, lazy;
  CHECK(snap__elf_parse(&eager, data, n) == 0, "%s parses", path);
  CHECK(snap__elf_parse_lazy(&lazy, data, n) == 0, "%s parses lazily", path);
  CHECK(lazy.lazy && !lazy.syms, "%s: nothing sorted yet", path);
  CHECK(eager.nsyms > 0, "%s: functions found", path);
  long asked = 0;
  for (size_t i = 0; i < eager.nsyms; i++) {
    const snap__elf_sym_t *s = &eager.syms[i];
    const uint64_t at[] = {s->addr - 1, s->addr, s->addr + 1,
                           s->end - 1,  s->end,  s->end + 1};
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++, asked++) {
      same(path, &eager, &lazy, at[k]);
      same_without_buckets(path, &eager, at[k]);
    }
    /* A scan is a pass over the table: a sample of the functions in a
       big one. */
    if (eager.nsyms > 2000)
      i += snap_xorshift(&g_rng) % (eager.nsyms / 125);
  }
  uint64_t lo = eager.syms[0].addr, hi = eager.syms[eager.nsyms - 1].end;
  for (int k = 0; k < 500; k++, asked++)
    same(path, &eager, &lazy,
         lo - 64 + snap_xorshift(&g_rng) % (hi - lo + 128));
  if (eager.keys) {
    CHECK(eager.buckets && eager.nbuckets <= eager.nsyms,
          "%s: at most one bucket a function", path);
    for (size_t b = 0; eager.buckets && b <= eager.nbuckets; b++) {
      uint64_t at = lo + ((uint64_t)b << eager.bucket_shift);
      same_without_buckets(path, &eager, at - 1);
      same_without_buckets(path, &eager, at);
    }
    for (int k = 0; k < 2000; k++)
      same_without_buckets(path, &eager,
                           lo - 64 + snap_xorshift(&g_rng) % (hi - lo + 128));
  }
  check_streamed(path, data, n, &eager);
  CHECK(snap__elf_index(&lazy) == 0 && !lazy.lazy, "%s: indexed", path);
  CHECK(lazy.nsyms == eager.nsyms &&
            memcmp(lazy.keys ? (void *)lazy.keys : (void *)"",
                   eager.keys ? (void *)eager.keys : (void *)"",
                   lazy.keys && eager.keys ? 2 * eager.nsyms * 4 : 0) == 0,
        "%s: the index a lazy parse builds is the eager one", path);
  for (size_t i = 0; i < eager.nsyms && i < lazy.nsyms; i++)
    if (eager.syms[i].addr != lazy.syms[i].addr ||
        eager.syms[i].end != lazy.syms[i].end ||
        strcmp(eager.syms[i].name, lazy.syms[i].name) != 0) {
      CHECK(false, "%s: entry %zu differs", path, i);
      break;
    }
  printf("%s: %zu functions, %ld lookups compared\n", path, eager.nsyms, asked);
  snap__elf_free(&eager);
  snap__elf_free(&lazy);
  free(data);
}

static int find_libc(struct dl_phdr_info *info, size_t size, void *out) {
  (void)size;
  if (strstr(info->dlpi_name, "/libc.so")) {
    *(const char **)out = info->dlpi_name;
    return 1;
  }
  return 0;
}

int main(void) {
  check_file(ELF_BIG_LIB);
  check_file(ELF_SMALL_LIB);
  check_file("/proc/self/exe");
  const char *libc = NULL;
  dl_iterate_phdr(find_libc, &libc);
  if (libc)
    check_file(libc);
  return check_result("test_elf_scan");
}
