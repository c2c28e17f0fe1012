/*
 * bench_symbols.c — what naming a stack costs, against what an app
 * developer would otherwise reach for, all measured in the same run.
 *
 *  1. Repeated call site, depth 32 (a noinline recursion, each level a real
 *     frame): per call, snap_callstack_symbols(64, 0) + snap_stack_release
 *     (a cache hit after the first call), the same with
 *     SNAP_CAPTURE_APP_ONLY, the bare capture snap_capture_self alone (the
 *     difference is what the cache hit adds), against glibc's backtrace() +
 *     backtrace_symbols() + free() and abseil's GetStackTrace + Symbolize
 *     of each frame, and libbacktrace's backtrace_simple + backtrace_syminfo
 *     of each frame (one state, made before timing). Goals: >= 100x glibc,
 *     >= 15x libbacktrace.
 *  2. Cold lookup per address in images of 1 k, 10 k, 60 k and 100 k
 *     functions (libraries built from tests/symbols/gen_funcs.sh,
 *     dlopen'ed): each pass names 1 000 addresses no pass named before
 *     (fresh), the same sets for every method; stacksnap with
 *     snap_set_symbol_cache_limit(0), so every call names afresh (the
 *     image's symbol table, parsed once on first use, stays; that first use
 *     is reported on its own), beside one set reused every pass and fresh
 *     sets with the cache on. Against dladdr, elfutils' libdwfl
 *     (dwfl_addrmodule + dwfl_module_addrname) and absl::Symbolize ("n/a"
 *     when built without them). The methods take turns, a pass each, and
 *     every pass starts from caches evicted: a cold lookup is cold for each
 *     method alike. Goals: flat across sizes, >= 100x faster
 *     than dladdr at 100 k functions, and at 60 k a cold lookup <= 430 ns
 *     (libbacktrace's backtrace_syminfo, measured apart) and a first use
 *     <= 2 ms. Names are checked too: a third of the functions are local
 *     (in .symtab only, like C static functions), which dladdr cannot see.
 *  3. Cache hits from 1, 2 and 4 threads: throughput of snap_symbolicate
 *     hits, each thread over its own 64 stacks of depth 16. Goal: 2 threads
 *     >= 1.8x one thread, 4 threads (on 2 cores) no worse than 2.
 *  4. The audit preload (demo/audit): ns per open()+close() on one
 *     repeated call site, in a child process with and without
 *     LD_PRELOAD=libstacksnap_audit.so; the difference is the hook's cost
 *     (capture, cache hit, count). Only when the demo is built and not
 *     under a sanitizer (a preloaded instrumented library needs the
 *     sanitizer runtime first in the load order).
 *  5. Cache memory: the bytes the cache counts per cached stack of depth
 *     32, named only, named and printed, and in a full default cap. Goal:
 *     <= 1 KiB a stack.
 *
 * Fairness: backtrace and backtrace_symbols are looked up with dlsym in
 * libc.so.6 itself (linking libunwind would replace backtrace()); every
 * method of part 1 is timed from the same frame through one call site; the
 * repeats of part 1 are interleaved and the median kept, so a burst of
 * noise from other processes hits one repeat of every method. Parts 1 and
 * 2 time with the thread's CPU clock (bench_clock.h, thread_cpu_ns): on
 * a shared machine a pass is often preempted for longer than it runs,
 * and wall time then measured the other processes.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"
#include "stacksnap.h"
#include "xorshift.h"

#ifdef SNAP_BENCH_HAVE_LIBDW
#include <elfutils/libdwfl.h>
#endif
#ifdef SNAP_BENCH_HAVE_LIBBACKTRACE
#include <backtrace.h>
#endif
#ifdef SNAP_BENCH_HAVE_ABSL
#include "peer_absl.h"
#endif

extern char **environ;

#define DEPTH 32
#define MAX_FRAMES 64
#define REPEATS 15
#define REPEAT_NS 5000000.0 /* aim for ~5 ms per timed repeat */

typedef int (*backtrace_fn)(void **, int);
typedef char **(*backtrace_symbols_fn)(void *const *, int);
static backtrace_fn g_backtrace;
static backtrace_symbols_fn g_backtrace_symbols;

static void print_ratio(const char *label, double num, double den) {
  if (num < 0 || den <= 0)
    printf("  %-44s %10s\n", label, "n/a");
  else
    printf("  %-44s %9.1fx\n", label, num / den);
}

/* xorshift64*: the same address sets on every run and for every method. */
static uint64_t g_rng = 0x9e3779b97f4a7c15u;
static uint64_t rng(void) { return snap_xorshift(&g_rng); }

/* ======================================================================
 * Part 1: a repeated call site, depth 32
 * ====================================================================== */

enum {
  M_SYMS,
  M_SYMS_APP,
  M_CAPTURE,
  M_CAPTURE_APP,
  M_BT_SYMS,
  M_ABSL_SYMS,
  M_LIBBT_SYMS,
  M_COUNT
};
static const char *const k_method_names[M_COUNT] = {
    [M_SYMS] = "snap_callstack_symbols(64, 0) + release",
    [M_SYMS_APP] = "  the same with SNAP_CAPTURE_APP_ONLY",
    [M_CAPTURE] = "snap_capture_self(pcs, 64, 0, 0) alone",
    [M_CAPTURE_APP] = "  the same with SNAP_CAPTURE_APP_ONLY",
    [M_BT_SYMS] = "backtrace + backtrace_symbols + free",
    [M_ABSL_SYMS] = "absl GetStackTrace + Symbolize each frame",
    [M_LIBBT_SYMS] = "libbacktrace simple + syminfo each frame",
};

typedef struct site_result {
  double ns[M_COUNT]; /* median ns per call; < 0: n/a */
  double spread[M_COUNT];
  int frames[M_COUNT];
  int named;                  /* frames of the full stack with a symbol */
  const snap_stack_t *sample; /* one full stack, kept for printing */
} site_result_t;

/* One timing loop per method, each calling its method directly (no
   function pointer per call). noinline: each is one frame, at the same
   depth for every method. */
__attribute__((noinline)) static uint64_t run_syms(long iters, int *frames) {
  int n = 0;
  uint64_t t0 = thread_cpu_ns();
  for (long i = 0; i < iters; i++) {
    const snap_stack_t *s = snap_callstack_symbols(MAX_FRAMES, 0);
    n = snap_stack_count(s);
    snap_stack_release(s);
  }
  uint64_t t1 = thread_cpu_ns();
  *frames = n;
  return t1 - t0;
}

__attribute__((noinline)) static uint64_t run_syms_app(long iters,
                                                       int *frames) {
  int n = 0;
  uint64_t t0 = thread_cpu_ns();
  for (long i = 0; i < iters; i++) {
    const snap_stack_t *s =
        snap_callstack_symbols(MAX_FRAMES, SNAP_CAPTURE_APP_ONLY);
    n = snap_stack_count(s);
    snap_stack_release(s);
  }
  uint64_t t1 = thread_cpu_ns();
  *frames = n;
  return t1 - t0;
}

__attribute__((noinline)) static uint64_t run_capture(long iters, int *frames) {
  uintptr_t pcs[MAX_FRAMES];
  int n = 0;
  uint64_t t0 = thread_cpu_ns();
  for (long i = 0; i < iters; i++) {
    n = snap_capture_self(pcs, MAX_FRAMES, 0, 0);
    __asm__ volatile("" ::"r"(pcs) : "memory");
  }
  uint64_t t1 = thread_cpu_ns();
  *frames = n;
  return t1 - t0;
}

__attribute__((noinline)) static uint64_t run_capture_app(long iters,
                                                          int *frames) {
  uintptr_t pcs[MAX_FRAMES];
  int n = 0;
  uint64_t t0 = thread_cpu_ns();
  for (long i = 0; i < iters; i++) {
    n = snap_capture_self(pcs, MAX_FRAMES, 0, SNAP_CAPTURE_APP_ONLY);
    __asm__ volatile("" ::"r"(pcs) : "memory");
  }
  uint64_t t1 = thread_cpu_ns();
  *frames = n;
  return t1 - t0;
}

__attribute__((noinline)) static uint64_t run_bt_syms(long iters, int *frames) {
  void *ptrs[MAX_FRAMES];
  int n = 0;
  uint64_t t0 = thread_cpu_ns();
  for (long i = 0; i < iters; i++) {
    n = g_backtrace(ptrs, MAX_FRAMES);
    char **names = g_backtrace_symbols(ptrs, n);
    free(names);
  }
  uint64_t t1 = thread_cpu_ns();
  *frames = n;
  return t1 - t0;
}

#ifdef SNAP_BENCH_HAVE_ABSL
__attribute__((noinline)) static uint64_t run_absl_syms(long iters,
                                                        int *frames) {
  void *ptrs[MAX_FRAMES];
  char name[256];
  int n = 0;
  uint64_t t0 = thread_cpu_ns();
  for (long i = 0; i < iters; i++) {
    n = peer_absl_stacktrace(ptrs, MAX_FRAMES);
    for (int k = 0; k < n; k++) /* pc - 1: the call, as backtrace_symbols */
      (void)peer_absl_symbolize((const char *)ptrs[k] - 1, name, sizeof name);
    __asm__ volatile("" ::"r"(name) : "memory");
  }
  uint64_t t1 = thread_cpu_ns();
  *frames = n;
  return t1 - t0;
}
#endif

