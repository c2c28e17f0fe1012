/*
 * split_lib.c — the shared library of the stripped-build round trip
 * (test_symbolicate.py): its exported entry calls back into the app
 * through a static function of its own, so that a sampled lag stack holds
 * a static function of the library (named only by its debug file).
 * SPLIT_OTHER_BUILD makes "another build" of it: same name, same code
 * shape, another build id.
 */
#include <stdint.h>

#ifdef SPLIT_OTHER_BUILD
volatile int split_build_marker = 2;
#else
volatile int split_build_marker = 1;
#endif

__attribute__((noinline)) static uint64_t lib_static_relay(uint64_t (*fn)(int),
                                                           int n) {
  uint64_t r = fn(n);
  __asm__ volatile("" ::: "memory");
  return r + (uint64_t)split_build_marker;
}

__attribute__((visibility("default"), noinline)) uint64_t
split_lib_run(uint64_t (*fn)(int), int n) {
  uint64_t r = lib_static_relay(fn, n);
  __asm__ volatile("" ::: "memory");
  return r;
}
