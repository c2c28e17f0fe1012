/*
 * test_annealing.c — when two lags are "the same lag again" (one report,
 * its repeats counted) and when they are not.
 *
 * The stacks are named from real pcs: functions of this executable (the
 * app) and of libc (system frames), so in_app is stacksnap's own answer,
 * checked here against dladdr before it is relied on.
 *
 * Found under load in CI (arm64, "repeat: expected one lag report, got 2"):
 * a hot loop that reads the clock was sampled once inside clock_gettime and
 * once outside it, and the two 400 ms lags of one stack were reported as
 * two different lags.
 */
#include <dlfcn.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "lag/lag.h"
#include "stacksnap.h"

/* Three app functions, each long enough to hold the pcs used below (a
   function's start plus up to 6 bytes). */
static volatile int g_sink;
#define APP_FN(name, k)                                                        \
  __attribute__((noinline)) void name(void) {                                  \
    for (int i = 0; i < k; i++)                                                \
      g_sink += i * k;                                                         \
  }
APP_FN(app_compute, 3)
APP_FN(app_step, 5)
APP_FN(app_other, 7)

static uintptr_t in_fn(void (*fn)(void)) { return (uintptr_t)fn + 4; }

static uintptr_t libc_fn(const char *name) {
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  void *p = libc ? dlsym(libc, name) : NULL;
  CHECK(p != NULL, "%s not found in libc.so.6", name);
  return p ? (uintptr_t)p + 4 : 0;
}

static const snap_stack_t *named(const uintptr_t *pcs, int n) {
  const snap_stack_t *s = snap_symbolicate(pcs, n, SNAP_SYMBOLICATE_EXACT_PC0);
  CHECK(s != NULL, "snap_symbolicate failed");
  return s;
}

static bool same(const uintptr_t *a, int na, const uintptr_t *b, int nb) {
  const snap_stack_t *sa = named(a, na), *sb = named(b, nb);
  bool r = snap__same_path(sa, sb);
  CHECK(r == snap__same_path(sb, sa), "same_path is not symmetric");
  snap_stack_release(sa);
  snap_stack_release(sb);
  return r;
}

int main(void) {
  uintptr_t compute = in_fn(app_compute), step = in_fn(app_step),
            other = in_fn(app_other);
  uintptr_t clock = libc_fn("clock_gettime"), memcpy_ = libc_fn("memcpy"),
            start = libc_fn("__libc_start_main");

  /* The oracle for "app": the test's own frames are the app's, libc's not. */
  const snap_stack_t *s = named((uintptr_t[]){clock, compute}, 2);
  if (s && snap_stack_count(s) == 2) {
    CHECK(!snap_stack_frame(s, 0)->in_app, "libc frame counted as the app's");
    CHECK(snap_stack_frame(s, 1)->in_app, "the test's frame not the app's");
  }
  snap_stack_release(s);

  /* The CI case: the same lag, sampled inside and outside a libc call. */
  CHECK(same((uintptr_t[]){clock, compute, step, start}, 4,
             (uintptr_t[]){compute, step, start}, 3),
        "a system leaf frame made one lag two");
  /* Different system frames below or between the app frames: still one. */
  CHECK(same((uintptr_t[]){memcpy_, compute, step, start}, 4,
             (uintptr_t[]){clock, compute, clock, step}, 4),
        "system frames between app frames made one lag two");
  /* Another pc inside the same function: the same lag. */
  CHECK(same((uintptr_t[]){compute + 2, step}, 2, (uintptr_t[]){compute, step},
             2),
        "two pcs of one function made one lag two");

  /* A different app function, an extra app frame, a missing one: not. */
  CHECK(!same((uintptr_t[]){other, step}, 2, (uintptr_t[]){compute, step}, 2),
        "different app functions taken for one lag");
  CHECK(!same((uintptr_t[]){other, compute, step}, 3,
              (uintptr_t[]){compute, step}, 2),
        "an extra app frame taken for the same lag");
  CHECK(!same((uintptr_t[]){compute, step}, 2, (uintptr_t[]){compute}, 1),
        "a missing app frame taken for the same lag");
  /* A stack with app frames and one without are different lags. */
  CHECK(!same((uintptr_t[]){clock, start}, 2, (uintptr_t[]){compute, start}, 2),
        "a system-only stack taken for an app lag");
  /* Stacks with no app frame compare every function. */
  CHECK(
      same((uintptr_t[]){clock, start}, 2, (uintptr_t[]){clock + 2, start}, 2),
      "one system-only path taken for two");
  CHECK(!same((uintptr_t[]){memcpy_, start}, 2, (uintptr_t[]){clock, start}, 2),
        "two system-only paths taken for one");
  /* No stack (the main thread could not be sampled) is never the same. */
  CHECK(!snap__same_path(NULL, NULL), "two missing stacks taken for one");
  return check_result("test_annealing");
}
