/*
 * async_frames_clang.c — real, compiler-made Swift async frames, from C.
 *
 * Built by clang only (gcc has no swiftasynccall), with
 * -fswift-async-fp=always: each swiftasynccall function below sets bit 60 of
 * the saved frame pointer and stores its async context (the
 * swift_async_context parameter) just below its frame record, exactly as
 * Swift's async functions do. test_async_frames.c links this object and
 * checks what the walker makes of it.
 *
 * Each function records its own return address (the compiler's
 * __builtin_return_address, an oracle independent of stacksnap): glibc's
 * backtrace() cannot serve here, since libgcc's unwinder follows the tagged
 * frame pointer into a non-canonical address.
 */
#include "async_frames.h"

uintptr_t async_ra_of_probe, async_ra_of_leaf, async_ra_of_mid;

__attribute__((swiftasynccall, noinline)) void
async_leaf(__attribute__((swift_async_context)) void *ctx) {
  async_ra_of_leaf = (uintptr_t)__builtin_return_address(0);
  async_probe(ctx);
  __asm__ volatile("" ::: "memory");
}

__attribute__((swiftasynccall, noinline)) void
async_mid(__attribute__((swift_async_context)) void *ctx) {
  async_ra_of_mid = (uintptr_t)__builtin_return_address(0);
  async_leaf(((async_context_t *)ctx)->child_for_test);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void async_run(async_context_t *mid_ctx) {
  async_mid(mid_ctx);
  __asm__ volatile("" ::: "memory");
}
