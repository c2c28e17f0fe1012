/* Built against an installed stacksnap by check_install.sh: captures its own
   stack and fails unless at least two frames come back. */
#include <stacksnap.h>

#include <stdint.h>
#include <stdio.h>

int main(void) {
  uintptr_t pcs[64];
  int n = snap_capture_self(pcs, 64, 0, 0);
  printf("stacksnap consumer: %d frames\n", n);
  if (n < 2) {
    fprintf(stderr, "stacksnap consumer: expected >= 2 frames (%s)\n",
            n < 0 ? snap_strerror(n) : "too few");
    return 1;
  }
  return 0;
}
