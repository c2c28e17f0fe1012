/*
 * signal_frames_darwin.c — what Apple's signal frames mean to the walker:
 * nothing to decode; frame records cross them.
 *
 * xnu delivers a signal by pushing the ucontext and siginfo on the target
 * stack and starting _sigtramp (libsystem_platform) with the interrupted
 * fp and lr still in their registers. _sigtramp is ordinary compiled code:
 * its prologue pushes a frame record [interrupted fp, interrupted lr]
 * (x86_64: the kernel pushes a return address and _sigtramp pushes rbp),
 * and it calls the handler. A walk from inside the handler therefore goes
 * handler -> _sigtramp -> the interrupted function's caller, ... by frame
 * records alone, as Apple's own backtrace() does. What it cannot show is
 * the interrupted pc itself, and on arm64 the lr it shows may be stale if
 * the interrupted function had already saved it. Decoding the ucontext
 * would need its address, which _sigtramp receives in a register and does
 * not keep at a fixed, documented place: no ABI to rely on.
 *
 * So: no trampoline is recognised and no signal frame is read. The
 * walker's signal reader (capture/signal_frames.c) is never entered on
 * Apple: Mach-O images carry no .eh_frame_hdr for cfi.c to mark 'S'.
 */
#include "platform/darwin/darwin.h"

bool snap__plat_sigframe_regs(uintptr_t sp, snap__regs_t *out) {
  (void)sp;
  (void)out;
  return false;
}

bool snap__plat_is_sigreturn(uintptr_t pc) {
  (void)pc;
  return false;
}

int snap__plat_find_sigreturns(uintptr_t start, uintptr_t end, uintptr_t *out,
                               int max) {
  (void)start, (void)end, (void)out, (void)max;
  return 0;
}

int snap__plat_sigreturn_restorers(uintptr_t *out, int max) {
  (void)out, (void)max;
  return 0;
}
