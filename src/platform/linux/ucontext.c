/*
 * ucontext.c — registers out of the ucontext_t the kernel gives a signal
 * handler, out of the signal frame a signal-return trampoline unwinds, and
 * how to recognise such a trampoline by its code.
 *
 * One block per architecture; the layouts are the kernel's (rt_sigframe).
 * Must not: read the signal frame directly — it may sit on another stack
 * (sigaltstack) whose bounds the walker does not know.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "platform/linux/linux.h"

void snap__linux_regs_from_ucontext(const void *ucv, snap__regs_t *regs) {
  const ucontext_t *uc = ucv;
#if defined(__x86_64__)
  regs->pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  regs->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
  regs->fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
  regs->lr = 0;
  regs->lr_valid = false;
#elif defined(__aarch64__)
  regs->pc = (uintptr_t)uc->uc_mcontext.pc;
  regs->sp = (uintptr_t)uc->uc_mcontext.sp;
  regs->fp = (uintptr_t)uc->uc_mcontext.regs[29];
  regs->lr = (uintptr_t)uc->uc_mcontext.regs[30];
  regs->lr_valid = true;
#else
#error "unsupported architecture"
#endif
}

void snap__linux_wait_regs_from_ucontext(const void *ucv,
                                         snap__plat_wait_regs_t *w) {
  const ucontext_t *uc = ucv;
  w->source = SNAP__WAIT_REGS_THREAD;
#if defined(__x86_64__)
  const greg_t *g = uc->uc_mcontext.gregs;
  w->pc = (uintptr_t)g[REG_RIP];
  w->nr = (int64_t)g[REG_RAX];
  w->args[0] = (uint64_t)g[REG_RDI];
  w->args[1] = (uint64_t)g[REG_RSI];
  w->args[2] = (uint64_t)g[REG_RDX];
  w->args[3] = (uint64_t)g[REG_R10];
  w->args[4] = (uint64_t)g[REG_R8];
  w->args[5] = (uint64_t)g[REG_R9];
#elif defined(__aarch64__)
  w->pc = (uintptr_t)uc->uc_mcontext.pc;
  w->nr = (int64_t)uc->uc_mcontext.regs[8];
  for (int i = 0; i < 6; i++)
    w->args[i] = (uint64_t)uc->uc_mcontext.regs[i];
#endif
}

/* Where the ucontext sits relative to the sp the trampoline starts with.
   x86_64: the handler's `ret` popped rt_sigframe.pretcode, so sp points at
   rt_sigframe.uc. arm64: rt_sigframe is { siginfo_t info; ucontext_t uc; }
   at sp. */
#if defined(__x86_64__)
#define UC_OFFSET 0
#elif defined(__aarch64__)
#define UC_OFFSET sizeof(siginfo_t)
#endif

bool snap__plat_sigframe_regs(uintptr_t sp, snap__regs_t *out) {
  /* Only the general registers: all of mcontext_t is over 4 KiB on arm64
     (its reserved extension area). */
  uintptr_t uc = sp + UC_OFFSET;
#if defined(__x86_64__)
  greg_t gregs[NGREG];
  if (!snap__plat_read(uc + offsetof(ucontext_t, uc_mcontext.gregs), gregs,
                       sizeof gregs))
    return false;
  out->pc = (uintptr_t)gregs[REG_RIP];
  out->sp = (uintptr_t)gregs[REG_RSP];
  out->fp = (uintptr_t)gregs[REG_RBP];
  out->lr = 0;
  out->lr_valid = false;
#elif defined(__aarch64__)
  struct {
    unsigned long long regs[31], sp, pc;
  } g;
  _Static_assert(offsetof(mcontext_t, sp) ==
                         offsetof(mcontext_t, regs) + 31 * 8 &&
                     offsetof(mcontext_t, pc) == offsetof(mcontext_t, sp) + 8,
                 "arm64 sigcontext layout");
  if (!snap__plat_read(uc + offsetof(ucontext_t, uc_mcontext.regs), &g,
                       sizeof g))
    return false;
  out->pc = (uintptr_t)g.pc;
  out->sp = (uintptr_t)g.sp;
  out->fp = (uintptr_t)g.regs[29];
  out->lr = (uintptr_t)g.regs[30];
  out->lr_valid = true;
#endif
  return true;
}

/* The Linux signal-return trampolines: rt_sigreturn is system call 15 on
   x86_64 and 139 on arm64.
   x86_64: mov $15, %rax; syscall   = 48 c7 c0 0f 00 00 00 0f 05
   arm64:  mov x8, #139; svc #0     = 0xd2801168 0xd4000001 */
#if defined(__x86_64__)
static const unsigned char k_code[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00,
                                        0x00, 0x00, 0x0f, 0x05};
