/*
 * test_capture_thread.c — cross-thread samples on Linux.
 *
 * Threads stopped in our code (spinning) and inside libc (a mutex, a
 * condition variable, read(), poll()) must be sampled with the app function
 * that called into libc and the whole app chain above it; dladdr (the
 * dynamic linker's own symbol lookup; the test is linked -rdynamic) is the
 * witness for which function a pc belongs to. Also: the signal contract
 * (errno kept, interrupted system calls resumed, the app's own handler still
 * called), concurrent samplers, timeouts, dead and garbage thread ids.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "oracle.h"
#include "stacksnap.h"
#include "test_clock.h"

#define DEPTH 128
#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static atomic_int g_stop;
static pthread_mutex_t g_held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_cond_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static int g_pipe_read[2], g_pipe_poll[2];

typedef struct worker {
  pthread_t thread;
  atomic_int tid;
  atomic_int ready;
  int errno_seen, read_result;
} worker_t;

static int gettid_(void) { return (int)syscall(SYS_gettid); }

/* Spinning: our own code, frame pointers all the way. */
NOINLINE void spin_inner(worker_t *w) {
  atomic_store(&w->ready, 1);
  while (!atomic_load(&g_stop)) {
    errno = 1234;
    for (volatile int i = 0; i < 1000; i++)
      ;
    if (errno != 1234)
      w->errno_seen = errno;
  }
  KEEP_FRAME();
}
NOINLINE void spin_outer(worker_t *w) {
  spin_inner(w);
  KEEP_FRAME();
}
NOINLINE void *spin_entry(void *arg) {
  worker_t *w = arg;
  atomic_store(&w->tid, gettid_());
  spin_outer(w);
  KEEP_FRAME();
  return NULL;
}

NOINLINE void mutex_inner(worker_t *w) {
  atomic_store(&w->ready, 1);
  pthread_mutex_lock(&g_held);
  pthread_mutex_unlock(&g_held);
  KEEP_FRAME();
}
NOINLINE void mutex_outer(worker_t *w) {
  mutex_inner(w);
  KEEP_FRAME();
}
NOINLINE void *mutex_entry(void *arg) {
  worker_t *w = arg;
  atomic_store(&w->tid, gettid_());
  mutex_outer(w);
  KEEP_FRAME();
  return NULL;
}

NOINLINE void cond_inner(worker_t *w) {
  pthread_mutex_lock(&g_cond_mutex);
  atomic_store(&w->ready, 1);
  while (!atomic_load(&g_stop))
    pthread_cond_wait(&g_cond, &g_cond_mutex);
  pthread_mutex_unlock(&g_cond_mutex);
  KEEP_FRAME();
}
NOINLINE void cond_outer(worker_t *w) {
  cond_inner(w);
  KEEP_FRAME();
}
NOINLINE void *cond_entry(void *arg) {
  worker_t *w = arg;
  atomic_store(&w->tid, gettid_());
  cond_outer(w);
  KEEP_FRAME();
  return NULL;
}

NOINLINE void read_inner(worker_t *w) {
  char c;
  atomic_store(&w->ready, 1);
  errno = 0;
  w->read_result = (int)read(g_pipe_read[0], &c, 1);
  w->errno_seen = errno;
  KEEP_FRAME();
}
NOINLINE void read_outer(worker_t *w) {
  read_inner(w);
  KEEP_FRAME();
}
NOINLINE void *read_entry(void *arg) {
  worker_t *w = arg;
  atomic_store(&w->tid, gettid_());
  read_outer(w);
  KEEP_FRAME();
  return NULL;
}

NOINLINE void poll_inner(worker_t *w) {
  struct pollfd p = {g_pipe_poll[0], POLLIN, 0};
  atomic_store(&w->ready, 1);
  while (poll(&p, 1, -1) < 0 && errno == EINTR)
    ;
  KEEP_FRAME();
}
NOINLINE void poll_outer(worker_t *w) {
  poll_inner(w);
  KEEP_FRAME();
}
NOINLINE void *poll_entry(void *arg) {
  worker_t *w = arg;
  atomic_store(&w->tid, gettid_());
  poll_outer(w);
  KEEP_FRAME();
  return NULL;
}

static void start(worker_t *w, void *(*entry)(void *)) {
  memset(w, 0, sizeof *w);
  pthread_create(&w->thread, NULL, entry, w);
  while (!atomic_load(&w->ready) || !atomic_load(&w->tid))
    usleep(1000);
}

/* Waits until the thread sleeps in the kernel (not merely "ready"). */
static void wait_blocked(worker_t *w) {
  for (int i = 0; i < 2000; i++) {
    if (snap_thread_is_running((snap_thread_t)atomic_load(&w->tid)) == 0)
      return;
    usleep(1000);
  }
}

/* The chain, innermost first, must appear in this order. */
static void expect_chain(const char *what, const uintptr_t *pcs, int n,
                         void *const *chain, int len) {
  int at = 0;
  for (int k = 0; k < len; k++) {
    int i = oracle_find_fn(pcs, n, at, chain[k], 1);
    CHECK(i >= 0, "%s: function %d of the chain missing", what, k);
    if (i < 0) {
      oracle_print(what, pcs, n);
      return;
    }
    at = i + 1;
  }
}

