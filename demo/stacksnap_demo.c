/*
 * stacksnap_demo.c — what stacksnap does, shown on a terminal.
 *
 *  1. This thread's stack from three nested functions: snap_print_callstack,
 *     then snap_callstack_symbols with SNAP_CAPTURE_APP_ONLY (three times:
 *     cached from the second).
 *  2. A busy worker thread: spinning in our own code; snap_thread_is_running
 *     says 1, and snap_capture_thread samples it from the outside.
 *  3. A thread blocked on a lock: asleep inside libc's pthread_mutex_lock;
 *     snap_thread_is_running says 0, and the sample still reaches through
 *     libc (unwind tables) to the complete app chain above it.
 *  4. The thread list, with running/idle for each thread.
 *
 * Frames print with their names, one line each in the layout of Apple's
 * callStackSymbols (snap_print_callstack, snap_stack_line): index, image,
 * pc, "symbol + offset". Names come from stacksnap's own symbol reader
 * (the ELF symbol tables, static functions and libc's internals included
 * where debug symbols are installed), cached per stack.
 *
 * Exits 0, or prints snap_strerror(rc) and exits 1 on any error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* syscall */
#endif
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "stacksnap.h"

#define NOINLINE __attribute__((noinline))
/* After a call: keeps the caller's frame alive (no tail call). */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

#define DEPTH 64

/* The functions whose names should show up in the stacks. */
void demo_handle_request(void);
void demo_parse_input(void);
void demo_print_my_stack(void);
void *demo_worker_main(void *arg);
void demo_compute_report(void);
void demo_crunch_numbers(void);
void *demo_db_thread_main(void *arg);
void demo_save_record(void);
void demo_wait_for_db_lock(void);

typedef struct demo_thread {
  pthread_t thread;
  atomic_int tid;   /* kernel TID, published by the thread itself */
  atomic_int ready; /* 1 once it is about to spin / block */
} demo_thread_t;

static demo_thread_t g_busy, g_blocked;
static atomic_int g_stop_spinning;
static pthread_mutex_t g_db_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- Helpers ------------------------------------------------------------- */

static void fail(const char *what, int rc) {
  fprintf(stderr, "stacksnap_demo: %s failed: %s (%d)\n", what,
          snap_strerror(rc), rc);
  exit(1);
}

