/*
 * test_fork_order.c — the fork seam's stated order (platform.h, Fork;
 * posix/fork_hook.c), as an app that uses stacksnap from its own fork
 * handlers sees it.
 *
 * The app registers its handlers with pthread_atfork in main, after the
 * library was loaded and before it starts a lag monitor and a trace; libc
 * runs prepare handlers in the reverse order of registration, parent and
 * child handlers in that order. The library's handlers are one
 * registration made at load time, so:
 *  - the app's child handler runs after every stage of the library was
 *    reset: there, the parent's watchdog and trace threads do not exist,
 *    so snap_lag_stop and snap_trace_stop return SNAP_OK at once and
 *    snap_trace_mark finds no trace; the child captures and names its own
 *    stack (its handler's name must be in it), holds no descriptor of
 *    the parent trace's thread list (/proc/<pid>/task), and (but under
 *    TSan, which does not support threads made after fork) starts and
 *    stops a lag monitor of its own;
 *  - the app's prepare handler runs before the library's takes its locks:
 *    it names a stack (cache, ELF provider, image table) without waiting
 *    on a lock its own thread holds.
 * Before the seam, the watchdog and the trace registered their child
 * handlers at their first start, after the app's: in the app's child
 * handler both still looked running (measured on that code: every child
 * failed snap_lag_stop, snap_trace_stop and naming its own stack; exit
 * status 0xb).
 *
 * Meanwhile two threads name fresh stacks and capture the main thread's
 * (but under TSan: namer() says why), and the trace samples them, so the
 * forks land inside captures, samples and naming. A child that hangs is
 * killed by its alarm (SIGALRM: counted as a failure).
 *
 * AddressSanitizer's runtimes before LLVM 18 hold their allocator's locks
 * across fork without a fork handler (llvm-project PR 75290, "[asan]
 * Install pthread_atfork", 2023-12, added one): a child whose parent had
 * another thread inside a refill of ASan's size-class caches hangs in its
 * first malloc of that class (seen here with clang 14: 6 runs in 30 hung,
 * gdb showed the child's watchdog in SizeClassAllocator64::GetFromAllocator
 * waiting on the region's mutex). glibc's malloc takes its arena locks
 * around fork, so plain builds have no such hazard. Under those runtimes
 * the namers step aside while the parent forks (ASAN_FORK_GATE), so no
 * fork lands inside their naming; their captures of the main thread stay
 * outside the gate, and the other builds keep forks inside naming.
 */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "oracle.h"
#include "stacksnap.h"

#define FORKS 20
#define NAMERS 2
#define CHILD_ALARM_SECONDS 30

static atomic_bool g_stop;
static char g_dir[64];

#if SNAP_TEST_ASAN && !(defined(__clang__) && __clang_major__ >= 18)
#define ASAN_FORK_GATE 1
#else
#define ASAN_FORK_GATE 0
#endif

/* The gate (ASAN_FORK_GATE): the forking thread raises g_forking and waits
   until no namer is inside; a namer enters only while it is lowered
   (sequentially consistent, so one of the two always sees the other). */
static atomic_bool g_forking;
static atomic_int g_inside;

static void namer_enter(void) {
  for (;;) {
    while (ASAN_FORK_GATE && atomic_load(&g_forking))
      sched_yield();
    atomic_fetch_add(&g_inside, 1);
    if (!ASAN_FORK_GATE || !atomic_load(&g_forking))
      return;
    atomic_fetch_sub(&g_inside, 1);
  }
}

static void namer_leave(void) { atomic_fetch_sub(&g_inside, 1); }

static void gate_close(void) {
  atomic_store(&g_forking, true);
  while (ASAN_FORK_GATE && atomic_load(&g_inside) > 0)
    sched_yield();
}

static void gate_open(void) { atomic_store(&g_forking, false); }

/* What the app's handlers saw, for the child to report (bit per failure). */
static int g_prepare_named;
static int g_child_failures;

/* True when the calling thread's named stack holds a frame called fn. */
static bool names_itself(const char *fn) {
  const snap_stack_t *s = snap_callstack_symbols(SNAP_MAX_FRAMES, 0);
  bool found = false;
  for (int i = 0; s && i < snap_stack_count(s) && !found; i++) {
    const snap_frame_t *f = snap_stack_frame(s, i);
    found = f->symbol && strcmp(f->symbol, fn) == 0;
  }
  snap_stack_release(s);
  return found;
}

__attribute__((noinline)) static void app_prepare(void) {
  g_prepare_named = names_itself("app_prepare");
}

