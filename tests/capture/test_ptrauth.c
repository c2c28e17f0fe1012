/*
 * test_ptrauth.c — return addresses come out of a walk without
 * pointer-authentication bits.
 *
 * In a build with -mbranch-protection=standard run on a CPU with pointer
 * authentication (qemu -cpu max), the return address saved in a frame
 * record is signed: its top bits hold a code. The test reads that raw word,
 * checks it is signed (so the build really exercises PAC), and checks that
 * the walker's frame 1 (that same return address) equals the same address with
 * the code stripped — and that every pc of the walk lies inside an executable
 * image, which no signed pointer does. Elsewhere (x86_64, arm64 without PAC)
 * the raw word is the address itself and the same checks hold trivially.
 */
#include "check.h"
#include "stacksnap.h"

#if defined(__ARM_FEATURE_PAC_DEFAULT)
#define PAC_BUILD 1
#else
#define PAC_BUILD 0
#endif

static int cpu_has_pac(void) {
#if defined(__aarch64__)
  /* xpaclri strips on a PAC CPU and is a no-op elsewhere: sign a known
     pointer with pacia1716 (also a HINT) and see whether it changes. */
  register uintptr_t x17 __asm__("x17") = 0x1000;
  register uintptr_t x16 __asm__("x16") = 0;
  __asm__ volatile("hint #8" /* pacia1716 */ : "+r"(x17) : "r"(x16));
  return x17 != 0x1000;
#else
  return 0;
#endif
}

__attribute__((noinline)) static void probe(uintptr_t *raw, uintptr_t *pcs,
                                            int *n) {
  *raw = ((uintptr_t *)__builtin_frame_address(0))[1];
  *n = snap_capture_self(pcs, 64, 0, 0);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void caller(uintptr_t *raw, uintptr_t *pcs,
                                             int *n) {
  probe(raw, pcs, n);
  __asm__ volatile("" ::: "memory");
}

int main(void) {
  uintptr_t raw, pcs[64];
  int n;
  caller(&raw, pcs, &n);
  CHECK(n > 2, "%d frames", n);
  int signed_ra = (raw >> 48) != 0;
  printf("PAC build: %d, CPU signs: %d, saved return address 0x%016lx\n",
         PAC_BUILD, cpu_has_pac(), (unsigned long)raw);
  if (PAC_BUILD && cpu_has_pac())
    CHECK(signed_ra, "a PAC build on a PAC CPU saved an unsigned address");
  /* Frame 1 is probe's return address into caller: the raw word, stripped.
   */
  CHECK(pcs[1] >> 48 == 0, "frame 1 still carries PAC bits: 0x%lx",
        (unsigned long)pcs[1]);
  /* Signing only fills bits above the address: raw and frame 1 may differ
     only above frame 1's highest set bit. */
  uintptr_t diff = raw ^ pcs[1];
  CHECK(pcs[1] != 0 &&
            (diff == 0 || __builtin_ctzll(diff) > 63 - __builtin_clzll(pcs[1])),
        "frame 1 0x%lx is not the saved address 0x%lx, stripped",
        (unsigned long)pcs[1], (unsigned long)raw);
  for (int i = 0; i < n; i++) {
    snap_image_info_t info;
    CHECK(snap_image_lookup(pcs[i] - 1, &info) == SNAP_OK,
          "frame %d (0x%lx) is in no image", i, (unsigned long)pcs[i]);
  }
  return check_result("test_ptrauth");
}
