/*
 * test_wait_owner.c — issue 14 items 1 and 2 on Linux/glibc:
 * snap_capture_thread_wait says what a thread waits for and who holds it,
 * with real threads and real locks.
 *
 * Each case starts a holder (named with pthread_setname_np) that takes a
 * lock and parks, then a waiter that blocks on it; the test samples the
 * waiter until it is seen blocked and checks, against what the test itself
 * knows (the lock's address, the holder's gettid(), the name it set):
 *   - mutexes of every glibc type (normal, recursive, error-checking,
 *     adaptive, robust, priority-inheritance, process-shared) and a
 *     write-held rwlock (a writer and a reader waiting): kind, address,
 *     owner tid and name;
 *   - a condition variable signalled while another thread keeps its
 *     mutex: the waiter waits for that mutex inside pthread_cond_wait,
 *     and the wait names the mutex and its holder, not the condition;
 *   - a read-held rwlock: rwlock, owner unknown (readers are not named);
 *   - a condition variable, a semaphore, a read() on an empty pipe, a
 *     nanosleep, a poll: the right kind, no owner (fd for the read);
 *   - an owner that exited holding a mutex, a mutex whose __lock and
 *     __owner are overwritten with garbage, and a waiter that relocks its
 *     own mutex: no crash, owner unknown (never a dead, foreign or
 *     self owner).
 * Both ways of sampling: SNAP_CAPTURE_QUIET (natively the kernel's syscall
 * file) and the signal (the handler's copy of the registers; the futex
 * wait restarts after it). Under qemu-user quiet samples fall back to the
 * signal; under TSan a signal is withheld while the waiter sits in a
 * blocking interceptor, so there only quiet samples are checked.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "capture/capture.h"
#include "check.h"
#include "stacksnap.h"
#include "test_clock.h"

enum {
  C_NORMAL,
  C_RECURSIVE,
  C_ERRORCHECK,
  C_ADAPTIVE,
  C_ROBUST,
  C_PI,
  C_PSHARED,
  C_TIMED,
  C_RW_WRITER_WAITS,
  C_RW_READER_WAITS,
  C_RW_READ_HELD,
  C_COND,
  C_COND_RETAKE,
  C_SEM,
  C_PIPE,
  C_SLEEP,
  C_POLL,
  C_DEAD_OWNER,
  C_GARBAGE,
  C_SELF,
  CASES
};
static const char *const k_case[CASES] = {
    "normal",      "recursive", "errorcheck",  "adaptive",  "robust",
    "pi",          "pshared",   "timedlock",   "rw-writer", "rw-reader",
    "rw-readheld", "condvar",   "cond-retake", "semaphore", "pipe",
    "nanosleep",   "poll",      "dead-owner",  "garbage",   "self-relock"};

typedef struct world {
  int c;
  pthread_mutex_t m;
  pthread_rwlock_t rw;
  pthread_cond_t cv;
  pthread_mutex_t cv_m;
  sem_t sem;
  int pipe_fd[2];
  atomic_int holder_tid, waiter_tid;
  atomic_bool held, release, done, signalled;
} world_t;

static int gettid_(void) { return (int)syscall(SYS_gettid); }

static bool is_mutex_case(int c) { return c <= C_TIMED; }
static bool is_rw_case(int c) {
  return c >= C_RW_WRITER_WAITS && c <= C_RW_READ_HELD;
}

static void *holder(void *arg) {
  world_t *w = arg;
  pthread_setname_np(pthread_self(), "lock-holder");
  atomic_store(&w->holder_tid, gettid_());
  if (is_mutex_case(w->c) || w->c == C_DEAD_OWNER || w->c == C_GARBAGE)
    pthread_mutex_lock(&w->m);
  else if (w->c == C_COND_RETAKE) {
    /* Signals the waiter and keeps the condition's mutex: the waiter
       wakes and waits for the mutex inside pthread_cond_wait. */
    pthread_mutex_lock(&w->cv_m);
    atomic_store(&w->signalled, true);
    pthread_cond_broadcast(&w->cv);
  } else if (w->c == C_RW_READ_HELD)
    pthread_rwlock_rdlock(&w->rw);
  else if (is_rw_case(w->c))
    pthread_rwlock_wrlock(&w->rw);
  atomic_store(&w->held, true);
  if (w->c == C_DEAD_OWNER)
    return NULL; /* exits holding it: glibc does not care for a normal one */
  while (!atomic_load(&w->release))
    usleep(1000);
  if (is_mutex_case(w->c) || w->c == C_GARBAGE)
    pthread_mutex_unlock(&w->m);
  else if (w->c == C_COND_RETAKE)
    pthread_mutex_unlock(&w->cv_m);
  else if (is_rw_case(w->c))
    pthread_rwlock_unlock(&w->rw);
  return NULL;
}

