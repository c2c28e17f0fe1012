/*
 * test_stack_retain.c — snap_stack_retain: a stack kept by two owners
 * stays whole until both have released it. The witness is the cache's
 * own accounting turned off (cap 0: nothing else holds the stack), and
 * the frames read through the second owner after the first let go.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "stacksnap.h"

__attribute__((noinline)) static const snap_stack_t *named_here(void) {
  return snap_callstack_symbols(8, 0);
}

int main(void) {
  CHECK(snap_stack_retain(NULL) == NULL, "retain(NULL)");
  snap_set_symbol_cache_limit(0); /* only the owners hold it */
  const snap_stack_t *a = named_here();
  CHECK(a != NULL, "no stack");
  const snap_stack_t *b = snap_stack_retain(a);
  CHECK(b == a, "retain returns its argument");
  const snap_frame_t *f = snap_stack_frame(a, 0);
  CHECK(f && f->symbol && strcmp(f->symbol, "named_here") == 0, "frame 0: %s",
        f && f->symbol ? f->symbol : "(none)");
  char name[64];
  snprintf(name, sizeof name, "%s", f->symbol);
  snap_stack_release(a); /* the first owner lets go */
  /* Under ASan a freed stack read here is a use-after-free report. */
  f = snap_stack_frame(b, 0);
  CHECK(f && f->symbol && strcmp(f->symbol, name) == 0, "after one release: %s",
        f && f->symbol ? f->symbol : "(none)");
  CHECK(snap_stack_line(b, 0) != NULL, "a line");
  snap_stack_release(b);
  return check_result("test_stack_retain");
}
