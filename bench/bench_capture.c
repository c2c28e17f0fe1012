/*
 * bench_capture.c — what one same-thread capture costs, against the
 * alternatives an app developer would otherwise reach for.
 *
 * At stack depths 16, 32 and 64 (a noinline recursion; an empty asm after
 * the recursive call keeps it from becoming a tail call, so every level is
 * a real frame) it times, in ns per capture:
 *
 *   snap       snap_capture_self(pcs, depth + 8, 0, 0): the default hybrid
 *              walk (frame records, plus call-frame information where the
 *              records end early);
 *   snap_fp    the same with SNAP_CAPTURE_FP_ONLY: frame records only;
 *   backtrace  glibc's backtrace() (libgcc's DWARF unwinder underneath);
 *   unw        libunwind's unw_backtrace ("n/a" when built without it);
 *   absl       abseil's absl::GetStackTrace (frame records; through
 *              bench/peer_absl.cc, "n/a" when built without libabsl-dev);
 *   bare_fp    a bare frame-pointer loop: the floor any frame-record walker
 *              is measured against (x86_64 and arm64 share the record layout
 *              [saved fp, return address]).
 *
 * Goals: backtrace/snap >= 20x (the privacy-hook user calls capture
 * thousands of times a minute), and snap/bare_fp <= 2x (the hybrid must not
 * cost much more than the plain walk it starts with).
 *
 * Fairness:
 *  - backtrace is looked up with dlsym in libc.so.6 itself, never linked:
 *    libunwind exports its own backtrace(), and linking libunwind (as this
 *    program does) silently makes the plain symbol resolve to libunwind's.
 *  - Every method captures from the same stack: the recursion bottoms out in
 *    one function, which calls each method's timing loop through one call
 *    site. So frame 1 onwards is the same stack for every method, and the
 *    frame counts printed show each walk reached the same place (a method
 *    that stops early is not cheaper, it is wrong).
 *  - Each timing loop calls its method directly (no wrapper per capture).
 *    Caches are warm: each method runs before it is timed, so what is
 *    measured is the steady state a hook sees at a repeating call site.
 *  - Repeats of the methods are interleaved and the median repeat is kept,
 *    so a burst of noise hits one repeat of every method, not one method.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stacksnap.h"

#ifdef SNAP_BENCH_HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

#ifdef SNAP_BENCH_HAVE_ABSL
#include "peer_absl.h"
#endif

#define SLACK 8 /* pcs beyond the depth: the frames below main, and ours */
#define MAX_BUF (64 + SLACK)
#define REPEATS 15
#define REPEAT_NS 5000000.0 /* aim for ~5 ms per timed repeat */

static const int k_depths[] = {16, 32, 64};
#define N_DEPTHS ((int)(sizeof k_depths / sizeof k_depths[0]))

typedef int (*backtrace_fn)(void **, int);
static backtrace_fn g_backtrace;

/* The main thread's stack: the bare loop's only bound (looked up once). */
static uintptr_t g_stack_hi;

/* One method's buffers and its latest result. */
typedef struct frames {
  int max;
  int n;
  uintptr_t pcs[MAX_BUF];
  void *ptrs[MAX_BUF]; /* for the APIs that fill void * */
} frames_t;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- The bare frame-pointer loop ----------------------------------------
 * Frame 0 is the return address into the caller, as with backtrace(). A
 * record must be aligned, inside the stack, and above the previous one; a
 * zero saved fp or return address ends the walk. */

#if defined(__aarch64__)
static inline uintptr_t strip_pac(uintptr_t p) {
  register uintptr_t x30 __asm__("x30") = p;
  __asm__("hint #7" /* xpaclri: a NOP without pointer authentication */
          : "+r"(x30));
  return x30;
}
#elif defined(__x86_64__)
static inline uintptr_t strip_pac(uintptr_t p) { return p; }
#else
#error "bench_capture: x86_64 or aarch64 only"
#endif

__attribute__((noinline)) static int bare_fp_backtrace(uintptr_t *pcs,
                                                       int max) {
  uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
  uintptr_t hi = g_stack_hi;
  int n = 0;
  while (n < max && fp != 0 && fp % sizeof(uintptr_t) == 0 &&
         fp < hi - 2 * sizeof(uintptr_t)) {
    const uintptr_t *record = (const uintptr_t *)fp;
    uintptr_t next = record[0];
    uintptr_t ra = strip_pac(record[1]);
    if (ra == 0)
      break;
    pcs[n++] = ra;
    if (next <= fp)
      break;
    fp = next;
  }
  __asm__ volatile("" ::: "memory");
  return n;
}

