/*
 * test_walk_paths.c — the walk's fast path against its reader table: the
 * same stacks walked both ways (snap__walk_bounded, and
 * snap__walk_bounded_readers, which sends every frame through the table)
 * must give the same pcs, frame for frame; and so must snap_capture_self's
 * records-only walk for SNAP_CAPTURE_FP_ONLY (snap__walk_records_bounded).
 *
 * The stacks are random (tests/xorshift.h, fixed seed: a failure comes back
 * on the next run) and built the way a real walk meets them: frames laid
 * out from the stopped frame up, each by the unwind rule of its pc — frame
 * records with K = 16 and larger frames (arm64 GCC), frameless functions
 * (CFA from sp, return address at the CFA, fp saved or not), CFA-from-fp
 * rules that are not records, rules that end the stack, pcs with no rule —
 * then damaged: random words overwritten with return addresses, stack
 * addresses (some misaligned, some below sp), async-tagged fps, 0 or noise.
 * Pcs are synthetic (below the lowest address Linux maps, so no image holds
 * them and their rules are the ones this test puts in the rule cache) plus
 * a few real return addresses into this program (its real unwind rules,
 * and app code for SNAP_CAPTURE_APP_ONLY). Flags, skip, max and a live
 * link register vary per stack.
 *
 * The oracle is the readers themselves: the fast path must be exactly the
 * table, wherever it takes over.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture/rule_cache.h"
#include "capture/walk.h"
#include "check.h"
#include "xorshift.h"

#define CASES 20000
#define WORDS 2048 /* 16 KiB of stack */
#define N_SYNTH 128
#define N_FIRST 16 /* pcs a stack may start at (an exact frame 0 too) */
#define N_REAL 6
#define N_PCS (N_SYNTH + N_REAL)
#define MAXPCS 96

static uintptr_t g_pcs[N_PCS];      /* return addresses the stacks hold */
static snap__rule_t g_rules[N_PCS]; /* the rule put for g_pcs[i] - 1 */
static bool g_has_rule[N_PCS];      /* false: no rule (a cache miss) */
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static unsigned rnd(unsigned n) {
  return (unsigned)(snap_xorshift(&g_rng) % n);
}

/* Real return addresses: a few bytes into functions of this program. */
__attribute__((noinline)) static int real_a(int x) { return x * 3 + 1; }
__attribute__((noinline)) static int real_b(int x) { return real_a(x) ^ 5; }

static snap__rule_t random_rule(void) {
  snap__rule_t r = {0};
  unsigned kind = rnd(100) + (rnd(4) == 0); /* 99: 1 in 400 */
  if (kind < 40) {                          /* frame record, x86_64 shape */
    r.cfa = SNAP__CFA_FP, r.cfa_off = 16, r.ra = SNAP__RA_AT_CFA;
    r.ra_off = -8, r.fp = SNAP__FP_AT_CFA, r.fp_off = -16;
  } else if (kind < 50) { /* frame record, arm64 GCC shape: K = frame size */
    int k = 16 * (2 + (int)rnd(6));
    r.cfa = SNAP__CFA_FP, r.cfa_off = k, r.ra = SNAP__RA_AT_CFA;
    r.ra_off = -k + 8, r.fp = SNAP__FP_AT_CFA, r.fp_off = -k;
  } else if (kind < 75) { /* frameless: CFA = sp + size */
    r.cfa = SNAP__CFA_SP, r.cfa_off = 8 * (1 + (int)rnd(24));
    r.ra = SNAP__RA_AT_CFA, r.ra_off = -8;
    if (rnd(2)) /* fp saved in the frame (or, 1 in 8, below sp: popped) */
      r.fp = SNAP__FP_AT_CFA,
      r.fp_off = rnd(8) ? -8 * (2 + (int)rnd(r.cfa_off / 8))
                        : -r.cfa_off - 8 * (1 + (int)rnd(2));
  } else if (kind < 99) { /* CFA from fp, not a record */
    r.cfa = SNAP__CFA_FP, r.cfa_off = 8 * ((int)rnd(8) - 1);
    r.ra = SNAP__RA_AT_CFA, r.ra_off = -8 * (1 + (int)rnd(3));
    r.fp = SNAP__FP_AT_CFA; /* or every later frame would lose its fp */
    r.fp_off = r.ra_off - 8 * (1 + (int)rnd(2));
  } else if (rnd(2)) { /* a leaf with its return address in lr */
    r.cfa = SNAP__CFA_SP, r.cfa_off = 8 * (int)rnd(3), r.ra = SNAP__RA_IN_LR;
  } else { /* the outermost frame */
    r.cfa = SNAP__CFA_SP, r.cfa_off = 8 * (1 + (int)rnd(4));
    r.ra = SNAP__RA_UNDEFINED;
  }
  return r;
}

/* Synthetic pcs below mmap_min_addr, each in its own rule-cache slot, so the
   rules put here are the ones both walks read. */
