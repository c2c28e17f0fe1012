/*
 * test_hostile_stacks.c — the walker over stacks built to mislead it.
 *
 * Each stack lives in its own heap block, and the walk is told that block's
 * bounds; under ASan any read outside it is a heap-buffer-overflow report,
 * so "never reads outside the given bounds" is checked by the sanitizer,
 * not by us. Patterns: random words, cycles (a record pointing to itself or
 * back down the stack), misaligned and out-of-bounds frame pointers, return
 * addresses into real code with unwind tables (so the CFI reader runs on
 * garbage), and tagged async frames whose contexts point anywhere. Every
 * walk must end, within max. A well-formed synthetic chain must come out
 * exactly.
 *
 * The link register, for a stopped thread (lr_valid; the walker is
 * arch-neutral, so this runs on x86_64 too): pc and lr are addresses inside
 * real functions of this binary, so the function bounds the frame-record
 * reader asks for are the compiler's own (checked against the functions'
 * addresses). One stack of each kind: a leaf that has not pushed its
 * record (lr live: frame 1), a function that pushed its record and made a
 * call (lr stale, inside its own function: not a frame), a prologue done
 * with no call yet (lr == the record's return address: once), and a pc in
 * no image (no bounds: lr taken as before). With SNAP_CAPTURE_ASYNC: the
 * leaf's live lr comes before the async chain of its caller's extended
 * record; a stale lr does not hide frame 0's own chain; and a chain whose
 * first context cannot be read leaves the OS stack to the walk.
 */
#include <stdlib.h>
#include <string.h>

#include "capture/arch.h"
#include "capture/cfi.h"
#include "capture/walk.h"
#include "check.h"

#define WORDS 4096
#define MAX 600

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}

__attribute__((noinline)) static int real_code(int x) { return x * 3 + 1; }

/* A word an attacker might leave: a stack address (in or out of bounds,
   aligned or not), a code address, an async-tagged fp, zero, or noise. */
static uintptr_t hostile_word(uintptr_t *buf) {
  uintptr_t base = (uintptr_t)buf;
  switch (rnd() % 9) {
  case 0: return base + (rnd() % WORDS) * sizeof(uintptr_t);
  case 1: return base + rnd() % (WORDS * sizeof(uintptr_t)); /* misaligned */
  case 2: return base - (rnd() % 4096);                      /* below */
  case 3: return base + WORDS * sizeof(uintptr_t) + rnd() % 4096; /* above */
  case 4: return (uintptr_t)real_code + rnd() % 64;
  case 5: return (uintptr_t)memcpy + rnd() % 256; /* libc: has CFI */
  case 6:
    return (base + (rnd() % WORDS) * 8) | ((uintptr_t)1 << 60); /* async */
  case 7: return 0;
  default: return (uintptr_t)rnd();
  }
}

static int walk_buffer(uintptr_t *buf, uintptr_t fp, uintptr_t pc,
                       unsigned flags, bool known_bounds) {
  snap__regs_t regs = {pc, (uintptr_t)buf, fp, 0, false};
  if (rnd() % 2) {
    regs.lr = hostile_word(buf);
    regs.lr_valid = true;
  }
  uintptr_t pcs[MAX];
  uintptr_t hi = known_bounds ? (uintptr_t)(buf + WORDS) : 0;
  int n = snap__walk_bounded(&regs, rnd() % 2, flags, hi, pcs, MAX, 0);
  /* Frame 0 is always there, unless the app-only filter dropped it. */
  int least = (flags & SNAP_CAPTURE_APP_ONLY) ? 0 : 1;
  CHECK(n >= least && n <= MAX, "walk returned %d", n);
  return n;
}