static void fail_msg(const char *what) {
  fprintf(stderr, "stacksnap_demo: %s\n", what);
  exit(1);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void section(const char *title) { printf("\n== %s ==\n", title); }

/* Prints one named frame per line (snap_stack_line). first_is_pc: frame 0
   is an interrupted pc (a thread sample), not a return address, so it is
   named by itself rather than by the call before it. */
static void print_frames(const uintptr_t *pcs, int n, bool first_is_pc) {
  const snap_stack_t *s =
      snap_symbolicate(pcs, n, first_is_pc ? SNAP_SYMBOLICATE_EXACT_PC0 : 0);
  if (!s)
    fail_msg("snap_symbolicate failed");
  for (int i = 0; i < snap_stack_count(s); i++)
    printf("  %s\n", snap_stack_line(s, i));
  snap_stack_release(s);
}

static void print_is_running(const char *who, snap_thread_t tid) {
  int rc = snap_thread_is_running(tid);
  if (rc < 0)
    fail("snap_thread_is_running", rc);
  printf("snap_thread_is_running(%s, tid %" PRIu64 ") = %d (%s)\n", who, tid,
         rc, rc ? "running" : "idle: sleeping or waiting");
}

static void sample_thread(const char *who, snap_thread_t tid) {
  uintptr_t pcs[DEPTH];
  int n = snap_capture_thread(tid, pcs, DEPTH, 0);
  if (n < 0)
    fail("snap_capture_thread", n);
  printf("snap_capture_thread(%s): %d frames (#0 is where it was stopped, "
         "the rest are return addresses)\n",
         who, n);
  print_frames(pcs, n, true);
}

static void start_thread(demo_thread_t *t, void *(*entry)(void *)) {
  int err = pthread_create(&t->thread, NULL, entry, t);
  if (err) {
    fprintf(stderr, "stacksnap_demo: pthread_create failed: %s\n",
            strerror(err));
    exit(1);
  }
  for (int i = 0; !atomic_load(&t->ready) || !atomic_load(&t->tid); i++) {
    if (i == 5000)
      fail_msg("a worker thread did not start within 5 s");
    sleep_ms(1);
  }
}

/* ---- 1. This thread's stack ---------------------------------------------- */

NOINLINE void demo_print_my_stack(void) {
  printf("snap_print_callstack(1, %d, 0): this stack, named, straight to "
         "stdout\n",
         DEPTH);
  fflush(stdout); /* snap_print_callstack writes to the fd directly */
  int n = snap_print_callstack(1, DEPTH, 0);
  if (n < 0)
    fail("snap_print_callstack", n);

  /* The same stack as an object: what a hook keeps and counts. Asked three
     times from one call site: the cache keeps it from the second on (the
     first is named and not kept: most stacks are never asked again), and
     the third answer is the cached object. */
  const snap_stack_t *app = NULL;
  /* volatile: the compiler must not unroll the loop into three call sites. */
  for (volatile int i = 0; i < 3; i++) {
    const snap_stack_t *s =
        snap_callstack_symbols(DEPTH, SNAP_CAPTURE_APP_ONLY);
    if (!s)
      fail_msg("snap_callstack_symbols failed");
    if (i == 2)
      printf(
          "\nsnap_callstack_symbols(%d, SNAP_CAPTURE_APP_ONLY): %d "
          "frames, only those in app images (libc is gone); asked three times, "
          "%s\n",
          DEPTH, snap_stack_count(s),
          s == app ? "the third answer is the same cached object"
                   : "two different objects");
    snap_stack_release(app);
    app = s;
  }
  for (int i = 0; i < snap_stack_count(app); i++)
    printf("%s\n", snap_stack_line(app, i));
  snap_stack_release(app);
  KEEP_FRAME();
}

NOINLINE void demo_parse_input(void) {
  demo_print_my_stack();
  KEEP_FRAME();
}

NOINLINE void demo_handle_request(void) {
  demo_parse_input();
  KEEP_FRAME();
}

/* ---- 2. A busy worker thread --------------------------------------------- */

NOINLINE void demo_crunch_numbers(void) {
  atomic_store(&g_busy.ready, 1);
  while (!atomic_load(&g_stop_spinning))
    for (volatile int i = 0; i < 1000; i++)
      ;
  KEEP_FRAME();
}

NOINLINE void demo_compute_report(void) {
  demo_crunch_numbers();
  KEEP_FRAME();
}

NOINLINE void *demo_worker_main(void *arg) {
  demo_thread_t *t = arg;
  atomic_store(&t->tid, (int)syscall(SYS_gettid));
  demo_compute_report();
  KEEP_FRAME();
  return NULL;
}

/* ---- 3. A thread blocked on a lock --------------------------------------- */

NOINLINE void demo_wait_for_db_lock(void) {
  atomic_store(&g_blocked.ready, 1);
  pthread_mutex_lock(&g_db_lock); /* main holds it: sleeps here */
  pthread_mutex_unlock(&g_db_lock);
  KEEP_FRAME();
}

NOINLINE void demo_save_record(void) {
  demo_wait_for_db_lock();
  KEEP_FRAME();
}

NOINLINE void *demo_db_thread_main(void *arg) {
  demo_thread_t *t = arg;
  atomic_store(&t->tid, (int)syscall(SYS_gettid));
  demo_save_record();
  KEEP_FRAME();
  return NULL;
}

/* ---- 4. The thread list -------------------------------------------------- */

static const char *thread_role(snap_thread_t tid) {
  if (tid == snap_thread_main())
    return "main thread (this one)";
  if (tid == (snap_thread_t)atomic_load(&g_busy.tid))
    return "busy worker: demo_worker_main";
  if (tid == (snap_thread_t)atomic_load(&g_blocked.tid))
    return "blocked on a lock: demo_db_thread_main";
  return "";
}

static void print_thread_list(void) {
  snap_thread_t tids[64];
  int total = snap_thread_list(tids, 64);
  if (total < 0)
    fail("snap_thread_list", total);
  int shown = total < 64 ? total : 64;
  printf("snap_thread_list: %d threads; snap_thread_main() = %" PRIu64
         ", snap_thread_self() = %" PRIu64 "\n",
         total, snap_thread_main(), snap_thread_self());
  for (int i = 0; i < shown; i++) {
    int rc = snap_thread_is_running(tids[i]);
    const char *state = rc == 1                ? "running"
                        : rc == 0              ? "idle"
                        : rc == SNAP_ENOTHREAD ? "exited"
                                               : NULL;
    if (!state)
      fail("snap_thread_is_running", rc);
    printf("  tid %-8" PRIu64 " %-8s %s\n", tids[i], state,
           thread_role(tids[i]));
  }
}

/* ---- main ---------------------------------------------------------------- */

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  printf("stacksnap demo: in-process call-stack capture, named\n");
  printf("Frames print as Apple's callStackSymbols lines: index, image, pc, "
         "symbol + offset\n(image + offset where no symbol is known).\n");

  section("1. This thread's stack");
  printf("main -> demo_handle_request -> demo_parse_input -> "
         "demo_print_my_stack\n");
  demo_handle_request();

  section("2. A busy worker thread");
  printf("demo_worker_main -> demo_compute_report -> demo_crunch_numbers "
         "(spins until told to stop)\n");
  start_thread(&g_busy, demo_worker_main);
  snap_thread_t busy = (snap_thread_t)atomic_load(&g_busy.tid);
  print_is_running("busy worker", busy);
  sample_thread("busy worker", busy);

  section("3. A thread blocked on a lock");
  printf("demo_db_thread_main -> demo_save_record -> demo_wait_for_db_lock -> "
         "pthread_mutex_lock\n(on a mutex the main thread holds)\n");
  pthread_mutex_lock(&g_db_lock);
  start_thread(&g_blocked, demo_db_thread_main);
  snap_thread_t blocked = (snap_thread_t)atomic_load(&g_blocked.tid);
  for (int i = 0;; i++) {
    int rc = snap_thread_is_running(blocked);
    if (rc < 0)
      fail("snap_thread_is_running", rc);
    if (rc == 0)
      break;
    if (i == 5000)
      fail_msg("the blocked thread did not go to sleep within 5 s");
    sleep_ms(1);
  }
  print_is_running("blocked thread", blocked);
  sample_thread("blocked thread", blocked);
  printf("The libc frames come from libc's unwind tables (.eh_frame): "
         "Debian's libc has no frame\npointers. The app chain that called "
         "into libc is complete, down to the thread's entry.\n");

  section("4. Threads of this process");
  print_thread_list();

  section("5. Clean up");
  pthread_mutex_unlock(&g_db_lock);
  atomic_store(&g_stop_spinning, 1);
  int err = pthread_join(g_busy.thread, NULL);
  if (!err)
    err = pthread_join(g_blocked.thread, NULL);
  if (err) {
    fprintf(stderr, "stacksnap_demo: pthread_join failed: %s\n", strerror(err));
    return 1;
  }
  printf("Released the lock, stopped the spinner, joined both threads. "
         "Done.\n");
  return 0;
}