static void sample_and_expect(const char *what, worker_t *w, void *const *chain,
                              int len) {
  uintptr_t pcs[DEPTH];
  int n =
      snap_capture_thread((snap_thread_t)atomic_load(&w->tid), pcs, DEPTH, 0);
  if (SNAP_TEST_TSAN) { /* see check.h */
    CHECK(n > 0 || n == SNAP_ETIMEDOUT, "%s: %d", what, n);
    return;
  }
  CHECK(n > 0, "%s: sample failed: %d (%s)", what, n, snap_strerror(n));
  if (n > 0)
    expect_chain(what, pcs, n, chain, len);
}

static atomic_int g_app_handler_calls;
static void app_handler(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)si, (void)uc;
  atomic_fetch_add(&g_app_handler_calls, 1);
}

typedef struct sampler_arg {
  int tid, ok, bad;
  void *const *chain;
} sampler_arg_t;

static void *sampler(void *arg) {
  sampler_arg_t *s = arg;
  for (int i = 0; i < 200; i++) {
    uintptr_t pcs[DEPTH];
    int n = snap_capture_thread((snap_thread_t)s->tid, pcs, DEPTH, 0);
    if (n > 0 && oracle_find_fn(pcs, n, 0, s->chain[0], 1) >= 0 &&
        oracle_find_fn(pcs, n, 0, s->chain[1], 1) >= 0)
      s->ok++;
    else
      s->bad++;
  }
  return NULL;
}

static void *blocked_signal_entry(void *arg) {
  worker_t *w = arg;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  atomic_store(&w->tid, gettid_());
  atomic_store(&w->ready, 1);
  while (!atomic_load(&g_stop))
    usleep(1000);
  return NULL;
}

static void *exit_at_once(void *arg) {
  *(atomic_int *)arg = gettid_();
  return NULL;
}

