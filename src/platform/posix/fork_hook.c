/*
 * fork_hook.c — the one fork seam: every fork handler of the library runs
 * from here, in the stages' order (platform.h, Fork, says which and why).
 *
 * Owns: the library's single pthread_atfork, and a table of handlers per
 * stage. Algorithm: prepare calls the stages' prepare handlers from the
 * last stage to the first; parent and child call theirs from the first to
 * the last (libc's own convention for handlers registered in that order).
 *
 * Why one registration, made at load time: pthread_atfork orders handlers
 * by the moment they were registered. Twelve registrations (eight direct
 * calls, four through a helper), several made lazily on first use (the
 * sampler's slots, libdw, the demangler, the watchdog, the trace), gave an
 * order nobody chose: in a child, a handler the app registered before the
 * first lag monitor ran ahead of the watchdog's reset and found the
 * parent's watchdog still "running" (test_fork_order). pthread_atfork
 * also takes glibc's fork-handler lock, which fork holds while our prepare
 * waits for our locks: a lazy registration made under one of our locks
 * would deadlock against a concurrent fork. Registering a stage here is
 * an atomic store.
 *
 * Must not: do work in a handler itself — a child of a threaded process
 * may only touch what it owns, so handlers only take, release or reset
 * state. A stage registered while another thread forks may miss that one
 * fork (its child handler can run without its prepare): stages with a
 * prepare (LOCKS) are registered before any thread of ours exists.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "platform/platform.h"
#include "platform/process.h"

typedef void (*fork_fn)(void);

static _Atomic(fork_fn) g_prepare[SNAP__FORK_STAGES];
static _Atomic(fork_fn) g_parent[SNAP__FORK_STAGES];
static _Atomic(fork_fn) g_child[SNAP__FORK_STAGES];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static bool g_installed;

static void run(_Atomic(fork_fn) *table, int stage) {
  fork_fn fn = atomic_load(&table[stage]);
  if (fn)
    fn();
}

static void prepare(void) {
  for (int s = SNAP__FORK_STAGES - 1; s >= 0; s--)
    run(g_prepare, s);
}

static void parent(void) {
  for (int s = 0; s < SNAP__FORK_STAGES; s++)
    run(g_parent, s);
}

static void child(void) {
  for (int s = 0; s < SNAP__FORK_STAGES; s++)
    run(g_child, s);
}

static void install(void) {
  g_installed = pthread_atfork(prepare, parent, child) == 0;
}

/* At load time, before main: the library's handlers come before any the
   app registers (a constructor of ours that registers a stage first does
   the same through the once). */
__attribute__((constructor)) static void fork_hook_init(void) {
  pthread_once(&g_once, install);
}

int snap__plat_on_fork(snap__fork_stage_t stage, void (*prepare_fn)(void),
                       void (*parent_fn)(void), void (*child_fn)(void)) {
  if ((int)stage < 0 || stage >= SNAP__FORK_STAGES)
    return SNAP_EINVAL;
  pthread_once(&g_once, install);
  if (!g_installed)
    return SNAP_ENOMEM;
  atomic_store(&g_prepare[stage], prepare_fn);
  atomic_store(&g_parent[stage], parent_fn);
  atomic_store(&g_child[stage], child_fn);
  return SNAP_OK;
}
