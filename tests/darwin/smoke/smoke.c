/*
 * smoke.c — the Apple smoke test: every public entry point the backend
 * serves, called the way an app calls them. Cross-compiled and linked by
 * check-darwin; built and run on macOS by .github/workflows/apple.yml. It
 * prints what it found and fails on what must hold anywhere:
 *   - a capture of this thread names this file's functions, in order;
 *   - the main thread is known, listed, and can be sampled from another
 *     thread (suspended, walked, resumed) with at least two frames;
 *   - the main executable is an app image; libSystem's code is not;
 *   - a stack names its frames (system provider) and prints as lines;
 *   - the lag watchdog reports a 400 ms busy stretch of the main thread
 *     (mach sampling from the watchdog thread, report file written), and
 *     the CFRunLoop adapter attaches where CoreFoundation is loaded.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stacksnap.h"

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "smoke: %s:%d: %s\n", __FILE__, __LINE__, #cond);        \
      failures++;                                                              \
    }                                                                          \
  } while (0)

static int failures;

static int g_reports;
static void on_report(const char *path, void *ctx) {
  (void)ctx;
  printf("smoke: lag report %s\n", path);
  __atomic_add_fetch(&g_reports, 1, __ATOMIC_SEQ_CST);
}

static void lag_smoke(void) {
  char dir[] = "/tmp/snapsmoke_lag.XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  snap_lag_config_t c;
  snap_lag_config_default(&c);
  c.report_dir = dir;
  c.on_report = on_report;
  CHECK(snap_lag_start(&c) == SNAP_OK);
  int rc = snap_lag_attach_cfrunloop(NULL);
  CHECK(rc == SNAP_OK || rc == SNAP_EUNSUPPORTED); /* no CF in a C tool */
  snap_lag_loop_busy();
  volatile unsigned x = 1;
  for (int i = 0; i < 40 && !__atomic_load_n(&g_reports, __ATOMIC_SEQ_CST);
       i++) {
    usleep(10000);
    for (int j = 0; j < 100000; j++)
      x = x * 1103515245u + 12345u;
  }
  usleep(400000);
  snap_lag_loop_idle();
  CHECK(snap_lag_stop() == SNAP_OK);
  CHECK(__atomic_load_n(&g_reports, __ATOMIC_SEQ_CST) > 0);
}
int snapsmoke_embedded_call(int (*fn)(void *), void *arg);

typedef struct sampled {
  snap_thread_t target;
  int n;
  uintptr_t pcs[64];
} sampled_t;

static void *sampler(void *arg) {
  sampled_t *s = arg;
  s->n = snap_capture_thread(s->target, s->pcs, 64, 0);
  return NULL;
}

__attribute__((noinline)) static int capture_here(void *arg) {
  uintptr_t *pcs = arg;
  int n = snap_capture_self(pcs, 32, 0, 0);
  __asm__ volatile("" ::: "memory");
  return n;
}

int main(void) {
  /* Same thread, through an embedded library (two app images). */
  uintptr_t pcs[32];
  int n = snapsmoke_embedded_call(capture_here, pcs);
  printf("smoke: self capture: %d frames\n", n);
  CHECK(n >= 3);
  if (n > 0)
    CHECK(snap_is_app_address(pcs[0]));
  CHECK(!snap_is_app_address((uintptr_t)&write));

  /* Threads. */
  snap_thread_t self = snap_thread_self(), main_thread = snap_thread_main();
  CHECK(self != 0 && self == main_thread);
  snap_thread_t list[64];
  int count = snap_thread_list(list, 64);
  CHECK(count >= 1);
  int listed = 0;
  for (int i = 0; i < count && i < 64; i++)
    listed |= list[i] == main_thread;
  CHECK(listed);

  /* Another thread samples this one while it waits in pthread_join. */
  sampled_t s = {main_thread, 0, {0}};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, sampler, &s) == 0);
  pthread_join(t, NULL);
  printf("smoke: main thread sampled from another: %d frames\n", s.n);
  CHECK(s.n >= 2);

  /* Names. */
  const snap_stack_t *st = snap_callstack_symbols(16, 0);
  CHECK(st != NULL);
  if (st) {
    for (int i = 0; i < snap_stack_count(st); i++)
      printf("%s\n", snap_stack_line(st, i));
    const snap_frame_t *f0 = snap_stack_frame(st, 0);
    CHECK(f0 && f0->symbol && strstr(f0->symbol, "main"));
    snap_stack_release(st);
  }
  CHECK(snap_print_callstack(1, 8, 0) >= 0);
  CHECK(snap_set_sample_signal(30) == SNAP_EUNSUPPORTED);
  lag_smoke();

  printf("smoke: %s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
