/*
 * test_async_frameless.c — a Swift async frame with a frame-pointer-less
 * function above it: the async chain starts at the async frame itself, not
 * at the function that merely left the frame pointer at its record.
 *
 * Stack at the probe (async_frameless.h): frameless_probe <- frameless_mid
 * (no record) <- frameless_async_leaf (extended record, context ctx_a) <-
 * frameless_run <- main. ctx_a -> ctx_b -> ctx_c -> NULL, resume pcs in
 * three marker functions. With SNAP_CAPTURE_ASYNC the walk must give
 * exactly: into frameless_probe (snap_capture_self's return), into
 * frameless_mid, into frameless_async_leaf, then resume_a+1, resume_b+1,
 * resume_c+1. The return addresses come from the compiler
 * (__builtin_return_address in each callee).
 *
 * Before the fix the tag was taken at frameless_mid's frame (fp still at
 * the leaf's record), so frame 2 was resume_a+1: the async function's own
 * frame was lost (Swift tasks blocked in libc lost theirs; tests/swift).
 */
#include <string.h>

#include "async_frameless.h"
#include "async_frames.h"
#include "check.h"
#include "oracle.h"
#include "stacksnap.h"

#define DEPTH 64

__attribute__((noinline)) void fl_resume_a(void) { __asm__ volatile(""); }
__attribute__((noinline)) void fl_resume_b(void) { __asm__ volatile(""); }
__attribute__((noinline)) void fl_resume_c(void) { __asm__ volatile(""); }

uintptr_t frameless_ra_of_probe;
static uintptr_t g_pcs[DEPTH];
static int g_n;
static void *g_ctx_seen;
static int g_mid_has_no_record;

void frameless_probe(void *ctx) {
  frameless_ra_of_probe = (uintptr_t)__builtin_return_address(0);
  g_ctx_seen = ctx;
  /* The setup itself: frameless_mid must have pushed no record, so the
     record our own saved fp points at is the async leaf's (tagged). */
  uintptr_t caller_fp = *(volatile uintptr_t *)__builtin_frame_address(0);
  uintptr_t saved = caller_fp ? *(volatile uintptr_t *)caller_fp : 0;
  g_mid_has_no_record = (saved >> 60) == 1;
  g_n = snap_capture_self(g_pcs, DEPTH, 0, SNAP_CAPTURE_ASYNC);
  __asm__ volatile("" ::: "memory");
}

int main(void) {
  async_context_t ctx_c = {NULL, fl_resume_c, NULL};
  async_context_t ctx_b = {&ctx_c, fl_resume_b, NULL};
  async_context_t ctx_a = {&ctx_b, fl_resume_a, NULL};
  frameless_run(&ctx_a);
  CHECK(g_ctx_seen == &ctx_a, "frameless_async_leaf passed the wrong context");
  CHECK(g_mid_has_no_record,
        "setup: frameless_mid kept a frame record (built without "
        "-fomit-frame-pointer?): nothing to test");

  CHECK_EQ(g_n, 6);
  if (g_n >= 3) {
    CHECK_EQ(g_pcs[1], frameless_ra_of_probe);
    CHECK_EQ(g_pcs[2], frameless_ra_of_mid);
  }
  if (g_n == 6) {
    CHECK_EQ(g_pcs[3], (uintptr_t)fl_resume_a + 1);
    CHECK_EQ(g_pcs[4], (uintptr_t)fl_resume_b + 1);
    CHECK_EQ(g_pcs[5], (uintptr_t)fl_resume_c + 1);
  }
  if (check_failures)
    oracle_print("async walk", g_pcs, g_n);
  return check_result("test_async_frameless");
}
