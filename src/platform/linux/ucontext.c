/*
 * ucontext.c — registers out of the ucontext_t the kernel gives a signal
 * handler, and out of the signal frame a signal-return trampoline unwinds.
 *
 * One block per architecture; the layouts are the kernel's (rt_sigframe).
 * Must not: read the signal frame directly — it may sit on another stack
 * (sigaltstack) whose bounds the walker does not know.
 */
#include <signal.h>
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
  ucontext_t uc;
  /* Only the machine context is needed; read up to its end. */
  size_t want = offsetof(ucontext_t, uc_mcontext) + sizeof uc.uc_mcontext;
  if (!snap__plat_read(sp + UC_OFFSET, &uc, want))
    return false;
  snap__linux_regs_from_ucontext(&uc, out);
  return true;
}
