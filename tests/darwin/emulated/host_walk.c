/*
 * host_walk.c — the host twin of the emulated Apple walker: the same
 * portable core and the same seam (emu_seam.c), built by the host compiler,
 * walking the same laid-out memory at the same addresses. run_emulated.py
 * compares the two on every case.
 *
 * Reads cases from stdin, each: the 8-byte magic "SNAPEMU1", the world and
 * the call block (emu_seam.h, little-endian 64-bit words), then the bytes
 * of each region in order. Maps each region at its own address
 * (MAP_FIXED_NOREPLACE: an address taken on this host is an error, never
 * silently another mapping), walks, unmaps, and prints one line per case:
 * "n pc... reads" in hex, n and reads in decimal.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "emu_seam.h"

static int read_all(void *dst, size_t n) {
  return fread(dst, 1, n, stdin) == n;
}

int main(void) {
  char magic[8];
  for (;;) {
    if (fread(magic, 1, sizeof magic, stdin) != sizeof magic)
      return feof(stdin) ? 0 : 2;
    struct snap_emu_call call;
    if (memcmp(magic, "SNAPEMU1", 8) != 0 ||
        !read_all(&snap_emu_world, sizeof snap_emu_world) ||
        !read_all(&call, sizeof call) ||
        snap_emu_world.n_regions > SNAP_EMU_REGIONS) {
      fprintf(stderr, "host_walk: bad case header\n");
      return 2;
    }
    for (uint64_t i = 0; i < snap_emu_world.n_regions; i++) {
      struct snap_emu_region *r = &snap_emu_world.regions[i];
      size_t len = (size_t)(r->hi - r->lo);
      void *at = (void *)(uintptr_t)r->lo;
      void *m = mmap(at, len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
      if (m != at) {
        fprintf(stderr, "host_walk: cannot map %#llx+%#zx: %s\n",
                (unsigned long long)r->lo, len, strerror(errno));
        return 2;
      }
      if (!read_all(m, len)) {
        fprintf(stderr, "host_walk: short region\n");
        return 2;
      }
    }
    snap_emu_world.reads = 0;
    int n = snap_emu_walk(&call);
    printf("%d", n);
    for (int i = 0; i < n; i++)
      printf(" %llx", (unsigned long long)call.pcs[i]);
    printf(" %llu\n", (unsigned long long)snap_emu_world.reads);
    for (uint64_t i = 0; i < snap_emu_world.n_regions; i++) {
      struct snap_emu_region *r = &snap_emu_world.regions[i];
      munmap((void *)(uintptr_t)r->lo, (size_t)(r->hi - r->lo));
    }
  }
}
