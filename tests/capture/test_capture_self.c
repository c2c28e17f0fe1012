/*
 * test_capture_self.c — snap_capture_self against glibc's backtrace(), frame
 * for frame, for chains of our own frame-pointer code on the main thread and
 * on a pthread; through a libc callback (qsort, no frame pointers in libc);
 * app-only filtering; skip and max; and the bad-input cases.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "oracle.h"
#include "stacksnap.h"

#define DEPTH 64

typedef struct result {
  uintptr_t ours[DEPTH];
  void *theirs[DEPTH];
  int n_ours, n_theirs;
} result_t;

static backtrace_fn g_backtrace;

/* Both captures from the same function: frame 0 of each is the return
   address into this function, so the two must agree exactly except for
   frame 0 (two different call sites). */
__attribute__((noinline)) static void take(result_t *r, unsigned flags) {
  r->n_ours = snap_capture_self(r->ours, DEPTH, 0, flags);
  r->n_theirs = g_backtrace(r->theirs, DEPTH);
  __asm__ volatile("" ::: "memory");
}

static void compare(const char *what, const result_t *r) {
  CHECK(r->n_ours > 3, "%s: only %d frames", what, r->n_ours);
  CHECK_EQ(r->n_ours, r->n_theirs);
  int n = r->n_ours < r->n_theirs ? r->n_ours : r->n_theirs;
  int mismatches = 0;
  for (int i = 1; i < n; i++)
    if (r->ours[i] != (uintptr_t)r->theirs[i])
      mismatches++;
  CHECK(mismatches == 0, "%s: %d frames differ from backtrace()", what,
        mismatches);
  if (check_failures) {
    oracle_print("ours", r->ours, r->n_ours);
    oracle_print("backtrace()", (const uintptr_t *)r->theirs, r->n_theirs);
  }
}

__attribute__((noinline)) static void level3(result_t *r, unsigned flags) {
  take(r, flags);
  __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) static void level2(result_t *r, unsigned flags) {
  level3(r, flags);
  __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) static void level1(result_t *r, unsigned flags) {
  level2(r, flags);
  __asm__ volatile("" ::: "memory");
}

static void *thread_main(void *arg) {
  level1(arg, 0);
  return NULL;
}

/* qsort calls back through libc, which has no frame pointers: the walk
   must recover the frames above qsort from unwind tables. */
static result_t g_cmp_result;
static int g_cmp_taken;
static int cmp(const void *a, const void *b) {
  if (!g_cmp_taken++)
    take(&g_cmp_result, 0);
  return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) static void sort_something(void) {
  int v[32];
  for (int i = 0; i < 32; i++)
    v[i] = (i * 7919) % 32;
  qsort(v, 32, sizeof v[0], cmp);
  __asm__ volatile("" ::: "memory");
}

/* A signal handler running on an alternate stack: the walk starts on the
   alternate stack and must cross the signal frame back to the thread's
   own stack, as backtrace() does. */
static result_t g_alt_result;
static void on_alt_signal(int sig) {
  (void)sig;
  level1(&g_alt_result, 0);
}

static void *altstack_thread(void *arg) {
  (void)arg;
  stack_t ss = {.ss_sp = malloc(1 << 16), .ss_size = 1 << 16, .ss_flags = 0};
  sigaltstack(&ss, NULL);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alt_signal;
  sa.sa_flags = SA_ONSTACK;
  sigaction(SIGUSR2, &sa, NULL);
  raise(SIGUSR2);
  ss.ss_flags = SS_DISABLE;
  void *mem = ss.ss_sp;
  sigaltstack(&ss, NULL);
  free(mem);
  return NULL;
}

__attribute__((noinline)) static int recurse(int depth, uintptr_t *pcs, int max,
                                             int skip) {
  if (depth > 0) {
    int n = recurse(depth - 1, pcs, max, skip);
    __asm__ volatile("" ::: "memory");
    return n;
  }
  return snap_capture_self(pcs, max, skip, 0);
}