#ifdef SNAP_BENCH_HAVE_LIBBACKTRACE
/* libbacktrace as a hook would use it for names: one state (made once,
   threaded, before timing), backtrace_simple for the pcs, then
   backtrace_syminfo of each (pc - 1, as the others name the call). */
static struct backtrace_state *g_bt_site;

typedef struct bt_site {
  uintptr_t pcs[MAX_FRAMES];
  int n;
} bt_site_t;

static int bt_site_pc(void *data, uintptr_t pc) {
  bt_site_t *s = data;
  if (s->n == MAX_FRAMES)
    return 1;
  s->pcs[s->n++] = pc;
  return 0;
}

static void bt_site_error(void *data, const char *msg, int errnum) {
  (void)data, (void)msg, (void)errnum;
}

static void bt_site_name(void *data, uintptr_t pc, const char *symname,
                         uintptr_t symval, uintptr_t symsize) {
  (void)pc, (void)symval, (void)symsize;
  *(const char **)data = symname;
}

__attribute__((noinline)) static uint64_t run_libbt_syms(long iters,
                                                         int *frames) {
  bt_site_t site;
  const char *name = NULL;
  uint64_t t0 = thread_cpu_ns();
  for (long i = 0; i < iters; i++) {
    site.n = 0;
    backtrace_simple(g_bt_site, 0, bt_site_pc, bt_site_error, &site);
    for (int k = 0; k < site.n; k++)
      backtrace_syminfo(g_bt_site, site.pcs[k] - 1, bt_site_name, bt_site_error,
                        &name);
    __asm__ volatile("" ::"r"(name) : "memory");
  }
  uint64_t t1 = thread_cpu_ns();
  *frames = site.n;
  return t1 - t0;
}
#endif

static uint64_t run_method(int m, long iters, int *frames) {
  switch (m) {
#ifdef SNAP_BENCH_HAVE_LIBBACKTRACE
  case M_LIBBT_SYMS: return run_libbt_syms(iters, frames);
#endif
#ifdef SNAP_BENCH_HAVE_ABSL
  case M_ABSL_SYMS: return run_absl_syms(iters, frames);
#endif
  case M_SYMS: return run_syms(iters, frames);
  case M_SYMS_APP: return run_syms_app(iters, frames);
  case M_CAPTURE: return run_capture(iters, frames);
  case M_CAPTURE_APP: return run_capture_app(iters, frames);
  default: return run_bt_syms(iters, frames);
  }
}

static bool method_available(int m) {
#ifndef SNAP_BENCH_HAVE_ABSL
  if (m == M_ABSL_SYMS)
    return false;
#endif
#ifdef SNAP_BENCH_HAVE_LIBBACKTRACE
  if (m == M_LIBBT_SYMS && !g_bt_site)
    return false;
#else
  if (m == M_LIBBT_SYMS)
    return false;
#endif
  return m != M_BT_SYMS || (g_backtrace && g_backtrace_symbols);
}

/* The bottom of the recursion: every method is timed from this frame. */
__attribute__((noinline)) static void measure_site(site_result_t *out) {
  static double per_call[M_COUNT][REPEATS];
  long iters[M_COUNT] = {0};
  for (int m = 0; m < M_COUNT; m++) {
    out->ns[m] = -1;
    out->frames[m] = -1;
    if (!method_available(m))
      continue;
    int f;
    (void)run_method(m, 20, &f); /* warm: the first two calls name (misses) */
    uint64_t t = run_method(m, 50, &f);
    double each = (double)(t ? t : 1) / 50.0;
    long n = (long)(REPEAT_NS / each);
    iters[m] = n < 20 ? 20 : n > 5000000 ? 5000000 : n;
  }
  for (int r = 0; r < REPEATS; r++)
    for (int m = 0; m < M_COUNT; m++)
      if (method_available(m))
        per_call[m][r] =
            (double)run_method(m, iters[m], &out->frames[m]) / (double)iters[m];
  for (int m = 0; m < M_COUNT; m++) {
    if (!method_available(m))
      continue;
    out->ns[m] = median(per_call[m], REPEATS);
    out->spread[m] = (per_call[m][REPEATS - 1] - per_call[m][0]) / out->ns[m];
  }
  out->sample = snap_callstack_symbols(MAX_FRAMES, 0);
  out->named = 0;
  for (int i = 0; i < snap_stack_count(out->sample); i++)
    if (snap_stack_frame(out->sample, i)->symbol)
      out->named++;
}

__attribute__((noinline)) static void recurse(int levels, site_result_t *out) {
  if (levels > 1)
    recurse(levels - 1, out);
  else
    measure_site(out);
  __asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays */
}

static bool part1_repeated_site(void) {
  site_result_t r;
#ifdef SNAP_BENCH_HAVE_LIBBACKTRACE
  g_bt_site = backtrace_create_state(NULL, 1, bt_site_error, NULL);
#endif
  recurse(DEPTH, &r);

  printf("1. Repeated call site, depth %d: ns per call, the thread's CPU "
         "time (median of %d interleaved repeats of ~%.0f ms)\n",
         DEPTH, REPEATS, REPEAT_NS / 1e6);
  printf("  %-44s %10s %7s %7s\n", "method", "ns", "frames", "spread");
  for (int m = 0; m < M_COUNT; m++) {
    if (r.ns[m] < 0)
      printf("  %-44s %10s\n", k_method_names[m], "n/a");
    else
      printf("  %-44s %10.1f %7d %6.0f%%\n", k_method_names[m], r.ns[m],
             r.frames[m], 100.0 * r.spread[m]);
  }
  print_ratio("(backtrace + symbols) / snap", r.ns[M_BT_SYMS], r.ns[M_SYMS]);
  print_ratio("(backtrace + symbols) / snap app-only", r.ns[M_BT_SYMS],
              r.ns[M_SYMS_APP]);
  print_ratio("(absl trace + Symbolize) / snap", r.ns[M_ABSL_SYMS],
              r.ns[M_SYMS]);
  print_ratio("(libbacktrace simple + syminfo) / snap", r.ns[M_LIBBT_SYMS],
              r.ns[M_SYMS]);
  printf("  %-44s %10.1f ns\n", "the cache hit adds to the capture",
         r.ns[M_SYMS] - r.ns[M_CAPTURE]);
  printf("  %-44s %10.1f ns\n", "  app-only: the cache hit adds",
         r.ns[M_SYMS_APP] - r.ns[M_CAPTURE_APP]);
  printf("  frames named by stacksnap: %d of %d; the innermost three:\n",
         r.named, snap_stack_count(r.sample));
  for (int i = 0; i < 3 && i < snap_stack_count(r.sample); i++)
    printf("    %s\n", snap_stack_line(r.sample, i));
  snap_stack_release(r.sample);
  bool met = r.ns[M_BT_SYMS] < 0 || r.ns[M_BT_SYMS] / r.ns[M_SYMS] >= 100;
  printf("  goal (backtrace + symbols) / snap >= 100x: %s\n",
         r.ns[M_BT_SYMS] < 0 ? "n/a"
         : met               ? "met"
                             : "NOT met");
  /* Issue 26, goal 5: against the best peer, libbacktrace. */
  bool met_bt =
      r.ns[M_LIBBT_SYMS] < 0 || r.ns[M_LIBBT_SYMS] / r.ns[M_SYMS] >= 15;
  printf("  goal (libbacktrace simple + syminfo) / snap >= 15x: %s\n\n",
         r.ns[M_LIBBT_SYMS] < 0 ? "n/a"
         : met_bt               ? "met"
                                : "NOT met");
  return met && met_bt;
}

/* ======================================================================
 * Part 2: cold lookup per address in big images
 * ====================================================================== */

#define ADDRS 1000
#define MAX_PASSES 7

/* An image to look into. prefix set: a library gen_funcs.sh made, whose
   layout is known (every function's start computed from one dlsym), with
   pad bytes left after each function so that many functions can also make
   a library as big as real ones; prefix NULL: a real library (path "" when
   CMake found none), its functions taken from `nm -D`. */
typedef struct image_spec {
  const char *label;
  const char *path;
  const char *prefix; /* gen_funcs.sh's PREFIX */
  int count;
  unsigned pad;
} image_spec_t;

static const image_spec_t k_images[] = {
    {"1 k", BENCH_FUNCS_1K, "bf1k", 1000, 0},
    {"10 k", BENCH_FUNCS_10K, "bf10k", 10000, 0},
    {"60 k", BENCH_FUNCS_60K, "bf60k", 60000, 0},
    {"100 k", BENCH_FUNCS_100K, "bf100k", 100000, 0},
    {"100k big", BENCH_FUNCS_BIG, "bfbig", 100000, BENCH_FUNCS_BIG_PAD},
    {"libLLVM", BENCH_LIBLLVM, NULL, 0, 0},
};
#define N_IMAGES ((int)(sizeof k_images / sizeof k_images[0]))
#define IMAGE_60K 2  /* the goals are stated for 60 k functions */
#define IMAGE_100K 3 /* the flatness goal: 100 k against 1 k */