static void well_formed_chain(void) {
  uintptr_t *buf = calloc(WORDS, sizeof *buf);
  /* Three records at increasing addresses, the last one the root. */
  uintptr_t r0 = (uintptr_t)&buf[10], r1 = (uintptr_t)&buf[40],
            r2 = (uintptr_t)&buf[100];
  buf[10] = r1, buf[11] = 0x1111;
  buf[40] = r2, buf[41] = 0x2222;
  buf[100] = 0, buf[101] = 0x3333;
  snap__regs_t regs = {0x1000, (uintptr_t)buf, r0, 0, false};
  uintptr_t pcs[16];
  int n = snap__walk_bounded(&regs, true, SNAP_CAPTURE_FP_ONLY,
                             (uintptr_t)(buf + WORDS), pcs, 16, 0);
  CHECK_EQ(n, 4);
  if (n == 4) {
    CHECK_EQ(pcs[0], 0x1000);
    CHECK_EQ(pcs[1], 0x1111);
    CHECK_EQ(pcs[2], 0x2222);
    CHECK_EQ(pcs[3], 0x3333);
  }
  /* A record pointing at itself, or back down: the walk stops there. */
  buf[40] = r1;
  n = snap__walk_bounded(&regs, true, SNAP_CAPTURE_FP_ONLY,
                         (uintptr_t)(buf + WORDS), pcs, 16, 0);
  CHECK_EQ(n, 3);
  buf[40] = r0;
  n = snap__walk_bounded(&regs, true, SNAP_CAPTURE_FP_ONLY,
                         (uintptr_t)(buf + WORDS), pcs, 16, 0);
  CHECK_EQ(n, 3);
  /* A record straddling the top bound is not read. */
  regs.fp = (uintptr_t)&buf[WORDS - 1];
  n = snap__walk_bounded(&regs, true, SNAP_CAPTURE_FP_ONLY,
                         (uintptr_t)(buf + WORDS), pcs, 16, 0);
  CHECK_EQ(n, 1);
  /* Misaligned. */
  regs.fp = r0 + 3;
  n = snap__walk_bounded(&regs, true, SNAP_CAPTURE_FP_ONLY,
                         (uintptr_t)(buf + WORDS), pcs, 16, 0);
  CHECK_EQ(n, 1);
  /* Below the stack pointer. */
  regs.sp = (uintptr_t)&buf[20];
  regs.fp = r0;
  n = snap__walk_bounded(&regs, true, SNAP_CAPTURE_FP_ONLY,
                         (uintptr_t)(buf + WORDS), pcs, 16, 0);
  CHECK_EQ(n, 1);
  free(buf);
}

/* Three real functions: pcs up to fn_leaf + 4 and fn_caller + 20 are used
   (clang -O2 makes fn_leaf 24 bytes, gcc more). */
__attribute__((noinline)) int fn_leaf(volatile int *x) {
  *x += 1, *x *= 3, *x ^= 5, *x += 7;
  return *x;
}
__attribute__((noinline)) int fn_caller(volatile int *x) {
  *x += fn_leaf(x);
  *x *= 5;
  return *x + fn_leaf(x);
}
__attribute__((noinline)) int fn_outer(volatile int *x) {
  *x += fn_caller(x);
  return *x + fn_caller(x);
}

/* The bounds the walker will find for pc, by the same sources (platform
   index, then the call-frame information). */
static bool bounds_of(uintptr_t pc, uintptr_t *start, uintptr_t *end) {
  const snap__images_t *t = snap__images_acquire();
  const snap__image_t *img = snap__images_find(t, pc);
  bool ok =
      img && ((img->func_index &&
               snap__plat_function_bounds(img->func_index, img->func_index_size,
                                          img->base, pc, start, end)) ||
              snap__cfi_function_bounds(img, pc, start, end));
  snap__images_release(t);
  return ok;
}

#define ALL_READERS 0x80000000u /* a test-only flag: do not force FP_ONLY */

/* Walks regs over buf (frame records only, the Apple reader, unless flags
   say otherwise) and compares with want[0..n). */
