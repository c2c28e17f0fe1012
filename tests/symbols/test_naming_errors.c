/*
 * test_naming_errors.c — the naming calls say why they failed, and
 * snap_callstack_symbols takes every flag its header lists.
 *
 *  - snap_symbolicate_ex / snap_callstack_symbols_ex: each cause of "no
 *    stack" gives its own code (SNAP_EINVAL for each bad argument,
 *    SNAP_ENOMEM when an allocation fails) and *out NULL; the NULL-returning
 *    calls agree with their twins;
 *  - SNAP_ENOMEM is provoked by this program's own calloc and malloc,
 *    which fail on request (glibc's __libc_calloc and __libc_malloc
 *    otherwise; not in sanitizer builds, whose runtimes own them);
 *  - snap_callstack_symbols and snap_print_callstack accept
 *    SNAP_SYMBOLICATE_EXACT_PC0 and name this test's frames as dladdr
 *    does, exactly as without the flag.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "stacksnap.h"

#define SANITIZED_ALLOC (SNAP_TEST_ASAN || SNAP_TEST_TSAN)
#if !SANITIZED_ALLOC
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_malloc(size_t);
static atomic_int fail_calloc;
/* Interposes libstacksnap's calloc and malloc: a naming of a pc or a few
   keeps its scratch on the stack, so the stack it packs is the first
   allocation that can fail. */
void *calloc(size_t a, size_t b) {
  if (atomic_load(&fail_calloc))
    return NULL;
  return __libc_calloc(a, b);
}
void *malloc(size_t n) {
  if (atomic_load(&fail_calloc))
    return NULL;
  return __libc_malloc(n);
}
#endif

static const snap_stack_t *const POISON = (const snap_stack_t *)0x1;

static void test_symbolicate_causes(void) {
  uintptr_t pc = (uintptr_t)test_symbolicate_causes;
  const snap_stack_t *s = POISON;
  CHECK_EQ(snap_symbolicate_ex(&pc, 1, 0, NULL), SNAP_EINVAL);
  CHECK_EQ(snap_symbolicate_ex(NULL, 1, 0, &s), SNAP_EINVAL);
  CHECK(s == NULL, "out NULL after NULL pcs");
  s = POISON;
  CHECK_EQ(snap_symbolicate_ex(&pc, -1, 0, &s), SNAP_EINVAL);
  CHECK(s == NULL, "out NULL after n < 0");
  s = POISON;
  CHECK_EQ(snap_symbolicate_ex(&pc, SNAP_MAX_FRAMES + 1, 0, &s), SNAP_EINVAL);
  CHECK(s == NULL, "out NULL after n > SNAP_MAX_FRAMES");
  s = POISON;
  CHECK_EQ(snap_symbolicate_ex(&pc, 1, 0x80000000u, &s), SNAP_EINVAL);
  CHECK(s == NULL, "out NULL after an unknown flag");
  /* SNAP_CAPTURE_ASYNC is a capture flag, not a naming one. */
  CHECK_EQ(snap_symbolicate_ex(&pc, 1, SNAP_CAPTURE_ASYNC, &s), SNAP_EINVAL);

  /* Success: the same object the NULL-returning call gives (the cache,
     which keeps a stack from its second sighting on: cache_admit.c). */
  snap_stack_release(snap_symbolicate(&pc, 1, SNAP_SYMBOLICATE_EXACT_PC0));
  CHECK_EQ(snap_symbolicate_ex(&pc, 1, SNAP_SYMBOLICATE_EXACT_PC0, &s),
           SNAP_OK);
  const snap_stack_t *t = snap_symbolicate(&pc, 1, SNAP_SYMBOLICATE_EXACT_PC0);
  CHECK(s && s == t, "twin and plain call agree");
  const snap_frame_t *f = snap_stack_frame(s, 0);
  CHECK(f && f->symbol && strcmp(f->symbol, "test_symbolicate_causes") == 0,
        "named %s", f && f->symbol ? f->symbol : "(null)");
  snap_stack_release(s);
  snap_stack_release(t);
  CHECK_EQ(snap_symbolicate_ex(NULL, 0, 0, &s), SNAP_OK);
  CHECK(s && snap_stack_count(s) == 0, "n == 0: an empty stack");
  snap_stack_release(s);
}

static void test_out_of_memory(void) {
#if SANITIZED_ALLOC
  puts("out of memory: not provoked in sanitizer builds (their runtime "
       "owns calloc)");
#else
  /* A pc never named before in this process: a cache miss, so a naming
     that allocates. */
  uintptr_t pc = (uintptr_t)test_out_of_memory + 3;
  const snap_stack_t *s = POISON;
  atomic_store(&fail_calloc, 1);
  int rc = snap_symbolicate_ex(&pc, 1, 0, &s);
  const snap_stack_t *plain = snap_symbolicate(&pc, 1, 0);
  int rc_call = snap_callstack_symbols_ex(8, SNAP_CAPTURE_FP_ONLY, &s);
  atomic_store(&fail_calloc, 0);
  CHECK_EQ(rc, SNAP_ENOMEM);
  CHECK(plain == NULL, "plain call: NULL when out of memory");
  CHECK_EQ(rc_call, SNAP_ENOMEM);
  CHECK(s == NULL, "out NULL after SNAP_ENOMEM");
  /* Nothing half-made was cached: with memory back, it names. */
  CHECK_EQ(snap_symbolicate_ex(&pc, 1, 0, &s), SNAP_OK);
  CHECK(s && snap_stack_count(s) == 1, "named once memory is back");
  snap_stack_release(s);
#endif
}