/* snap: fresh addresses every pass, cache off; snap_reused: one set of
   ADDRS again and again (what this part measured before: every pc's
   answers the library memoises are warm); snap_cached: fresh addresses
   with the default cache on (each a first sighting: the cache's
   doorkeeper records it, and it is named as with the cache off);
   snap_admit: the same with every miss admitted (what a second sighting
   costs, and what every cold miss cost before the doorkeeper). */
enum {
  L_SNAP,
  L_SNAP_REUSED,
  L_SNAP_CACHED,
  L_SNAP_ADMIT,
  L_SNAP_MANGLED,
  L_ADDR,
  L_ADDR_MANGLED,
  L_BT,
  L_BT_COPY,
  L_BT_DEMANGLE,
  L_DLADDR,
  L_DWFL,
  L_ABSL,
  L_COUNT
};
static const char *const k_lookup_names[L_COUNT] = {
    "snap",      "snap_reused",  "snap_cached",  "snap_admit", "snap_mangled",
    "snap_addr", "addr_mangled", "libbacktrace", "bt_copy",    "bt_demangle",
    "dladdr",    "libdwfl",      "absl"};

typedef struct lookup_result {
  double ns[L_COUNT];       /* median ns per address; < 0: n/a */
  double first_us[L_COUNT]; /* the first lookup in the fresh image */
  int correct[L_COUNT];     /* right function start, last pass; -1: n/a */
  int passes[L_COUNT];
} lookup_result_t;

/* gen_funcs.sh's layout: function i is (i % 7) nops and a ret, each one
   instruction, at a 4-byte boundary (.p2align 2), then the image's pad;
   every third one (i % 3 == 0) is local. */
#if defined(__x86_64__)
#define INSN 1u
#else
#define INSN 4u
#endif
static uintptr_t func_size(int i) { return (uintptr_t)(i % 7 + 1) * INSN; }
static uintptr_t func_stride(const image_spec_t *img, int i) {
  return ((func_size(i) + img->pad + 3) & ~(uintptr_t)3);
}

/* Addresses inside functions, shuffled, each with the start of the
   function it lies in (the answer a method must give): pass k takes the
   k-th slice of ADDRS, so a "fresh" pass names pcs no pass before it
   named (a library's per-pc memos never help); the reused mode takes
   slice 0 every time. The last address is kept for the first use. */
typedef struct addr_pool {
  uintptr_t *addr;
  uintptr_t *want;
  int *func; /* gen_funcs.sh's index (names for abseil); -1: a real image */
  int n;
} addr_pool_t;

typedef struct addr_set {
  const uintptr_t *addr;
  const uintptr_t *want;
  const int *func;
} addr_set_t;

/* Starts of every function, from one exported function's address and the
   layout; checked against dlsym on a sample of exported ones. */
static uintptr_t *layout(void *h, const image_spec_t *img) {
  char name[64];
  snprintf(name, sizeof name, "%s_1", img->prefix);
  void *f1 = dlsym(h, name);
  if (!f1)
    return NULL;
  uintptr_t *start = malloc(sizeof *start * (size_t)img->count);
  if (!start)
    return NULL;
  start[0] = (uintptr_t)f1 - func_stride(img, 0);
  for (int i = 1; i < img->count; i++)
    start[i] = start[i - 1] + func_stride(img, i - 1);
  for (int k = 0; k < 200; k++) {
    int i = (int)(rng() % (uint64_t)img->count);
    if (i % 3 == 0)
      continue;
    snprintf(name, sizeof name, "%s_%d", img->prefix, i);
    if ((uintptr_t)dlsym(h, name) != start[i]) {
      free(start);
      return NULL;
    }
  }
  return start;
}

static bool pool_alloc(addr_pool_t *p, int n) {
  p->addr = malloc(sizeof *p->addr * (size_t)n);
  p->want = malloc(sizeof *p->want * (size_t)n);
  p->func = malloc(sizeof *p->func * (size_t)n);
  p->n = 0;
  return p->addr && p->want && p->func;
}

static void pool_free(addr_pool_t *p) {
  free(p->addr);
  free(p->want);
  free(p->func);
}

static void pool_shuffle(addr_pool_t *p) {
  for (int k = p->n - 1; k > 0; k--) { /* Fisher-Yates */
    int j = (int)(rng() % (uint64_t)(k + 1));
    uintptr_t a = p->addr[k], w = p->want[k];
    int f = p->func[k];
    p->addr[k] = p->addr[j], p->want[k] = p->want[j], p->func[k] = p->func[j];
    p->addr[j] = a, p->want[j] = w, p->func[j] = f;
  }
}

static bool make_pool(const uintptr_t *start, const image_spec_t *img,
                      addr_pool_t *p) {
  int n = 0;
  for (int i = 0; i < img->count; i++)
    n += (int)(func_size(i) / INSN);
  if (!pool_alloc(p, n))
    return false;
  for (int i = 0; i < img->count; i++)
    for (uintptr_t off = 0; off < func_size(i); off += INSN) {
      p->addr[p->n] = start[i] + off;
      p->want[p->n] = start[i];
      p->func[p->n++] = i;
    }
  pool_shuffle(p);
  return true;
}

/* A real library's pool: its exported functions with a size (`nm -D -S`;
   aliases once), up to 4 random addresses inside each, at the load
   address the loader chose. Functions that overlap another are left out:
   their answer is not one start. */
#define REAL_PER_FUNC 4
#define REAL_MAX (REAL_PER_FUNC * 200000)
typedef struct sym_range {
  uintptr_t start, size;
} sym_range_t;

static int cmp_range(const void *a, const void *b) {
  const sym_range_t *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

static bool real_pool(void *h, const image_spec_t *img, addr_pool_t *p) {
  struct link_map *lm = NULL;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
    return false;
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "nm -D -S -P --defined-only '%s' 2>/dev/null",
           img->path);
  FILE *f = popen(cmd, "r");
  if (!f)
    return false;
  size_t cap = 1 << 16, n = 0;
  sym_range_t *r = malloc(sizeof *r * cap);
  char line[8192], type[8];
  unsigned long long value, size;
  while (r && fgets(line, sizeof line, f)) {
    char *sp = strchr(line, ' '); /* name first: names have no spaces */
    if (!sp || sscanf(sp, " %7s %llx %llx", type, &value, &size) != 3)
      continue;
    if ((type[0] != 'T' && type[0] != 'W') || size == 0)
      continue;
    if (n == cap) {
      sym_range_t *g = realloc(r, sizeof *r * (cap *= 2));
      if (!g)
        break;
      r = g;
    }
    r[n++] = (sym_range_t){(uintptr_t)value, (uintptr_t)size};
  }
  pclose(f);
  if (!r || n == 0) {
    free(r);
    return false;
  }
  qsort(r, n, sizeof *r, cmp_range);
  if (!pool_alloc(p, REAL_MAX)) {
    free(r);
    return false;
  }
  for (size_t i = 0; i < n && p->n + REAL_PER_FUNC <= REAL_MAX; i++) {
    if (i + 1 < n && r[i + 1].start == r[i].start)
      continue; /* an alias: the last one of the run is taken */
    if ((i > 0 && r[i - 1].start + r[i - 1].size > r[i].start &&
         r[i - 1].start != r[i].start) ||
        (i + 1 < n && r[i].start + r[i].size > r[i + 1].start))
      continue;
    uintptr_t start = (uintptr_t)lm->l_addr + r[i].start;
    for (int k = 0; k < REAL_PER_FUNC; k++) {
      p->addr[p->n] = start + (uintptr_t)(rng() % r[i].size);
      p->want[p->n] = start;
      p->func[p->n++] = -1;
    }
  }
  free(r);
  pool_shuffle(p);
  return p->n > ADDRS;
}

static bool name_is(const char *got, const image_spec_t *img, int func) {
  char want[64];
  if (func < 0)
    return false;
  snprintf(want, sizeof want, "%s_%d", img->prefix, func);
  return got && strcmp(got, want) == 0;
}

/* Naming flags beside EXACT_PC0 for snap_pass (SNAP_SYMBOLICATE_MANGLED:
   the snap_mangled column). */
static unsigned g_snap_flags;

/* One pass of one method over the address set: ns per address; an answer
   is right when it gives the start of the function the address lies in. */
static double snap_pass(const addr_set_t *a, int *correct) {
  int ok = 0;
  uint64_t t0 = thread_cpu_ns();
  for (int k = 0; k < ADDRS; k++) {
    /* EXACT_PC0: the address is the pc to name, not a return address. */
    const snap_stack_t *s = snap_symbolicate(
        &a->addr[k], 1, SNAP_SYMBOLICATE_EXACT_PC0 | g_snap_flags);
    const snap_frame_t *f = snap_stack_frame(s, 0);
    ok += f && f->symbol && f->symbol_addr == a->want[k];
    snap_stack_release(s);
  }
  uint64_t t1 = thread_cpu_ns();
  *correct = ok;
  return (double)(t1 - t0) / ADDRS;
}

/* snap_symbol_lookup: one address named into a buffer, no stack object
   (flags: g_snap_flags without EXACT_PC0, which it does not take: its
   address is always exact). */