int main(void) {
  g_backtrace = oracle_backtrace();
  CHECK(g_backtrace != NULL, "backtrace not found in libc.so.6");
  if (!g_backtrace)
    return check_result("test_capture_self");

  result_t r;
  level1(&r, 0);
  compare("main thread", &r);

  level1(&r, SNAP_CAPTURE_FP_ONLY);
  CHECK(r.n_ours >= 4, "frame-records-only walk found %d frames", r.n_ours);
  for (int i = 1; i < 4 && i < r.n_ours; i++)
    CHECK(r.ours[i] == (uintptr_t)r.theirs[i],
          "fp-only frame %d differs from backtrace()", i);

  /* App only: exactly backtrace()'s frames that lie in app code (frame 0
     excepted, as above: it is a different call site), in order. */
  level1(&r, SNAP_CAPTURE_APP_ONLY);
  {
    int want = 0, ok = 1;
    for (int i = 1; i < r.n_theirs; i++) {
      uintptr_t pc = (uintptr_t)r.theirs[i];
      if (!snap_is_app_address(pc - 1))
        continue;
      want++;
      ok &= want < r.n_ours && r.ours[want] == pc;
    }
    CHECK(r.n_ours == want + 1 && ok, "app-only: %d frames, %d app frames",
          r.n_ours, want + 1);
    CHECK(want >= 3, "app-only: only %d app frames", want);
  }

  pthread_t t;
  result_t tr;
  pthread_create(&t, NULL, thread_main, &tr);
  pthread_join(t, NULL);
  compare("pthread", &tr);

  sort_something();
  compare("qsort callback", &g_cmp_result);

  /* A thread on a stack the app allocated itself. */
  size_t stack_size = 1 << 18;
  void *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstack(&attr, stack, stack_size);
  result_t ur;
  pthread_create(&t, &attr, thread_main, &ur);
  pthread_join(t, NULL);
  pthread_attr_destroy(&attr);
  compare("app-supplied thread stack", &ur);
  munmap(stack, stack_size);

  /* A signal handler on an alternate stack. */
  pthread_create(&t, NULL, altstack_thread, NULL);
  pthread_join(t, NULL);
  compare("handler on sigaltstack", &g_alt_result);

  /* skip and max. */
  uintptr_t a[DEPTH], b[DEPTH];
  int na = recurse(10, a, DEPTH, 0);
  int nb = recurse(10, b, DEPTH, 3);
  CHECK_EQ(nb, na - 3);
  /* Frames 0..10 are inside recurse(); frame 11 is the call site in main,
     which differs between the two calls. */
  for (int i = 0; i + 3 <= 10; i++)
    CHECK(b[i] == a[i + 3], "skip 3: frame %d", i);
  CHECK_EQ(recurse(10, b, 5, 0), 5);
  CHECK(memcmp(a, b, 5 * sizeof a[0]) == 0, "max 5 keeps the first 5 frames");
  CHECK_EQ(recurse(3, b, DEPTH, 1000), 0);
  CHECK_EQ(recurse(3, b, DEPTH, 1 << 30), 0);

  /* Bad input: an error code, never a crash. */
  CHECK_EQ(snap_capture_self(NULL, 10, 0, 0), SNAP_EINVAL);
  CHECK_EQ(snap_capture_self(a, 0, 0, 0), SNAP_EINVAL);
  CHECK_EQ(snap_capture_self(a, -5, 0, 0), SNAP_EINVAL);
  CHECK_EQ(snap_capture_self(a, 10, -1, 0), SNAP_EINVAL);
  CHECK_EQ(snap_capture_self(a, 10, 0, 0x80u), SNAP_EINVAL);
  CHECK(snap_capture_self(a, 1 << 30, 0, 0) > 0, "huge max is a bound only");
  return check_result("test_capture_self");
}