#elif defined(__aarch64__)
static const unsigned char k_code[8] = {0x68, 0x11, 0x80, 0xd2,
                                        0x01, 0x00, 0x00, 0xd4};
#endif

static bool code_is_sigreturn(uintptr_t pc) {
  unsigned char got[sizeof k_code];
  return snap__plat_read(pc, got, sizeof got) &&
         memcmp(got, k_code, sizeof k_code) == 0;
}

/* Answers are memoised per pc, lock-free (a concurrent reader — or the
   stopped window — sees a whole entry or none): the check is one safe read
   (a system call, ~1 us here), and the walker asks it at every frame whose
   unwind information ends. Direct-mapped, one word per slot,
   (pc << 1) | answer. User-space pcs stay below 2^62, so the shift loses
   nothing. Naming does not come here for pcs inside images: it learns each
   image's trampolines once (snap__plat_find_sigreturns, symbols/
   trampolines.c). The code at an address does not change for the life of
   the mapping; a library unloaded and another mapped at the same place
   with a trampoline at the very same pc is the one case the memo would
   miss. */
#define MEMO_SLOTS 1024
static _Atomic uintptr_t g_memo[MEMO_SLOTS];

bool snap__plat_is_sigreturn(uintptr_t pc) {
  if (!pc || pc >> 62)
    return false;
  _Atomic uintptr_t *slot = &g_memo[(pc * 0x9E3779B97F4A7C15ull) >> 54];
  uintptr_t e = atomic_load_explicit(slot, memory_order_relaxed);
  if (e >> 1 == pc)
    return e & 1;
  bool yes = code_is_sigreturn(pc);
  atomic_store_explicit(slot, (pc << 1) | yes, memory_order_relaxed);
  return yes;
}

/* An image's code is read a block at a time (one process_vm_readv each),
   each block with the first
   bytes of the next, so a trampoline that starts in one block and ends in
   the next is seen; its start decides which block counts it. Instructions
   are 4-byte aligned on arm64, so a match elsewhere is data, not code. */
#define SCAN_BLOCK ((size_t)1 << 20)

int snap__plat_find_sigreturns(uintptr_t start, uintptr_t end, uintptr_t *out,
                               int max) {
  if (start >= end)
    return 0;
  unsigned char *buf = malloc(SCAN_BLOCK + sizeof k_code);
  if (!buf)
    return -1;
  int found = 0;
  for (uintptr_t at = start; at < end; at += SCAN_BLOCK) {
    size_t own = end - at < SCAN_BLOCK ? (size_t)(end - at) : SCAN_BLOCK;
    size_t len = own + sizeof k_code - 1;
    if (len > end - at)
      len = (size_t)(end - at);
    if (!snap__linux_read_bulk(at, buf, len)) {
      found = -1;
      break;
    }
    /* memchr for the code's last byte (the syscall's 0x05; svc's 0xd4:
       one byte in 200 of compiled code), then the whole code before it:
       ~10x faster than memmem, whose shift tables stall on the zeros and
       repeated opcodes of code. */
    const unsigned char last = k_code[sizeof k_code - 1];
    for (const unsigned char *p = buf + sizeof k_code - 1, *end_ = buf + len;
         p < end_ && (p = memchr(p, last, (size_t)(end_ - p))); p++) {
      const unsigned char *code = p - (sizeof k_code - 1);
      uintptr_t a = at + (uintptr_t)(code - buf);
      if (a - at >= own)
        break;
      if (memcmp(code, k_code, sizeof k_code) != 0)
        continue;
#if defined(__aarch64__)
      if (a % 4)
        continue;
#endif
      if (found < max)
        out[found] = a;
      found++;
    }
  }
  free(buf);
  return found;
}

/* The kernel's own struct sigaction (asm-generic layout, x86_64 and arm64
   alike), which rt_sigaction fills: unlike glibc's, it shows the
   restorer. */
typedef struct kernel_sigaction {
  uintptr_t handler;
  unsigned long flags;
  uintptr_t restorer;
  uint64_t mask;
} kernel_sigaction_t;
#define KERNEL_SA_RESTORER 0x04000000ul

int snap__plat_sigreturn_restorers(uintptr_t *out, int max) {
  int found = 0;
  for (int sig = 1; sig <= 64; sig++) {
    kernel_sigaction_t ka;
    if (syscall(SYS_rt_sigaction, sig, NULL, &ka, sizeof ka.mask) != 0)
      continue;
    /* SIG_DFL (0) and SIG_IGN (1) have no handler to return from. */
    if (ka.handler <= 1 || !(ka.flags & KERNEL_SA_RESTORER) || !ka.restorer)
      continue;
    bool seen = false;
    for (int k = 0; k < found && k < max; k++)
      seen |= out[k] == ka.restorer;
    if (seen)
      continue;
    if (found < max)
      out[found] = ka.restorer;
    found++;
  }
  return found;
}