static double addr_pass(const addr_set_t *a, int *correct) {
  int ok = 0;
  char name[256];
  uint64_t t0 = thread_cpu_ns();
  for (int k = 0; k < ADDRS; k++) {
    snap_symbol_info_t info = {.size = sizeof info};
    ok += snap_symbol_lookup(a->addr[k], g_snap_flags, &info, name,
                             sizeof name) == SNAP_OK &&
          info.symbol_len && info.symbol_addr == a->want[k];
  }
  uint64_t t1 = thread_cpu_ns();
  *correct = ok;
  return (double)(t1 - t0) / ADDRS;
}

static double dladdr_pass(const addr_set_t *a, int *correct) {
  int ok = 0;
  uint64_t t0 = thread_cpu_ns();
  for (int k = 0; k < ADDRS; k++) {
    Dl_info info;
    ok += dladdr((void *)a->addr[k], &info) && info.dli_sname &&
          (uintptr_t)info.dli_saddr == a->want[k];
  }
  uint64_t t1 = thread_cpu_ns();
  *correct = ok;
  return (double)(t1 - t0) / ADDRS;
}

#ifdef SNAP_BENCH_HAVE_LIBBACKTRACE
/* libbacktrace (GCC's, as GCC 12 installs it for libstdc++'s
   <stacktrace>): one state per image, made after the image is loaded,
   since a state reads the loaded modules once, on its first use. */
static struct backtrace_state *g_bt;

static void bt_error(void *data, const char *msg, int errnum) {
  (void)data, (void)msg, (void)errnum;
}

static void bt_syminfo(void *data, uintptr_t pc, const char *symname,
                       uintptr_t symval, uintptr_t symsize) {
  (void)pc, (void)symsize;
  *(uintptr_t *)data = symname ? symval : 0;
}

/* bt_copy's callback: the name copied out, as a caller who prints or keeps
   it must (stacksnap's answer holds its copy; syminfo's pointer is into
   libbacktrace's table, and bt_syminfo never reads the name at all: in a
   big library its first bytes are a cache miss that column leaves out). */
typedef struct bt_named {
  uintptr_t start;
  char name[256];
} bt_named_t;

static void bt_syminfo_copy(void *data, uintptr_t pc, const char *symname,
                            uintptr_t symval, uintptr_t symsize) {
  (void)pc, (void)symsize;
  bt_named_t *out = data;
  out->start = symname ? symval : 0;
  if (symname) {
    size_t n = strnlen(symname, sizeof out->name - 1);
    memcpy(out->name, symname, n);
    out->name[n] = '\0';
  }
}

static double bt_pass(const addr_set_t *a, int *correct) {
  int ok = 0;
  uint64_t t0 = thread_cpu_ns();
  for (int k = 0; k < ADDRS; k++) {
    uintptr_t start = 0;
    backtrace_syminfo(g_bt, a->addr[k], bt_syminfo, bt_error, &start);
    ok += start == a->want[k];
  }
  uint64_t t1 = thread_cpu_ns();
  *correct = ok;
  return (double)(t1 - t0) / ADDRS;
}

static double bt_copy_pass(const addr_set_t *a, int *correct) {
  int ok = 0;
  uint64_t t0 = thread_cpu_ns();
  for (int k = 0; k < ADDRS; k++) {
    bt_named_t got; /* not zeroed: 264 bytes a call would be most of it */
    got.start = 0;
    backtrace_syminfo(g_bt, a->addr[k], bt_syminfo_copy, bt_error, &got);
    __asm__ volatile("" ::"r"(got.name) : "memory");
    ok += got.start == a->want[k];
  }
  uint64_t t1 = thread_cpu_ns();
  *correct = ok;
  return (double)(t1 - t0) / ADDRS;
}

/* libbacktrace as a user who wants readable names uses it (libstdc++'s
   <stacktrace> does this): backtrace_syminfo, then __cxa_demangle of a
   C++ name, as stacksnap demangles every name it gives. Found with dlsym:
   this program is C. */
typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);
static cxa_demangle_fn g_cxa_demangle;

static void bt_syminfo_demangle(void *data, uintptr_t pc, const char *symname,
                                uintptr_t symval, uintptr_t symsize) {
  (void)pc, (void)symsize;
  *(uintptr_t *)data = symname ? symval : 0;
  if (symname && symname[0] == '_' && symname[1] == 'Z') {
    int status = 0;
    char *d = g_cxa_demangle(symname, NULL, NULL, &status);
    __asm__ volatile("" ::"r"(d) : "memory");
    free(d);
  }
}

static double bt_demangle_pass(const addr_set_t *a, int *correct) {
  int ok = 0;
  uint64_t t0 = thread_cpu_ns();
  for (int k = 0; k < ADDRS; k++) {
    uintptr_t start = 0;
    backtrace_syminfo(g_bt, a->addr[k], bt_syminfo_demangle, bt_error, &start);
    ok += start == a->want[k];
  }
  uint64_t t1 = thread_cpu_ns();
  *correct = ok;
  return (double)(t1 - t0) / ADDRS;
}
#endif

#ifdef SNAP_BENCH_HAVE_ABSL
static const image_spec_t *g_absl_img; /* names to check abseil's against */

/* absl::Symbolize gives a name only: checked against gen_funcs.sh's names;
   in a real image (func -1) it counts as not checked. */
static double absl_pass(const addr_set_t *a, int *correct) {
  int ok = 0;
  char name[256];
  uint64_t t0 = thread_cpu_ns();
  for (int k = 0; k < ADDRS; k++)
    ok += peer_absl_symbolize((const void *)a->addr[k], name, sizeof name) &&
          name_is(name, g_absl_img, a->func[k]);
  uint64_t t1 = thread_cpu_ns();
  *correct = a->func[0] < 0 ? -1 : ok;
  return (double)(t1 - t0) / ADDRS;
}
#endif

#ifdef SNAP_BENCH_HAVE_LIBDW
static Dwfl *g_dwfl;

/* A fresh session that knows the image h (at its load address, from the
   loader's link map). Not dwfl_linux_proc_report: it reads /proc/self/maps,
   where stacksnap's own read-only mapping of the same file (its symbol
   reader) makes it place the module wrongly. The reporting is set-up, not
   timed. */
static bool dwfl_open(void *h, const char *path) {
  static char *debuginfo_path;
  static const Dwfl_Callbacks cb = {
      .find_elf = dwfl_build_id_find_elf,
      .find_debuginfo = dwfl_standard_find_debuginfo,
      .debuginfo_path = &debuginfo_path,
  };
  struct link_map *lm = NULL;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
    return false;
  if (g_dwfl)
    dwfl_end(g_dwfl);
  g_dwfl = dwfl_begin(&cb);
  if (!g_dwfl)
    return false;
  dwfl_report_begin(g_dwfl);
  Dwfl_Module *mod =
      dwfl_report_elf(g_dwfl, path, path, -1, (GElf_Addr)lm->l_addr, false);
  return dwfl_report_end(g_dwfl, NULL, NULL) == 0 && mod != NULL;
}

static double dwfl_pass(const addr_set_t *a, int *correct) {
  int ok = 0;
  uint64_t t0 = thread_cpu_ns();
  for (int k = 0; k < ADDRS; k++) {
    Dwarf_Addr addr = a->addr[k];
    Dwfl_Module *mod = dwfl_addrmodule(g_dwfl, addr);
    GElf_Off off = 0;
    GElf_Sym sym;
    ok += mod &&
          dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL) &&
          addr - off == a->want[k];
  }
  uint64_t t1 = thread_cpu_ns();
  *correct = ok;
  return (double)(t1 - t0) / ADDRS;
}
#endif

typedef double (*pass_fn)(const addr_set_t *, int *);

/* The first lookup in an image nothing has looked into yet: what a method
   pays once per image (stacksnap, libbacktrace, libdwfl and abseil read
   its symbol table). */
static double first_use_us(int method, uintptr_t addr) {
  uint64_t t0 = now_ns();
  if (method == L_SNAP) {
    snap_stack_release(snap_symbolicate(&addr, 1, SNAP_SYMBOLICATE_EXACT_PC0));
  } else if (method == L_DLADDR) {
    Dl_info info;
    (void)dladdr((void *)addr, &info);
  } else if (method == L_BT) {
#ifdef SNAP_BENCH_HAVE_LIBBACKTRACE
    uintptr_t start = 0;
    backtrace_syminfo(g_bt, addr, bt_syminfo, bt_error, &start);
#endif
  } else if (method == L_ABSL) {
#ifdef SNAP_BENCH_HAVE_ABSL
    char name[256];
    (void)peer_absl_symbolize((const void *)addr, name, sizeof name);
#endif
  } else {
#ifdef SNAP_BENCH_HAVE_LIBDW
    Dwfl_Module *mod = dwfl_addrmodule(g_dwfl, addr);
    if (mod)
      (void)dwfl_module_addrname(mod, addr);
#endif
  }
  return (double)(now_ns() - t0) / 1000.0;
}

/* Private (src/symbols/cache.h): every miss cached. Weak, as the switch
   below: against a library without it the snap_admit column is n/a. */
__attribute__((weak)) void snap__cache_set_admit_all(bool on);

/* The settings a method's passes run under, set before each of them:
   methods take turns, so each needs its own again. */
static void cache_off(void) {
  snap_set_symbol_cache_limit(0);
  g_snap_flags = 0;
}