/* ---- One timing loop per method -----------------------------------------
 * Each returns the elapsed ns for `iters` captures and leaves the last
 * capture in f. They are noinline so each is one frame on the stack. */

/* One timing loop per method, each calling its method directly: a shared
   loop through a function pointer would add an indirect call to every
   iteration and blur the ratios between fast methods. */
__attribute__((noinline)) static uint64_t run_snap(frames_t *f, long iters) {
  int n = 0;
  uint64_t t0 = now_ns();
  for (long i = 0; i < iters; i++) {
    n = snap_capture_self(f->pcs, f->max, 0, 0);
    __asm__ volatile("" ::: "memory");
  }
  uint64_t t1 = now_ns();
  f->n = n;
  return t1 - t0;
}

__attribute__((noinline)) static uint64_t run_snap_fp(frames_t *f, long iters) {
  int n = 0;
  uint64_t t0 = now_ns();
  for (long i = 0; i < iters; i++) {
    n = snap_capture_self(f->pcs, f->max, 0, SNAP_CAPTURE_FP_ONLY);
    __asm__ volatile("" ::: "memory");
  }
  uint64_t t1 = now_ns();
  f->n = n;
  return t1 - t0;
}

__attribute__((noinline)) static uint64_t run_backtrace(frames_t *f,
                                                        long iters) {
  int n = 0;
  uint64_t t0 = now_ns();
  for (long i = 0; i < iters; i++) {
    n = g_backtrace(f->ptrs, f->max);
    __asm__ volatile("" ::: "memory");
  }
  uint64_t t1 = now_ns();
  for (int i = 0; i < n; i++)
    f->pcs[i] = (uintptr_t)f->ptrs[i];
  f->n = n;
  return t1 - t0;
}

#ifdef SNAP_BENCH_HAVE_LIBUNWIND
__attribute__((noinline)) static uint64_t run_unw(frames_t *f, long iters) {
  int n = 0;
  uint64_t t0 = now_ns();
  for (long i = 0; i < iters; i++) {
    n = unw_backtrace(f->ptrs, f->max);
    __asm__ volatile("" ::: "memory");
  }
  uint64_t t1 = now_ns();
  for (int i = 0; i < n; i++)
    f->pcs[i] = (uintptr_t)f->ptrs[i];
  f->n = n;
  return t1 - t0;
}
#define UNW_RUN run_unw
#else
#define UNW_RUN NULL
#endif

#ifdef SNAP_BENCH_HAVE_ABSL
/* Through peer_absl.cc's one C wrapper (abseil is C++): that call is part
   of what is timed, a few ns. */
__attribute__((noinline)) static uint64_t run_absl(frames_t *f, long iters) {
  int n = 0;
  uint64_t t0 = now_ns();
  for (long i = 0; i < iters; i++) {
    n = peer_absl_stacktrace(f->ptrs, f->max);
    __asm__ volatile("" ::: "memory");
  }
  uint64_t t1 = now_ns();
  for (int i = 0; i < n; i++)
    f->pcs[i] = (uintptr_t)f->ptrs[i];
  f->n = n;
  return t1 - t0;
}
#define ABSL_RUN run_absl
#else
#define ABSL_RUN NULL
#endif

__attribute__((noinline)) static uint64_t run_bare(frames_t *f, long iters) {
  int n = 0;
  uint64_t t0 = now_ns();
  for (long i = 0; i < iters; i++) {
    n = bare_fp_backtrace(f->pcs, f->max);
    __asm__ volatile("" ::: "memory");
  }
  uint64_t t1 = now_ns();
  f->n = n;
  return t1 - t0;
}

enum { M_SNAP, M_SNAP_FP, M_BACKTRACE, M_UNW, M_ABSL, M_BARE, M_COUNT };

typedef struct method {
  const char *name;
  uint64_t (*run)(frames_t *f, long iters); /* NULL: not available */
} method_t;

static method_t g_methods[M_COUNT] = {
    [M_SNAP] = {"snap", run_snap},
    [M_SNAP_FP] = {"snap_fp", run_snap_fp},
    [M_BACKTRACE] = {"backtrace", run_backtrace},
    [M_UNW] = {"unw", UNW_RUN},
    [M_ABSL] = {"absl", ABSL_RUN},
    [M_BARE] = {"bare_fp", run_bare},
};

/* What one depth yields. */
typedef struct result {
  double ns[M_COUNT];     /* median ns per capture; < 0: n/a */
  double spread[M_COUNT]; /* (max - min) / median over the repeats */
  int frames[M_COUNT];
  /* Index in this method's pcs where backtrace's frame 1 is found (1 when
     the stacks line up), and how many frames from there agree with
     backtrace's; -1 when no comparison was possible. */
  int offset[M_COUNT], agree[M_COUNT];
} result_t;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Compares a method's frames with the reference (backtrace, or snap when
   backtrace is missing) from frame 1 on: frame 0 is the return address into
   each method's own timing loop and differs by construction. */
