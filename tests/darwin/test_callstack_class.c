/*
 * test_callstack_class.c — the Apple naming code (src/platform/darwin/
 * callstack_symbols.c, built here for GCC's runtime through
 * objc_messaging.h) driven against callstack_standin.m, a _NSCallStackArray
 * that behaves as Foundation's does (docs/apple.md, "Contract:
 * _NSCallStackArray"): it keeps the frames buffer and frees it in -dealloc,
 * skips two entries, and prints Libc's backtrace_symbols lines.
 *
 * What must hold, in every configuration and under AddressSanitizer:
 *  - the buffer is freed exactly once (by the array, or by us when the
 *    array is nil): a double free aborts the test (ASan, or glibc's tcache
 *    check), a leak fails it under LeakSanitizer;
 *  - every name given is the right one for its address. The oracle is
 *    outside the code under test: nm -D of this executable (the dynamic
 *    symbols, which are all dladdr and so backtrace_symbols can name), and
 *    glibc's own dladdr for the one address in libobjc;
 *  - lines that carry no function name are never taken for one: the image
 *    name Libc prints where dladdr has no symbol, the UUID it prints for
 *    "<redacted>", "<redacted>" itself, a Mach-O header symbol;
 *  - lines are matched to addresses by the address they print: a class
 *    that skips 0, 1, 3 or 4 entries instead of 2 can leave frames
 *    unnamed, never misnamed.
 *
 *  - a name is kept only if it starts inside the function holding the pc
 *    (issue 23, "Names in release builds"): dyld's dladdr answers the
 *    closest exported symbol below an address, so a function that is not
 *    exported (cs_neighbour_hidden) is named after the exported one before
 *    it, by dladdr and by the class's lines alike. This file's
 *    snap__plat_function_bounds stands in for the image's __unwind_info:
 *    a function runs from its start to the next function nm knows. Before
 *    the check, "neighbour" was named after its neighbour.
 *
 * This file defines dladdr, so every dladdr in the process (the code under
 * test's and the stand-in's) answers as dyld would on Apple: glibc's answer,
 * except for three address ranges, one whose symbol dyld reports as
 * "<redacted>", one that only the Mach-O header symbol covers
 * (dli_saddr == dli_fbase), and the static cs_neighbour_hidden, which dyld
 * names after the closest exported symbol below it (nm -D's, found at run
 * time: dyld's rule over the oracle's list). "Blind" mode answers nothing
 * outside the stand-in's backtrace_symbols, so the names seen can only have
 * come from the class's lines: that is how the test tells the class path from
 * the dladdr fallback.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "darwin/callstack_standin.h"
#include "platform/platform.h"

/* ---- The backend's seam, as the rest of the darwin backend would give it - */

static bool g_in_window;
bool snap__plat_in_stopped_window(void) { return g_in_window; }

/* ---- dyld, modelled on glibc's dladdr ------------------------------------ */

typedef struct range {
  uintptr_t lo, hi;
} range_t;
static range_t g_redacted, g_header, g_neighbour;
static uintptr_t g_neighbour_saddr;
static const char *g_neighbour_sname;
static bool g_blind;

static int (*real_dladdr(void))(const void *, Dl_info *) {
  static int (*real)(const void *, Dl_info *);
  if (!real)
    *(void **)&real = dlsym(RTLD_NEXT, "dladdr");
  return real;
}

int dladdr(const void *addr, Dl_info *info) {
  if (g_blind && !cs_standin_formatting)
    return 0;
  int (*real)(const void *, Dl_info *) = real_dladdr();
  if (!real || !real(addr, info))
    return 0;
  uintptr_t a = (uintptr_t)addr;
  if (a >= g_redacted.lo && a < g_redacted.hi)
    info->dli_sname = "<redacted>"; /* dyld keeps dli_saddr */
  if (a >= g_header.lo && a < g_header.hi) {
    info->dli_sname = "_mh_execute_header";
    info->dli_saddr = info->dli_fbase;
  }
  if (a >= g_neighbour.lo && a < g_neighbour.hi) {
    info->dli_sname = g_neighbour_sname; /* dyld: closest exported below */
    info->dli_saddr = (void *)g_neighbour_saddr;
  }
  return 1;
}