static void *waiter(void *arg) {
  world_t *w = arg;
  pthread_setname_np(pthread_self(), "lock-waiter");
  atomic_store(&w->waiter_tid, gettid_());
  switch (w->c) {
  case C_RW_WRITER_WAITS:
  case C_RW_READ_HELD:
    pthread_rwlock_wrlock(&w->rw);
    pthread_rwlock_unlock(&w->rw);
    break;
  case C_RW_READER_WAITS:
    pthread_rwlock_rdlock(&w->rw);
    pthread_rwlock_unlock(&w->rw);
    break;
  case C_COND_RETAKE:
    pthread_mutex_lock(&w->cv_m);
    while (!atomic_load(&w->signalled))
      pthread_cond_wait(&w->cv, &w->cv_m);
    pthread_mutex_unlock(&w->cv_m);
    break;
  case C_COND:
    pthread_mutex_lock(&w->cv_m);
    while (!atomic_load(&w->release))
      pthread_cond_wait(&w->cv, &w->cv_m);
    pthread_mutex_unlock(&w->cv_m);
    break;
  case C_SEM:
    while (sem_wait(&w->sem) != 0 && errno == EINTR)
      ;
    break;
  case C_PIPE: {
    char b;
    while (read(w->pipe_fd[0], &b, 1) < 0 && errno == EINTR)
      ;
    break;
  }
  case C_SLEEP:
    while (!atomic_load(&w->release)) {
      struct timespec ts = {0, 200 * 1000000L};
      nanosleep(&ts, NULL);
    }
    break;
  case C_POLL:
    while (!atomic_load(&w->release)) {
      struct pollfd none = {-1, 0, 0};
      poll(&none, 1, 200);
    }
    break;
  case C_DEAD_OWNER:
    /* Blocks for good (its owner is gone): the test ends it by making
       the lock word free and waking it (below). */
    pthread_mutex_lock(&w->m);
    pthread_mutex_unlock(&w->m);
    break;
  case C_SELF:
    pthread_mutex_lock(&w->m);
    atomic_store(&w->held, true);
    pthread_mutex_lock(&w->m); /* a normal mutex: blocks on itself */
    break;
  case C_TIMED: {
    /* pthread_mutex_timedlock tail-calls its slow path: no entry point
       on the stack, the memory must tell. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 60;
    if (pthread_mutex_timedlock(&w->m, &ts) == 0)
      pthread_mutex_unlock(&w->m);
    break;
  }
  default:
    pthread_mutex_lock(&w->m);
    pthread_mutex_unlock(&w->m);
    break;
  }
  atomic_store(&w->done, true);
  return NULL;
}

static void init_world(world_t *w, int c) {
  memset(w, 0, sizeof *w);
  w->c = c;
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  switch (c) {
  case C_RECURSIVE:
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    break;
  case C_ERRORCHECK:
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    break;
  case C_ADAPTIVE:
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
    break;
  case C_ROBUST: pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST); break;
  case C_PI: pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT); break;
  case C_PSHARED:
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    break;
  default: break;
  }
  pthread_mutex_init(&w->m, &a);
  pthread_mutexattr_destroy(&a);
  pthread_rwlock_init(&w->rw, NULL);
  pthread_cond_init(&w->cv, NULL);
  pthread_mutex_init(&w->cv_m, NULL);
  sem_init(&w->sem, 0, 0);
  if (pipe(w->pipe_fd) != 0)
    w->pipe_fd[0] = w->pipe_fd[1] = -1;
}

static bool has_holder(int c) {
  return is_mutex_case(c) || is_rw_case(c) || c == C_DEAD_OWNER ||
         c == C_GARBAGE;
}

/* What the waiter must be seen waiting in. */
static unsigned want_kind(int c) {
  if (is_mutex_case(c) || c == C_DEAD_OWNER || c == C_GARBAGE || c == C_SELF ||
      c == C_COND_RETAKE)
    return SNAP_WAIT_MUTEX;
  if (is_rw_case(c))
    return SNAP_WAIT_RWLOCK;
  switch (c) {
  case C_COND: return SNAP_WAIT_CONDVAR;
  case C_SEM: return SNAP_WAIT_SEMAPHORE;
  case C_PIPE: return SNAP_WAIT_IO;
  case C_SLEEP: return SNAP_WAIT_SLEEP;
  default: return SNAP_WAIT_POLL;
  }
}

static bool owner_known_case(int c) {
  return is_mutex_case(c) || c == C_RW_WRITER_WAITS || c == C_RW_READER_WAITS ||
         c == C_COND_RETAKE;
}

static bool g_last_quiet; /* the last sample was a quiet walk */

/* Samples the waiter until it is seen in the wanted kind (a signal sample
   landing between two sleeps, or before the waiter blocked, sees none);
   the last sample's wait in *out. */
static int sample_until(world_t *w, unsigned flags, unsigned kind,
                        snap_wait_t *out) {
  static uintptr_t pcs[SNAP_MAX_FRAMES];
  int n = -1;
  long long deadline = mono_ms() + 10000; /* a loaded, emulated box */
  do {
    memset(out, 0, sizeof *out);
    out->size = sizeof *out;
    uint64_t kept0, kept1, sig;
    snap__capture_quiet_counts(&kept0, &sig);
    n = snap_capture_thread_wait((snap_thread_t)atomic_load(&w->waiter_tid),
                                 pcs, SNAP_MAX_FRAMES, flags, out);
    snap__capture_quiet_counts(&kept1, &sig);
    g_last_quiet = kept1 != kept0;
    if (n >= 0 && out->kind == kind &&
        (kind != want_kind(w->c) || !owner_known_case(w->c) ||
         out->owner_state == SNAP_OWNER_KNOWN))
      break;
    usleep(2000);
  } while (mono_ms() < deadline);
  return n;
}

/* What the waiter's sample must say in case c. */
static void check_wait(world_t *w, int c, const char *how, int n,
                       const snap_wait_t *wt_) {
  const snap_wait_t wt = *wt_;
  CHECK(n > 0, "%s/%s: sample failed: %d", k_case[c], how, n);
  CHECK(wt.kind == want_kind(c), "%s/%s: kind %s, expected %s", k_case[c], how,
        snap_wait_kind_name(wt.kind), snap_wait_kind_name(want_kind(c)));
  CHECK(wt.syscall != SNAP_WAIT_NO_SYSCALL, "%s/%s: no system call", k_case[c],
        how);
  int holder_tid = atomic_load(&w->holder_tid);
  if (owner_known_case(c)) {
    CHECK(wt.owner_state == SNAP_OWNER_KNOWN &&
              wt.owner == (uint64_t)holder_tid,
          "%s/%s: owner %llu (state %u), expected %d", k_case[c], how,
          (unsigned long long)wt.owner, wt.owner_state, holder_tid);
    CHECK(strcmp(wt.owner_name, "lock-holder") == 0, "%s/%s: owner name '%s'",
          k_case[c], how, wt.owner_name);
  } else if (want_kind(c) == SNAP_WAIT_MUTEX ||
             want_kind(c) == SNAP_WAIT_RWLOCK) {
    CHECK(wt.owner_state == SNAP_OWNER_UNKNOWN && wt.owner == 0,
          "%s/%s: owner %llu (state %u), expected unknown", k_case[c], how,
          (unsigned long long)wt.owner, wt.owner_state);
  } else {
    CHECK(wt.owner_state == SNAP_OWNER_NONE && wt.owner == 0,
          "%s/%s: owner %llu (state %u), expected none", k_case[c], how,
          (unsigned long long)wt.owner, wt.owner_state);
  }
  if (is_mutex_case(c) || c == C_DEAD_OWNER || c == C_GARBAGE || c == C_SELF)
    CHECK(wt.address == (uintptr_t)&w->m, "%s/%s: address %#lx, mutex at %p",
          k_case[c], how, (unsigned long)wt.address, (void *)&w->m);
  if (c == C_COND_RETAKE)
    CHECK(wt.address == (uintptr_t)&w->cv_m,
          "%s/%s: address %#lx, the condition's mutex at %p", k_case[c], how,
          (unsigned long)wt.address, (void *)&w->cv_m);
  if (c == C_SEM)
    CHECK(wt.address == (uintptr_t)&w->sem, "%s/%s: address %#lx, sem at %p",
          k_case[c], how, (unsigned long)wt.address, (void *)&w->sem);
  if (c == C_PIPE)
    CHECK(wt.fd == w->pipe_fd[0], "%s/%s: fd %d, pipe reads from %d", k_case[c],
          how, wt.fd, w->pipe_fd[0]);
  else
    CHECK(wt.fd == -1, "%s/%s: fd %d", k_case[c], how, wt.fd);
}

static void run_case(int c, unsigned flags) {
  const char *how = flags & SNAP_CAPTURE_QUIET ? "quiet" : "signal";
  static world_t w;
  init_world(&w, c);
  pthread_t h = 0, t;
  if (has_holder(c)) {
    pthread_create(&h, NULL, holder, &w);
    while (!atomic_load(&w.held))
      usleep(1000);
  }
  if (c == C_GARBAGE) {
    /* glibc's __lock (offset 0) and __owner (offset 8) overwritten: the
       waiter still blocks (the word is not 0) on a lock that names
       nobody; the holder's unlock still frees it. */
    int *words = (int *)(void *)&w.m;
    __atomic_store_n(&words[0], 0x5eadbeef, __ATOMIC_SEQ_CST); /* __lock */
    words[2] = 0x7ffffff0;                                     /* __owner */
  }
  pthread_create(&t, NULL, waiter, &w);
  while (!atomic_load(&w.waiter_tid))
    usleep(1000);
  if (c == C_DEAD_OWNER)
    pthread_join(h, NULL), h = 0;

  snap_wait_t wt;
  if (c == C_COND_RETAKE) {
    /* The holder comes once the waiter waits on the condition. */
    (void)sample_until(&w, flags, SNAP_WAIT_CONDVAR, &wt);
    pthread_create(&h, NULL, holder, &w);
    while (!atomic_load(&w.held))
      usleep(1000);
  }
  int n = sample_until(&w, flags, want_kind(c), &wt);
  /* qemu-user: a quiet sample falls back to the signal, which ends a
     timed wait with EINTR and leaves no argument to decode: said, not
     checked. */
  bool checked = !(c == C_TIMED && !g_last_quiet);
  if (!checked)
    printf("%-12s %-6s not checked: signalled (no quiet walk here)\n",
           k_case[c], how);
  else
    check_wait(&w, c, how, n, &wt);
  /* Let everyone go. */
  atomic_store(&w.release, true);
  if (c == C_COND) {
    pthread_mutex_lock(&w.cv_m);
    pthread_cond_broadcast(&w.cv);
    pthread_mutex_unlock(&w.cv_m);
  }
  if (c == C_SEM)
    sem_post(&w.sem);
  if (c == C_PIPE && write(w.pipe_fd[1], "x", 1) != 1)
    CHECK(0, "pipe write");
  if (c == C_DEAD_OWNER || c == C_SELF) {
    /* Nobody will unlock it: free the word by hand and wake the waiter
       (a normal mutex's futex protocol: 0 is unlocked). */
    int *words = (int *)(void *)&w.m;
    __atomic_store_n(&words[2], 0, __ATOMIC_SEQ_CST); /* __owner: glibc
                                            asserts it is 0 when it takes */
    while (!atomic_load(&w.done)) {
      __atomic_store_n(&words[0], 0, __ATOMIC_SEQ_CST);
      syscall(SYS_futex, &words[0], 1 /* FUTEX_WAKE */ | 128, 1, NULL, NULL, 0);
      usleep(1000);
    }
  }
  pthread_join(t, NULL);
  if (h)
    pthread_join(h, NULL);
  printf("%-12s %-6s kind %-9s syscall %lld owner %llu '%s'\n", k_case[c], how,
         snap_wait_kind_name(wt.kind), (long long)wt.syscall,
         (unsigned long long)wt.owner, wt.owner_name);
  if (w.pipe_fd[0] >= 0)
    close(w.pipe_fd[0]), close(w.pipe_fd[1]);
}

int main(void) {
  /* The contract's edges first. */
  snap_wait_t wt;
  uintptr_t pcs[8];
  memset(&wt, 0, sizeof wt);
  wt.size = 8; /* not a size this library knows */
  CHECK(snap_capture_thread_wait(snap_thread_self(), pcs, 8, 0, &wt) ==
            SNAP_EINVAL,
        "a wrong size is refused");
  wt.size = sizeof wt;
  int n = snap_capture_thread_wait(snap_thread_self(), pcs, 8, 0, &wt);
  CHECK(n > 0 && wt.kind == SNAP_WAIT_NONE && wt.owner == 0,
        "self: %d, kind %u", n, wt.kind);
  CHECK(snap_capture_thread_wait(snap_thread_self(), pcs, 8, 0, NULL) > 0,
        "NULL wait is snap_capture_thread");
  CHECK(strcmp(snap_wait_kind_name(SNAP_WAIT_UNFAIR_LOCK), "unfair_lock") ==
                0 &&
            strcmp(snap_wait_kind_name(999), "unknown") == 0,
        "kind names");

  for (int c = 0; c < CASES; c++) {
    /* TSan reports the deliberate relock, and the lock taken after the
       test freed a dead owner's mutex by hand, as "double lock of a
       mutex" and fails the run: those are checked in the other builds. */
    if (SNAP_TEST_TSAN && (c == C_SELF || c == C_DEAD_OWNER))
      continue;
    run_case(c, SNAP_CAPTURE_QUIET);
    /* The signal path: a sleep, a poll or a timed wait ends early under
       it (EINTR: x86_64 then keeps no trace of the call, aarch64 only its
       number), so those are sampled quietly only; under
       TSan the signal waits for the blocking interceptor to return. */
    if (!SNAP_TEST_TSAN && c != C_SLEEP && c != C_POLL && c != C_TIMED)
      run_case(c, 0);
  }
  return check_result("test_wait_owner");
}