static void make_pcs(void) {
  uintptr_t pc = 0x1001;
  for (int i = 0; i < N_SYNTH; pc += 0x11) {
    /* Keys pc - 1 (a return address) and pc (an exact frame 0). */
    bool clash = snap__rule_slot(snap__rule_hash(pc - 1)) ==
                 snap__rule_slot(snap__rule_hash(pc));
    for (int j = 0; j < i; j++)
      for (uintptr_t a = pc - 1; a <= pc; a++)
        for (uintptr_t b = g_pcs[j] - 1; b <= g_pcs[j]; b++)
          clash |= snap__rule_slot(snap__rule_hash(a)) ==
                   snap__rule_slot(snap__rule_hash(b));
    if (clash)
      continue;
    g_pcs[i] = pc;
    g_has_rule[i] = rnd(400) != 0;
    g_rules[i] = random_rule();
    i++;
  }
  for (int i = 0; i < N_REAL; i++)
    g_pcs[N_SYNTH + i] =
        (uintptr_t)(i % 2 ? (void *)real_a : (void *)real_b) + 1 + 3 * i;
}

/* Puts the synthetic rules back (a walk may have evicted one by caching
   another pc's rule in its slot), so both walks start alike. */
static void put_rules(void) {
  uint64_t salt = snap__rule_cache_salt(snap__images_current_generation());
  for (int i = 0; i < N_SYNTH; i++)
    if (g_has_rule[i]) {
      snap__rule_cache_put(g_pcs[i] - 1, salt, &g_rules[i]);
      if (i < N_FIRST) /* an exact frame 0 */
        snap__rule_cache_put(g_pcs[i], salt, &g_rules[i]);
    }
}

static int pc_index(uintptr_t pc) {
  for (int i = 0; i < N_SYNTH; i++)
    if (g_pcs[i] == pc)
      return i;
  return -1;
}

static void put_word(uintptr_t *w, uintptr_t lo, uintptr_t addr,
                     uintptr_t value) {
  if (addr % sizeof(uintptr_t) == 0 && addr >= lo &&
      addr < lo + WORDS * sizeof(uintptr_t))
    w[(addr - lo) / sizeof(uintptr_t)] = value;
}

static uintptr_t noise(uintptr_t lo) {
  switch (rnd(8)) {
  case 0: return 0;
  case 1: return g_pcs[rnd(N_PCS)];
  case 2: return lo + 8 * rnd(WORDS);                  /* an fp */
  case 3: return lo + 4 + 8 * rnd(WORDS);              /* misaligned */
  case 4: return (lo + 8 * rnd(WORDS)) | (1ull << 60); /* async-tagged */
  case 5: return lo - 8 * (1 + rnd(8));                /* below the stack */
  default: return (uintptr_t)snap_xorshift(&g_rng);
  }
}

/* Lays out frames from sp up by the rules of their pcs, then damages the
   stack. fp is chosen late: a frame whose rule needs it (CFA from fp) and
   finds it unusable sets it, in the slot it was last saved to (or the
   registers), as the function that saved it would have; unless a frame
   since has already used it. */
static void build(uintptr_t *w, snap__regs_t *regs, bool *exact) {
  uintptr_t lo = (uintptr_t)w, hi = lo + WORDS * sizeof(uintptr_t);
  /* Zeros with noise in one word of 16: cheap enough under qemu. */
  memset(w, 0, WORDS * sizeof *w);
  for (int i = 0; i < WORDS / 16; i++)
    w[rnd(WORDS)] = noise(lo);
  uintptr_t sp = lo + 8 * rnd(8), fp = sp + 8 * rnd(12);
  uintptr_t pc = g_pcs[rnd(N_FIRST)];
  uintptr_t *fp_slot = &regs->fp; /* where fp's value lives */
  bool fp_used = false;
  memset(regs, 0, sizeof *regs);
  regs->pc = pc, regs->sp = sp, regs->fp = fp;
  *exact = rnd(2);
  if (rnd(10) == 0)
    regs->lr_valid = true, regs->lr = g_pcs[rnd(N_PCS)];
  for (int depth = 0; depth < 400 && sp < hi - 256; depth++) {
    int i = pc_index(pc);
    if (i < 0 || !g_has_rule[i])
      break;
    const snap__rule_t *r = &g_rules[i];
    if (r->ra != SNAP__RA_AT_CFA)
      break;
    if (r->cfa == SNAP__CFA_FP) {
      /* Usable: the CFA above sp, every slot the rule reads at or above
         sp, room above. */
      intptr_t low = r->ra_off;
      if (r->fp == SNAP__FP_AT_CFA && r->fp_off < low)
        low = r->fp_off;
      intptr_t need = -(r->cfa_off + low); /* fp >= sp + need */
      if (need < 8 - r->cfa_off)
        need = 8 - r->cfa_off; /* and the CFA above sp */
      if (need < 0)
        need = 0;
      if ((fp % 8 || fp < sp + need || fp + r->cfa_off >= hi - 256) &&
          !fp_used && rnd(8)) { /* 1 in 8: left bad, the walk ends */
        fp = sp + (uintptr_t)(need + 7) / 8 * 8 + 8 * rnd(8);
        *fp_slot = fp;
      }
      fp_used = true;
    }
    uintptr_t cfa = (r->cfa == SNAP__CFA_SP ? sp : fp) + (intptr_t)r->cfa_off;
    if (cfa <= sp || cfa >= hi)
      break;
    uintptr_t next_pc = rnd(400) == 0   ? 0
                        : rnd(200) == 0 ? g_pcs[N_SYNTH + rnd(N_REAL)]
                                        : g_pcs[rnd(N_SYNTH)];
    put_word(w, lo, cfa + (intptr_t)r->ra_off, next_pc);
    uintptr_t fp_at = cfa + (intptr_t)r->fp_off;
    if (r->fp == SNAP__FP_AT_CFA && fp_at >= sp && fp_at + 8 <= hi) {
      /* The caller's fp: usually a record a little above the CFA; else
         noise, or a stale one inside the frame just left (below the
         CFA, where a bare record walk would still go). */
      fp = rnd(6)   ? cfa + 8 * rnd(10)
           : rnd(3) ? cfa - 8 * (1 + rnd(8))
                    : noise(lo);
      fp_slot = &w[(fp_at - lo) / 8];
      /* 1 in 8 saved tagged, as a Swift async frame saves its caller's:
         a walk untags it and goes on (readers.h, snap__untag_fp). */
      *fp_slot = rnd(8) ? fp : fp | (1ull << 60);
      fp_used = false;
    }
    pc = next_pc, sp = cfa;
  }
  for (int n = rnd(4) ? 0 : (int)rnd(6); n > 0; n--)
    w[rnd(WORDS)] = noise(lo); /* damage */
}