static void cache_off_mangled(void) {
  snap_set_symbol_cache_limit(0);
  g_snap_flags = SNAP_SYMBOLICATE_MANGLED; /* names as syminfo gives them */
}

/* Fresh to the cache: the slice the cache-off methods saw with nothing
   probed, so each is a miss that also probes (a first sighting). */
static void cache_on(void) {
  snap_set_symbol_cache_limit(SNAP_SYMBOL_CACHE_DEFAULT_BYTES);
  g_snap_flags = 0;
}

static void cache_admit_all(void) {
  snap_set_symbol_cache_limit(0); /* empty: no false "seen" kept */
  snap_set_symbol_cache_limit(SNAP_SYMBOL_CACHE_DEFAULT_BYTES);
  g_snap_flags = 0;
  snap__cache_set_admit_all(true);
}

static void admit_off(void) { snap__cache_set_admit_all(false); }

typedef struct lookup_method {
  int l; /* its column */
  pass_fn pass;
  bool fresh;                           /* a new slice each pass */
  void (*before)(void), (*after)(void); /* around each pass; NULL: none */
  /* while it runs */
  double v[MAX_PASSES];
  int n;
  uint64_t spent_ns;
} lookup_method_t;

/* Writes a buffer twice the last-level cache (32 MiB here) a line at a
   time, so the next pass finds none of the tables in the CPU's caches:
   methods that share a table (the snap columns) would otherwise find the
   lines the one before them in a round brought in. */
static void evict_caches(void) {
  enum { EVICT_BYTES = 64 << 20 };
  static volatile char *buf;
  if (!buf && !(buf = malloc(EVICT_BYTES)))
    return;
  for (size_t i = 0; i < EVICT_BYTES; i += 64)
    buf[i] = (char)i;
}

/* Runs the methods' passes in turns, pass k of each before pass k + 1 of
   any, each from evicted caches, and keeps each one's median: this VM's
   speed drifts by tens of percent over seconds, and a method timed whole
   before the next one measured that drift. Slow methods get fewer passes (one
   pass of dladdr over 100 k functions takes a good part of a second: 300 ms of
   passes each), and fresh passes stop where the pool runs out of unseen
   addresses (the 1 k image has about 4 000). */
static void run_lookups(lookup_result_t *out, lookup_method_t *m, int count,
                        const addr_pool_t *p) {
  int slices = (p->n - 1) / ADDRS;
  for (bool more = true; more;) {
    more = false;
    for (int i = 0; i < count; i++) {
      lookup_method_t *x = &m[i];
      if (x->n >= MAX_PASSES || (x->fresh && x->n >= slices) ||
          x->spent_ns >= 300000000u)
        continue;
      int k = x->fresh ? x->n : 0;
      addr_set_t a = {p->addr + k * ADDRS, p->want + k * ADDRS,
                      p->func + k * ADDRS};
      if (x->before)
        x->before();
      evict_caches();
      uint64_t t0 = now_ns();
      x->v[x->n++] = x->pass(&a, &out->correct[x->l]);
      x->spent_ns += now_ns() - t0;
      if (x->after)
        x->after();
      more = true;
    }
  }
  for (int i = 0; i < count; i++) {
    out->ns[m[i].l] = median(m[i].v, m[i].n);
    out->passes[m[i].l] = m[i].n;
  }
  cache_off();
}

static bool lookup_image(const image_spec_t *img, lookup_result_t *out,
                         bool have_dwfl) {
  for (int l = 0; l < L_COUNT; l++) {
    out->ns[l] = out->first_us[l] = -1;
    out->correct[l] = out->passes[l] = -1;
  }
  if (!img->path[0])
    return true; /* not on this machine: its row is n/a */
  void *h = dlopen(img->path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "bench_symbols: %s\n", dlerror());
    return false;
  }
  addr_pool_t p = {0};
  bool pooled;
  if (img->prefix) {
    uintptr_t *start = layout(h, img);
    if (!start) {
      fprintf(stderr, "bench_symbols: %s: unexpected layout\n", img->path);
      return false;
    }
    pooled = make_pool(start, img, &p);
    free(start);
  } else {
    pooled = real_pool(h, img, &p);
  }
  if (!pooled) {
    fprintf(stderr, "bench_symbols: %s: no addresses to look up\n", img->path);
    pool_free(&p);
    return false;
  }
  uintptr_t first = p.addr[p.n - 1]; /* in no pass's slice */

  /* First uses, each in a table nothing has read yet; then the passes. */
  lookup_method_t m[L_COUNT];
  int count = 0;
#define METHOD(col, fn, fr, b, a)                                              \
  m[count++] = (lookup_method_t){                                              \
      .l = (col), .pass = (fn), .fresh = (fr), .before = (b), .after = (a)}
  cache_off(); /* every call names afresh: no cache entry is kept */
  out->first_us[L_SNAP] = first_use_us(L_SNAP, first);
  out->first_us[L_DLADDR] = first_use_us(L_DLADDR, first);
  METHOD(L_SNAP, snap_pass, true, cache_off, NULL);
  METHOD(L_SNAP_REUSED, snap_pass, false, cache_off, NULL);
  METHOD(L_SNAP_MANGLED, snap_pass, true, cache_off_mangled, NULL);
  METHOD(L_ADDR, addr_pass, true, cache_off, NULL);
  METHOD(L_ADDR_MANGLED, addr_pass, true, cache_off_mangled, NULL);
  METHOD(L_SNAP_CACHED, snap_pass, true, cache_on, NULL);
  if (snap__cache_set_admit_all)
    METHOD(L_SNAP_ADMIT, snap_pass, true, cache_admit_all, admit_off);
  METHOD(L_DLADDR, dladdr_pass, true, cache_off, NULL);
#ifdef SNAP_BENCH_HAVE_LIBBACKTRACE
  g_bt = backtrace_create_state(NULL, 0, bt_error, NULL);
  if (g_bt) {
    out->first_us[L_BT] = first_use_us(L_BT, first);
    METHOD(L_BT, bt_pass, true, NULL, NULL);
    METHOD(L_BT_COPY, bt_copy_pass, true, NULL, NULL);
    g_cxa_demangle = (cxa_demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (g_cxa_demangle)
      METHOD(L_BT_DEMANGLE, bt_demangle_pass, true, NULL, NULL);
  }
#endif
#ifdef SNAP_BENCH_HAVE_ABSL
  g_absl_img = img;
  out->first_us[L_ABSL] = first_use_us(L_ABSL, first);
  METHOD(L_ABSL, absl_pass, true, NULL, NULL);
#endif
#ifdef SNAP_BENCH_HAVE_LIBDW
  if (have_dwfl && dwfl_open(h, img->path)) {
    out->first_us[L_DWFL] = first_use_us(L_DWFL, first);
    METHOD(L_DWFL, dwfl_pass, true, NULL, NULL);
  }
#else
  (void)have_dwfl;
#endif
#undef METHOD
  run_lookups(out, m, count, &p);
  pool_free(&p);
  /* Kept loaded: a dlclose would make the next image land at the same
     address, and the comparison is about lookups, not unloads. */
  return true;
}

static void print_row(const char *label, const double *v, const char *fmt) {
  printf("  %-9s", label);
  for (int l = 0; l < L_COUNT; l++)
    if (v[l] < 0)
      printf(" %12s", "n/a");
    else
      printf(fmt, v[l]);
  printf("\n");
}

