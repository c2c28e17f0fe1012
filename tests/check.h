/*
 * check.h — the test suite's few assertions. A failed CHECK prints where and
 * why and marks the test failed; main returns check_result().
 */
#ifndef SNAP_TEST_CHECK_H
#define SNAP_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int check_failures;

/* ThreadSanitizer defers a signal that arrives outside its interceptors and
   runs the handler later, with the ucontext saved at arrival: by then the
   interrupted frames may be gone. Cross-thread samples under TSan therefore
   may time out or come back short. TSan builds still run every sample (the
   point there is races); the exact-chain checks belong to the other builds,
   which run the same tests. */
#if defined(__SANITIZE_THREAD__)
#define SNAP_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SNAP_TEST_TSAN 1
#endif
#endif
#ifndef SNAP_TEST_TSAN
#define SNAP_TEST_TSAN 0
#endif

/* AddressSanitizer keeps freed memory in quarantine: resident memory says
   nothing about the program's own use there. */
#if defined(__SANITIZE_ADDRESS__)
#define SNAP_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SNAP_TEST_ASAN 1
#endif
#endif
#ifndef SNAP_TEST_ASAN
#define SNAP_TEST_ASAN 0
#endif

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      check_failures++;                                                        \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
    }                                                                          \
  } while (0)

#define CHECK_EQ(a, b)                                                         \
  CHECK((long long)(a) == (long long)(b), "%s = %lld, %s = %lld", #a,          \
        (long long)(a), #b, (long long)(b))

static inline int check_result(const char *name) {
  if (check_failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
    return 1;
  }
  printf("%s: all checks passed\n", name);
  return 0;
}

#endif