/* ---- Functions to name --------------------------------------------------- */

/* Exported (this executable is linked with -rdynamic), so in .dynsym: dladdr
   names them. */
int snap_cs_alpha(int x);
int snap_cs_beta(int x);
int snap_cs_gamma(int x);
int snap_cs_delta(int x);
int snap_cs_redacted(int x);

static volatile int g_sink;

__attribute__((noinline)) int snap_cs_alpha(int x) {
  g_sink += x;
  return g_sink * 3;
}
__attribute__((noinline)) int snap_cs_beta(int x) {
  g_sink ^= x;
  return g_sink - 5;
}
__attribute__((noinline)) int snap_cs_gamma(int x) {
  g_sink -= x;
  return g_sink << 2;
}
__attribute__((noinline)) int snap_cs_delta(int x) {
  g_sink |= x;
  return g_sink + 11;
}
__attribute__((noinline)) int snap_cs_redacted(int x) {
  g_sink &= x;
  return g_sink * 7;
}
/* Static: not in .dynsym, so dladdr has no symbol and Libc prints the image
   name with the offset from the image base. */
static __attribute__((noinline)) int cs_hidden(int x) {
  g_sink += 2 * x;
  return g_sink / 3;
}
/* Static, and the test's dladdr names it after the closest exported
   function below it, as dyld does in a stripped image. */
static __attribute__((noinline)) int cs_neighbour_hidden(int x) {
  g_sink += 5 * x;
  return g_sink / 7;
}
/* Static, and the test's dladdr makes the Mach-O header symbol cover it. */
static __attribute__((noinline)) int cs_header(int x) {
  g_sink -= 3 * x;
  return g_sink % 5;
}

/* ---- The oracle: nm -D of this executable -------------------------------- */

typedef struct nm_sym {
  uintptr_t value, size;
  char name[96];
} nm_sym_t;

int main(void); /* the anchor between nm's values and run time */

static nm_sym_t g_syms[8192];
static int g_nsyms;
static uintptr_t g_bias; /* runtime address - nm value */

static void load_nm(void) {
  FILE *f = fopen(CS_NM_DYNAMIC, "r");
  CHECK(f != NULL, "cannot open nm's listing %s", CS_NM_DYNAMIC);
  if (!f)
    return;
  char line[512];
  int cap = (int)(sizeof g_syms / sizeof g_syms[0]);
  while (fgets(line, sizeof line, f)) {
    CHECK(g_nsyms < cap, "more than %d functions in %s", cap, CS_NM_DYNAMIC);
    if (g_nsyms == cap)
      break;
    unsigned long v, s;
    char type, name[96];
    if (sscanf(line, "%lx %lx %c %95s", &v, &s, &type, name) == 4 &&
        (type == 'T' || type == 't' || type == 'W')) {
      g_syms[g_nsyms].value = v;
      g_syms[g_nsyms].size = s;
      snprintf(g_syms[g_nsyms].name, sizeof g_syms[g_nsyms].name, "%s", name);
      g_nsyms++;
    }
  }
  fclose(f);
}

static const nm_sym_t *nm_find(const char *name) {
  for (int i = 0; i < g_nsyms; i++)
    if (strcmp(g_syms[i].name, name) == 0)
      return &g_syms[i];
  return NULL;
}

/* The dynamic function symbol covering a runtime address of this
   executable, if any. */
static const nm_sym_t *nm_cover(uintptr_t addr) {
  for (int i = 0; i < g_nsyms; i++) {
    uintptr_t lo = g_syms[i].value + g_bias;
    if (g_syms[i].size && addr >= lo && addr < lo + g_syms[i].size)
      return &g_syms[i];
  }
  return NULL;
}

/* The exported function with the highest start at or below addr: dyld's
   dladdr rule over nm -D's list. */
