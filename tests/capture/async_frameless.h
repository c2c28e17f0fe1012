/*
 * async_frameless.h — what test_async_frameless.c, the clang-built
 * async_frameless_clang.c and the frame-pointer-less async_frameless_mid.c
 * share.
 *
 * The stack at the probe: frameless_probe <- frameless_mid (no frame
 * record: compiled with -fomit-frame-pointer, as Debian's libc is) <-
 * frameless_async_leaf (a Swift async frame: extended record, context
 * below it) <- frameless_run <- main.
 */
#ifndef SNAP_TEST_ASYNC_FRAMELESS_H
#define SNAP_TEST_ASYNC_FRAMELESS_H

#include <stdint.h>

/* Return addresses, each recorded by the function called there:
   frameless_ra_of_probe — into frameless_mid (set by frameless_probe);
   frameless_ra_of_mid   — into frameless_async_leaf (set by frameless_mid). */
extern uintptr_t frameless_ra_of_probe, frameless_ra_of_mid;

/* Defined by the test: captures with SNAP_CAPTURE_ASYNC. */
void frameless_probe(void *ctx);
/* async_frameless_mid.c: calls frameless_probe(ctx). */
void frameless_mid(void *ctx);
/* async_frameless_clang.c: calls frameless_async_leaf(ctx), which calls
   frameless_mid(ctx). */
void frameless_run(void *ctx);

#endif
