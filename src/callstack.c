/*
 * callstack.c — the caller's stack, named: snap_callstack_symbols,
 * snap_callstack_symbols_ex and snap_print_callstack.
 *
 * A thin facade over two layers that do not know each other: capture
 * (src/capture, snap_capture_self) then naming (src/symbols,
 * snap_symbolicate_ex). The arrows point from here down into both; naming
 * never captures, so src/symbols has no arrow into src/capture.
 *
 * Algorithm: check the arguments, bring the image table up to date (app-only
 * filtering needs it at capture, naming to check a cache hit), capture in
 * one out-of-line helper with a
 * skip that drops the helper's and the public function's own frames (so
 * frame 0 is the public function's caller), name the pcs, print them for
 * snap_print_callstack.
 *
 * Must not: run in the stopped window or in a signal handler (naming
 * allocates and locks on a cache miss).
 */
#include <string.h>

#include "images/images.h"
#include "platform/platform.h"
#include "stacksnap.h"
#include "symbols/symbolicate.h"

/* Every flag the facade takes: capture's, and naming's own. */
#define CALLSTACK_FLAGS                                                        \
  (SNAP_CAPTURE_ALL_FLAGS | SNAP_SYMBOLICATE_EXACT_PC0 |                       \
   SNAP_SYMBOLICATE_SOURCE_LINES | SNAP_SYMBOLICATE_MANGLED)

/* Captures the stack of the public function's caller and names it. skip 2:
   frame 0 of the capture is the return address into this helper, frame 1
   the one into the public function; frame 2 is its caller's. noinline
   keeps that count true. */
__attribute__((noinline)) static int
capture_and_name(int max, unsigned flags, const snap_stack_t **out) {
  *out = NULL;
  if (max <= 0 || max > SNAP_MAX_FRAMES || (flags & ~CALLSTACK_FLAGS))
    return SNAP_EINVAL;
  uintptr_t pcs[SNAP_MAX_FRAMES];
  /* Filtering by app at capture needs the images loaded now, as naming
     does (a cache hit is checked against them): one refresh serves both. */
  bool current = snap__images_refresh_if_stale() == SNAP_OK;
  int n = snap_capture_self(pcs, max, 2, flags & SNAP_CAPTURE_ALL_FLAGS);
  if (n < 0)
    return n;
  /* App-only filtering already happened at capture, on cheaper data.
     EXACT_PC0 is not passed on: every pcs[i] here, frame 0 included, is a
     return address (into the caller), so naming pcs[0] as an exact pc
     would name the function after a call that ends its caller. */
  return snap__symbolicate(
      pcs, n,
      flags & (SNAP_SYMBOLICATE_SOURCE_LINES | SNAP_SYMBOLICATE_MANGLED),
      current, out);
}

int snap_callstack_symbols_ex(int max, unsigned flags,
                              const snap_stack_t **out) {
  if (!out)
    return SNAP_EINVAL;
  int rc = capture_and_name(max, flags, out);
  /* Not a tail call: the capture must see this frame (skip counts it). */
  __asm__ volatile("" ::: "memory");
  return rc;
}

const snap_stack_t *snap_callstack_symbols(int max, unsigned flags) {
  const snap_stack_t *s;
  (void)capture_and_name(max, flags, &s);
  __asm__ volatile("" ::: "memory");
  return s;
}

int snap_print_callstack(int fd, int max, unsigned flags) {
  if (fd < 0)
    return SNAP_EINVAL;
  const snap_stack_t *s;
  int rc = capture_and_name(max, flags, &s);
  __asm__ volatile("" ::: "memory");
  if (rc < 0)
    return rc;
  rc = snap_stack_count(s);
  for (int i = 0; i < snap_stack_count(s) && rc >= 0; i++) {
    const char *line = snap_stack_line(s, i);
    if (snap__plat_write_all(fd, line, strlen(line)) != SNAP_OK ||
        snap__plat_write_all(fd, "\n", 1) != SNAP_OK)
      rc = SNAP_EIO;
  }
  snap_stack_release(s);
  return rc;
}