static void expect_walk(const char *what, uintptr_t *buf,
                        const snap__regs_t *regs, unsigned flags,
                        const uintptr_t *want, int n_want) {
  uintptr_t pcs[16];
  if (!(flags & ALL_READERS))
    flags |= SNAP_CAPTURE_FP_ONLY;
  flags &= ~ALL_READERS;
  int n = snap__walk_bounded(regs, true, flags, (uintptr_t)(buf + WORDS), pcs,
                             16, 0);
  bool same = n == n_want;
  for (int i = 0; same && i < n; i++)
    same = pcs[i] == want[i];
  CHECK(same, "%s: walk differs from the expected stack", what);
  for (int i = 0; !same && (i < n || i < n_want); i++)
    fprintf(stderr, "  %2d: got 0x%lx  want 0x%lx\n", i,
            i < n ? (unsigned long)pcs[i] : 0ul,
            i < n_want ? (unsigned long)want[i] : 0ul);
}

static void link_register(void) {
  uintptr_t *buf = calloc(WORDS, sizeof *buf);
  uintptr_t leaf = (uintptr_t)fn_leaf, caller = (uintptr_t)fn_caller,
            outer = (uintptr_t)fn_outer;
  uintptr_t s, e;
  /* The bounds must be the functions': otherwise every case below passes
     or fails for the wrong reason. Linux always has them (.eh_frame). */
  bool have = bounds_of(leaf + 4, &s, &e) && s == leaf && e > leaf + 8 &&
              bounds_of(caller + 4, &s, &e) && s == caller && e > caller + 24;
#if defined(__linux__)
  CHECK(have, "no function bounds for this binary's functions");
#endif
  if (!have)
    printf("link register: no function bounds here, stale case skipped\n");

  /* The record at fp (the caller's, or frame 0's own), then the root. */
  uintptr_t r0 = (uintptr_t)&buf[10], r1 = (uintptr_t)&buf[40];
  uintptr_t ra0 = outer + 8, ra1 = 0x3333;
  buf[10] = r1, buf[11] = ra0;
  buf[40] = 0, buf[41] = ra1;
  snap__regs_t regs = {0, (uintptr_t)buf, r0, 0, true};

  /* A leaf that has not pushed its record: lr is its caller. */
  regs.pc = leaf + 4, regs.lr = caller + 8;
  expect_walk("leaf, live lr", buf, &regs, 0,
              (uintptr_t[]){leaf + 4, caller + 8, ra0, ra1}, 4);
  /* fn_caller pushed its record and has called fn_leaf: lr still holds
     that call's return address, inside fn_caller itself. */
  regs.pc = caller + 20, regs.lr = caller + 8;
  if (have)
    expect_walk("made a call, stale lr", buf, &regs, 0,
                (uintptr_t[]){caller + 20, ra0, ra1}, 3);
  /* Prologue done, no call yet: lr is the record's return address. */
  regs.pc = caller + 8, regs.lr = ra0;
  expect_walk("prologue done, lr == ra", buf, &regs, 0,
              (uintptr_t[]){caller + 8, ra0, ra1}, 3);
  /* No image, no bounds: lr is taken as before (it may be stale; nothing
     here can tell). */
  regs.pc = (uintptr_t)&buf[2], regs.lr = (uintptr_t)&buf[3];
  expect_walk("no bounds", buf, &regs, 0,
              (uintptr_t[]){(uintptr_t)&buf[2], (uintptr_t)&buf[3], ra0, ra1},
              4);

  /* Swift async: the record at fp is extended (its saved fp tagged, the
     context just below it); contexts a -> b. */
  if (!snap__plat_async_task_active()) {
    printf("async: no async task here, async cases skipped\n");
    free(buf);
    return;
  }
  uintptr_t *ctx = calloc(4, sizeof *ctx);
  ctx[0] = (uintptr_t)&ctx[2], ctx[1] = 0x5550; /* a: parent b, resume */
  ctx[2] = 0, ctx[3] = 0x6660;                  /* b: root */
  buf[9] = (uintptr_t)ctx;
  buf[10] = r1 | ((uintptr_t)SNAP__ASYNC_TAG << SNAP__ASYNC_TAG_SHIFT);
  /* A leaf called from an async function: its caller, then the chain. */
  regs.pc = leaf + 4, regs.lr = caller + 8;
  expect_walk("async: leaf, live lr", buf, &regs, SNAP_CAPTURE_ASYNC,
              (uintptr_t[]){leaf + 4, caller + 8, 0x5551, 0x6661}, 4);
#if defined(__aarch64__)
  {
    /* The same through the unwind rules: fn_leaf pushes no record, so its
       rule keeps the return address in lr, which must come first. What
       follows depends on fn_caller's real rule (GCC's arm64 frames keep
       their record at the bottom, CFA = sp + size, so this synthetic stack
       is no async frame of fn_caller's: async_frames.c's owns_record), so
       only the first two frames are checked. */
    uintptr_t pcs[16];
    int n = snap__walk_bounded(&regs, true, SNAP_CAPTURE_ASYNC,
                               (uintptr_t)(buf + WORDS), pcs, 16, 0);
    CHECK(n >= 2 && pcs[0] == leaf + 4 && pcs[1] == caller + 8,
          "async: leaf, live lr, by CFI: lr is not frame 1 (n %d)", n);
  }
#endif
  /* The async function itself, after a call: its own chain, no lr. */
  regs.pc = caller + 20, regs.lr = caller + 8;
  if (have)
    expect_walk("async: stale lr", buf, &regs, SNAP_CAPTURE_ASYNC,
                (uintptr_t[]){caller + 20, 0x5551, 0x6661}, 3);
  /* A chain that yields nothing (context unreadable, or no resume pc):
     the OS stack goes on. */
  regs.pc = caller + 8, regs.lr = ra0;
  buf[9] = 8; /* aligned, never mapped */
  expect_walk("async: unreadable context", buf, &regs, SNAP_CAPTURE_ASYNC,
              (uintptr_t[]){caller + 8, ra0, ra1}, 3);
  buf[9] = (uintptr_t)ctx, ctx[1] = 0;
  expect_walk("async: no resume pc", buf, &regs, SNAP_CAPTURE_ASYNC,
              (uintptr_t[]){caller + 8, ra0, ra1}, 3);
  free(ctx);
  free(buf);
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 20000;
  well_formed_chain();
  link_register();
  volatile int sink = 0;
  (void)fn_outer(&sink); /* the functions are real and run */
  long total = 0;
  unsigned flag_sets[] = {0, SNAP_CAPTURE_FP_ONLY, SNAP_CAPTURE_ASYNC,
                          SNAP_CAPTURE_APP_ONLY | SNAP_CAPTURE_ASYNC};
  for (int round = 0; round < rounds; round++) {
    uintptr_t *buf = malloc(WORDS * sizeof *buf);
    int kind = round % 3;
    for (int i = 0; i < WORDS; i++) {
      if (kind == 0)
        buf[i] = hostile_word(buf);
      else if (kind == 1) /* cycles: every record points into [0, i] */
        buf[i] = i % 2 ? (uintptr_t)real_code + rnd() % 32
                       : (uintptr_t)&buf[rnd() % (i + 1)];
      else /* chains that climb, then turn hostile */
        buf[i] = i % 2 ? hostile_word(buf) : (uintptr_t)&buf[i + 1 + rnd() % 8];
    }
    uintptr_t fp = hostile_word(buf);
    uintptr_t pc = rnd() % 2 ? (uintptr_t)real_code + rnd() % 16 : rnd();
    /* Unknown bounds (checked reads) only for a fraction: they are slow. */
    total += walk_buffer(buf, fp, pc, flag_sets[round % 4], round % 16 != 0);
    free(buf);
  }
  printf("hostile walks: %d rounds, %ld frames in all\n", rounds, total);
  return check_result("test_hostile_stacks");
}
