/*
 * test_blocked_workers.c — issue 25 item 4, "whole stacks for blocked
 * workers": a thread blocked inside a job function that its start routine
 * called through a function pointer (as GLib's thread pool calls a job) is
 * sampled the way the lag dump samples it (snap_capture_thread_wait with
 * SNAP_CAPTURE_QUIET) and its stack must reach the thread's root
 * (start_thread, clone3), not stop at the job function.
 *
 * Cases: a writer waiting on a write-held rwlock, a waiter on a held mutex,
 * both partners of a two-mutex deadlock, and the holder of an rwlock
 * asleep in usleep, in poll and in a condition wait while it holds it.
 * Oracle: glibc's backtrace(), taken by the job itself just before it
 * blocks: every frame from the job function outward (the job, the start
 * routine, start_thread, clone3) must be the sample's last frames, in
 * order, and nothing may follow them.
 *
 * With GLib (TEST_HAVE_GLIB): the main thread idles in a GMainLoop whose
 * poll function the lag adapter wrapped (snap_lag_attach_glib); sampled
 * from another thread while it polls, its stack must end with main and
 * what backtrace() in main saw above it (__libc_start_main, _start): the
 * adapter's wrapper, which GLib calls through its poll function pointer,
 * must not end the stack.
 *
 * Under qemu-user every quiet request falls back to the signal (the
 * syscall file describes the emulator's thread): the same oracle holds
 * and the test says which mode it checked. ThreadSanitizer defers a
 * signal that arrives outside its interceptors, so a sample that fell
 * back to the signal there is not held to the oracle (check.h), and the
 * library sends no signal to a futex waiter there (blocked_regs.c): a
 * futex waiter's stack may then end at the job (checked to be right), and
 * the test reports itself skipped (77) with the reason. A quiet walk
 * crosses the job by reading where its prologue put its frame record
 * (src/capture/prologue.c), whatever the wait; only where that prologue
 * cannot be read (a sanitizer's frame) may the sleep and poll holders,
 * whose waits a signal would end (EINTR), end at the job: then exactly
 * there. Before the prologue reader, they ended at the job in every build.
 */
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "capture/capture.h"
#include "capture/prologue.h"
#include "check.h"
#include "oracle.h"
#include "stacksnap.h"
#include "test_clock.h"

#ifdef TEST_HAVE_GLIB
#include <glib.h>
#endif

enum {
  C_RWLOCK_WAITER,
  C_MUTEX_WAITER,
  C_DEADLOCK,
  C_HOLDER_USLEEP,
  C_HOLDER_POLL,
  C_HOLDER_CONDWAIT,
  CASES
};
static const char *const k_case_names[CASES] = {
    "rwlock writer waiting", "mutex waiter",
    "deadlock partners",     "rwlock holder in usleep",
    "rwlock holder in poll", "rwlock holder in pthread_cond_wait"};

#define BT_MAX 64

typedef struct worker {
  int kind;
  int role; /* deadlock: 0 or 1 */
  atomic_int tid;
  atomic_bool blocking; /* backtrace taken; the blocking call is next */
  atomic_bool stop;
  void *bt[BT_MAX];
  int nbt;
} worker_t;

static pthread_rwlock_t g_rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_dl[2] = {PTHREAD_MUTEX_INITIALIZER,
                                  PTHREAD_MUTEX_INITIALIZER};
static pthread_mutex_t g_cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static atomic_int g_dl_holding;
static atomic_bool g_cv_go;

static void record(worker_t *w) {
  backtrace_fn bt = oracle_backtrace();
  w->nbt = bt ? bt(w->bt, BT_MAX) : 0;
  atomic_store(&w->blocking, true);
}