static const nm_sym_t *nm_below(uintptr_t addr) {
  const nm_sym_t *best = NULL;
  for (int i = 0; i < g_nsyms; i++) {
    uintptr_t lo = g_syms[i].value + g_bias;
    if (lo <= addr && (!best || lo > best->value + g_bias))
      best = &g_syms[i];
  }
  return best;
}

/* __unwind_info, stood in for: the function holding pc runs from the start
   of the symbol nm knows (exported) or the static function this test
   names, to the next start above it. Token index 1 is this executable's. */
static uintptr_t g_static_starts[3];

bool snap__plat_function_bounds(uintptr_t index, size_t index_size,
                                uintptr_t base, uintptr_t pc, uintptr_t *start,
                                uintptr_t *end) {
  (void)index_size, (void)base;
  if (index != 1)
    return false;
  uintptr_t lo = 0, hi = UINTPTR_MAX;
  const nm_sym_t *b = nm_below(pc);
  if (b)
    lo = b->value + g_bias;
  for (size_t k = 0; k < sizeof g_static_starts / sizeof *g_static_starts; k++)
    if (g_static_starts[k] <= pc && g_static_starts[k] > lo)
      lo = g_static_starts[k];
  for (int i = 0; i < g_nsyms; i++) {
    uintptr_t v = g_syms[i].value + g_bias;
    if (v > pc && v < hi)
      hi = v;
  }
  for (size_t k = 0; k < sizeof g_static_starts / sizeof *g_static_starts; k++)
    if (g_static_starts[k] > pc && g_static_starts[k] < hi)
      hi = g_static_starts[k];
  if (!lo || hi == UINTPTR_MAX)
    return false;
  *start = lo;
  *end = hi;
  return true;
}

/* ---- The queries --------------------------------------------------------- */

enum {
  Q_ALPHA,
  Q_BETA,
  Q_HIDDEN,
  Q_GAMMA,
  Q_REDACTED,
  Q_ALPHA_AGAIN,
  Q_HEADER,
  Q_HEAP,
  Q_ZERO,
  Q_LIBOBJC,
  Q_DELTA,
  Q_NEIGHBOUR,
  NQ
};
static const char *const q_label[NQ] = {
    "alpha",         "beta",     "hidden (image+offset)",
    "gamma",         "redacted", "alpha again",
    "Mach-O header", "heap",     "zero",
    "libobjc",       "delta",    "neighbour (not exported)"};

static snap__plat_sym_query_t g_q[NQ];
static const char *g_expect_name[NQ]; /* NULL: must stay unnamed */
static uintptr_t g_expect_addr[NQ];
static char g_image[64]; /* this executable's name as Libc prints it */

/* An address inside a dynamic symbol of this executable, and the oracle's
   answer for it. */
static void exported(int i, const char *name, uintptr_t fn) {
  const nm_sym_t *s = nm_find(name);
  CHECK(s != NULL && s->size > 1, "nm -D lists no %s", name);
  if (!s)
    return;
  CHECK(s->value + g_bias == fn, "%s: nm says %#lx, the compiler %#lx", name,
        (unsigned long)(s->value + g_bias), (unsigned long)fn);
  g_q[i].addr = s->value + g_bias + s->size / 2;
  g_expect_name[i] = s->name;
  g_expect_addr[i] = s->value + g_bias;
}

static void set_image(int i) {
  Dl_info info;
  int (*real)(const void *, Dl_info *) = real_dladdr();
  if (g_q[i].addr && real && real((const void *)g_q[i].addr, &info)) {
    g_q[i].image_base = (uintptr_t)info.dli_fbase;
    g_q[i].image_path = info.dli_fname;
  }
}

static void *g_heap;

