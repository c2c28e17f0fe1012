/*
 * async_frames.h — what test_async_frames.c and the clang-built
 * async_frames_clang.c share.
 *
 * A Swift async context begins with two words: the parent context and the
 * pc where the parent resumes. The third field is the test's own, so that
 * async_mid can hand async_leaf its context.
 */
#ifndef SNAP_TEST_ASYNC_FRAMES_H
#define SNAP_TEST_ASYNC_FRAMES_H

#include <stdint.h>

typedef struct async_context {
  struct async_context *parent;
  void (*resume)(void);
  struct async_context *child_for_test;
} async_context_t;

/* Return addresses, recorded by the functions themselves:
   async_ra_of_probe — into async_leaf (set by async_probe);
   async_ra_of_leaf  — into async_mid;
   async_ra_of_mid   — into async_run. */
extern uintptr_t async_ra_of_probe, async_ra_of_leaf, async_ra_of_mid;

/* Called by async_leaf with its context; defined by the test. */
void async_probe(void *ctx);
/* Calls async_mid(mid_ctx), which calls async_leaf(mid_ctx->child). */
void async_run(async_context_t *mid_ctx);

#endif
