/*
 * prebind.c — binds, at load time, every import the stopped window calls.
 *
 * Why: a binary built for iOS 12 (our floor) binds imports lazily: the
 * first call through a stub jumps into dyld_stub_binder, and on dyld2
 * (iOS 12, and every later iOS when the app runs without a launch
 * closure) dyld resolves the symbol under its global loader lock. A thread
 * we suspended may hold that lock (it was inside dlopen, dlsym, a +load, a
 * lazy bind of its own): the first thread_get_state of a sampler would
 * wait for a thread that cannot run until that very sampler resumes it,
 * and the app hangs for good. Calling each import once here, while no
 * thread is stopped, fills its lazy pointer; later calls go straight to
 * the function. Evidence: docs/apple.md, "Contract: locks and the stopped
 * window".
 *
 * Every call below is harmless: Mach calls on MACH_PORT_NULL come back
 * MACH_SEND_INVALID_DEST without touching any thread (the stub still binds);
 * the read copies a word of our own; the key is ours.
 *
 * check-darwin (scripts/check-darwin.sh) lists this object's imports as
 * the set of pre-bound symbols, and fails when the smoke binary's
 * lazy-bind table holds an import the window calls (as
 * tests/darwin/window_imports.txt marks them) that is not imported here.
 * So an import added to the window must be added both to the allowlist
 * and here.
 *
 * Must not: have any effect beyond binding (no state, no output).
 */
#include <mach/mach.h>
#include <pthread.h>
#include <string.h>

#include "platform/darwin/darwin.h"

void snap__darwin_prebind(pthread_key_t window_key) {
  /* Opens the window (sample.c): bound before, so a sampler never runs
     dyld right before it stops a thread. */
  (void)thread_suspend(MACH_PORT_NULL);
  /* The window's first call: is the target suspended? */
  thread_basic_info_data_t info;
  mach_msg_type_number_t n = THREAD_BASIC_INFO_COUNT;
  (void)thread_info(MACH_PORT_NULL, THREAD_BASIC_INFO, (thread_info_t)&info,
                    &n);
  /* The target's registers (sample.c get_regs, same flavor). */
#if defined(__arm64__) || defined(__aarch64__)
  arm_thread_state64_t st;
  mach_msg_type_number_t count = ARM_THREAD_STATE64_COUNT;
  (void)thread_get_state(MACH_PORT_NULL, ARM_THREAD_STATE64,
                         (thread_state_t)&st, &count);
#else
  x86_thread_state64_t st;
  mach_msg_type_number_t count = x86_THREAD_STATE64_COUNT;
  (void)thread_get_state(MACH_PORT_NULL, x86_THREAD_STATE64,
                         (thread_state_t)&st, &count);
#endif
  /* Closes the window. */
  (void)thread_resume(MACH_PORT_NULL);
  /* snap__plat_read (memory.c): every read of the stopped thread's memory
     the walker cannot bound. A real read of a word of ours. */
  uintptr_t src = 1, dst = 0;
  vm_size_t got = 0;
  (void)vm_read_overwrite(mach_task_self(), (vm_address_t)&src, sizeof src,
                          (vm_address_t)&dst, &got);
  /* snap__darwin_window (sample.c), asked by the walker's stack-bounds and
     async-task checks in the window. */
  (void)pthread_getspecific(window_key);
  /* The walker's memcpy (walk.c copies batches of pcs): a size the compiler
     cannot see, so this is a real call through the stub, not an inlined
     copy or a __memcpy_chk. */
  static volatile size_t one = sizeof src;
  void *volatile to = &dst;
  memcpy(to, &src, one);
}