__attribute__((noinline)) static void app_child(void) {
  alarm(CHILD_ALARM_SECONDS); /* a hang below fails the test, not the suite */
  int f = 0;
  if (snap_lag_stop() != SNAP_OK)
    f |= 1; /* the parent's watchdog still looked running */
  if (snap_trace_stop() != SNAP_OK)
    f |= 2;
  if (snap_trace_mark("child") != SNAP_EINVAL)
    f |= 4; /* the parent's trace still looked running */
  if (!names_itself("app_child"))
    f |= 8;
  if (oracle_fd_ending_in("/task") >= 0)
    f |= 64; /* the parent trace's thread lister, left open */
  if (!SNAP_TEST_TSAN) {
    snap_lag_config_t c;
    snap_lag_config_default(&c);
    c.report_dir = g_dir;
    if (snap_lag_start(&c) != SNAP_OK || snap_lag_stop() != SNAP_OK)
      f |= 16;
  }
  g_child_failures = f;
}

/* Names a fresh stack again and again: its own, so every call captures,
   walks and names (the cache answers repeats, which still lock it). */
static void *namer(void *arg) {
  (void)arg;
  while (!atomic_load(&g_stop)) {
    namer_enter();
    snap_stack_release(snap_callstack_symbols(SNAP_MAX_FRAMES, 0));
    namer_leave();
    /* Not under TSan: it holds a signal back while its target is inside
       pthread_mutex_lock, and the forking main thread waits there, in
       the library's prepare handler, for the sampler lock this capture
       holds; each fork then waited for captures to time out (53 and 167
       s a run here, against ctest's 120). */
    uintptr_t pcs[64];
    int n = SNAP_TEST_TSAN
                ? 0
                : snap_capture_thread(snap_thread_main(), pcs, 64, 0);
    namer_enter();
    if (n > 0)
      snap_stack_release(snap_symbolicate(pcs, n, 0));
    namer_leave();
  }
  return NULL;
}

/* The test's report directory, with the reports in it. */
static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char path[128];
    if (e->d_name[0] != '.' &&
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
      unlink(path);
  }
  if (d)
    closedir(d);
  rmdir(dir);
}

int main(void) {
  if (getenv("SNAP_TEST_EMULATED")) {
    /* qemu-user's fork of a process whose threads run (the namers, the
       watchdog, the trace's CPU-time timer signals) aborts in the
       emulator itself, in every child: "cpu-exec.c:954: cpu_exec:
       assertion failed: (cpu == current_cpu)". The order is the seam's,
       the same on every architecture: the native configurations prove
       it. */
    printf("skipped: qemu-user aborts in a child forked beside running "
           "threads\n");
    return 77;
  }
  CHECK(pthread_atfork(app_prepare, NULL, app_child) == 0, "pthread_atfork");
  snprintf(g_dir, sizeof g_dir, "/tmp/snap_fork_order.%d", (int)getpid());

  snap_lag_config_t lc;
  snap_lag_config_default(&lc);
  lc.report_dir = g_dir;
  CHECK_EQ(snap_lag_start(&lc), SNAP_OK);
  snap_trace_config_t tc;
  snap_trace_config_default(&tc);
  tc.other_interval_us = 1000;
  CHECK_EQ(snap_trace_start(&tc), SNAP_OK);

  pthread_t th[NAMERS];
  for (int i = 0; i < NAMERS; i++)
    CHECK(pthread_create(&th[i], NULL, namer, NULL) == 0, "thread");

  int ok = 0, hung = 0;
  for (int i = 0; i < FORKS; i++) {
    snap_lag_loop_busy(); /* the watchdog watches a stretch across fork */
    gate_close();
    pid_t pid = fork();
    if (pid == 0)
      _exit(g_child_failures | (g_prepare_named ? 0 : 32));
    gate_open();
    snap_lag_loop_idle();
    CHECK(g_prepare_named, "fork %d: prepare could not name its stack", i);
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait");
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
      hung++;
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
      ok++;
    else
      CHECK(false,
            "fork %d: child status %#x (exit bits: 1 lag_stop, 2 "
            "trace_stop, 4 trace_mark, 8 naming, 16 lag_start, "
            "32 prepare, 64 the parent's task directory left open)",
            i, status);
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  atomic_store(&g_stop, true);
  for (int i = 0; i < NAMERS; i++)
    pthread_join(th[i], NULL);
  CHECK_EQ(snap_trace_stop(), SNAP_OK);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  remove_dir(g_dir); /* a slow box may have reported a lag in it */
  printf("%d forks: %d children ok, %d hung in the app's child handler%s\n",
         FORKS, ok, hung,
         ASAN_FORK_GATE ? " (namers stepped aside from each fork)" : "");
  CHECK(hung == 0,
        "%d of %d children hung: the library's fork handlers ran "
        "after the app's",
        hung, FORKS);
  return check_result("test_fork_order");
}
