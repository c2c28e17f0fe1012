/*
 * async_frameless_clang.c — a Swift async frame made by clang (see
 * async_frames_clang.c: swiftasynccall, -fswift-async-fp=always) whose
 * callee keeps no frame record (async_frameless_mid.c).
 */
#include "async_frameless.h"

__attribute__((swiftasynccall, noinline)) void
frameless_async_leaf(__attribute__((swift_async_context)) void *ctx) {
  frameless_mid(ctx);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void frameless_run(void *ctx) {
  frameless_async_leaf(ctx);
  __asm__ volatile("" ::: "memory");
}
