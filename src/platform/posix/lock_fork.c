/*
 * lock_fork.c — every snap__lock_t of the library, held across fork().
 *
 * A forked child has one thread. A lock some other thread of the parent
 * held at the instant of fork() stays held there for good, and the data it
 * guarded may be half-updated (a cache stripe's index mid-insert). So, as libc
 * does for malloc: the prepare handler takes every registered lock, in
 * registration order, on the forking thread (waiting for any critical
 * section in flight to end); the parent handler releases them; the child
 * handler initialises each one afresh (snap__lock_raw_init), since the
 * data is consistent and the owner the lock recorded is not a thread of
 * the child. These are the LOCKS stage of the fork seam (fork_hook.c):
 * prepare last, parent and child first.
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

/* The fork gate (locks.h): which threads are inside it, and whether fork
   closed it. Sequentially consistent on both sides (Dekker): an entering
   thread marks itself in, then looks at the gate; fork closes the gate,
   then looks at every mark. At least one of them sees the other.

   Each thread marks itself in a slot of its own, on cache lines of its own,
   claimed on its first pass and given back when it exits: a pass writes
   nothing another thread writes or reads on its own passes. (One shared
   counter of passers cost two contended atomic operations a pass: every
   cache hit asks the loader's stamp inside the gate, and with two threads
   naming, the counter's line moved between the cores on every call.) Fork
   reads every claimed slot, once per fork. A thread that finds no slot
   free (more than GATE_SLOTS threads passing at once in the process's
   life, less those that exited) counts itself in the shared counter, as
   every thread once did. */
#define GATE_SLOTS 256

typedef struct gate_slot {
  _Alignas(128) atomic_bool in; /* its thread is between enter and leave */
  atomic_bool claimed;
} gate_slot_t;

static gate_slot_t g_gate_slots[GATE_SLOTS];
static atomic_int g_gate_high;  /* slots ever claimed: fork scans these */
static atomic_int g_gate_users; /* passers without a slot */
static atomic_bool g_gate_closed;
static _Thread_local gate_slot_t *t_gate_slot;
static pthread_once_t g_gate_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_gate_key;
static bool g_gate_keyed;

/* At the thread's exit: its slot is free for the next thread. */
static void gate_slot_exit(void *arg) {
  gate_slot_t *slot = arg;
  atomic_store(&slot->in, false);
  atomic_store(&slot->claimed, false);
  t_gate_slot = NULL;
}

static void gate_key_make(void) {
  g_gate_keyed = pthread_key_create(&g_gate_key, gate_slot_exit) == 0;
}

/* The calling thread's slot, claimed now if it has none; NULL if none is
   to be had. */
static gate_slot_t *gate_slot(void) {
  gate_slot_t *slot = t_gate_slot;
  if (slot)
    return slot;
  pthread_once(&g_gate_once, gate_key_make);
  if (!g_gate_keyed)
    return NULL;
  for (int i = 0; i < GATE_SLOTS; i++) {
    bool unclaimed = false;
    if (atomic_load_explicit(&g_gate_slots[i].claimed, memory_order_relaxed) ||
        !atomic_compare_exchange_strong(&g_gate_slots[i].claimed, &unclaimed,
                                        true))
      continue;
    slot = &g_gate_slots[i];
    /* Raised before the slot is first used: fork, which reads the mark
       after closing the gate, then scans it. */
    int high = atomic_load(&g_gate_high);
    while (high <= i &&
           !atomic_compare_exchange_weak(&g_gate_high, &high, i + 1))
      ;
    if (pthread_setspecific(g_gate_key, slot) != 0) {
      atomic_store(&slot->claimed, false);
      return NULL;
    }
    t_gate_slot = slot;
    return slot;
  }
  return NULL;
}

void snap__fork_gate_enter(void) {
  gate_slot_t *slot = gate_slot();
  for (;;) {
    if (slot)
      atomic_store(&slot->in, true);
    else
      atomic_fetch_add(&g_gate_users, 1);
    if (!atomic_load(&g_gate_closed))
      return;
    if (slot)
      atomic_store(&slot->in, false);
    else
      atomic_fetch_sub(&g_gate_users, 1);
    while (atomic_load(&g_gate_closed))
      sched_yield(); /* a fork is in progress: short */
  }
}

/* The thread's slot cannot change between enter and leave: it is claimed
   in enter and given back only at the thread's exit. */
void snap__fork_gate_leave(void) {
  gate_slot_t *slot = t_gate_slot;
  if (slot)
    atomic_store_explicit(&slot->in, false, memory_order_release);
  else
    atomic_fetch_sub(&g_gate_users, 1);
}

/* Fork's side: the gate is closed; waits until no thread is inside. */
static void gate_drain(void) {
  while (atomic_load(&g_gate_users) > 0)
    sched_yield();
  int high = atomic_load(&g_gate_high);
  for (int i = 0; i < high && i < GATE_SLOTS; i++)
    while (atomic_load(&g_gate_slots[i].in))
      sched_yield();
}

/* In the child only the forking thread is left: every other slot is free
   (their threads' exit handlers will never run here). */
static void gate_reset_child(void) {
  atomic_store(&g_gate_users, 0);
  for (int i = 0; i < GATE_SLOTS; i++) {
    gate_slot_t *slot = &g_gate_slots[i];
    atomic_store(&slot->in, false);
    if (slot != t_gate_slot)
      atomic_store(&slot->claimed, false);
  }
  atomic_store(&g_gate_closed, false);
}

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
  gate_drain();
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
  gate_reset_child(); /* the other threads are gone */
  g_nheld = 0;
  int n = atomic_load(&g_count);
  for (int i = 0; i < n && i < MAX_LOCKS; i++) {
    snap__lock_t *l = atomic_load(&g_locks[i]);
    if (l)
      snap__lock_raw_init(l);
  }
}

/* The fork seam's first stage (platform.h, Fork): in the child, every
   other stage's handler may lock; in prepare, ours runs after theirs. */
static void hook(void) {
  g_hooked =
      snap__plat_on_fork(SNAP__FORK_LOCKS, prepare, parent, child) == SNAP_OK;
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
