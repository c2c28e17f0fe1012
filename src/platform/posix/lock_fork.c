/*
 * lock_fork.c — every snap__lock_t of the library, held across fork().
 *
 * A forked child has one thread. A lock some other thread of the parent
 * held at the instant of fork() stays held there for good, and the data it
 * guarded may be half-updated (a uthash bucket mid-insert). So, as libc
 * does for malloc: the prepare handler takes every registered lock, in
 * registration order, on the forking thread (waiting for any critical
 * section in flight to end); the parent handler releases them; the child
 * handler initialises each one afresh (snap__lock_raw_init), since the
 * data is consistent and the owner the lock recorded is not a thread of
 * the child.
 *
 * Deadlock-free because no code of ours holds two of these locks at once
 * or calls out of the library while holding one (platform.h, Locks): a
 * thread the prepare handler waits for always gets to its unlock.
 *
 * The registry is a fixed array of atomic pointers (a forgotten slot is
 * NULL and reused): registering allocates nothing and takes no lock, so it
 * works from constructors. A lock registered while another thread forks
 * may miss that one fork; locks are created at load time, before threads.
 *
 * Must not: be used for locks that live in memory that can be freed while
 * registered (snap__plat_lock_destroy forgets them first).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "platform/posix/locks.h"

#define MAX_LOCKS 64 /* 16 cache stripes, the sampler lock, tests */

static _Atomic(snap__lock_t *) g_locks[MAX_LOCKS];
static atomic_int g_count; /* slots handed out; a NULL one is free */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static bool g_hooked;

/* The fork gate (locks.h): threads inside it, and whether fork closed it.
   Sequentially consistent on both sides (Dekker): an entering thread
   counts itself, then looks at the gate; fork closes the gate, then looks
   at the count. At least one of them sees the other. */
static atomic_int g_gate_users;
static atomic_bool g_gate_closed;

void snap__fork_gate_enter(void) {
  for (;;) {
    atomic_fetch_add(&g_gate_users, 1);
    if (!atomic_load(&g_gate_closed))
      return;
    atomic_fetch_sub(&g_gate_users, 1);
    while (atomic_load(&g_gate_closed))
      sched_yield(); /* a fork is in progress: short */
  }
}

void snap__fork_gate_leave(void) { atomic_fetch_sub(&g_gate_users, 1); }

/* The locks first, then the gate: a thread that holds one of our locks
   may still have to pass the gate before it can release it (the image
   table's writer enumerates images under its lock), so the gate closes
   only once no thread holds a lock of ours; a thread inside the gate
   holds none that fork waits for. */
/* The locks prepare took, for parent to release: exactly those, since a
   lock registered meanwhile (a lazy lock made by a thread inside the gate
   before it closed) was never taken. Only the forking thread touches it,
   between prepare and parent. */
static snap__lock_t *g_held[MAX_LOCKS];
static int g_nheld;

static void prepare(void) {
  int n = atomic_load(&g_count);
  g_nheld = 0;
  for (int i = 0; i < n && i < MAX_LOCKS; i++) {
    snap__lock_t *l = atomic_load(&g_locks[i]);
    if (l) {
      snap__plat_lock_lock(l);
      g_held[g_nheld++] = l;
    }
  }
  atomic_store(&g_gate_closed, true);
  while (atomic_load(&g_gate_users) > 0)
    sched_yield();
}

static void parent(void) {
  atomic_store(&g_gate_closed, false);
  for (int i = g_nheld - 1; i >= 0; i--)
    snap__plat_lock_unlock(g_held[i]);
  g_nheld = 0;
}

/* Every registered lock, also one made after prepare's count: in the
   child no thread holds any, whatever the parent's threads were doing. */
static void child(void) {
  atomic_store(&g_gate_users, 0); /* the other threads are gone */
  atomic_store(&g_gate_closed, false);
  g_nheld = 0;
  int n = atomic_load(&g_count);
  for (int i = 0; i < n && i < MAX_LOCKS; i++) {
    snap__lock_t *l = atomic_load(&g_locks[i]);
    if (l)
      snap__lock_raw_init(l);
  }
}

static void hook(void) {
  g_hooked = pthread_atfork(prepare, parent, child) == 0;
}

bool snap__lock_register(snap__lock_t *l) {
  pthread_once(&g_once, hook);
  if (!g_hooked)
    return false;
  int n = atomic_load(&g_count);
  for (int i = 0; i < n && i < MAX_LOCKS; i++) { /* a forgotten slot */
    snap__lock_t *expect = NULL;
    if (atomic_compare_exchange_strong(&g_locks[i], &expect, l))
      return true;
  }
  int i = atomic_fetch_add(&g_count, 1);
  if (i >= MAX_LOCKS) {
    atomic_fetch_sub(&g_count, 1);
    return false;
  }
  atomic_store(&g_locks[i], l);
  return true;
}

/* The same on both backends: a fresh lock (the backend's lock.c), known to
   fork from now on. */
int snap__plat_lock_init(snap__lock_t *l) {
  snap__lock_raw_init(l);
  return snap__lock_register(l) ? SNAP_OK : SNAP_ENOMEM;
}

/* Made inside the fork gate: fork waits for the maker, so no child starts
   with state 1 and nobody to finish it. Others that find it being made
   yield until it is (a few microseconds, once per process). */
void snap__plat_lazy_lock(snap__lazy_lock_t *l) {
  if (atomic_load_explicit(&l->state, memory_order_acquire) != 2) {
    snap__fork_gate_enter();
    int unmade = 0;
    if (atomic_compare_exchange_strong(&l->state, &unmade, 1)) {
      (void)snap__plat_lock_init(&l->lock); /* unregistered: still a lock */
      atomic_store_explicit(&l->state, 2, memory_order_release);
    }
    snap__fork_gate_leave();
    while (atomic_load_explicit(&l->state, memory_order_acquire) != 2)
      sched_yield();
  }
  snap__plat_lock_lock(&l->lock);
}

void snap__plat_lazy_unlock(snap__lazy_lock_t *l) {
  snap__plat_lock_unlock(&l->lock);
}

void snap__lock_forget(snap__lock_t *l) {
  int n = atomic_load(&g_count);
  for (int i = 0; i < n && i < MAX_LOCKS; i++) {
    snap__lock_t *expect = l;
    if (atomic_compare_exchange_strong(&g_locks[i], &expect, NULL))
      return;
  }
}
