/*
 * test_demangle.c — snap__plat_demangle against c++filt, in a C program
 * that does not link a C++ runtime.
 *
 * Every name of demangle_names.txt is the asm label of a function defined
 * here, so it is a real symbol of this executable; the dynamic linker's
 * dladdr reads it back (ENABLE_EXPORTS) and the result is demangled.
 * Oracle: c++filt, run at build time by demangle_gen.cmake; where c++filt
 * leaves a name unchanged, the name is not mangled and the answer must be
 * NULL. Before the first call neither __cxa_demangle nor libstdc++ is in
 * the process, so a right answer proves the run-time dlopen of the C++
 * runtime. There is no Swift runtime here: Swift names must give NULL
 * (the call plumbing is checked with a stand-in in
 * demangle_swift_standin.c).
 *
 * Then the same names through snap_symbolicate, with and without
 * SNAP_SYMBOLICATE_MANGLED, each three times in turn (the third is the
 * cache's hit): the flag gives the name dladdr gives (the symbol table's),
 * no flag c++filt's answer, and neither answer is served for the other;
 * and through snap_symbol_lookup, with and without the flag.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "platform/platform.h"
#include "stacksnap.h"

#define DEMANGLE_NAME(i, mangled, expected)                                    \
  void demangle_fn_##i(void) __asm__(mangled);                                 \
  void demangle_fn_##i(void) { __asm__ volatile(""); }
#include "demangle_names.h"
#undef DEMANGLE_NAME

typedef struct case_ {
  void (*fn)(void);
  const char *mangled;
  const char *expected;
} case_t;

static const case_t cases[] = {
#define DEMANGLE_NAME(i, mangled, expected)                                    \
  {demangle_fn_##i, mangled, expected},
#include "demangle_names.h"
#undef DEMANGLE_NAME
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

static void check_case(const case_t *c) {
  Dl_info info;
  CHECK(dladdr((void *)c->fn, &info) && info.dli_sname &&
            strcmp(info.dli_sname, c->mangled) == 0,
        "dladdr does not see the symbol %s", c->mangled);
  char *got = snap__plat_demangle(c->mangled);
  if (strcmp(c->expected, c->mangled) == 0)
    CHECK(got == NULL, "%s is not mangled (c++filt), yet gave \"%s\"",
          c->mangled, got);
  else
    CHECK(got && strcmp(got, c->expected) == 0,
          "%s: \"%s\", c++filt says \"%s\"", c->mangled, got ? got : "(null)",
          c->expected);
  free(got);
}

/* c's function named through the public call, flags added. */
static void check_named(const case_t *c, unsigned flags, const char *want) {
  uintptr_t pc = (uintptr_t)c->fn;
  const snap_stack_t *st =
      snap_symbolicate(&pc, 1, SNAP_SYMBOLICATE_EXACT_PC0 | flags);
  const snap_frame_t *f = st ? snap_stack_frame(st, 0) : NULL;
  CHECK(f && f->symbol && strcmp(f->symbol, want) == 0,
        "%s named%s: \"%s\", want \"%s\"", c->mangled, flags ? " mangled" : "",
        f && f->symbol ? f->symbol : "(null)", want);
  snap_stack_release(st);
  /* The same through the one-address call, into a buffer. */
  snap_symbol_info_t info = {.size = sizeof info};
  char name[512];
  CHECK_EQ(snap_symbol_lookup(pc, flags, &info, name, sizeof name), SNAP_OK);
  CHECK(strcmp(name, want) == 0 && info.symbol_len == strlen(want) &&
            info.symbol_addr == pc,
        "%s looked up%s: \"%s\" (%zu), want \"%s\"", c->mangled,
        flags ? " mangled" : "", name, info.symbol_len, want);
}

/* Several threads make the first (lazy) lookup at once. The one that
   claims the lookup demangles; the others either do too (the lookup was
   done) or get NULL (it was under way: demangle.c never waits, see
   cxx_state) — never a wrong name. */
static char g_right, g_null, g_wrong;
static void *race(void *arg) {
  const case_t *c = arg;
  char *got = snap__plat_demangle(c->mangled);
  void *r = !got                            ? &g_null
            : strcmp(got, c->expected) == 0 ? &g_right
                                            : &g_wrong;
  free(got);
  return r;
}

int main(void) {
  CHECK(dlsym(RTLD_DEFAULT, "__cxa_demangle") == NULL,
        "__cxa_demangle is linked in: the dlopen fallback is not tested");
  CHECK(dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD) == NULL,
        "libstdc++ is loaded before the first demangle");
  CHECK(strcmp(cases[0].expected, cases[0].mangled) != 0,
        "the first name must be mangled (it starts the race)");

  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    CHECK(pthread_create(&t[i], NULL, race, (void *)&cases[0]) == 0,
          "pthread_create");
  int right = 0;
  for (int i = 0; i < 4; i++) {
    void *r = NULL;
    pthread_join(t[i], &r);
    CHECK(r == &g_right || r == &g_null, "thread %d demangled %s wrongly", i,
          cases[0].mangled);
    right += r == &g_right;
  }
  CHECK(right >= 1, "no thread of the race demangled");
  CHECK(dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD) != NULL,
        "demangling worked without loading libstdc++?");

  for (int i = 0; i < NCASES; i++)
    check_case(&cases[i]);
  for (int round = 0; round < 3; round++)
    for (int i = 0; i < NCASES; i++) {
      check_named(&cases[i], SNAP_SYMBOLICATE_MANGLED, cases[i].mangled);
      check_named(&cases[i], 0, cases[i].expected);
    }

  /* Not mangled, whatever the runtime would make of them as type names
     ("i" alone is "int" to __cxa_demangle). */
  const char *plain[] = {"", "i", "_", "_Z", "Z3foov", "main", "$", "_$"};
  for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
    char *got = snap__plat_demangle(plain[i]);
    CHECK(got == NULL, "\"%s\" gave \"%s\"", plain[i], got);
    free(got);
  }
  CHECK(snap__plat_demangle(NULL) == NULL, "NULL name");

  /* Swift without a Swift runtime: nothing to ask, so NULL. */
  CHECK(dlsym(RTLD_DEFAULT, "swift_demangle") == NULL,
        "a Swift runtime is loaded: this check needs a process without");
  const char *swift[] = {"$s4main3fooyyF", "$S4main3fooyyF", "_$s4main3fooyyF",
                         "_T04main3fooyyF", "$e4main3fooyyF"};
  for (size_t i = 0; i < sizeof swift / sizeof swift[0]; i++) {
    char *got = snap__plat_demangle(swift[i]);
    CHECK(got == NULL, "%s without a Swift runtime gave \"%s\"", swift[i], got);
    free(got);
  }
  CHECK(dlsym(RTLD_DEFAULT, "swift_demangle") == NULL,
        "asking loaded a Swift runtime");
  return check_result("test_demangle");
}
