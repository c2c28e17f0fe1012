/*
 * thread_start.c — the library's own helper threads (the lag watchdog, the
 * trace's sampler, Apple's rescuer): started with every signal blocked and
 * a name, listed as ours while they run, joined at stop. POSIX threads, so
 * both backends compile it.
 *
 * Signals: the app's process-directed signals (SIGCHLD, SIGINT, SIGTERM,
 * SIGPIPE of its own sockets…) go to any thread that does not block them.
 * A watchdog that accepted them would steal them from the app's handlers'
 * expected threads (sigwait loops, signalfd). A thread's mask is inherited
 * at creation, so the caller's mask is set to "everything" around
 * pthread_create and restored right after: the new thread never runs a
 * single instruction with a signal open. (SIGKILL and SIGSTOP cannot be
 * blocked; glibc keeps its own internal signals open by itself.)
 *
 * Name: set at the top of a trampoline on the new thread, before fn runs,
 * so the name is in place by the time fn could report it. Apple can only
 * name the calling thread anyway. Limits: Linux 15 bytes + NUL (longer
 * fails with ERANGE, so the name is truncated), Apple 63 + NUL.
 *
 * The pthread_t lives in the caller's opaque snap__plat_thread_t; the
 * trampoline's start record (fn, arg, name) is malloc'ed, since the opaque
 * storage has no room for it.
 *
 * Ours: every thread started here is listed (its id, in a few atomic
 * slots) from its first instruction until fn returns, and the caller
 * waits for that before snap__plat_thread_start returns, so the lag
 * dump and the trace, which leave our threads out, never see one of ours
 * unlisted — not even in its first microseconds, when it still carries
 * its creator's name (a trace once drew the watchdog under the main
 * thread's name, and every report taken during a trace listed the trace's
 * thread as "blocks the sampling signal": ours block every signal).
 * Hence the start record belongs to the caller, who frees it once the
 * thread has copied it and is listed.
 *
 * Must not: leave the caller's signal mask changed, or print or abort on
 * failure (the error is returned).
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"
#include "platform/process.h"

_Static_assert(sizeof(pthread_t) <= sizeof(snap__plat_thread_t),
               "pthread_t must fit in snap__plat_thread_t");
_Static_assert(_Alignof(pthread_t) <= _Alignof(snap__plat_thread_t),
               "snap__plat_thread_t must be aligned for pthread_t");

#ifdef __APPLE__
#define NAME_MAX_LEN 63 /* MAXTHREADNAMESIZE - 1 */
#else
#define NAME_MAX_LEN 15 /* TASK_COMM_LEN - 1 */
#endif

typedef struct start_rec {
  void (*fn)(void *);
  void *arg;
  char name[NAME_MAX_LEN + 1]; /* "" = leave unnamed */
  atomic_bool listed;          /* the new thread copied this and is listed */
} start_rec_t;

/* Our live threads' ids, 0 = a free slot. More of ours than this at once
   (there are at most three) would go unlisted, not wrong. */
#define OURS 8
static _Atomic snap_thread_t g_ours[OURS];

bool snap__plat_thread_is_ours(snap_thread_t t) {
  for (int i = 0; t && i < OURS; i++)
    if (atomic_load_explicit(&g_ours[i], memory_order_acquire) == t)
      return true;
  return false;
}

/* In a forked child none of the parent's threads exist. */
static void forget_ours(void) {
  for (int i = 0; i < OURS; i++)
    atomic_store(&g_ours[i], 0);
}

static pthread_once_t g_fork_once = PTHREAD_ONCE_INIT;
static void on_fork_once(void) {
  (void)snap__plat_on_fork(SNAP__FORK_OUR_THREADS, NULL, NULL, forget_ours);
}

static void *trampoline(void *p) {
  start_rec_t *shared = p;
  start_rec_t rec = {.fn = shared->fn, .arg = shared->arg};
  memcpy(rec.name, shared->name, sizeof rec.name);
  snap_thread_t me = snap__plat_thread_self();
  int slot = -1;
  for (int i = 0; i < OURS && slot < 0; i++) {
    snap_thread_t free_slot = 0;
    if (atomic_compare_exchange_strong(&g_ours[i], &free_slot, me))
      slot = i;
  }
  atomic_store_explicit(&shared->listed, true, memory_order_release);
  /* shared is the caller's from here on. */
  if (rec.name[0]) {
#ifdef __APPLE__
    pthread_setname_np(rec.name);
#else
    pthread_setname_np(pthread_self(), rec.name);
#endif
  }
  rec.fn(rec.arg);
  if (slot >= 0)
    atomic_store_explicit(&g_ours[slot], 0, memory_order_release);
  return NULL;
}

int snap__plat_thread_start(snap__plat_thread_t *t, void (*fn)(void *),
                            void *arg, const char *name) {
  if (!t || !fn)
    return SNAP_EINVAL;
  (void)pthread_once(&g_fork_once, on_fork_once);
  start_rec_t *rec = calloc(1, sizeof *rec);
  if (!rec)
    return SNAP_ENOMEM;
  rec->fn = fn;
  rec->arg = arg;
  if (name) {
    size_t len = strnlen(name, NAME_MAX_LEN);
    memcpy(rec->name, name, len);
    rec->name[len] = '\0';
  }

  sigset_t all, old;
  sigfillset(&all);
  pthread_t th;
  int masked = pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&th, NULL, trampoline, rec);
  if (masked == 0)
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    free(rec);
    return SNAP_ENOMEM;
  }
  /* Until it is listed (microseconds; on a starved machine longer). */
  while (!atomic_load_explicit(&rec->listed, memory_order_acquire))
    sched_yield();
  free(rec);
  memset(t->opaque, 0, sizeof t->opaque);
  memcpy(t->opaque, &th, sizeof th);
  return SNAP_OK;
}

void snap__plat_thread_join(snap__plat_thread_t *t) {
  pthread_t th;
  memcpy(&th, t->opaque, sizeof th);
  pthread_join(th, NULL);
}
