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
#include <string.h>
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

/* Answers are memoised twice, both lock-free (a concurrent reader — or the
   stopped window — sees a whole entry or none):
    - per pc: the check is one safe read (a system call, ~1 us here) and
      the symbolicator asks it for every frame of every stack it names.
      Direct-mapped, one word per slot, (pc << 1) | answer. User-space pcs
      stay below 2^62, so the shift loses nothing;
    - per 4 KiB chunk of an image's code, filled only outside the stopped
      window (snap__plat_is_sigreturn_named): one read of the whole chunk,
      searched for the trampoline's code; a chunk where it starts nowhere
      is remembered as clean (its address | 1), so every other pc in it —
      a cold lookup names pcs nothing named before — costs no system call.
      A chunk holding a trampoline is not remembered: its pcs take the
      per-pc path.
   The code at an address does not change for the life of the mapping; a
   library unloaded and another mapped at the same place with a trampoline
   at the very same place is the one case this would miss. Chunks are
   learnt only in images (file-backed code, never rewritten in place), not
   in anonymous memory a JIT may fill later. */
#define MEMO_SLOTS 1024
#define CHUNK 4096u
#define CHUNK_SLOTS 512
static _Atomic uintptr_t g_memo[MEMO_SLOTS];
static _Atomic uintptr_t g_clean[CHUNK_SLOTS];

static _Atomic uintptr_t *clean_slot(uintptr_t chunk) {
  return &g_clean[((chunk / CHUNK) * 0x9E3779B97F4A7C15ull) >> 55];
}

static bool chunk_is_clean(uintptr_t pc) {
  uintptr_t chunk = pc & ~(uintptr_t)(CHUNK - 1);
  return atomic_load_explicit(clean_slot(chunk), memory_order_relaxed) ==
         (chunk | 1);
}

bool snap__plat_is_sigreturn(uintptr_t pc) {
  if (!pc || pc >> 62)
    return false;
  if (chunk_is_clean(pc))
    return false;
  _Atomic uintptr_t *slot = &g_memo[(pc * 0x9E3779B97F4A7C15ull) >> 54];
  uintptr_t e = atomic_load_explicit(slot, memory_order_relaxed);
  if (e >> 1 == pc)
    return e & 1;
  bool yes = code_is_sigreturn(pc);
  atomic_store_explicit(slot, (pc << 1) | yes, memory_order_relaxed);
  return yes;
}

/* Whether the trampoline's code starts anywhere in [chunk, chunk + CHUNK):
   -1 unknown (unreadable), 0 nowhere, 1 somewhere. The bytes just past the
   chunk are read too, for a trampoline that starts in it and ends in the
   next; if they cannot be read, a chunk whose last bytes could begin one
   stays unknown. */
static int chunk_has_sigreturn(uintptr_t chunk) {
  unsigned char buf[CHUNK + sizeof k_code];
  if (!snap__plat_read(chunk, buf, CHUNK))
    return -1;
  size_t len = CHUNK;
  if (snap__plat_read(chunk + CHUNK, buf + CHUNK, sizeof k_code))
    len += sizeof k_code;
  else if (memchr(buf + CHUNK - sizeof k_code + 1, k_code[0],
                  sizeof k_code - 1))
    return -1;
  return memmem(buf, len, k_code, sizeof k_code) != NULL;
}

bool snap__plat_is_sigreturn_named(uintptr_t pc, bool in_image) {
  if (!pc || pc >> 62)
    return false;
  if (!in_image || chunk_is_clean(pc))
    return snap__plat_is_sigreturn(pc);
  uintptr_t chunk = pc & ~(uintptr_t)(CHUNK - 1);
  if (chunk_has_sigreturn(chunk) == 0) {
    atomic_store_explicit(clean_slot(chunk), chunk | 1, memory_order_relaxed);
    return false;
  }
  return snap__plat_is_sigreturn(pc);
}