/* The job: what GLib's pool runs, reached only through a pointer. */
__attribute__((noinline)) void *blocked_job(void *arg) {
  worker_t *w = arg;
  atomic_store(&w->tid, (int)syscall(SYS_gettid));
  switch (w->kind) {
  case C_RWLOCK_WAITER:
    record(w);
    pthread_rwlock_wrlock(&g_rw);
    pthread_rwlock_unlock(&g_rw);
    break;
  case C_MUTEX_WAITER:
    record(w);
    pthread_mutex_lock(&g_mutex);
    pthread_mutex_unlock(&g_mutex);
    break;
  case C_DEADLOCK: {
    pthread_mutex_t *mine = &g_dl[w->role], *other = &g_dl[!w->role];
    pthread_mutex_lock(mine);
    atomic_fetch_add(&g_dl_holding, 1);
    while (atomic_load(&g_dl_holding) < 2)
      usleep(1000);
    record(w);
    pthread_mutex_lock(other); /* the deadlock: released by the main's
                                  trylock-free exit below (stop) */
    pthread_mutex_unlock(other);
    pthread_mutex_unlock(mine);
    break;
  }
  case C_HOLDER_USLEEP:
  case C_HOLDER_POLL:
  case C_HOLDER_CONDWAIT:
    pthread_rwlock_wrlock(&g_rw);
    record(w);
    while (!atomic_load(&w->stop)) {
      if (w->kind == C_HOLDER_USLEEP) {
        usleep(20000);
      } else if (w->kind == C_HOLDER_POLL) {
        poll(NULL, 0, 20);
      } else {
        pthread_mutex_lock(&g_cm);
        while (!atomic_load(&g_cv_go))
          pthread_cond_wait(&g_cv, &g_cm);
        pthread_mutex_unlock(&g_cm);
      }
    }
    pthread_rwlock_unlock(&g_rw);
    break;
  }
  return NULL;
}

static void *(*volatile g_job)(void *) = blocked_job;

/* The thread's start routine: calls the job through the pointer, and is
   no tail call away from it (its frame is part of the expected stack). */
__attribute__((noinline)) void *worker_start(void *arg) {
  void *r = g_job(arg);
  __asm__ volatile("" ::: "memory");
  return r;
}

/* Whether the sample's last frames are the oracle's from the job on. */
static bool ends_like_oracle(const uintptr_t *pcs, int n, const worker_t *w,
                             int *at) {
  uintptr_t oracle[BT_MAX];
  for (int i = 0; i < w->nbt; i++)
    oracle[i] = (uintptr_t)w->bt[i];
  int o = oracle_find_fn(oracle, w->nbt, 0, (void *)blocked_job, 0);
  int s = oracle_find_fn(pcs, n, 0, (void *)blocked_job, 1);
  *at = s;
  if (o < 0 || s < 0)
    return false;
  /* The job's own frame is at another pc (the blocking call, not the
     backtrace call); every frame past it is the same return address. */
  if (n - s != w->nbt - o)
    return false;
  for (int i = 1; s + i < n; i++)
    if (pcs[s + i] != oracle[o + i])
      return false;
  return true;
}

/* Waits until the thread is in the kernel (its syscall file is not
   "running"), up to 2 s. */
