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
 */
#include <dlfcn.h>
#include <string.h>

#include "async_frames.h"
#include "check.h"
#include "oracle.h"
#include "stacksnap.h"

#define DEPTH 64

__attribute__((noinline)) void resume_a(void) { __asm__ volatile(""); }
__attribute__((noinline)) void resume_b(void) { __asm__ volatile(""); }
__attribute__((noinline)) void resume_c(void) { __asm__ volatile(""); }

static uintptr_t g_async[DEPTH], g_os[DEPTH];
static int g_n_async, g_n_os;
static void *g_ctx_seen;

void async_probe(void *ctx) {
  async_ra_of_probe = (uintptr_t)__builtin_return_address(0);
  g_ctx_seen = ctx;
  g_n_async = snap_capture_self(g_async, DEPTH, 0, SNAP_CAPTURE_ASYNC);
  g_n_os = snap_capture_self(g_os, DEPTH, 0, 0);
  __asm__ volatile("" ::: "memory");
}

int main(void) {
  async_context_t ctx_c = {NULL, resume_c, NULL};
  async_context_t ctx_b = {&ctx_c, resume_b, NULL};
  async_context_t ctx_a = {&ctx_b, resume_a, NULL};
  async_context_t mid_ctx = {NULL, resume_c, &ctx_a};
  async_run(&mid_ctx);
  CHECK(g_ctx_seen == &ctx_a, "async_leaf got the wrong context");

  /* With the flag: [into async_leaf, resume_a+1, resume_b+1, resume_c+1]
     after frame 0 (the return address into the probe itself). */
  CHECK_EQ(g_n_async, 5);
  if (g_n_async == 5) {
    CHECK_EQ(g_async[1], async_ra_of_probe);
    CHECK_EQ(g_async[2], (uintptr_t)resume_a + 1);
    CHECK_EQ(g_async[3], (uintptr_t)resume_b + 1);
    CHECK_EQ(g_async[4], (uintptr_t)resume_c + 1);
  } else {
    oracle_print("async walk", g_async, g_n_async);
  }

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
