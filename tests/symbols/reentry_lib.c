/*
 * reentry_lib.c — a library whose constructor asks stacksnap for its stack,
 * as a hooked API called from a library's initialiser does. It runs inside
 * dlopen, with the loader's lock held. snap_callstack_symbols comes from
 * the test executable (exported), so the library links nothing.
 */
#include "stacksnap.h"

int snap_reentry_frames;

__attribute__((constructor)) static void ask_during_dlopen(void) {
  const snap_stack_t *s = snap_callstack_symbols(32, 0);
  snap_reentry_frames = snap_stack_count(s);
  snap_stack_release(s);
}