int main(void) {
  make_pcs();
  uintptr_t *w = aligned_alloc(16, WORDS * sizeof(uintptr_t));
  if (!w)
    return 1;
  uintptr_t lo = (uintptr_t)w, hi = lo + WORDS * sizeof(uintptr_t);
  static const unsigned k_flags[] = {0,
                                     0,
                                     0,
                                     SNAP_CAPTURE_FP_ONLY,
                                     SNAP_CAPTURE_FP_ONLY,
                                     SNAP_CAPTURE_APP_ONLY,
                                     SNAP_CAPTURE_APP_ONLY |
                                         SNAP_CAPTURE_FP_ONLY,
                                     SNAP_CAPTURE_ASYNC};
  long frames = 0, deep = 0, records = 0;
  int shown = 0;
  for (int t = 0; t < CASES; t++) {
    snap__regs_t regs;
    bool exact;
    build(w, &regs, &exact);
    unsigned flags = k_flags[rnd(sizeof k_flags / sizeof k_flags[0])];
    int max = rnd(4) ? MAXPCS : 1 + (int)rnd(MAXPCS);
    int skip = rnd(3) ? 0 : (int)rnd(40);
    uintptr_t fast[MAXPCS], slow[MAXPCS];
    memset(fast, 0xa5, sizeof fast);
    memset(slow, 0x5a, sizeof slow);
    put_rules();
    int ns =
        snap__walk_bounded_readers(&regs, exact, flags, hi, slow, max, skip);
    put_rules();
    int nf = snap__walk_bounded(&regs, exact, flags, hi, fast, max, skip);
    bool same = nf == ns && memcmp(fast, slow, (size_t)ns * sizeof *fast) == 0;
    if (flags == SNAP_CAPTURE_FP_ONLY) {
      /* snap_capture_self's records-only walk, where it applies. */
      uintptr_t rec[MAXPCS];
      int nr = snap__walk_records_bounded(&regs, hi, rec, max, skip);
      CHECK(nr < 0 ||
                (nr == ns && memcmp(rec, slow, (size_t)ns * sizeof *rec) == 0),
            "case %d (max %d, skip %d, lr %d): records walk %d pcs, readers %d",
            t, max, skip, regs.lr_valid, nr, ns);
      records += nr >= 0;
    }
    frames += ns;
    deep += ns >= 24;
    CHECK(same,
          "case %d (flags %#x, max %d, skip %d, exact %d, lr %d): fast "
          "path %d pcs, readers %d",
          t, flags, max, skip, exact, regs.lr_valid, nf, ns);
    if (!same && shown++ < 3)
      for (int i = 0; i < (nf > ns ? nf : ns); i++)
        fprintf(stderr, "  [%d] fast %#lx readers %#lx\n", i,
                i < nf ? (unsigned long)fast[i] : 0ul,
                i < ns ? (unsigned long)slow[i] : 0ul);
  }
  /* The stacks must exercise the paths: long walks, not only stops. */
  CHECK(frames > 6L * CASES, "only %ld frames in %d stacks", frames, CASES);
  CHECK(deep > CASES / 20, "only %ld stacks of 24 frames or more", deep);
  CHECK(records > CASES / 20, "only %ld records-only walks", records);
  printf("test_walk_paths: %d stacks, %ld frames, %ld of 24+ frames\n", CASES,
         frames, deep);
  free(w);
  return check_result("test_walk_paths");
}