static void test_callstack_causes(void) {
  const snap_stack_t *s = POISON;
  CHECK_EQ(snap_callstack_symbols_ex(8, 0, NULL), SNAP_EINVAL);
  CHECK_EQ(snap_callstack_symbols_ex(0, 0, &s), SNAP_EINVAL);
  CHECK(s == NULL, "out NULL after max 0");
  s = POISON;
  CHECK_EQ(snap_callstack_symbols_ex(-5, 0, &s), SNAP_EINVAL);
  CHECK(s == NULL, "out NULL after max < 0");
  s = POISON;
  CHECK_EQ(snap_callstack_symbols_ex(SNAP_MAX_FRAMES + 1, 0, &s), SNAP_EINVAL);
  CHECK(s == NULL, "out NULL after max > SNAP_MAX_FRAMES");
  s = POISON;
  CHECK_EQ(snap_callstack_symbols_ex(8, 0x80000000u, &s), SNAP_EINVAL);
  CHECK(s == NULL, "out NULL after an unknown flag");
  CHECK(snap_callstack_symbols(8, 0x80000000u) == NULL, "plain: NULL");
  CHECK_EQ(snap_print_callstack(2, 8, 0x80000000u), SNAP_EINVAL);
  CHECK_EQ(snap_print_callstack(2, 0, 0), SNAP_EINVAL);
}

/* The frames of a capture through each entry point, named. */
__attribute__((noinline)) const snap_stack_t *snap_test_leaf(unsigned flags,
                                                             int twin) {
  const snap_stack_t *s = NULL;
  if (twin) {
    int rc = snap_callstack_symbols_ex(16, flags, &s);
    CHECK_EQ(rc, SNAP_OK);
  } else {
    s = snap_callstack_symbols(16, flags);
  }
  __asm__ volatile("" ::: "memory");
  return s;
}
__attribute__((noinline)) const snap_stack_t *snap_test_mid(unsigned flags,
                                                            int twin) {
  const snap_stack_t *s = snap_test_leaf(flags, twin);
  __asm__ volatile("" ::: "memory");
  return s;
}

/* Frame by frame against dladdr (the functions above are exported). */
static void expect_leaf_mid(const snap_stack_t *s, const char *what) {
  CHECK(s != NULL, "%s: a stack", what);
  CHECK(snap_stack_count(s) >= 3, "%s: %d frames", what, snap_stack_count(s));
  const char *want[] = {"snap_test_leaf", "snap_test_mid"};
  for (int i = 0; i < 2 && i < snap_stack_count(s); i++) {
    const snap_frame_t *f = snap_stack_frame(s, i);
    Dl_info info;
    CHECK(dladdr((void *)(f->pc - 1), &info) && info.dli_sname &&
              strcmp(info.dli_sname, want[i]) == 0,
          "%s: dladdr of frame %d is %s", what, i,
          info.dli_sname ? info.dli_sname : "(null)");
    CHECK(f->symbol && strcmp(f->symbol, want[i]) == 0 &&
              f->symbol_addr == (uintptr_t)info.dli_saddr,
          "%s: frame %d named %s", what, i, f->symbol ? f->symbol : "(null)");
  }
}

__attribute__((noinline)) static int print_exact(int fd) {
  int n = snap_print_callstack(fd, 8, SNAP_SYMBOLICATE_EXACT_PC0);
  __asm__ volatile("" ::: "memory");
  return n;
}

static void test_exact_pc0_accepted(void) {
  const unsigned flags[] = {0, SNAP_SYMBOLICATE_EXACT_PC0,
                            SNAP_SYMBOLICATE_EXACT_PC0 | SNAP_CAPTURE_FP_ONLY};
  for (unsigned k = 0; k < sizeof flags / sizeof flags[0]; k++)
    for (int twin = 0; twin < 2; twin++) {
      char what[64];
      snprintf(what, sizeof what, "flags %#x, %s", flags[k],
               twin ? "snap_callstack_symbols_ex" : "snap_callstack_symbols");
      const snap_stack_t *s = snap_test_mid(flags[k], twin);
      expect_leaf_mid(s, what);
      snap_stack_release(s);
    }
  int p[2];
  CHECK(pipe(p) == 0, "pipe");
  int n = print_exact(p[1]);
  close(p[1]);
  char buf[8192];
  ssize_t got = 0, r;
  while ((r = read(p[0], buf + got, sizeof buf - 1 - (size_t)got)) > 0)
    got += r;
  close(p[0]);
  buf[got < 0 ? 0 : got] = '\0';
  CHECK(n > 1, "snap_print_callstack with EXACT_PC0: %d (%s)", n,
        snap_strerror(n));
  CHECK(strncmp(buf, "0 ", 2) == 0 && strstr(buf, " print_exact + "),
        "frame 0 printed as print_exact:\n%s", buf);
}

int main(void) {
  test_symbolicate_causes();
  test_callstack_causes();
  test_out_of_memory();
  test_exact_pc0_accepted();
  return check_result("test_naming_errors");
}