static void build_queries(void) {
  load_nm();
  const nm_sym_t *m = nm_find("main");
  CHECK(m != NULL, "nm -D lists no main: is the executable linked -rdynamic?");
  if (!m)
    return;
  g_bias = (uintptr_t)&main - m->value;

  exported(Q_ALPHA, "snap_cs_alpha", (uintptr_t)&snap_cs_alpha);
  exported(Q_BETA, "snap_cs_beta", (uintptr_t)&snap_cs_beta);
  exported(Q_GAMMA, "snap_cs_gamma", (uintptr_t)&snap_cs_gamma);
  exported(Q_DELTA, "snap_cs_delta", (uintptr_t)&snap_cs_delta);
  exported(Q_REDACTED, "snap_cs_redacted", (uintptr_t)&snap_cs_redacted);
  g_q[Q_ALPHA_AGAIN] = g_q[Q_ALPHA];
  g_expect_name[Q_ALPHA_AGAIN] = g_expect_name[Q_ALPHA];
  g_expect_addr[Q_ALPHA_AGAIN] = g_expect_addr[Q_ALPHA];
  /* dyld hides snap_cs_redacted's name: nothing may name it. */
  g_redacted.lo = g_expect_addr[Q_REDACTED];
  g_redacted.hi = g_q[Q_REDACTED].addr + 1;
  g_expect_name[Q_REDACTED] = NULL;

  g_q[Q_HIDDEN].addr = (uintptr_t)&cs_hidden + 1;
  g_q[Q_HEADER].addr = (uintptr_t)&cs_header + 1;
  g_header.lo = (uintptr_t)&cs_header;
  g_header.hi = g_q[Q_HEADER].addr + 1;
  CHECK(nm_cover(g_q[Q_HIDDEN].addr) == NULL &&
            nm_cover(g_q[Q_HEADER].addr) == NULL,
        "nm -D has a symbol over a static function");

  /* Not exported: dyld names it after what precedes it; nothing may. */
  g_q[Q_NEIGHBOUR].addr = (uintptr_t)&cs_neighbour_hidden + 1;
  const nm_sym_t *below = nm_below(g_q[Q_NEIGHBOUR].addr);
  CHECK(below != NULL && nm_cover(g_q[Q_NEIGHBOUR].addr) == NULL,
        "no exported function below the static neighbour, or one over it");
  if (below) {
    g_neighbour.lo = (uintptr_t)&cs_neighbour_hidden;
    g_neighbour.hi = g_q[Q_NEIGHBOUR].addr + 1;
    g_neighbour_saddr = below->value + g_bias;
    g_neighbour_sname = below->name;
  }
  g_static_starts[0] = (uintptr_t)&cs_hidden;
  g_static_starts[1] = (uintptr_t)&cs_header;
  g_static_starts[2] = (uintptr_t)&cs_neighbour_hidden;

  g_heap = malloc(64);
  g_q[Q_HEAP].addr = (uintptr_t)g_heap + 8;
  g_q[Q_ZERO].addr = 0;

  /* In another image: glibc's dladdr is the oracle there. */
  Dl_info info;
  void *fn = dlsym(RTLD_DEFAULT, "objc_getClass");
  int (*real)(const void *, Dl_info *) = real_dladdr();
  CHECK(fn && real && real(fn, &info) && info.dli_sname &&
            strcmp(info.dli_sname, "objc_getClass") == 0,
        "glibc's dladdr does not name objc_getClass");
  g_q[Q_LIBOBJC].addr = (uintptr_t)fn + 2;
  g_expect_name[Q_LIBOBJC] = "objc_getClass";
  g_expect_addr[Q_LIBOBJC] = (uintptr_t)fn;

  for (int i = 0; i < NQ; i++) {
    set_image(i);
    /* This executable's queries carry its (stood-in) function index. */
    if (g_q[i].addr && i != Q_LIBOBJC && i != Q_HEAP)
      g_q[i].func_index = 1;
  }
  if (real && real((const void *)&main, &info) && info.dli_fname) {
    const char *slash = strrchr(info.dli_fname, '/');
    snprintf(g_image, sizeof g_image, "%.35s",
             slash ? slash + 1 : info.dli_fname);
  }
}

/* ---- Running a case ------------------------------------------------------ */

typedef struct got {
  int calls;
  char name[256];
  uintptr_t symbol_addr;
} got_t;
static got_t g_got[NQ];