static bool wait_blocked(int tid) {
  for (int i = 0; i < 2000; i++) {
    char path[64], buf[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    FILE *f = fopen(path, "r");
    if (!f)
      return false;
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = '\0';
    if (strncmp(buf, "running", 7) != 0)
      return true;
    usleep(1000);
  }
  return false;
}

static bool g_qemu;

/* Quiet walks completed by the signal so far (capture.c). */
static uint64_t quiet_completed(void) {
  return snap__capture_quiet_completed();
}
static int g_tsan_short; /* TSan: cases it kept from being checked whole */

/* Whether a signal cannot change this case's wait (blocked_regs.c): an
   untimed futex wait. The sleeps and polls are not: a signal would end
   them with EINTR. */
static bool restartable_case(int kind) {
  return kind != C_HOLDER_USLEEP && kind != C_HOLDER_POLL;
}

/* Whether the library can read where the job's frame record lies from its
   prologue (prologue.c): then a quiet walk crosses the job without a
   signal, whatever the wait. Where it cannot (a sanitizer's frame), a
   walk that ends for want of fp must end exactly at the job function
   (shorter, never wrong) when no signal may complete it. */
static bool job_prologue_known(void) {
  uintptr_t off;
  return snap__prologue_record((uintptr_t)blocked_job,
                               (uintptr_t)blocked_job + 256, &off);
}

static void sample_worker(const char *what, worker_t *w) {
  int tid = atomic_load(&w->tid);
  CHECK(wait_blocked(tid), "%s", "");
  usleep(5000);
  for (int round = 0; round < 5; round++) {
    uintptr_t pcs[SNAP_MAX_FRAMES];
    snap_wait_t wait = {.size = sizeof wait};
    uint64_t kept0, sig0, kept1, sig1;
    uint64_t done0 = quiet_completed();
    snap__capture_quiet_counts(&kept0, &sig0);
    int n = snap_capture_thread_wait((snap_thread_t)tid, pcs, SNAP_MAX_FRAMES,
                                     SNAP_CAPTURE_QUIET, &wait);
    snap__capture_quiet_counts(&kept1, &sig1);
    bool quiet = kept1 > kept0;
    bool completed = quiet_completed() > done0;
    const char *mode = quiet       ? "quiet"
                       : completed ? "quiet, completed by the signal"
                                   : "signalled";
    CHECK(n > 0, "%s: n = %d", what, n);
    if (n <= 0)
      return;
    if (SNAP_TEST_TSAN && !quiet)
      continue; /* a deferred signal: not held to the oracle (check.h) */
    if (g_qemu)
      CHECK(!quiet, "%s", "qemu-user: a quiet walk was kept");
    int at;
    bool whole = ends_like_oracle(pcs, n, w, &at);
    bool short_ok = quiet && at == n - 1 && at >= 0;
    bool may_be_short =
        !job_prologue_known() && (!restartable_case(w->kind) || SNAP_TEST_TSAN);
    if (!whole && !(may_be_short && short_ok)) {
      fprintf(stderr,
              "FAILED: %s (%s sample, round %d): the stack does not "
              "end as backtrace() saw it (job at %d)\n",
              what, mode, round, at);
      oracle_print("sample", pcs, n);
      uintptr_t o[BT_MAX];
      for (int i = 0; i < w->nbt; i++)
        o[i] = (uintptr_t)w->bt[i];
      oracle_print("backtrace() before blocking", o, w->nbt);
      CHECK(false, "%s", "");
      return;
    }
    if (!whole && restartable_case(w->kind))
      g_tsan_short++;
    if (round == 0)
      printf("ok: %s: %d frames, %s%s\n", what, n, mode,
             whole ? "" : ", ends at the job (a signal would end this wait)");
  }
}

static void start(worker_t *w, pthread_t *t, int kind, int role) {
  memset(w, 0, sizeof *w);
  w->kind = kind;
  w->role = role;
  CHECK_EQ(pthread_create(t, NULL, worker_start, w), 0);
  while (!atomic_load(&w->blocking))
    usleep(1000);
}

static void run_case(int kind) {
  worker_t w[2];
  pthread_t t[2];
  switch (kind) {
  case C_RWLOCK_WAITER:
    pthread_rwlock_wrlock(&g_rw);
    start(&w[0], &t[0], kind, 0);
    sample_worker(k_case_names[kind], &w[0]);
    pthread_rwlock_unlock(&g_rw);
    pthread_join(t[0], NULL);
    break;
  case C_MUTEX_WAITER:
    pthread_mutex_lock(&g_mutex);
    start(&w[0], &t[0], kind, 0);
    sample_worker(k_case_names[kind], &w[0]);
    pthread_mutex_unlock(&g_mutex);
    pthread_join(t[0], NULL);
    break;
  case C_DEADLOCK:
    /* Both partners hold one and wait for the other: a real deadlock, the
       process leaves them there (detached) when it exits. */
    atomic_store(&g_dl_holding, 0);
    for (int i = 0; i < 2; i++) {
      memset(&w[i], 0, sizeof w[i]);
      w[i].kind = kind;
      w[i].role = i;
    }
    static worker_t dl[2];
    dl[0] = w[0], dl[1] = w[1];
    for (int i = 0; i < 2; i++) {
      CHECK_EQ(pthread_create(&t[i], NULL, worker_start, &dl[i]), 0);
      pthread_detach(t[i]);
    }
    while (!atomic_load(&dl[0].blocking) || !atomic_load(&dl[1].blocking))
      usleep(1000);
    sample_worker("deadlock partner 0", &dl[0]);
    sample_worker("deadlock partner 1", &dl[1]);
    break;
  default:
    atomic_store(&g_cv_go, false);
    start(&w[0], &t[0], kind, 0);
    sample_worker(k_case_names[kind], &w[0]);
    atomic_store(&w[0].stop, true);
    pthread_mutex_lock(&g_cm);
    atomic_store(&g_cv_go, true);
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_cm);
    pthread_join(t[0], NULL);
    break;
  }
}

