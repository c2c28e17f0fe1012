/*
 * host_pure.c — the host twin of the emulated Apple backend's pure
 * functions (pure_seam.c), built from the same sources by the host
 * compiler. run_emulated.py --sdk compares the two.
 *
 * Reads requests from stdin, each: the 8-byte magic "SNAPPUR1", then
 * little-endian 64-bit words op, the offset of the input words in the
 * arena, the arena's length, then that many bytes of arena. The arena is
 * mapped at SNAP_EMU_ARENA (the emulator maps it there too, so pointers in
 * it are the same on both sides). Prints one line per request: the number
 * of output words, then each in hex.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "pure_seam.h"

static uint64_t out[SNAP_EMU_OUT_MAX];

int main(void) {
  unsigned char *arena = (unsigned char *)(uintptr_t)SNAP_EMU_ARENA;
  void *m = mmap(arena, SNAP_EMU_ARENA_SIZE, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (m != arena) {
    fprintf(stderr, "host_pure: cannot map the arena: %s\n", strerror(errno));
    return 2;
  }
  for (;;) {
    char magic[8];
    uint64_t hdr[3];
    if (fread(magic, 1, sizeof magic, stdin) != sizeof magic)
      return feof(stdin) ? 0 : 2;
    if (memcmp(magic, "SNAPPUR1", 8) != 0 ||
        fread(hdr, sizeof hdr[0], 3, stdin) != 3 ||
        hdr[2] > SNAP_EMU_ARENA_SIZE || hdr[1] >= hdr[2] ||
        fread(arena, 1, hdr[2], stdin) != hdr[2]) {
      fprintf(stderr, "host_pure: bad request\n");
      return 2;
    }
    uint64_t n = snap_emu_pure(hdr[0], (const uint64_t *)(arena + hdr[1]), out);
    printf("%llu", (unsigned long long)n);
    for (uint64_t i = 0; i < n && i < SNAP_EMU_OUT_MAX; i++)
      printf(" %llx", (unsigned long long)out[i]);
    printf("\n");
    memset(arena, 0, hdr[2]);
  }
}
