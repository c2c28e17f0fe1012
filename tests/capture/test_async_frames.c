/*
 * test_async_frames.c — Swift async frames (extended frame records) built by
 * clang from C (async_frames_clang.c), walked with and without
 * SNAP_CAPTURE_ASYNC.
 *
 * Stack at the probe: probe <- async_leaf <- async_mid <- async_run <- main.
 * async_leaf's context chain: ctx_a -> ctx_b -> ctx_c -> NULL, with resume
 * pcs in three marker functions.
 *  - With SNAP_CAPTURE_ASYNC: probe's return address into async_leaf, then
 *    the resume pcs + 1, exactly, and nothing else.
 *  - Without: the OS stack, through the tagged records: into async_leaf,
 *    async_mid, async_run, then main — each return address equal to the
 *    one the compiler's __builtin_return_address reported.
 *
 * Then twice more, with async_leaf's context slot (the word below its
 * record) rewritten by the probe for the capture:
 *  - signed as arm64e system code signs it (pacdb, discriminator: the
 *    slot's address blended with 0xc31a), where the CPU has pointer
 *    authentication (qemu -cpu max): the async walk must be the same exact
 *    chain;
 *  - pointing at unreadable memory: the chain yields nothing, and the
 *    walk must go on along the OS stack into async_mid, whose own extended
 *    record leads to its context's chain (exactly: resume_c + 1).
 */
#include <dlfcn.h>
#include <string.h>

#include "async_frames.h"
#include "check.h"
#include "oracle.h"
#include "pac_probe.h"
#include "stacksnap.h"

#define DEPTH 64

__attribute__((noinline)) void resume_a(void) { __asm__ volatile(""); }
__attribute__((noinline)) void resume_b(void) { __asm__ volatile(""); }
__attribute__((noinline)) void resume_c(void) { __asm__ volatile(""); }

static uintptr_t g_async[DEPTH], g_os[DEPTH];
static int g_n_async, g_n_os;
static void *g_ctx_seen;

/* How the probe treats async_leaf's context slot for the capture. */
enum slot_mode { SLOT_AS_IS, SLOT_SIGNED, SLOT_UNREADABLE };
static enum slot_mode g_mode;
static uintptr_t g_slot_raw; /* what the walk found in the slot */

/* PACDB: only called when pac_cpu_signs() (it is not a HINT: it would be an
   undefined instruction elsewhere). Encoded by hand, so no assembler
   option is needed. */
static uintptr_t sign_db(uintptr_t p, uintptr_t modifier) {
#if defined(__aarch64__)
  register uintptr_t x17 __asm__("x17") = p;
  register uintptr_t x16 __asm__("x16") = modifier;
  __asm__ volatile(".inst 0xdac10e11" /* pacdb x17, x16 */
                   : "+r"(x17)
                   : "r"(x16));
  return x17;
#else
  (void)modifier;
  return p;
#endif
}

void async_probe(void *ctx) {
  async_ra_of_probe = (uintptr_t)__builtin_return_address(0);
  g_ctx_seen = ctx;
  /* async_leaf's record is the one our record's saved fp points to; its
     context is the word below it. */
  uintptr_t *record = __builtin_frame_address(0);
  uintptr_t *slot = (uintptr_t *)(record[0] & ~((uintptr_t)0xF << 60)) - 1;
  uintptr_t saved = *slot;
  if (g_mode == SLOT_SIGNED && pac_cpu_signs())
    *slot = sign_db(saved, (uintptr_t)slot | (uintptr_t)0xc31a << 48);
  else if (g_mode == SLOT_UNREADABLE)
    *slot = 8; /* aligned, never mapped */
  g_slot_raw = *slot;
  g_n_async = snap_capture_self(g_async, DEPTH, 0, SNAP_CAPTURE_ASYNC);
  g_n_os = snap_capture_self(g_os, DEPTH, 0, 0);
  *slot = saved;
  __asm__ volatile("" ::: "memory");
}

/* The async walk: frame 0 (into the probe), the probe's return address
   into async_leaf, then the chain's resume pcs + 1. */
static void check_chain(const char *what) {
  CHECK(g_n_async == 5, "%s: async walk has %d frames, expected 5", what,
        g_n_async);
  if (g_n_async == 5) {
    CHECK_EQ(g_async[1], async_ra_of_probe);
    CHECK_EQ(g_async[2], (uintptr_t)resume_a + 1);
    CHECK_EQ(g_async[3], (uintptr_t)resume_b + 1);
    CHECK_EQ(g_async[4], (uintptr_t)resume_c + 1);
  } else {
    oracle_print(what, g_async, g_n_async);
  }
}

int main(void) {
  async_context_t ctx_c = {NULL, resume_c, NULL};
  async_context_t ctx_b = {&ctx_c, resume_b, NULL};
  async_context_t ctx_a = {&ctx_b, resume_a, NULL};
  async_context_t mid_ctx = {NULL, resume_c, &ctx_a};

  /* A signed context slot, where the CPU signs. */
  g_mode = SLOT_SIGNED;
  async_run(&mid_ctx);
  printf("CPU signs: %d, context slot as the walk saw it: 0x%016lx "
         "(context %p)\n",
         pac_cpu_signs(), (unsigned long)g_slot_raw, (void *)&ctx_a);
  if (pac_cpu_signs())
    CHECK(g_slot_raw != (uintptr_t)&ctx_a, "the slot was not signed");
  check_chain("signed context");

  /* An unreadable context: async_leaf's frame is walked as an OS frame,
     into async_mid, whose own extended record holds a readable context
     (mid_ctx: resume_c, no parent), so the chain takes over there. */
  g_mode = SLOT_UNREADABLE;
  async_run(&mid_ctx);
  CHECK(g_n_async == 4,
        "unreadable context: async walk has %d frames, "
        "expected 4",
        g_n_async);
  if (g_n_async == 4) {
    CHECK_EQ(g_async[1], async_ra_of_probe);
    CHECK_EQ(g_async[2], async_ra_of_leaf);
    CHECK_EQ(g_async[3], (uintptr_t)resume_c + 1);
  }
  /* And the OS walk, which never looks at contexts, agrees up to there. */
  CHECK(g_n_os >= 4 && g_os[1] == async_ra_of_probe &&
            g_os[2] == async_ra_of_leaf,
        "unreadable context: the OS walk disagrees");
  if (check_failures) {
    oracle_print("async walk", g_async, g_n_async);
    oracle_print("OS walk", g_os, g_n_os);
  }

  /* As the compiler left it. */
  g_mode = SLOT_AS_IS;
  async_run(&mid_ctx);
  CHECK(g_ctx_seen == &ctx_a, "async_leaf got the wrong context");

  /* With the flag: [into async_leaf, resume_a+1, resume_b+1, resume_c+1]
     after frame 0 (the return address into the probe itself). */
  check_chain("async walk");

  /* Without: the OS stack through the tagged records. */
  CHECK(g_n_os >= 5, "OS walk: %d frames", g_n_os);
  if (g_n_os >= 5) {
    CHECK_EQ(g_os[1], async_ra_of_probe);
    CHECK_EQ(g_os[2], async_ra_of_leaf);
    CHECK_EQ(g_os[3], async_ra_of_mid);
    CHECK(oracle_find_fn(g_os, g_n_os, 0, (void *)main, 0) == 4,
          "main is frame %d, expected 4",
          oracle_find_fn(g_os, g_n_os, 0, (void *)main, 0));
  }
  if (check_failures)
    oracle_print("OS walk", g_os, g_n_os);
  return check_result("test_async_frames");
}
