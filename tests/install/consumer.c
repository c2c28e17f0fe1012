/* Built against an installed stacksnap by check_install.sh (shared, static
   archive, fully static executable). Fails unless:
   - the library's snap_version() is the installed header's version;
   - its own stack comes back whole: from here through main to the C
     library's entry (__libc_start_main on glibc), named. A fully static
     executable linked without .eh_frame_hdr stops at the first frame
     without a frame pointer, inside the C library, and fails here. */
#include <stacksnap.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int has(const snap_stack_t *s, const char *name) {
  for (int i = 0; i < snap_stack_count(s); i++) {
    const snap_frame_t *f = snap_stack_frame(s, i);
    if (f->symbol && strcmp(f->symbol, name) == 0)
      return 1;
  }
  return 0;
}

__attribute__((noinline)) static int check_stack(void) {
  uintptr_t pcs[64];
  int n = snap_capture_self(pcs, 64, 0, 0);
  printf("stacksnap consumer: %d frames\n", n);
  if (n < 2) {
    fprintf(stderr, "stacksnap consumer: expected >= 2 frames (%s)\n",
            n < 0 ? snap_strerror(n) : "too few");
    return 1;
  }
  const snap_stack_t *s = NULL;
  int rc = snap_callstack_symbols_ex(64, 0, &s);
  int ok = rc == SNAP_OK && has(s, "main");
#ifdef __GLIBC__
  ok = ok && has(s, "__libc_start_main");
#endif
  if (!ok) {
    fprintf(stderr, "stacksnap consumer: stack not named whole (%s):\n",
            snap_strerror(rc));
    for (int i = 0; i < snap_stack_count(s); i++)
      fprintf(stderr, "  %s\n", snap_stack_line(s, i));
  }
  snap_stack_release(s);
  __asm__ volatile("" ::: "memory");
  return !ok;
}

int main(void) {
  if (strcmp(snap_version(), SNAP_VERSION_STRING) != 0) {
    fprintf(stderr, "stacksnap consumer: library %s, header %s\n",
            snap_version(), SNAP_VERSION_STRING);
    return 1;
  }
  int rc = check_stack();
  __asm__ volatile("" ::: "memory");
  return rc;
}