/* The trace samples the main thread again whenever its CPU clock moved;
   the signal that completes a quiet walk moves it. The stack a signal
   completed is kept while the thread stays blocked (completed.c), so a
   main thread blocked for 500 ms in a job called through a pointer is
   signalled a few times at most, not at every tick (~800 per second
   before), and spends under 5 ms of CPU (its own clock) while blocked. */
static atomic_int g_trace_held;

static void *trace_holder(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_mutex);
  atomic_store(&g_trace_held, 1);
  usleep(500000);
  pthread_mutex_unlock(&g_mutex);
  return NULL;
}

__attribute__((noinline)) void trace_blocked_job(void) {
  pthread_mutex_lock(&g_mutex);
  pthread_mutex_unlock(&g_mutex);
  __asm__ volatile("" ::: "memory");
}

static void (*volatile g_trace_job)(void) = trace_blocked_job;

static void run_trace_case(void) {
  if (g_qemu || SNAP_TEST_TSAN) {
    /* qemu: every sample is a signal; TSan: no completing signal. */
    printf("trace case: not applicable here (%s)\n",
           g_qemu ? "qemu-user" : "ThreadSanitizer");
    return;
  }
  snap_trace_config_t cfg;
  snap_trace_config_default(&cfg);
  cfg.other_interval_us = 0; /* the main thread only */
  CHECK_EQ(snap_trace_start(&cfg), SNAP_OK);
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, trace_holder, NULL), 0);
  while (!atomic_load(&g_trace_held))
    usleep(100);
  uint64_t done0 = quiet_completed();
  int64_t cpu0 = thread_cpu_ns();
  g_trace_job();
  int64_t cpu1 = thread_cpu_ns();
  uint64_t signals = quiet_completed() - done0;
  CHECK_EQ(snap_trace_stop(), SNAP_OK);
  pthread_join(t, NULL);
  long long cpu_us = (long long)(cpu1 - cpu0) / 1000;
  CHECK(signals <= 10, "%llu completing signals in 500 ms of trace",
        (unsigned long long)signals);
  CHECK(cpu_us < 5000, "the blocked main thread ran %lld us", cpu_us);
  printf("ok: trace of a main thread blocked 500 ms through a pointer: %llu "
         "completing signal(s), %lld us of its CPU\n",
         (unsigned long long)signals, cpu_us);
}

#ifdef TEST_HAVE_GLIB
int main(void);

/* The main thread, idle in the GLib loop the adapter wraps. */
static void *g_main_bt[BT_MAX];
static int g_main_nbt;
static atomic_int g_main_tid;
static GMainLoop *g_loop;

