/*
 * async_frameless_mid.c — a function with no frame record between a Swift
 * async frame and the probe, as libc's functions are between a Swift task
 * and the system call it blocks in. Built with -fomit-frame-pointer (and
 * unwind tables): the frame pointer it leaves is the async frame's.
 */
#include "async_frameless.h"

uintptr_t frameless_ra_of_mid;

__attribute__((noinline)) void frameless_mid(void *ctx) {
  frameless_ra_of_mid = (uintptr_t)__builtin_return_address(0);
  frameless_probe(ctx);
  __asm__ volatile("" ::: "memory"); /* not a tail call */
}