static void on_name(int i, const char *name, uintptr_t symbol_addr, void *ctx) {
  (void)ctx;
  CHECK(i >= 0 && i < NQ, "callback for index %d", i);
  if (i < 0 || i >= NQ)
    return;
  g_got[i].calls++;
  snprintf(g_got[i].name, sizeof g_got[i].name, "%s", name);
  g_got[i].symbol_addr = symbol_addr;
}

static int run(void) {
  memset(g_got, 0, sizeof g_got);
  return snap__plat_symbolize(g_q, NQ, on_name, NULL);
}

static void print_lines(void) {
  for (int k = 0; k < cs_standin_nlines; k++)
    fprintf(stderr, "    line %d: %s\n", k, cs_standin_lines[k]);
}

/* Every name given is the oracle's; every query in `required` is named. */
static void verify(const char *label, unsigned required) {
  int before = check_failures;
  for (int i = 0; i < NQ; i++) {
    const got_t *g = &g_got[i];
    CHECK(g->calls <= 1, "%s: %s named %d times", label, q_label[i], g->calls);
    if (g->calls && !g_expect_name[i])
      CHECK(0, "%s: %s (%#lx) named '%s', but it has no function name", label,
            q_label[i], (unsigned long)g_q[i].addr, g->name);
    if (g->calls && g_expect_name[i])
      CHECK(strcmp(g->name, g_expect_name[i]) == 0 &&
                g->symbol_addr == g_expect_addr[i],
            "%s: %s (%#lx) named '%s' at %#lx, the oracle says '%s' at %#lx",
            label, q_label[i], (unsigned long)g_q[i].addr, g->name,
            (unsigned long)g->symbol_addr, g_expect_name[i],
            (unsigned long)g_expect_addr[i]);
    if (required & 1u << i)
      CHECK(g->calls == 1, "%s: %s (%#lx) left unnamed", label, q_label[i],
            (unsigned long)g_q[i].addr);
  }
  if (check_failures != before)
    print_lines();
}

static unsigned named_set(void) {
  unsigned m = 0;
  for (int i = 0; i < NQ; i++)
    if (g_expect_name[i])
      m |= 1u << i;
  return m;
}

/* Whether the stand-in printed a line for addr whose "symbol" is `symbol`:
   proof that a case the test relies on really was exercised. */
static bool printed(uintptr_t addr, const char *symbol) {
  char want[160];
  snprintf(want, sizeof want, "0x%016lx %s + ", (unsigned long)addr, symbol);
  for (int k = 0; k < cs_standin_nlines; k++)
    if (strstr(cs_standin_lines[k], want))
      return true;
  return false;
}

/* The contract, with dladdr as the fallback and with only the class. */
static void check_contract(bool blind) {
  const char *label = blind ? "contract, class only" : "contract";
  cs_standin_reset();
  g_blind = blind;
  CHECK(run() == SNAP_OK, "%s: symbolize failed", label);
  g_blind = false;
  CHECK(cs_standin_made == 1 && cs_standin_freed == 1,
        "%s: %lu arrays made, %lu freed their buffer", label, cs_standin_made,
        cs_standin_freed);
  CHECK(cs_standin_bad_index == 0, "%s: asked past the array", label);
  CHECK(cs_standin_nlines == NQ, "%s: the class printed %d lines for %d pcs",
        label, cs_standin_nlines, NQ);
  verify(label, named_set());
  /* The cases the line parser must refuse were printed. */
  CHECK(printed(g_q[Q_HIDDEN].addr, g_image),
        "%s: no image-name line for the static function", label);
  CHECK(printed(g_q[Q_REDACTED].addr, "<redacted>"), "%s: no <redacted> line",
        label);
  CHECK(printed(g_q[Q_HEADER].addr, "_mh_execute_header"),
        "%s: no Mach-O header line", label);
  CHECK(printed(g_q[Q_ZERO].addr, "0x0"), "%s: no line for pc 0", label);
  CHECK(g_neighbour_sname && printed(g_q[Q_NEIGHBOUR].addr, g_neighbour_sname),
        "%s: no line naming the static function after its neighbour", label);
}

