/*
 * test_walker_frames.c — a signal frame never leads a walk into the
 * walker's own frames.
 *
 * A corrupt stack can hold a fake signal frame: a return address at a
 * signal-return trampoline, and registers the walk then resumes from. If
 * the interrupted sp it names lies on this thread's stack below the walk's
 * entry, the walk would go on over the walker's own state and frames,
 * which it writes while it reads them: the pcs it reports are the walker's
 * (fuzz_unwind's fast and reader-table walks disagreed there, in CI). A
 * real interrupted sp on this stack always lies above the handler, hence
 * above the walk's entry.
 *
 * The stacks are built in buffers: frame 0 is a return address at a copy
 * of the kernel's rt_sigreturn trampoline (the Linux ABI's bytes, in this
 * program's read-only data: no unwind entry covers it, so the signal
 * reader recognises it by its code) and the signal frame's ucontext_t is
 * filled through <ucontext.h>. Checked, both for the fast path and for
 * the reader table:
 *   - an interrupted sp among the walker's frames, and one far below them
 *     on this stack: the walk ends at the trampoline (1 pc);
 *   - an interrupted sp above this frame (a buffer in main's frame), and
 *     one in heap memory (another stack): the walk crosses, the next pc is
 *     the interrupted one, then the frame record there.
 */
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "capture/walk.h"
#include "check.h"

#define MAXPCS 16

/* rt_sigreturn: system call 15 on x86_64, 139 on arm64 (Linux ABI). */
#if defined(__x86_64__)
static const unsigned char k_trampoline[16] = {0x48, 0xc7, 0xc0, 0x0f, 0x00,
                                               0x00, 0x00, 0x0f, 0x05};
#define UC_OFFSET 0 /* the handler's ret popped the return address */
#elif defined(__aarch64__)
static const unsigned char k_trampoline[16] = {0x68, 0x11, 0x80, 0xd2,
                                               0x01, 0x00, 0x00, 0xd4};
#define UC_OFFSET sizeof(siginfo_t) /* rt_sigframe: { info; uc } */
#endif
/* The interrupted pc: bytes no trampoline, no unwind entry. */
static const unsigned char k_interrupted[16] = {1, 2, 3, 4};
#define RA_NEXT ((uintptr_t)0x1234560) /* the return address in its record */

/* A fake stack: frame 0 at the trampoline, sp at the ucontext. */
typedef struct fake {
  _Alignas(16) unsigned char bytes[UC_OFFSET + sizeof(ucontext_t) + 64];
} fake_t;

static void make_frame(fake_t *f, uintptr_t sp, uintptr_t fp) {
  memset(f, 0, sizeof *f);
  ucontext_t uc;
  memset(&uc, 0, sizeof uc);
#if defined(__x86_64__)
  uc.uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)k_interrupted;
  uc.uc_mcontext.gregs[REG_RSP] = (greg_t)sp;
  uc.uc_mcontext.gregs[REG_RBP] = (greg_t)fp;
#elif defined(__aarch64__)
  uc.uc_mcontext.pc = (uintptr_t)k_interrupted;
  uc.uc_mcontext.sp = sp;
  uc.uc_mcontext.regs[29] = fp;
#endif
  memcpy(f->bytes + UC_OFFSET, &uc, sizeof uc);
}

/* The frame address of a function this one calls: just under the caller's
   stack pointer, where the walk's entry frame will be. */
__attribute__((noinline)) static uintptr_t callee_frame(void) {
  uintptr_t fa = (uintptr_t)__builtin_frame_address(0);
  __asm__ volatile("" : "+r"(fa));
  return fa;
}

/* Walks f both ways; returns the fast path's count after checking that
   the reader table gives the same pcs. under > 0: first points the signal
   frame's sp that many bytes under the walk's entry frame (and fp 64 bytes
   above that). */
__attribute__((noinline)) static int walk_fake(fake_t *f, size_t under,
                                               uintptr_t *pcs) {
  if (under) {
    uintptr_t sp = (callee_frame() - under) & ~(uintptr_t)15;
    make_frame(f, sp, sp + 64);
  }
  snap__regs_t regs = {(uintptr_t)k_trampoline, (uintptr_t)f->bytes, 0, 0,
                       false};
  uintptr_t hi = (uintptr_t)(f->bytes + sizeof f->bytes), slow[MAXPCS];
  int n = snap__walk_bounded(&regs, false, 0, hi, pcs, MAXPCS, 0);
  int m = snap__walk_bounded_readers(&regs, false, 0, hi, slow, MAXPCS, 0);
  CHECK(n == m && memcmp(pcs, slow, (size_t)n * sizeof *pcs) == 0,
        "fast path %d pcs, reader table %d", n, m);
  CHECK(n >= 1 && pcs[0] == (uintptr_t)k_trampoline, "frame 0 %#lx",
        n >= 1 ? (unsigned long)pcs[0] : 0ul);
  return n;
}

/* Makes sure the stack is mapped well below this frame. */
__attribute__((noinline)) static void touch_stack(void) {
  volatile unsigned char pad[64 * 1024];
  for (size_t i = 0; i < sizeof pad; i += 256)
    pad[i] = 0;
}

/* An interrupted sp under the walk's entry: among the walker's frames and
   far below them. */
static void under_walker(fake_t *f) {
  const size_t under[] = {16, 64, 256, 512, 48 * 1024};
  for (size_t i = 0; i < sizeof under / sizeof under[0]; i++) {
    uintptr_t pcs[MAXPCS];
    int n = walk_fake(f, under[i], pcs);
    CHECK(n == 1,
          "interrupted sp %zu bytes under the walk's entry: %d pcs "
          "(%#lx)",
          under[i], n, n > 1 ? (unsigned long)pcs[1] : 0ul);
  }
}

/* An interrupted sp at a frame record in `at` (16-aligned, 8 words). */
static void crosses_to(fake_t *f, uintptr_t *at, const char *what) {
  at[0] = 0, at[1] = 0;       /* where the interrupted sp points */
  at[2] = 0, at[3] = RA_NEXT; /* the record at fp: [saved fp 0, ra] */
  make_frame(f, (uintptr_t)at, (uintptr_t)&at[2]);
  uintptr_t pcs[MAXPCS];
  int n = walk_fake(f, 0, pcs);
  CHECK(n >= 2 && pcs[1] == (uintptr_t)k_interrupted, "%s: %d pcs, pcs[1] %#lx",
        what, n, n >= 2 ? (unsigned long)pcs[1] : 0ul);
#if defined(__x86_64__) /* arm64 hands out the saved lr first */
  CHECK(n == 3 && pcs[2] == RA_NEXT, "%s: %d pcs", what, n);
#endif
}

int main(void) {
  fake_t *f = malloc(sizeof *f);
  _Alignas(16) uintptr_t above[8]; /* main's frame: above every walk */
  uintptr_t *heap = aligned_alloc(16, 8 * sizeof(uintptr_t));
  CHECK(f && heap, "out of memory");
  if (!f || !heap)
    return 1;
  touch_stack();
  under_walker(f);
  crosses_to(f, above, "this stack, above the walk");
  crosses_to(f, heap, "another stack (heap)");
  free(heap);
  free(f);
  return check_result("test_walker_frames");
}
