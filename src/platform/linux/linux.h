/*
 * linux.h — what the Linux backend's files share with each other, and
 * nothing else: never included from outside src/platform/linux/.
 */
#ifndef SNAP_PLATFORM_LINUX_H
#define SNAP_PLATFORM_LINUX_H

#include "platform/platform.h"

/* Fills regs from a ucontext_t the kernel handed to a signal handler.
   [signal-safe] */
void snap__linux_regs_from_ucontext(const void *uc, snap__regs_t *regs);

/* The kernel thread id of the caller, by system call. [signal-safe] */
int snap__linux_gettid(void);

#endif /* SNAP_PLATFORM_LINUX_H */
