/*
 * thread_exit.c — a per-thread cleanup call at thread exit, through a
 * pthread key's destructor. POSIX only, so both backends compile it.
 *
 * Why: the symbol cache gives each thread a few slots holding references to
 * stacks; a thread that exits must give them back, or they leak.
 * Must not: be called from the stopped window (pthread_setspecific may
 * allocate on first use).
 */
#include <pthread.h>
#include <stdatomic.h>

#include "platform/platform.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static bool g_key_ok;
static _Atomic(void (*)(void *)) g_fn;

static void call_fn(void *arg) {
  void (*fn)(void *) = atomic_load(&g_fn);
  if (fn && arg)
    fn(arg);
}

static void make_key(void) {
  g_key_ok = pthread_key_create(&g_key, call_fn) == 0;
}

int snap__plat_on_thread_exit(void (*fn)(void *), void *arg) {
  void (*expected)(void *) = NULL;
  if (!atomic_compare_exchange_strong(&g_fn, &expected, fn) && expected != fn)
    return SNAP_EBUSY;
  pthread_once(&g_once, make_key);
  if (!g_key_ok)
    return SNAP_ENOMEM;
  return pthread_setspecific(g_key, arg) == 0 ? SNAP_OK : SNAP_ENOMEM;
}
