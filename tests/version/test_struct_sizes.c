/*
 * test_struct_sizes.c — API v1: structs the caller provides carry their
 * own size; the library refuses a size it does not know and never writes
 * past the size it was given.
 *
 * For snap_image_lookup and snap_symbol_cache_stats: a struct inside a
 * larger buffer filled with a pattern; an unknown size (0, one byte short,
 * eight bytes more, a huge one) gives SNAP_EINVAL with every byte of the
 * buffer unchanged; the right size gives SNAP_OK, the fields as the
 * loader says (dladdr), the caller's size field kept, and the bytes past
 * the struct unchanged.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "stacksnap.h"

#define PATTERN 0xa5
enum { SLACK = 64 };

static int untouched(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != PATTERN)
      return 0;
  return 1;
}

static const uint32_t bad_sizes[] = {0, 1, 4, UINT32_MAX};

static void test_image_info(void) {
  union {
    snap_image_info_t info;
    unsigned char bytes[sizeof(snap_image_info_t) + SLACK];
  } buf;
  uintptr_t pc = (uintptr_t)test_image_info;
  uint32_t sizes[] = {bad_sizes[0],
                      bad_sizes[1],
                      bad_sizes[2],
                      bad_sizes[3],
                      sizeof(snap_image_info_t) - 1,
                      sizeof(snap_image_info_t) + 8};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    memset(&buf, PATTERN, sizeof buf);
    buf.info.size = sizes[k];
    CHECK_EQ(snap_image_lookup(pc, &buf.info), SNAP_EINVAL);
    CHECK(buf.info.size == sizes[k] && untouched(buf.bytes + sizeof(uint32_t),
                                                 sizeof buf - sizeof(uint32_t)),
          "size %u: refused, but bytes were written", sizes[k]);
  }
  memset(&buf, PATTERN, sizeof buf);
  buf.info.size = sizeof(snap_image_info_t);
  CHECK_EQ(snap_image_lookup(pc, &buf.info), SNAP_OK);
  CHECK_EQ(buf.info.size, sizeof(snap_image_info_t));
  Dl_info dl;
  CHECK(dladdr((void *)pc, &dl) && dl.dli_fbase, "dladdr");
  CHECK_EQ(buf.info.base, (uintptr_t)dl.dli_fbase);
  CHECK(buf.info.start <= pc && pc < buf.info.end, "range");
  CHECK(buf.info.in_app, "the test is the app");
  CHECK(untouched(buf.bytes + sizeof(snap_image_info_t), SLACK),
        "bytes past the caller's struct were written");
  /* A caller built against API 1.0: its struct ends before image_size
     (1.1): accepted, and 1.1's fields are not written. */
  size_t v1 = offsetof(snap_image_info_t, image_size);
  memset(&buf, PATTERN, sizeof buf);
  buf.info.size = (uint32_t)v1;
  CHECK_EQ(snap_image_lookup(pc, &buf.info), SNAP_OK);
  CHECK_EQ(buf.info.base, (uintptr_t)dl.dli_fbase);
  CHECK(untouched(buf.bytes + v1, sizeof buf - v1),
        "a 1.0 caller's struct was written past its %zu bytes", v1);
}

static void test_cache_stats(void) {
  union {
    snap_symbol_cache_stats_t st;
    unsigned char bytes[sizeof(snap_symbol_cache_stats_t) + SLACK];
  } buf;
  uint32_t sizes[] = {bad_sizes[0],
                      bad_sizes[1],
                      bad_sizes[2],
                      bad_sizes[3],
                      sizeof(snap_symbol_cache_stats_t) - 8,
                      sizeof(snap_symbol_cache_stats_t) + 8};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    memset(&buf, PATTERN, sizeof buf);
    buf.st.size = sizes[k];
    CHECK_EQ(snap_symbol_cache_stats(&buf.st), SNAP_EINVAL);
    CHECK(buf.st.size == sizes[k] && untouched(buf.bytes + sizeof(uint32_t),
                                               sizeof buf - sizeof(uint32_t)),
          "size %u: refused, but bytes were written", sizes[k]);
  }
  /* One stack named twice: misses, and an entry (the cache keeps a stack
     from its second sighting on; per-thread hits are counted in blocks of
     256, so a hit or two need not show yet). */
  uintptr_t pc = (uintptr_t)test_cache_stats + 1;
  snap_stack_release(snap_symbolicate(&pc, 1, 0));
  snap_stack_release(snap_symbolicate(&pc, 1, 0));
  memset(&buf, PATTERN, sizeof buf);
  buf.st.size = sizeof(snap_symbol_cache_stats_t);
  CHECK_EQ(snap_symbol_cache_stats(&buf.st), SNAP_OK);
  CHECK_EQ(buf.st.size, sizeof(snap_symbol_cache_stats_t));
  CHECK(buf.st.misses >= 1 && buf.st.entries >= 1 && buf.st.bytes > 0 &&
            buf.st.bytes < (1u << 30),
        "hits %llu misses %llu entries %llu bytes %llu",
        (unsigned long long)buf.st.hits, (unsigned long long)buf.st.misses,
        (unsigned long long)buf.st.entries, (unsigned long long)buf.st.bytes);
  CHECK(untouched(buf.bytes + sizeof(snap_symbol_cache_stats_t), SLACK),
        "bytes past the caller's struct were written");
  CHECK_EQ(snap_symbol_cache_stats(NULL), SNAP_EINVAL);
  CHECK_EQ(snap_image_lookup(pc, NULL), SNAP_EINVAL);
}

int main(void) {
  test_image_info();
  test_cache_stats();
  return check_result("test_struct_sizes");
}
