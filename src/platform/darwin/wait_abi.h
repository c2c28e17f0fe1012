/*
 * wait_abi.h — what an Apple thread stopped in a system call waits for,
 * decoded from its registers and the lock's memory by the written ABI alone
 * (wait_abi.c). No Apple header: the decoder compiles and is tested on
 * Linux against recorded register sets (tests/darwin/test_wait_abi.c); the
 * Darwin glue (wait_darwin.c) supplies memory and threads.
 *
 * The ABI facts, each with its evidence in xnu, libplatform and libpthread,
 * are in docs/apple.md, "Contract: what a blocked thread waits for".
 */
#ifndef SNAP_PLATFORM_DARWIN_WAIT_ABI_H
#define SNAP_PLATFORM_DARWIN_WAIT_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "platform/platform.h"

/* Which register set snap__plat_wait_regs_t holds. */
#define SNAP__DARWIN_ARCH_ARM64 1  /* arm64, arm64e: nr = x16, args x0..x5 */
#define SNAP__DARWIN_ARCH_X86_64 2 /* nr = rax, args rdi rsi rdx r10 r8 r9 */

/* What the decoder needs from the process. Every callback is [setup]. */
typedef struct snap__darwin_wait_env {
  unsigned arch; /* SNAP__DARWIN_ARCH_* */
  /* Copies n bytes at addr into dst; false when they cannot be read. */
  bool (*read)(void *ctx, uintptr_t addr, void *dst, size_t n);
  /* The live thread of this task whose thread port is named `port`. */
  bool (*thread_of_port)(void *ctx, uint32_t port, snap_thread_t *out);
  /* The live thread of this task whose 64-bit thread id
     (pthread_threadid_np, THREAD_IDENTIFIER_INFO) is `tid`. */
  bool (*thread_of_tid)(void *ctx, uint64_t tid, snap_thread_t *out);
  void *ctx;
} snap__darwin_wait_env_t;

/* BSD system calls and Mach traps the decoder names (xnu
   bsd/kern/syscalls.master; osfmk/mach/syscall_sw.h, Mach traps negative
   as snap_wait_t.syscall numbers them). */
#define SNAP__DARWIN_SYS_PSYNCH_MUTEXWAIT 301
#define SNAP__DARWIN_SYS_ULOCK_WAIT 515
#define SNAP__DARWIN_SYS_ULOCK_WAIT2 544
#define SNAP__DARWIN_TRAP_SEMAPHORE_WAIT (-36)

/* Fills every field of *out but size and owner_name: kind, owner_state,
   owner, fd, address, syscall, args. A thread not (known to be) in a
   system call is SNAP_WAIT_NONE with SNAP_WAIT_NO_SYSCALL. An owner is
   kept only when it maps through env to a live thread other than waiter.
   Reads memory only through env->read. Never fails. [setup] */
void snap__darwin_wait_abi_decode(const snap__darwin_wait_env_t *env,
                                  snap_thread_t waiter,
                                  const snap__plat_wait_regs_t *regs,
                                  snap_wait_t *out);

#endif /* SNAP_PLATFORM_DARWIN_WAIT_ABI_H */
