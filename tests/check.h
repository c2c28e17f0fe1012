/*
 * check.h — the test suite's few assertions. A failed CHECK prints where and
 * why and marks the test failed; main returns check_result().
 */
#ifndef SNAP_TEST_CHECK_H
#define SNAP_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int check_failures;

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
