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
#include <ucontext.h>

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
static bool code_is_sigreturn(uintptr_t pc) {
#if defined(__x86_64__)
  static const unsigned char code[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00,
                                        0x00, 0x00, 0x0f, 0x05};
#elif defined(__aarch64__)
  static const unsigned char code[8] = {0x68, 0x11, 0x80, 0xd2,
                                        0x01, 0x00, 0x00, 0xd4};
#endif
  unsigned char got[sizeof code];
  if (!snap__plat_read(pc, got, sizeof got))
    return false;
  for (size_t i = 0; i < sizeof code; i++)
    if (got[i] != code[i])
      return false;
  return true;
}

/* Answers are memoised: the check is one safe read (a system call, ~1 us
   here) and the symbolicator asks it for every frame of every stack it
   names. Direct-mapped, one word per slot, (pc << 1) | answer, so a
   concurrent reader — or the stopped window — sees a whole entry or none:
   no lock. User-space pcs stay below 2^62, so the shift loses nothing. The
   code at a pc does not change for the life of the mapping; a library
   unloaded and another mapped at the same place with a trampoline at the
   very same pc is the one case this would miss. */
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