static void compare(const frames_t *ref, const frames_t *f, int *offset,
                    int *agree) {
  *offset = -1;
  *agree = -1;
  if (ref->n < 2)
    return;
  for (int j = 0; j < f->n; j++) {
    if (f->pcs[j] != ref->pcs[1])
      continue;
    int k = 0;
    while (j + k < f->n && 1 + k < ref->n && f->pcs[j + k] == ref->pcs[1 + k])
      k++;
    *offset = j;
    *agree = k;
    return;
  }
}

/* The bottom of the recursion: every method is timed from this one frame,
   through one call site (g_methods[m].run), so they all walk the same
   stack. */
__attribute__((noinline)) static void measure_here(int depth, result_t *out) {
  static frames_t frames[M_COUNT];
  static double per_call[M_COUNT][REPEATS];
  long iters[M_COUNT];

  for (int m = 0; m < M_COUNT; m++) {
    frames[m].max = depth + SLACK;
    frames[m].n = 0;
    iters[m] = 0;
  }
  /* Warm up (fills every method's caches), then size each repeat. */
  for (int m = 0; m < M_COUNT; m++) {
    if (!g_methods[m].run)
      continue;
    (void)g_methods[m].run(&frames[m], 100);
    uint64_t t = g_methods[m].run(&frames[m], 200);
    double each = (double)(t ? t : 1) / 200.0;
    long n = (long)(REPEAT_NS / each);
    iters[m] = n < 100 ? 100 : n > 5000000 ? 5000000 : n;
  }
  for (int r = 0; r < REPEATS; r++)
    for (int m = 0; m < M_COUNT; m++)
      if (g_methods[m].run)
        per_call[m][r] =
            (double)g_methods[m].run(&frames[m], iters[m]) / (double)iters[m];

  const frames_t *ref =
      g_methods[M_BACKTRACE].run ? &frames[M_BACKTRACE] : &frames[M_SNAP];
  for (int m = 0; m < M_COUNT; m++) {
    out->ns[m] = -1;
    out->spread[m] = 0;
    out->frames[m] = -1;
    out->offset[m] = out->agree[m] = -1;
    if (!g_methods[m].run)
      continue;
    qsort(per_call[m], REPEATS, sizeof per_call[m][0], cmp_double);
    double med = per_call[m][REPEATS / 2];
    out->ns[m] = med;
    out->spread[m] = (per_call[m][REPEATS - 1] - per_call[m][0]) / med;
    out->frames[m] = frames[m].n;
    compare(ref, &frames[m], &out->offset[m], &out->agree[m]);
  }
}

__attribute__((noinline)) static void recurse(int levels, int depth,
                                              result_t *out) {
  if (levels > 1)
    recurse(levels - 1, depth, out);
  else
    measure_here(depth, out);
  __asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays */
}

static bool find_stack_top(void) {
  pthread_attr_t attr;
  void *addr;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &attr) != 0)
    return false;
  bool ok = pthread_attr_getstack(&attr, &addr, &size) == 0;
  pthread_attr_destroy(&attr);
  if (ok)
    g_stack_hi = (uintptr_t)addr + size;
  return ok;
}

static void print_ns(double ns) {
  if (ns < 0)
    printf(" %10s", "n/a");
  else
    printf(" %10.1f", ns);
}

static void print_ratio(double num, double den) {
  if (num < 0 || den <= 0)
    printf(" %10s", "n/a");
  else
    printf(" %9.1fx", num / den);
}

