/*
 * test_ptrauth.c — return addresses come out of a walk without
 * pointer-authentication bits.
 *
 * In a build with -mbranch-protection=standard run on a CPU with pointer
 * authentication (qemu -cpu max), the return addresses saved in frame
 * records are signed: their top bits hold a code. The test reads those raw
 * words from eight frames, checks they are signed (so the build really
 * exercises PAC), and checks that the walker returns each of them with the
 * code stripped — and that every pc of the walk lies inside an executable
 * image, which no signed pointer does. Elsewhere (x86_64, arm64 without
 * PAC) the raw words are the addresses themselves and the same checks hold
 * trivially.
 *
 * Swift async contexts are signed with data keys (the fp - 8 slot: DB; a
 * context's parent: DA) and their resume pcs with IA, where the walker
 * strips with XPACLRI, an instruction-pointer strip: on a PAC CPU, stack,
 * heap and code pointers signed with each of those keys must come back as
 * themselves.
 */
#include <stdlib.h>

#include "capture/arch.h"
#include "check.h"
#include "pac_probe.h"
#include "stacksnap.h"

#if defined(__ARM_FEATURE_PAC_DEFAULT)
#define PAC_BUILD 1
#else
#define PAC_BUILD 0
#endif

#if defined(__aarch64__)
/* Non-HINT instructions (undefined without PAC): called only when
   pac_cpu_signs(). Encoded by hand: pac{da,db,ia} x17, x16. */
#define SIGN_WITH(insn)                                                        \
  static uintptr_t sign_##insn(uintptr_t p, uintptr_t modifier) {              \
    register uintptr_t x17 __asm__("x17") = p;                                 \
    register uintptr_t x16 __asm__("x16") = modifier;                          \
    __asm__ volatile(SIGN_##insn : "+r"(x17) : "r"(x16));                      \
    return x17;                                                                \
  }
#define SIGN_da ".inst 0xdac10a11"
#define SIGN_db ".inst 0xdac10e11"
#define SIGN_ia ".inst 0xdac10211"
SIGN_WITH(da)
SIGN_WITH(db)
SIGN_WITH(ia)

static void strip_async_keys(void) {
  int local = 0;
  void *heap = malloc(64);
  uintptr_t ptrs[] = {(uintptr_t)&local, (uintptr_t)heap,
                      (uintptr_t)strip_async_keys};
  uintptr_t (*sign[])(uintptr_t, uintptr_t) = {sign_da, sign_db, sign_ia};
  const char *key[] = {"DA", "DB", "IA"};
  int changed = 0;
  for (int k = 0; k < 3; k++) {
    for (int i = 0; i < 3; i++) {
      /* Apple's discriminator for the context slot: its address blended
         with 0xc31a. */
      uintptr_t mod = (uintptr_t)&ptrs[i] | (uintptr_t)0xc31a << 48;
      uintptr_t s = sign[k](ptrs[i], mod);
      changed += s != ptrs[i];
      CHECK(snap__strip_pac(s) == ptrs[i],
            "%s-signed 0x%lx (of 0x%lx) stripped to 0x%lx", key[k],
            (unsigned long)s, (unsigned long)ptrs[i],
            (unsigned long)snap__strip_pac(s));
    }
  }
  CHECK(changed > 0, "nine signatures changed nothing");
  printf("data and instruction keys: %d of 9 signed pointers differed, all "
         "stripped back\n",
         changed);
  free(heap);
}
#endif

#define LEVELS 8

/* Reads the raw return addresses saved in the frame records of its LEVELS
   callers (rec(0) .. rec(LEVELS-1)), and captures. */
__attribute__((noinline)) static void probe(uintptr_t raw[LEVELS],
                                            uintptr_t *pcs, int *n) {
  uintptr_t *record = __builtin_frame_address(0);
  for (int i = 0; i < LEVELS; i++) {
    raw[i] = record[1];
    record = (uintptr_t *)record[0];
  }
  *n = snap_capture_self(pcs, 64, 0, 0);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void rec(int depth, uintptr_t raw[LEVELS],
                                          uintptr_t *pcs, int *n) {
  if (depth == 0)
    probe(raw, pcs, n);
  else
    rec(depth - 1, raw, pcs, n);
  __asm__ volatile("" ::: "memory");
}

int main(void) {
  uintptr_t raw[LEVELS], pcs[64];
  int n;
  rec(LEVELS, raw, pcs, &n);
  CHECK(n > LEVELS + 1, "%d frames", n);
  /* A signature can be all zeros by chance (it has only a few bits with a
     48-bit address space): over 8 different return addresses it cannot. */
  int signed_count = 0;
  for (int i = 0; i < LEVELS; i++)
    signed_count += (raw[i] >> 48) != 0;
  printf("PAC build: %d, CPU signs: %d, saved return addresses signed: %d "
         "of %d (e.g. 0x%016lx)\n",
         PAC_BUILD, pac_cpu_signs(), signed_count, LEVELS,
         (unsigned long)raw[0]);
  if (PAC_BUILD && pac_cpu_signs())
    CHECK(signed_count > 0, "a PAC build on a PAC CPU signed nothing");
  /* Frame i + 1 is the return address raw[i], stripped: signing only fills
     bits above the address, so the two may differ only above the pc's
     highest set bit. */
  for (int i = 0; i < LEVELS && i + 1 < n; i++) {
    uintptr_t pc = pcs[i + 1], diff = raw[i] ^ pc;
    CHECK(pc >> 48 == 0, "frame %d still carries PAC bits: 0x%lx", i + 1,
          (unsigned long)pc);
    CHECK(pc != 0 &&
              (diff == 0 || __builtin_ctzll(diff) > 63 - __builtin_clzll(pc)),
          "frame %d 0x%lx is not the saved 0x%lx, stripped", i + 1,
          (unsigned long)pc, (unsigned long)raw[i]);
  }
#if defined(__aarch64__)
  if (pac_cpu_signs())
    strip_async_keys();
#endif
  for (int i = 0; i < n; i++) {
    snap_image_info_t info = {.size = sizeof info};
    CHECK(snap_image_lookup(pcs[i] - 1, &info) == SNAP_OK,
          "frame %d (0x%lx) is in no image", i, (unsigned long)pcs[i]);
  }
  return check_result("test_ptrauth");
}