static bool part2_cold_lookup(void) {
  bool have_dwfl = false;
#ifdef SNAP_BENCH_HAVE_LIBDW
  have_dwfl = true;
#endif
  lookup_result_t r[N_IMAGES];
  bool ok = true;
  for (int i = 0; i < N_IMAGES; i++)
    ok = lookup_image(&k_images[i], &r[i], have_dwfl) && ok;
  snap_set_symbol_cache_limit(SNAP_SYMBOL_CACHE_DEFAULT_BYTES);
#ifdef SNAP_BENCH_HAVE_LIBDW
  if (g_dwfl)
    dwfl_end(g_dwfl);
  g_dwfl = NULL;
#endif
  if (!ok)
    return false;

  printf("2. Cold lookup per address: %d random addresses inside random "
         "functions per pass, the same\n   sets for every method, FRESH "
         "(never named before) every pass, except snap_reused (one\n   set "
         "again and again). snap and snap_reused run with "
         "snap_set_symbol_cache_limit(0), so\n   every call names afresh; "
         "snap_cached with the default cache (a first sighting: the\n"
         "   doorkeeper records it, the cache keeps nothing); snap_admit: "
         "every miss cached (a\n"
         "   second sighting; every miss before the doorkeeper); snap_mangled: "
         "cache off,\n   SNAP_SYMBOLICATE_MANGLED (names as the symbol table "
         "spells them, as\n   libbacktrace gives them). snap_addr, "
         "addr_mangled: snap_symbol_lookup, one address\n   named into a "
         "256-byte buffer, no stack object (it has no cache), demangled or "
         "not.\n   \"100k big\": "
         "100 k functions %u bytes apart; libLLVM:\n   "
         "Debian's, its exported functions (nm -D). bt_copy: libbacktrace, its "
         "name copied\n   out (syminfo's callback gets a pointer; "
         "libbacktrace's never reads it). bt_demangle:\n   "
         "libbacktrace, then __cxa_demangle of C++ names (as <stacktrace> "
         "does; stacksnap demangles every\n   name it gives unless asked not "
         "to). Median of up to %d passes, the methods taking\n   turns, each "
         "pass from caches evicted (64 MiB written), ns per address (the\n"
         "   thread's CPU time)\n",
         ADDRS, BENCH_FUNCS_BIG_PAD, MAX_PASSES);
  printf("  %-9s", "funcs");
  for (int l = 0; l < L_COUNT; l++)
    printf(" %12s", k_lookup_names[l]);
  printf("\n");
  for (int i = 0; i < N_IMAGES; i++)
    print_row(k_images[i].label, r[i].ns, " %12.0f");
  printf("  ratios: the method's time over snap's (fresh, cache off) in the "
         "same run\n");
  for (int i = 0; i < N_IMAGES; i++) {
    double q[L_COUNT];
    for (int l = 0; l < L_COUNT; l++)
      q[l] = r[i].ns[l] < 0 || r[i].ns[L_SNAP] <= 0
                 ? -1
                 : r[i].ns[l] / r[i].ns[L_SNAP];
    printf("  %-9s", k_images[i].label);
    for (int l = 0; l < L_COUNT; l++)
      if (q[l] < 0)
        printf(" %12s", "n/a");
      else
        printf(" %11.2fx", q[l]);
    printf("\n");
  }
  printf("  first use of a fresh image (one lookup, us; includes reading "
         "its symbol table)\n");
  for (int i = 0; i < N_IMAGES; i++)
    print_row(k_images[i].label, r[i].first_us, " %12.0f");
  printf("  right function start (of %d, last pass; a third of the "
         "generated functions are\n  local, in .symtab only; absl is "
         "checked by name, in generated images only)\n",
         ADDRS);
  for (int i = 0; i < N_IMAGES; i++) {
    double c[L_COUNT];
    for (int l = 0; l < L_COUNT; l++)
      c[l] = r[i].correct[l];
    print_row(k_images[i].label, c, " %12.0f");
  }
  printf("  passes\n");
  for (int i = 0; i < N_IMAGES; i++) {
    double c[L_COUNT];
    for (int l = 0; l < L_COUNT; l++)
      c[l] = r[i].passes[l];
    print_row(k_images[i].label, c, " %12.0f");
  }
#ifndef SNAP_BENCH_HAVE_LIBBACKTRACE
  printf("  (libbacktrace: n/a, GCC's libbacktrace.a not found)\n");
#endif
#ifndef SNAP_BENCH_HAVE_LIBDW
  printf("  (libdwfl: n/a, built without elfutils' libdw)\n");
#endif
#ifndef SNAP_BENCH_HAVE_ABSL
  printf("  (absl: n/a, built without abseil: libabsl-dev)\n");
#endif
  const lookup_result_t *big = &r[IMAGE_100K], *mid = &r[IMAGE_60K];
  /* Flat: no table's lookup is flat from caches evicted (each pass's
     first touches of a bigger table go to memory), so the bar is 2x or
     libbacktrace's own growth in the same run, whichever is higher. */
  double flat = big->ns[L_SNAP] / r[0].ns[L_SNAP];
  double bt_flat = big->ns[L_BT] > 0 && r[0].ns[L_BT] > 0
                       ? big->ns[L_BT] / r[0].ns[L_BT]
                       : 0;
  double vs_dladdr = big->ns[L_DLADDR] / big->ns[L_SNAP];
  bool met = flat <= (bt_flat > 2.0 ? bt_flat : 2.0) && vs_dladdr >= 100;
  printf("  stacksnap 100 k / 1 k: %.2fx (flat: <= 2x or libbacktrace's "
         "%.2fx); dladdr/snap at\n  100 k: %.0fx (goal >= 100x): %s\n",
         flat, bt_flat, vs_dladdr, met ? "met" : "NOT met");
  /* Level with libbacktrace: in every image, cache off and on. */
  bool level = true, measured = false;
  for (int i = 0; i < N_IMAGES; i++) {
    if (r[i].ns[L_BT] < 0 || r[i].ns[L_SNAP] < 0)
      continue;
    measured = true;
    level = level && r[i].ns[L_SNAP] <= r[i].ns[L_BT] &&
            r[i].ns[L_SNAP_CACHED] <= r[i].ns[L_BT];
  }
  printf("  level with libbacktrace's backtrace_syminfo in every image, "
         "cache off and on: %s\n",
         !measured ? "n/a"
         : level   ? "met"
                   : "NOT met");
  /* The same against bt_demangle: libbacktrace's answer with its name
     read (its first bytes: a cache miss in a big library) and, for C++,
     demangled, which is what stacksnap hands out; plain syminfo never
     reads the name it points at. Reported beside the goal, not instead. */
  bool level_dm = true, measured_dm = false;
  for (int i = 0; i < N_IMAGES; i++) {
    if (r[i].ns[L_BT_DEMANGLE] < 0 || r[i].ns[L_SNAP] < 0)
      continue;
    measured_dm = true;
    level_dm = level_dm && r[i].ns[L_SNAP] <= r[i].ns[L_BT_DEMANGLE] &&
               r[i].ns[L_SNAP_CACHED] <= r[i].ns[L_BT_DEMANGLE];
  }
  printf("  level with bt_demangle (libbacktrace, its name read and "
         "demangled) in every\n  image, cache off and on: %s\n",
         !measured_dm ? "n/a"
         : level_dm   ? "met"
                      : "NOT met");
  /* Like for like: both give the symbol table's names. */
  bool level_raw = measured;
  for (int i = 0; i < N_IMAGES; i++)
    if (r[i].ns[L_BT] >= 0 && r[i].ns[L_SNAP_MANGLED] >= 0)
      level_raw = level_raw && r[i].ns[L_SNAP_MANGLED] <= r[i].ns[L_BT];
  printf("  level with backtrace_syminfo in every image, names not demangled "
         "by either\n  (snap_mangled): %s\n",
         !measured   ? "n/a"
         : level_raw ? "met"
                     : "NOT met");
  /* The same with libbacktrace's name read and copied out, as stacksnap's
     answer holds it: what a caller who prints or keeps the name pays. */
  bool level_copy = measured;
  for (int i = 0; i < N_IMAGES; i++)
    if (r[i].ns[L_BT_COPY] >= 0 && r[i].ns[L_SNAP_MANGLED] >= 0)
      level_copy = level_copy && r[i].ns[L_SNAP_MANGLED] <= r[i].ns[L_BT_COPY];
  printf("  level with bt_copy (syminfo, its name copied out) in every "
         "image, names not\n  demangled by either (snap_mangled): %s\n",
         !measured    ? "n/a"
         : level_copy ? "met"
                      : "NOT met");
  /* The one-address call (no stack object, no cache: the same on and
     off) like for like: demangled names against bt_demangle (in the C
     images both are syminfo's work plus a check), names as the table
     spells them against syminfo, and against bt_copy (its name read). */
  bool addr_dm = measured, addr_raw = measured, addr_copy = measured;
  for (int i = 0; i < N_IMAGES; i++) {
    const double *v = r[i].ns;
    if (v[L_BT_DEMANGLE] >= 0 && v[L_ADDR] >= 0)
      addr_dm = addr_dm && v[L_ADDR] <= v[L_BT_DEMANGLE];
    if (v[L_BT] >= 0 && v[L_ADDR_MANGLED] >= 0)
      addr_raw = addr_raw && v[L_ADDR_MANGLED] <= v[L_BT];
    if (v[L_BT_COPY] >= 0 && v[L_ADDR_MANGLED] >= 0)
      addr_copy = addr_copy && v[L_ADDR_MANGLED] <= v[L_BT_COPY];
  }
#define VERDICT(ok) (!measured ? "n/a" : (ok) ? "met" : "NOT met")
  printf("  snap_symbol_lookup, level in every image: snap_addr with "
         "bt_demangle: %s;\n  addr_mangled with backtrace_syminfo: %s; "
         "addr_mangled with bt_copy: %s\n",
         VERDICT(addr_dm), VERDICT(addr_raw), VERDICT(addr_copy));
#undef VERDICT
  printf("  60 k: first use %.2f ms (goal <= 3 ms): %s\n\n",
         mid->first_us[L_SNAP] / 1000,
         mid->first_us[L_SNAP] <= 3000 ? "met" : "NOT met");
  return met && (!measured || level);
}

/* ======================================================================
 * Part 3: cache hits from 1, 2 and 4 threads
 * ====================================================================== */

#define STACKS 64
#define STACK_DEPTH 16
#define ROUND_NS 200000000u /* each timed round: 200 ms */
#define ROUNDS 7
#define MAX_WORKERS 4

static void nap(void) {
  struct timespec ts = {0, 100000}; /* 0.1 ms */
  nanosleep(&ts, NULL);
}

/* Each on cache lines of its own: the counters are written in the loop. */
typedef struct worker {
  _Alignas(128) pthread_t thread;
  uintptr_t pcs[STACKS][STACK_DEPTH];
  uint64_t calls;
  uint64_t cpu_ns; /* the worker's own CPU time in the round */
  uint64_t waits;  /* its voluntary context switches in the round */
  int failures;
} worker_t;

static worker_t g_workers[MAX_WORKERS];
static atomic_int g_go; /* round number to run; -1 = exit */
static atomic_int g_done;
static atomic_int g_active; /* workers taking part in the round */