/* Libc prints the image's UUID in place of "<redacted>". */
static void check_uuid(bool blind) {
  const char *label = blind ? "UUID, class only" : "UUID";
  cs_standin_reset();
  cs_standin_have_uuid = 1;
  g_blind = blind;
  CHECK(run() == SNAP_OK, "%s: symbolize failed", label);
  g_blind = false;
  bool uuid_line = false;
  for (int k = 0; k < cs_standin_nlines; k++)
    uuid_line |= strstr(cs_standin_lines[k], "-5A4E-4150-8000-") != NULL;
  CHECK(uuid_line, "%s: the stand-in printed no UUID", label);
  verify(label, named_set());
}

/* Another OS could skip another number of entries: lines may then be
   missing, never attached to the wrong pc. */
static void check_shifted(unsigned long ignore, bool blind) {
  char label[64];
  snprintf(label, sizeof label, "_ignore = %lu%s", ignore,
           blind ? ", class only" : "");
  cs_standin_reset();
  cs_standin_ignore = ignore;
  g_blind = blind;
  CHECK(run() == SNAP_OK, "%s: symbolize failed", label);
  g_blind = false;
  CHECK(cs_standin_made == 1 && cs_standin_freed == 1, "%s: made %lu freed %lu",
        label, cs_standin_made, cs_standin_freed);
  unsigned required = named_set();
  if (blind) /* pcs the class skipped are not printed */
    for (unsigned long k = 0; k + 2 < ignore; k++)
      required &= ~(1u << k);
  verify(label, required);
}

/* A nil array: the buffer stays ours (LeakSanitizer checks it is freed). */
static void check_nil(bool blind) {
  const char *label = blind ? "nil array, class only" : "nil array";
  cs_standin_reset();
  cs_standin_return_nil = 1;
  g_blind = blind;
  CHECK(run() == SNAP_OK, "%s: symbolize failed", label);
  g_blind = false;
  CHECK(cs_standin_made == 0, "%s: an array was made", label);
  verify(label, blind ? 0 : named_set());
}

/* backtrace_symbols failed: the elements are numbers. */
static void check_numbers(bool blind) {
  const char *label = blind ? "number elements, class only" : "number elements";
  cs_standin_reset();
  cs_standin_symbols_fail = 1;
  g_blind = blind;
  CHECK(run() == SNAP_OK, "%s: symbolize failed", label);
  g_blind = false;
  CHECK(cs_standin_made == 1 && cs_standin_freed == 1, "%s: made %lu freed %lu",
        label, cs_standin_made, cs_standin_freed);
  verify(label, blind ? 0 : named_set());
}

static void check_refusals(void) {
  cs_standin_reset();
  g_in_window = true;
  memset(g_got, 0, sizeof g_got);
  CHECK(snap__plat_symbolize(g_q, NQ, on_name, NULL) == SNAP_EINVAL,
        "symbolize ran in the stopped window");
  g_in_window = false;
  CHECK(cs_standin_made == 0, "a message was sent from the stopped window");
  CHECK(snap__plat_symbolize(g_q, 0, on_name, NULL) == SNAP_OK, "n == 0");
  CHECK(snap__plat_symbolize(NULL, 1, on_name, NULL) == SNAP_EINVAL,
        "NULL queries");
  CHECK(cs_standin_made == 0, "an array was made for nothing");
  for (int i = 0; i < NQ; i++)
    CHECK(g_got[i].calls == 0, "a refused call named %s", q_label[i]);
}

int main(void) {
  build_queries();
  if (check_failures)
    return check_result("test_callstack_class");
  check_refusals();
  check_contract(false);
  check_contract(true);
  check_uuid(false);
  check_uuid(true);
  static const unsigned long shifts[] = {0, 1, 3, 4};
  for (size_t k = 0; k < sizeof shifts / sizeof shifts[0]; k++) {
    check_shifted(shifts[k], false);
    check_shifted(shifts[k], true);
  }
  check_nil(false);
  check_nil(true);
  check_numbers(false);
  check_numbers(true);
  free(g_heap);
  return check_result("test_callstack_class");
}
