/*
 * thread_start.c — the library's own helper thread (the lag watchdog):
 * started with every signal blocked and a name, joined at stop. POSIX
 * threads, so both backends compile it.
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
 * storage has no room for it, and freed by the new thread.
 *
 * Must not: leave the caller's signal mask changed, or print or abort on
 * failure (the error is returned).
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"

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
} start_rec_t;

static void *trampoline(void *p) {
  start_rec_t rec = *(start_rec_t *)p;
  free(p);
  if (rec.name[0]) {
#ifdef __APPLE__
    pthread_setname_np(rec.name);
#else
    pthread_setname_np(pthread_self(), rec.name);
#endif
  }
  rec.fn(rec.arg);
  return NULL;
}

int snap__plat_thread_start(snap__plat_thread_t *t, void (*fn)(void *),
                            void *arg, const char *name) {
  if (!t || !fn)
    return SNAP_EINVAL;
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
  memset(t->opaque, 0, sizeof t->opaque);
  memcpy(t->opaque, &th, sizeof th);
  return SNAP_OK;
}

void snap__plat_thread_join(snap__plat_thread_t *t) {
  pthread_t th;
  memcpy(&th, t->opaque, sizeof th);
  pthread_join(th, NULL);
}