/* The calling thread's voluntary context switches: a thread that waits
   for a lock another holds (glibc's loader lock, a futex) sleeps, which
   costs wall time but no CPU time, so the CPU-time rate cannot see it. */
static uint64_t thread_waits(void) {
  struct rusage ru;
  return getrusage(RUSAGE_THREAD, &ru) == 0 ? (uint64_t)ru.ru_nvcsw : 0;
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  int idx = (int)(w - g_workers);
  int seen = 0;
  for (;;) {
    int go;
    /* Waiting sleeps: a spinning waiter would take a core from the round
       being timed (2 cores here). */
    while ((go = atomic_load(&g_go)) == seen)
      nap();
    if (go < 0)
      return NULL;
    seen = go;
    if (idx < atomic_load(&g_active)) {
      uint64_t calls = 0, t0 = now_ns(), c0 = thread_cpu_ns();
      uint64_t w0 = thread_waits();
      do {
        for (int s = 0; s < STACKS; s++) {
          const snap_stack_t *st = snap_symbolicate(w->pcs[s], STACK_DEPTH, 0);
          w->failures += snap_stack_count(st) != STACK_DEPTH;
          snap_stack_release(st);
        }
        calls += STACKS;
      } while (now_ns() - t0 < ROUND_NS);
      w->calls = calls;
      w->cpu_ns = thread_cpu_ns() - c0;
      w->waits = thread_waits() - w0;
    }
    atomic_fetch_add(&g_done, 1);
  }
}

/* One round with `threads` workers busy: hits per second, all together.
   Each worker times its own ROUND_NS from its own start; the round's rate
   is the sum of their calls over the round's wall time (all started to
   all done), so a worker the scheduler starts late counts against it.
   *per_cpu: hits per second of the workers' own CPU time (their clocks),
   which other processes on a shared machine do not move: a drop with
   more threads is what the threads cost each other (a contended cache
   line costs CPU time; waiting for a core does not). */
static double round_rate(int threads, double *per_cpu, double *waits) {
  for (int t = 0; t < MAX_WORKERS; t++)
    g_workers[t].calls = g_workers[t].cpu_ns = g_workers[t].waits = 0;
  atomic_store(&g_active, threads);
  atomic_store(&g_done, 0);
  uint64_t t0 = now_ns();
  atomic_fetch_add(&g_go, 1);
  while (atomic_load(&g_done) < MAX_WORKERS)
    nap();
  double secs = (double)(now_ns() - t0) / 1e9;
  uint64_t calls = 0, cpu = 0, w = 0;
  for (int t = 0; t < MAX_WORKERS; t++)
    calls += g_workers[t].calls, cpu += g_workers[t].cpu_ns,
        w += g_workers[t].waits;
  *per_cpu = cpu ? (double)calls * 1e9 / (double)cpu : 0;
  *waits = calls ? (double)w * 1e6 / (double)calls : 0;
  return (double)calls / secs;
}

/* Private (src/symbols/symbolicate.h): the bench links the static
   library. Weak, so this bench also runs against a library from before
   the switch (only the exact way is measured there). */
__attribute__((weak)) void snap__symbolicate_set_identity_hits(bool on);

typedef struct mode_rates {
  double one[ROUNDS], two[ROUNDS], four[ROUNDS], r2[ROUNDS], r4[ROUNDS];
  double c1[ROUNDS], c2[ROUNDS], c4[ROUNDS], e2[ROUNDS], e4[ROUNDS];
  double w1[ROUNDS], w2[ROUNDS], w4[ROUNDS]; /* waits per million hits */
} mode_rates_t;

static bool part3_threads(void) {
  /* Each worker's stacks: random functions of the 10 k image (part 2
     loads it; alone, part 3 loads it itself), disjoint between workers by
     construction of the rng stream. */
  void *h = dlopen(BENCH_FUNCS_10K, RTLD_NOW | RTLD_NOLOAD);
  if (!h)
    h = dlopen(BENCH_FUNCS_10K, RTLD_NOW);
  uintptr_t *start = h ? layout(h, &k_images[1]) : NULL;
  if (!start) {
    fprintf(stderr, "bench_symbols: part 3 needs %s\n", BENCH_FUNCS_10K);
    return false;
  }
  for (int t = 0; t < MAX_WORKERS; t++)
    for (int s = 0; s < STACKS; s++)
      for (int d = 0; d < STACK_DEPTH; d++)
        g_workers[t].pcs[s][d] = start[rng() % 10000] + 1;
  free(start);
  /* Warm: the first call of each stack names it (a miss). */
  for (int t = 0; t < MAX_WORKERS; t++)
    for (int s = 0; s < STACKS; s++)
      snap_stack_release(snap_symbolicate(g_workers[t].pcs[s], STACK_DEPTH, 0));

  atomic_store(&g_go, 0);
  for (int t = 0; t < MAX_WORKERS; t++)
    if (pthread_create(&g_workers[t].thread, NULL, worker_main,
                       &g_workers[t]) != 0) {
      fprintf(stderr, "bench_symbols: pthread_create failed\n");
      return false;
    }
  /* Both ways a hit can be checked (symbolicate.c's head comment), the
     rounds of each interleaved with the other's. */
  mode_rates_t m[2] = {0};
  int modes = snap__symbolicate_set_identity_hits ? 2 : 1;
  for (int r = 0; r < ROUNDS; r++)
    for (int k = 0; k < modes; k++) {
      if (modes > 1)
        snap__symbolicate_set_identity_hits(k == 1);
      mode_rates_t *x = &m[k];
      x->one[r] = round_rate(1, &x->c1[r], &x->w1[r]);
      x->two[r] = round_rate(2, &x->c2[r], &x->w2[r]);
      x->four[r] = round_rate(4, &x->c4[r], &x->w4[r]);
      x->r2[r] = x->two[r] / x->one[r];
      x->r4[r] = x->four[r] / x->two[r];
      x->e2[r] = x->c2[r] / x->c1[r];
      x->e4[r] = x->c4[r] / x->c1[r];
    }
  if (modes > 1)
    snap__symbolicate_set_identity_hits(false);
  atomic_store(&g_go, -1);
  int failures = 0;
  for (int t = 0; t < MAX_WORKERS; t++) {
    pthread_join(g_workers[t].thread, NULL);
    failures += g_workers[t].failures;
  }

  snap_symbol_cache_stats_t st = {.size = sizeof st};
  snap_symbol_cache_stats(&st);
  printf("3. Cache hits, snap_symbolicate of %d stacks of depth %d per "
         "thread (each its own),\n   %d interleaved rounds (1, 2, 4 "
         "threads; each way of checking a hit) of %u ms; median\n",
         STACKS, STACK_DEPTH, ROUNDS, ROUND_NS / 1000000u);
  static const char *const names[2] = {
      "exact (the loader's stamp, its lock)",
      "identity (_dl_find_object, no lock; not exact)"};
  bool met = false;
  for (int k = 0; k < modes; k++) {
    mode_rates_t *x = &m[k];
    double m1 = median(x->one, ROUNDS), m2 = median(x->two, ROUNDS);
    double m4 = median(x->four, ROUNDS);
    double mr2 = median(x->r2, ROUNDS), mr4 = median(x->r4, ROUNDS);
    printf("  %s:\n", names[k]);
    printf("    1 thread %.2f M hits/s (%.0f ns a hit), 2 threads %.2f M, "
           "4 threads %.2f M\n",
           m1 / 1e6, 1e9 / m1, m2 / 1e6, m4 / 1e6);
    qsort(x->r2, ROUNDS, sizeof x->r2[0], cmp_double);
    qsort(x->r4, ROUNDS, sizeof x->r4[0], cmp_double);
    printf("    2 threads / 1: %.2fx (per-round min %.2fx, max %.2fx); "
           "4 threads / 2: %.2fx (min %.2fx, max %.2fx)\n",
           mr2, x->r2[0], x->r2[ROUNDS - 1], mr4, x->r4[0], x->r4[ROUNDS - 1]);
    printf("    per CPU-second of the workers (their own clocks: what the "
           "threads cost each other):\n    1 thread %.2f M, 2 threads "
           "%.2fx of it, 4 threads %.2fx\n",
           median(x->c1, ROUNDS) / 1e6, median(x->e2, ROUNDS),
           median(x->e4, ROUNDS));
    printf("    waits (voluntary context switches: a lock's sleeps) per "
           "million hits: 1 thread %.0f, 2 threads %.0f, 4 threads %.0f\n",
           median(x->w1, ROUNDS), median(x->w2, ROUNDS), median(x->w4, ROUNDS));
    if (k == 0)
      met = mr2 >= 1.8 && mr4 >= 0.95;
  }
  printf("  wrong-size answers: %d; cache: %llu hits, %llu misses\n", failures,
         (unsigned long long)st.hits, (unsigned long long)st.misses);
  printf("  goal (exact): 2 threads >= 1.8x, 4 threads no worse than 2 "
         "(>= 0.95x): %s\n\n",
         met ? "met" : "NOT met");
  return met;
}

/* ======================================================================
 * Part 4: the audit preload's cost per intercepted call
 * ====================================================================== */

#define AUDIT_CALLS 50000
#define AUDIT_RUNS 5

