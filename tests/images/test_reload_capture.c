/*
 * test_reload_capture.c — a library loaded where another was unloaded
 * captures its own stack in its constructor (issue 12, defect 2).
 *
 * libsnap_churn_ctor_a.so and _b.so have one layout (B's frames are larger:
 * their unwind rules differ). A is loaded — its constructor captures, so
 * the unwind-rule cache learns A's code — and unloaded; B is loaded at the
 * same address and its constructor captures with snap_capture_self and with
 * glibc's backtrace(). The image table was refreshed while A was loaded
 * (and A captured again then, so the rule cache holds A's rules under that
 * table's generation); nothing refreshed it after (only capture runs), so
 * B's walk meets a table, and cached rules, that still describe A. Every
 * frame must equal backtrace()'s (frame 0 excepted: the two calls are two
 * call sites), and the walk must not read A's tables where B now lies
 * (under ASan, or a fault, that is a crash; otherwise wrong frames).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "oracle.h"
#include "stacksnap.h"

#define MAXF 64

typedef struct seen {
  void *handle;
  uintptr_t base;
  const uintptr_t *ours;
  void *const *theirs;
  int n_ours, n_theirs;
} seen_t;

/* The constructor's (or the last churn_<tag>_capture's) frame counts. */
static void counts(seen_t *s, char tag) {
  char name[64];
  snprintf(name, sizeof name, "churn_ctor_nsnap_%c", tag);
  int *n = dlsym(s->handle, name);
  s->n_ours = n ? *n : -1;
  snprintf(name, sizeof name, "churn_ctor_nglibc_%c", tag);
  n = dlsym(s->handle, name);
  s->n_theirs = n ? *n : -1;
}

static seen_t load(const char *path, char tag) {
  seen_t s = {0};
  s.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  CHECK(s.handle != NULL, "dlopen %s: %s", path, dlerror());
  if (!s.handle)
    return s;
  char name[64];
  snprintf(name, sizeof name, "churn_%c_f0", tag);
  Dl_info info;
  void *f0 = dlsym(s.handle, name);
  CHECK(f0 && dladdr(f0, &info), "no %s", name);
  s.base = f0 ? (uintptr_t)info.dli_fbase : 0;
  snprintf(name, sizeof name, "churn_ctor_snap_%c", tag);
  s.ours = dlsym(s.handle, name);
  snprintf(name, sizeof name, "churn_ctor_glibc_%c", tag);
  s.theirs = dlsym(s.handle, name);
  counts(&s, tag);
  CHECK(s.ours && s.theirs, "constructor results not found in %s", path);
  return s;
}

static int compare(const char *what, const seen_t *s) {
  CHECK(s->n_theirs > 5, "%s: backtrace() found %d frames", what, s->n_theirs);
  CHECK_EQ(s->n_ours, s->n_theirs);
  int n = s->n_ours < s->n_theirs ? s->n_ours : s->n_theirs, bad = 0;
  for (int i = 1; i < n; i++)
    bad += s->ours[i] != (uintptr_t)s->theirs[i];
  CHECK(bad == 0, "%s: %d frames differ from backtrace()", what, bad);
  if (bad || s->n_ours != s->n_theirs) {
    oracle_print("ours", s->ours, s->n_ours > 0 ? s->n_ours : 0);
    oracle_print("backtrace()", (const uintptr_t *)s->theirs,
                 s->n_theirs > 0 ? s->n_theirs : 0);
  }
  return bad;
}

/* The libraries call the program's snap_capture_self (exported): make sure
   the static library's copy is linked in. */
int (*volatile g_keep)(uintptr_t *, int, int, unsigned) = snap_capture_self;

int main(void) {
  int reused = 0;
  for (int attempt = 0; attempt < 5 && !reused; attempt++) {
    seen_t a = load(LIB_A, 'a');
    if (!a.handle)
      break;
    compare("A's constructor", &a);
    /* Name something (that refreshes the image table, which now lists A),
       then capture in A again: A's unwind rules go into the rule cache
       under the table's generation. */
    uintptr_t pc = a.base + 1;
    snap_stack_release(snap_symbolicate(&pc, 1, 0));
    void (*again)(void) = (void (*)(void))dlsym(a.handle, "churn_a_capture");
    CHECK(again != NULL, "no churn_a_capture");
    if (again) {
      again();
      counts(&a, 'a');
      compare("A, called", &a);
    }
    uintptr_t a_base = a.base;
    CHECK(dlclose(a.handle) == 0, "dlclose A");
    seen_t b = load(LIB_B, 'b');
    if (!b.handle)
      break;
    if (b.base != a_base) { /* not the case under test: try again */
      dlclose(b.handle);
      continue;
    }
    reused = 1;
    printf("B loaded at A's address %#lx\n", (unsigned long)a_base);
    compare("B, where A was", &b);
    /* Refreshed again, B captures through a table that describes it. */
    uintptr_t pc_b = b.base + 1;
    snap_stack_release(snap_symbolicate(&pc_b, 1, 0));
    void (*again_b)(void) = (void (*)(void))dlsym(b.handle, "churn_b_capture");
    CHECK(again_b != NULL, "no churn_b_capture");
    if (again_b) {
      again_b();
      counts(&b, 'b');
      compare("B, called", &b);
    }
    CHECK(dlclose(b.handle) == 0, "dlclose B");
  }
  CHECK(reused, "B was never loaded at A's address");
  return check_result("test_reload_capture");
}