int main(void) {
  /* Generous: CI runs this under sanitizers and qemu on a loaded 2-core
     machine. The timeout itself is tested below with 50 ms. */
  CHECK_EQ(snap_set_sample_timeout_ms(2000), SNAP_OK);

  /* The app had a handler for our signal before we came: it must keep
     getting the signals that are not sample requests. */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = app_handler;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGRTMIN + 5, &sa, NULL);

  pipe(g_pipe_read);
  pipe(g_pipe_poll);
  pthread_mutex_lock(&g_held);

  worker_t spin, mutex, cond, rd, pl;
  start(&spin, spin_entry);
  start(&mutex, mutex_entry);
  start(&cond, cond_entry);
  start(&rd, read_entry);
  start(&pl, poll_entry);
  wait_blocked(&mutex);
  wait_blocked(&cond);
  wait_blocked(&rd);
  wait_blocked(&pl);

  void *spin_chain[] = {spin_inner, spin_outer, spin_entry};
  void *mutex_chain[] = {mutex_inner, mutex_outer, mutex_entry};
  void *cond_chain[] = {cond_inner, cond_outer, cond_entry};
  void *read_chain[] = {read_inner, read_outer, read_entry};
  void *poll_chain[] = {poll_inner, poll_outer, poll_entry};
  sample_and_expect("spinning", &spin, spin_chain, 3);
  sample_and_expect("pthread_mutex_lock", &mutex, mutex_chain, 3);
  sample_and_expect("pthread_cond_wait", &cond, cond_chain, 3);
  sample_and_expect("read", &rd, read_chain, 3);
  sample_and_expect("poll", &pl, poll_chain, 3);

  /* The samples just woke it for a moment: it sleeps again soon after. */
  wait_blocked(&cond);
  CHECK_EQ(snap_thread_is_running((snap_thread_t)atomic_load(&cond.tid)), 0);
  CHECK_EQ(snap_thread_is_running((snap_thread_t)atomic_load(&spin.tid)), 1);

  /* Every thread we made is listed. */
  snap_thread_t list[64];
  int total = snap_thread_list(list, 64);
  CHECK(total >= 6, "thread list has %d threads", total);
  int tid_found = 0;
  worker_t *all[] = {&spin, &mutex, &cond, &rd, &pl};
  for (int k = 0; k < 5; k++)
    for (int i = 0; i < total && i < 64; i++)
      if (list[i] == (snap_thread_t)atomic_load(&all[k]->tid))
        tid_found++;
  CHECK_EQ(tid_found, 5);
  CHECK_EQ(snap_thread_main(), (snap_thread_t)getpid());
  CHECK_EQ(snap_thread_self(), (snap_thread_t)getpid());

  /* Frames from the main thread itself: behaves as snap_capture_self. */
  uintptr_t pcs[DEPTH];
  int self_n = snap_capture_thread(snap_thread_self(), pcs, DEPTH, 0);
  CHECK(self_n > 2, "sampling oneself: %d", self_n);
  /* As snap_capture_self: frame 0 is the return address into the caller. */
  CHECK(self_n > 0 && oracle_find_fn(pcs, 1, 0, (void *)main, 0) == 0,
        "frame 0 of a self-sample is not in main");

  /* Concurrent samplers never corrupt each other. */
  pthread_t samplers[3];
  sampler_arg_t sargs[3] = {
      {atomic_load(&spin.tid), 0, 0, spin_chain},
      {atomic_load(&cond.tid), 0, 0, cond_chain},
      {atomic_load(&spin.tid), 0, 0, spin_chain},
  };
  for (int i = 0; i < 3; i++)
    pthread_create(&samplers[i], NULL, sampler, &sargs[i]);
  for (int i = 0; i < 3; i++) {
    pthread_join(samplers[i], NULL);
    CHECK((sargs[i].bad == 0 && sargs[i].ok == 200) ||
              (SNAP_TEST_TSAN && sargs[i].ok > 100), /* see check.h */
          "concurrent sampler %d: %d good, %d bad", i, sargs[i].ok,
          sargs[i].bad);
  }

  /* The app's handler still gets foreign signals on that number. */
  union sigval v = {.sival_int = 7};
  sigqueue(getpid(), SIGRTMIN + 5, v);
  for (int i = 0; i < 100 && !atomic_load(&g_app_handler_calls); i++)
    usleep(1000);
  CHECK(atomic_load(&g_app_handler_calls) >= 1, "app handler was not chained");
  CHECK_EQ(snap_set_sample_signal(SIGRTMIN + 6), SNAP_EBUSY);
  CHECK_EQ(snap_set_sample_signal(SIGSEGV), SNAP_EINVAL);

  /* A thread that blocks every signal: SNAP_ETIMEDOUT, in time. */
  worker_t deaf;
  memset(&deaf, 0, sizeof deaf);
  pthread_create(&deaf.thread, NULL, blocked_signal_entry, &deaf);
  while (!atomic_load(&deaf.ready))
    usleep(1000);
  CHECK_EQ(snap_set_sample_timeout_ms(50), SNAP_OK);
  double t0 = mono_s() * 1e3;
  int rc =
      snap_capture_thread((snap_thread_t)atomic_load(&deaf.tid), pcs, DEPTH, 0);
  double waited = mono_s() * 1e3 - t0;
  CHECK_EQ(rc, SNAP_ETIMEDOUT);
  CHECK(waited >= 45 && waited < 500, "timed out after %.1f ms", waited);
  CHECK_EQ(snap_set_sample_timeout_ms(0), SNAP_EINVAL);
  CHECK_EQ(snap_set_sample_timeout_ms(10001), SNAP_EINVAL);
  CHECK_EQ(snap_set_sample_timeout_ms(2000), SNAP_OK);

  /* Dead and garbage thread ids. */
  pthread_t t;
  atomic_int dead_tid = 0;
  pthread_create(&t, NULL, exit_at_once, &dead_tid);
  pthread_join(t, NULL);
  CHECK_EQ(snap_capture_thread((snap_thread_t)dead_tid, pcs, DEPTH, 0),
           SNAP_ENOTHREAD);
  CHECK_EQ(snap_capture_thread(0, pcs, DEPTH, 0), SNAP_ENOTHREAD);
  CHECK_EQ(snap_capture_thread(1, pcs, DEPTH, 0), SNAP_ENOTHREAD);
  CHECK_EQ(snap_capture_thread(~(snap_thread_t)0, pcs, DEPTH, 0),
           SNAP_ENOTHREAD);
  CHECK_EQ(snap_capture_thread((snap_thread_t)atomic_load(&spin.tid), NULL,
                               DEPTH, 0),
           SNAP_EINVAL);
  CHECK_EQ(
      snap_capture_thread((snap_thread_t)atomic_load(&spin.tid), pcs, 0, 0),
      SNAP_EINVAL);
  CHECK_EQ(snap_capture_thread((snap_thread_t)atomic_load(&spin.tid), pcs,
                               DEPTH, 0x100),
           SNAP_EINVAL);
  CHECK_EQ(snap_thread_is_running((snap_thread_t)dead_tid), SNAP_ENOTHREAD);
  CHECK_EQ(snap_thread_list(NULL, 5), SNAP_EINVAL);
  CHECK(snap_thread_list(NULL, 0) >= 6, "count only");

  /* Let everyone go; the read() must have resumed, not failed with EINTR. */
  atomic_store(&g_stop, 1);
  pthread_mutex_unlock(&g_held);
  pthread_mutex_lock(&g_cond_mutex);
  pthread_cond_broadcast(&g_cond);
  pthread_mutex_unlock(&g_cond_mutex);
  write(g_pipe_read[1], "x", 1);
  write(g_pipe_poll[1], "x", 1);
  for (int k = 0; k < 5; k++)
    pthread_join(all[k]->thread, NULL);
  pthread_join(deaf.thread, NULL);
  CHECK_EQ(rd.read_result, 1);
  CHECK_EQ(spin.errno_seen, 0);
  return check_result("test_capture_thread");
}