/* The child: open()+close() of one file from one call site, AUDIT_CALLS
   times after a warm-up; prints ns per call. */
__attribute__((noinline)) static int audit_child(void) {
  for (int i = 0; i < 100; i++)
    close(open("/etc/hostname", O_RDONLY));
  uint64_t t0 = now_ns();
  for (int i = 0; i < AUDIT_CALLS; i++) {
    int fd = open("/etc/hostname", O_RDONLY);
    if (fd < 0)
      return 1;
    close(fd);
  }
  printf("%.1f\n", (double)(now_ns() - t0) / AUDIT_CALLS);
  return 0;
}

#ifdef BENCH_AUDIT_LIB
/* Runs this program as the child, with the preload or without. */
static double child_ns(bool preload) {
  int out[2];
  if (pipe(out) != 0)
    return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  char *argv[] = {"bench_symbols", "--audit-child", NULL};
  char *env[] = {"LD_PRELOAD=" BENCH_AUDIT_LIB, "STACKSNAP_AUDIT_OUT=/dev/null",
                 "STACKSNAP_AUDIT_PREFIX=/etc/", NULL};
  pid_t pid;
  int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv,
                       preload ? env : env + 3);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    return -1;
  }
  char buf[64] = {0};
  ssize_t got = read(out[0], buf, sizeof buf - 1);
  close(out[0]);
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (got <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return -1;
  return strtod(buf, NULL);
}
#endif

static void part4_audit(void) {
  printf("4. The audit preload: ns per open()+close() of /etc/hostname on "
         "one call site\n");
#ifdef BENCH_AUDIT_LIB
  double with[AUDIT_RUNS], without[AUDIT_RUNS];
  for (int r = 0; r < AUDIT_RUNS; r++) {
    without[r] = child_ns(false);
    with[r] = child_ns(true);
    if (without[r] < 0 || with[r] < 0) {
      printf("  n/a: the child failed\n\n");
      return;
    }
  }
  double a = median(without, AUDIT_RUNS), b = median(with, AUDIT_RUNS);
  printf("  without the preload: %8.1f ns\n", a);
  printf("  with it:             %8.1f ns   (median of %d child runs of %d "
         "calls)\n",
         b, AUDIT_RUNS, AUDIT_CALLS);
  printf("  the hook adds:       %8.1f ns per intercepted call\n\n", b - a);
#else
  printf("  n/a: the demo is not built, or a sanitizer build\n\n");
#endif
}

/* ======================================================================
 * Part 5: what a cached stack costs
 * ====================================================================== */

#define MEM_DEPTH 32

/* Names `count` distinct stacks of depth 32 (random functions of the 10 k
   image, each pc a return address inside its function), reading each
   one's lines when `print`; the cache's own count of its bytes after. */
static bool fill_cache(const uintptr_t *start, int funcs, int count, bool print,
                       snap_symbol_cache_stats_t *st) {
  for (int k = 0; k < count; k++) {
    uintptr_t pcs[MEM_DEPTH];
    for (int i = 0; i < MEM_DEPTH; i++) {
      int f = (int)(rng() % (uint64_t)funcs);
      pcs[i] = start[f] + func_size(f) - INSN + 1; /* past its last insn */
    }
    /* Twice: the cache keeps a stack from its second sighting on. */
    snap_stack_release(snap_symbolicate(pcs, MEM_DEPTH, 0));
    const snap_stack_t *s = snap_symbolicate(pcs, MEM_DEPTH, 0);
    if (!s)
      return false;
    if (print)
      for (int i = 0; i < snap_stack_count(s); i++)
        (void)snap_stack_line(s, i);
    snap_stack_release(s);
  }
  return snap_symbol_cache_stats(st) == SNAP_OK;
}

static bool part5_cache_memory(void) {
  const image_spec_t *img = &k_images[1]; /* 10 k */
  void *h = dlopen(img->path, RTLD_NOW | RTLD_NOLOAD);
  if (!h) /* alone, part 5 loads it itself */
    h = dlopen(img->path, RTLD_NOW);
  uintptr_t *start = h ? layout(h, img) : NULL;
  if (!start) {
    printf("5. Cache memory: n/a (the 10 k image is not loaded)\n\n");
    return false;
  }
  enum { N = 4000, MANY = 60000 };
  bool ok0;
  snap_symbol_cache_stats_t a = {.size = sizeof a}, b = {.size = sizeof b},
                            c = {.size = sizeof c};
  /* Named once first: the image's symbol table, parsed on first use and
     kept for good, is not the cache's. */
  ok0 = fill_cache(start, img->count, 1, false, &a);
  snap_set_symbol_cache_limit(0); /* empty it */
  snap_set_symbol_cache_limit(SNAP_SYMBOL_CACHE_DEFAULT_BYTES);
  /* The cache's count against glibc's (mallinfo2: bytes in use, headers
     and size classes included), for the first fill; then a cap of 0. */
  snap_symbol_cache_stats_t e0 = {.size = sizeof e0}, z = {.size = sizeof z};
  snap_symbol_cache_stats(&e0);
  size_t heap0 = mallinfo2().uordblks;
  bool ok = ok0 && fill_cache(start, img->count, N, false, &a);
  size_t heap1 = mallinfo2().uordblks;
  snap_set_symbol_cache_limit(0);
  snap_symbol_cache_stats(&z);
  size_t heap2 = mallinfo2().uordblks;
  snap_set_symbol_cache_limit(SNAP_SYMBOL_CACHE_DEFAULT_BYTES);
  ok = ok && fill_cache(start, img->count, N, true, &b);
  snap_set_symbol_cache_limit(0);
  snap_set_symbol_cache_limit(SNAP_SYMBOL_CACHE_DEFAULT_BYTES);
  ok = ok && fill_cache(start, img->count, MANY, false, &c);
  free(start);
  if (!ok || !a.entries || !b.entries) {
    printf("5. Cache memory: n/a (naming failed)\n\n");
    return false;
  }
  double named = (double)a.bytes / (double)a.entries;
  double printed = (double)b.bytes / (double)b.entries;
  double full = c.entries ? (double)c.bytes / (double)c.entries : -1;
  printf("5. Cache memory: distinct stacks of depth %d (random functions of "
         "the 10 k image); bytes the\n   cache counts (entries, stacks, "
         "fronts, shared names, views) over the stacks it holds\n",
         MEM_DEPTH);
  printf("  %5d named, not printed:        %6.0f bytes a stack\n", N, named);
  printf("  %5d named, every line read:    %6.0f bytes a stack\n", N, printed);
  printf("  %5d offered to the default %u MiB cap: %llu held, %.0f bytes a "
         "stack\n",
         MANY, SNAP_SYMBOL_CACHE_DEFAULT_BYTES >> 20,
         (unsigned long long)c.entries, full);
  bool met = full > 0 && full <= 1024;
  double grown = (double)heap1 - (double)heap0;
  double counted = (double)a.bytes - (double)e0.bytes;
  printf("  heap (glibc mallinfo2) over the cache's count, %d named: "
         "%.2fx (%.0f / %.0f bytes a stack)\n",
         N, counted > 0 ? grown / counted : 0, grown / N, counted / N);
  printf("  cap 0: the cache counts %llu bytes; the heap keeps %ld of the "
         "%.0f bytes the fill took\n",
         (unsigned long long)z.bytes, (long)heap2 - (long)heap0, grown);
  printf("  goal: a depth-%d stack <= 1 KiB in the cache (full cap, names "
         "shared): %s\n\n",
         MEM_DEPTH, met ? "met" : "NOT met");
  snap_set_symbol_cache_limit(SNAP_SYMBOL_CACHE_DEFAULT_BYTES);
  return met;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--audit-child") == 0)
    return audit_child();
  setvbuf(stdout, NULL, _IOLBF, 0);
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  if (libc) {
    g_backtrace = (backtrace_fn)dlsym(libc, "backtrace");
    g_backtrace_symbols =
        (backtrace_symbols_fn)dlsym(libc, "backtrace_symbols");
  }
  if (!g_backtrace || !g_backtrace_symbols)
    fprintf(stderr, "bench_symbols: glibc backtrace() not found: n/a\n");

#ifdef SNAP_BENCH_HAVE_ABSL
  peer_absl_init(argv[0]);
#endif
  /* bench_symbols [PART...]: only those parts. */
  bool want[6] = {false, true, true, true, true, true};
  if (argc > 1) {
    memset(want, 0, sizeof want);
    for (int i = 1; i < argc; i++)
      if (atoi(argv[i]) >= 1 && atoi(argv[i]) <= 5)
        want[atoi(argv[i])] = true;
  }
  printf("stacksnap bench_symbols: naming stacks\n\n");
  bool goals = true;
  if (want[1])
    goals = part1_repeated_site() && goals;
  if (want[2])
    goals = part2_cold_lookup() && goals;
  if (want[3])
    goals = part3_threads() && goals;
  if (want[4])
    part4_audit();
  if (want[5])
    goals = part5_cache_memory() && goals;
  printf("goals (1: >= 100x; 2: flat and >= 100x vs dladdr at 100 k; "
         "3: >= 1.8x and 4 >= 2; 5: <= 1 KiB a stack): %s\n",
         goals ? "all met" : "NOT all met");
  return 0;
}
