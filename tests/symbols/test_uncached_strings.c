/*
 * test_uncached_strings.c — a stack named while the cache keeps nothing
 * (a cap of 0) carries its own copies of its names (stack.h, own_strings):
 * the same names, files and lines as a cached stack of the same pcs, and
 * nothing in the shared strings while it is held (issue 26: interning
 * names that are dropped again at once cost two lock round trips and an
 * allocation per cold lookup).
 *
 * Oracles: dladdr for the exported functions' names and starts; the cached
 * stack (interned names) for everything else, frame by frame and line by
 * line; the cache's stats for the shared strings (before this change a
 * held uncached stack kept its names interned: bytes > 0 at a cap of 0).
 */
#include <dlfcn.h>
#include <string.h>

#include "check.h"
#include "stacksnap.h"

__attribute__((noinline)) int snap_uncached_fn_a(int x) {
  volatile int v = x;
  v = v * 3 + 1;
  return v;
}
__attribute__((noinline)) int snap_uncached_fn_b(int x) {
  volatile int v = x;
  v = v * 5 + 2;
  return v;
}

static bool same_str(const char *a, const char *b) {
  return a == b || (a && b && strcmp(a, b) == 0);
}

int main(void) {
  const uintptr_t pcs[] = {
      (uintptr_t)snap_uncached_fn_a + 4,
      (uintptr_t)snap_uncached_fn_b + 4,
      (uintptr_t)strlen + 8,
      (uintptr_t)0x1000, /* no image */
      (uintptr_t)snap_uncached_fn_a + 6,
  };
  const int n = (int)(sizeof pcs / sizeof pcs[0]);
  const unsigned flags[] = {0, SNAP_SYMBOLICATE_SOURCE_LINES};

  for (int fl = 0; fl < 2; fl++) {
    CHECK_EQ(snap_set_symbol_cache_limit(0), SNAP_OK);
    const snap_stack_t *own = snap_symbolicate(pcs, n, flags[fl]);
    snap_symbol_cache_stats_t st = {.size = sizeof st};
    CHECK_EQ(snap_symbol_cache_stats(&st), SNAP_OK);
    CHECK(st.bytes == 0, "cap 0, one stack held: %llu bytes counted",
          (unsigned long long)st.bytes);

    CHECK_EQ(snap_set_symbol_cache_limit(SNAP_SYMBOL_CACHE_DEFAULT_BYTES),
             SNAP_OK);
    /* The second sighting is the cached one (cache_admit.c). */
    snap_stack_release(snap_symbolicate(pcs, n, flags[fl]));
    const snap_stack_t *shared = snap_symbolicate(pcs, n, flags[fl]);
    CHECK(own && shared && own != shared, "two stacks");
    CHECK_EQ(snap_stack_count(own), n);
    CHECK_EQ(snap_stack_count(shared), n);
    for (int i = 0; i < n && own && shared; i++) {
      const snap_frame_t *a = snap_stack_frame(own, i);
      const snap_frame_t *b = snap_stack_frame(shared, i);
      CHECK(a && b && a->pc == b->pc && same_str(a->symbol, b->symbol) &&
                a->symbol_addr == b->symbol_addr &&
                same_str(a->source_file, b->source_file) &&
                a->source_line == b->source_line,
            "frame %d (flags %u): %s / %s", i, flags[fl],
            a && a->symbol ? a->symbol : "-", b && b->symbol ? b->symbol : "-");
      CHECK(same_str(snap_stack_line(own, i), snap_stack_line(shared, i)),
            "line %d", i);
      Dl_info info;
      if (i != 3 && i != 2 && dladdr((void *)pcs[i], &info) && info.dli_sname) {
        CHECK(a && same_str(a->symbol, info.dli_sname) &&
                  a->symbol_addr == (uintptr_t)info.dli_saddr,
              "frame %d: %s, dladdr says %s", i, a ? a->symbol : "-",
              info.dli_sname);
      }
    }
    CHECK(snap_stack_frame(own, 3)->symbol == NULL, "a pc in no image");
    snap_stack_release(own);
    snap_stack_release(shared);
  }
  return check_result("test_uncached_strings");
}