int main(void) {
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  g_backtrace = libc ? (backtrace_fn)dlsym(libc, "backtrace") : NULL;
  if (!g_backtrace) {
    fprintf(stderr, "bench_capture: glibc backtrace() not found: n/a\n");
    g_methods[M_BACKTRACE].run = NULL;
  }
  if (!find_stack_top()) {
    fprintf(stderr, "bench_capture: no stack bounds for the bare loop\n");
    return 1;
  }

  result_t res[N_DEPTHS];
  for (int d = 0; d < N_DEPTHS; d++)
    recurse(k_depths[d], k_depths[d], &res[d]);

  printf("stacksnap bench_capture: same-thread capture, ns per capture\n");
  printf("(median of %d interleaved repeats of ~%.0f ms each; warm caches; "
         "max = depth + %d)\n\n",
         REPEATS, REPEAT_NS / 1e6, SLACK);
  printf("%5s", "depth");
  for (int m = 0; m < M_COUNT; m++)
    printf(" %10s", g_methods[m].name);
  printf(" %10s %10s %10s %10s\n", "bt/snap", "snap/bare", "fp/bare",
         "fp/absl");
  for (int d = 0; d < N_DEPTHS; d++) {
    const result_t *r = &res[d];
    printf("%5d", k_depths[d]);
    for (int m = 0; m < M_COUNT; m++)
      print_ns(r->ns[m]);
    print_ratio(r->ns[M_BACKTRACE], r->ns[M_SNAP]);
    print_ratio(r->ns[M_SNAP], r->ns[M_BARE]);
    print_ratio(r->ns[M_SNAP_FP], r->ns[M_BARE]);
    print_ratio(r->ns[M_SNAP_FP], r->ns[M_ABSL]);
    printf("\n");
  }

  printf("\nns per frame (median ns / frames returned)\n%5s", "depth");
  for (int m = 0; m < M_COUNT; m++)
    printf(" %10s", g_methods[m].name);
  printf("\n");
  for (int d = 0; d < N_DEPTHS; d++) {
    printf("%5d", k_depths[d]);
    for (int m = 0; m < M_COUNT; m++)
      print_ns(res[d].frames[m] > 0 ? res[d].ns[m] / res[d].frames[m] : -1);
    printf("\n");
  }

  printf("\nrepeat spread ((max - min) / median)\n%5s", "depth");
  for (int m = 0; m < M_COUNT; m++)
    printf(" %10s", g_methods[m].name);
  printf("\n");
  for (int d = 0; d < N_DEPTHS; d++) {
    printf("%5d", k_depths[d]);
    for (int m = 0; m < M_COUNT; m++) {
      if (res[d].ns[m] < 0)
        printf(" %10s", "n/a");
      else
        printf(" %9.0f%%", 100.0 * res[d].spread[m]);
    }
    printf("\n");
  }

  const char *ref = g_backtrace ? "backtrace" : "snap";
  printf("\nframes returned [frames equal to %s's from its frame 1 on; "
         "@i if they start at index i, not 1]\n%5s",
         ref, "depth");
  for (int m = 0; m < M_COUNT; m++)
    printf(" %10s", g_methods[m].name);
  printf("\n");
  bool frames_ok = true;
  for (int d = 0; d < N_DEPTHS; d++) {
    const result_t *r = &res[d];
    int ref_n = r->frames[g_backtrace ? M_BACKTRACE : M_SNAP];
    printf("%5d", k_depths[d]);
    for (int m = 0; m < M_COUNT; m++) {
      char cell[32];
      if (r->frames[m] < 0)
        snprintf(cell, sizeof cell, "n/a");
      else if (r->offset[m] < 0)
        snprintf(cell, sizeof cell, "%d[none]", r->frames[m]);
      else if (r->offset[m] != 1)
        snprintf(cell, sizeof cell, "%d[%d@%d]", r->frames[m], r->agree[m],
                 r->offset[m]);
      else
        snprintf(cell, sizeof cell, "%d[%d]", r->frames[m], r->agree[m]);
      printf(" %10s", cell);
      /* "About the same" walk: reaches past the whole recursion, and agrees
         with the reference on every frame of ours (it may lose a few libc
         frames below main, which have no frame records). */
      if (r->frames[m] >= 0 &&
          (r->agree[m] < k_depths[d] + 2 || r->frames[m] > ref_n + 2))
        frames_ok = false;
    }
    printf("\n");
  }
  printf("frame check: %s\n",
         frames_ok ? "every method walked the whole recursion and agrees"
                   : "MISMATCH: some method did not walk the same stack");

  bool goals = true;
  for (int d = 0; d < N_DEPTHS; d++) {
    const result_t *r = &res[d];
    if (r->ns[M_BACKTRACE] >= 0 && r->ns[M_BACKTRACE] / r->ns[M_SNAP] < 20)
      goals = false;
    if (r->ns[M_SNAP] / r->ns[M_BARE] > 2)
      goals = false;
  }
  printf("goals (backtrace/snap >= 20x, snap/bare <= 2x at every depth): %s\n",
         goals ? "met" : "NOT met");
  bool fp_goal = true;
  for (int d = 0; d < N_DEPTHS; d++)
    if (res[d].ns[M_SNAP_FP] / res[d].ns[M_BARE] > 1.5)
      fp_goal = false;
  printf("goal (snap_fp/bare <= 1.5x at every depth): %s\n",
         fp_goal ? "met" : "NOT met");
  return 0;
}
