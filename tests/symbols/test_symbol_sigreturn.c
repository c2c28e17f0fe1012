/*
 * test_symbol_sigreturn.c — naming across a signal-return trampoline.
 *
 * The pc after a trampoline is where a signal interrupted a thread: exact,
 * not a return address, so it is named for itself, not by pc - 1. Whether
 * a pc is a trampoline is learnt once per image while naming (its code
 * searched whole, symbols/trampolines.c): the trampoline must be found
 * there, and no other pc of its image taken for one.
 *
 * Witness: the kernel. A signal handler's return address is the
 * trampoline the kernel made it return to (sa_restorer: glibc's
 * __restore_rt on x86_64; the vdso's __kernel_rt_sigreturn on arm64).
 * Under TSan the handler is called from TSan's runtime instead, so there
 * only the plain half runs.
 */
#include <signal.h>
#include <string.h>

#include "check.h"
#include "stacksnap.h"

static volatile uintptr_t g_tramp;

__attribute__((noinline)) static void on_usr1(int sig) {
  (void)sig;
  g_tramp = (uintptr_t)__builtin_return_address(0);
  __asm__ volatile("" ::: "memory"); /* a real frame, not a tail call */
}

/* The interrupted function: a pc on its first byte is named for it only
   when taken as exact. */
__attribute__((noinline)) void snap_test_sig_target(void) {
  __asm__ volatile("" ::: "memory");
}

/* The name frame 1 gets when pc0 comes before it. */
static const char *frame1(uintptr_t pc0) {
  static char buf[256];
  uintptr_t pcs[2] = {pc0, (uintptr_t)snap_test_sig_target};
  const snap_stack_t *s = snap_symbolicate(pcs, 2, 0);
  const snap_frame_t *f = snap_stack_frame(s, 1);
  snprintf(buf, sizeof buf, "%s", f && f->symbol ? f->symbol : "(null)");
  snap_stack_release(s);
  return buf;
}

int main(void) {
  /* Plain: after an ordinary return address, the target's first byte is
     a return address too, so pc - 1 names whatever lies before it. */
  uintptr_t plain = (uintptr_t)main + 1;
  CHECK(strcmp(frame1(plain), "snap_test_sig_target") != 0,
        "after a plain pc: named %s", frame1(plain));
  if (SNAP_TEST_TSAN) { /* TSan's runtime calls handlers itself */
    printf(
        "test_symbol_sigreturn: the signal-frame case is not run under TSan\n");
    return check_result("test_symbol_sigreturn");
  }

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
  raise(SIGUSR1);
  uintptr_t tramp = g_tramp;
  CHECK(tramp != 0, "no trampoline seen");

  /* Other pcs of the trampoline's image first (its own page), so the
     image is searched before the trampoline itself is named: the search
     must find it, and none of these may be taken for it. */
  uintptr_t chunk = tramp & ~(uintptr_t)4095;
  uintptr_t near[3] = {chunk, tramp - 16, tramp + 1};
  for (int i = 0; i < 3; i++) {
    if (near[i] == tramp || near[i] < chunk || near[i] >= chunk + 4096)
      continue;
    CHECK(strcmp(frame1(near[i]), "snap_test_sig_target") != 0,
          "after %#lx (trampoline %#lx): named as exact",
          (unsigned long)near[i], (unsigned long)tramp);
  }
  CHECK(strcmp(frame1(tramp), "snap_test_sig_target") == 0,
        "after the trampoline %#lx: named %s, not the interrupted function",
        (unsigned long)tramp, frame1(tramp));
  /* And again, answered from what was learnt. */
  CHECK(strcmp(frame1(tramp), "snap_test_sig_target") == 0, "again: %s",
        frame1(tramp));
  return check_result("test_symbol_sigreturn");
}
