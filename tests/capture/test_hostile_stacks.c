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
 */
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 20000;
  well_formed_chain();
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