static void *glib_sampler(void *arg) {
  (void)arg;
  int tid = atomic_load(&g_main_tid);
  int checked = 0;
  for (int round = 0; round < 50 && checked < 5; round++) {
    CHECK(wait_blocked(tid), "%s", "");
    usleep(5000);
    uintptr_t pcs[SNAP_MAX_FRAMES];
    snap_wait_t wait = {.size = sizeof wait};
    uint64_t kept0, sig0, kept1, sig1;
    snap__capture_quiet_counts(&kept0, &sig0);
    int n = snap_capture_thread_wait((snap_thread_t)tid, pcs, SNAP_MAX_FRAMES,
                                     SNAP_CAPTURE_QUIET, &wait);
    snap__capture_quiet_counts(&kept1, &sig1);
    bool quiet = kept1 > kept0;
    CHECK(n > 0, "%s", "");
    if (n <= 0 || (SNAP_TEST_TSAN && !quiet) || wait.kind != SNAP_WAIT_POLL)
      continue; /* sampled between two polls, or a deferred signal */
    if (g_qemu)
      CHECK(!quiet, "%s", "");
    uintptr_t o[BT_MAX];
    for (int i = 0; i < g_main_nbt; i++)
      o[i] = (uintptr_t)g_main_bt[i];
    int om = oracle_find_fn(o, g_main_nbt, 0, (void *)main, 0);
    int sm = oracle_find_fn(pcs, n, 0, (void *)main, 1);
    bool same = om >= 0 && sm >= 0 && n - sm == g_main_nbt - om;
    for (int i = 1; same && sm + i < n; i++)
      same = pcs[sm + i] == o[om + i];
    if (!same) {
      fprintf(stderr,
              "FAILED: GLib main loop idle in poll (%s): the stack "
              "does not end with main and what backtrace() saw above it\n",
              quiet ? "quiet" : "signalled");
      oracle_print("sample", pcs, n);
      oracle_print("backtrace() in main", o, g_main_nbt);
      CHECK(false, "%s", "");
      break;
    }
    if (checked++ == 0) {
      printf("ok: GLib main loop idle in poll: %d frames, %s\n", n,
             quiet ? "quiet" : "signalled");
      oracle_print("GLib main loop idle in poll", pcs, n);
    }
  }
  if (SNAP_TEST_TSAN && checked == 0)
    g_tsan_short++; /* every sample was a deferred signal: skipped */
  else
    CHECK(checked > 0 || check_failures > 0, "%s",
          "no sample of the main thread found it in poll");
  g_main_loop_quit(g_loop);
  return NULL;
}

static gboolean give_up(gpointer loop) {
  CHECK(!"the sampler did not finish in 60 s", "%s", "");
  g_main_loop_quit(loop);
  return G_SOURCE_REMOVE;
}

static void run_glib(void) {
  atomic_store(&g_main_tid, (int)syscall(SYS_gettid));
  g_loop = g_main_loop_new(NULL, FALSE);
  CHECK_EQ(snap_lag_attach_glib(NULL), SNAP_OK);
  g_timeout_add(60000, give_up, g_loop);
  backtrace_fn bt = oracle_backtrace();
  g_main_nbt = bt ? bt(g_main_bt, BT_MAX) : 0;
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, glib_sampler, NULL), 0);
  g_main_loop_run(g_loop);
  pthread_join(t, NULL);
  g_main_loop_unref(g_loop);
}
#endif

int main(void) {
  /* Decided from outside: whether the kernel's pc for a blocked thread is
     in one of this process's images (not under qemu-user). */
  {
    worker_t w;
    pthread_t t;
    pthread_mutex_lock(&g_mutex);
    start(&w, &t, C_MUTEX_WAITER, 0);
    g_qemu = !oracle_kernel_pc_is_ours(atomic_load(&w.tid));
    pthread_mutex_unlock(&g_mutex);
    pthread_join(t, NULL);
  }
  if (g_qemu)
    printf("qemu-user: every sample falls back to the signal\n");
  for (int k = 0; k < CASES; k++)
    run_case(k);
  run_trace_case();
#ifdef TEST_HAVE_GLIB
  run_glib();
#else
  printf("GLib case: not built (no GLib headers)\n");
#endif
  if (check_failures == 0 && g_tsan_short > 0) {
    /* What the library does under TSan on purpose: no signal for a futex
       waiter, since TSan would hold it back until the lock is taken
       (blocked_regs.c); the stacks were checked to be right, not whole. */
    printf("skipped: under ThreadSanitizer %d cases were not checked whole "
           "(TSan holds the sampling signal back until the lock is taken, "
           "so futex waiters keep the quiet stack)\n",
           g_tsan_short);
    return 77;
  }
  return check_result("test_blocked_workers");
}
