/*
 * wait_chain.c — who the main thread waits for, through whom, and
 * deadlocks: the "waits on a lock owned by" relation of a report's
 * threads.
 *
 * Owns: following owners from one thread, and finding a cycle. Each
 * thread waits on at most one lock, and a lock has at most one owner, so
 * the relation is a function (a thread -> the thread it waits for): from
 * any thread the walk is a path that either ends (a thread that waits on
 * nothing, on a kind without an owner, on an unknown owner, or on one
 * not in the list) or runs into itself, and the threads it runs into
 * form a cycle: a deadlock, since no thread on it can go on until the
 * next one does.
 *
 * Algorithm: the next thread of each thread is found once (a sorted index
 * of tids, bsearch), then walks colour threads as on the current walk or
 * done, so the search for a cycle visits each thread once (O(n log n)).
 * The chain from main is walked first: a cycle it closes is the deadlock,
 * listed from the first cycle thread the walk met (main is listed only
 * when it is on the cycle, not when it merely waits on one). Otherwise
 * the other threads are walked in list order, and the first cycle met is
 * the deadlock (listed from where that walk entered it).
 *
 * Whether an owner can be the owner (snap__wait_judge_owner): the lock's
 * memory names a TID, and decoding accepts it when a live thread of this
 * process has it. But a normal mutex keeps the TID of a holder that exited
 * holding it, and once TIDs wrap (pid_max: 32768 on Android, seconds of
 * thread churn) a new, innocent thread gets it. A thread that began after
 * the wait began cannot be the holder the waiter waits for (the lock was
 * held when the wait began, and it stays held by that holder, or the
 * waiter would wake), so such an owner is "unknown", never named. When
 * the wait began is known to within a bound: the main thread's wait began
 * after the last moment the watchdog saw its CPU time grow. Any other
 * thread's wait has no known start, and none is assumed: taking the
 * stall's start for it made the threads of a deadlock begun during the
 * stall "unknown" to each other (the demo's deadlock3, on arm64), so for
 * them only a dead owner is refused. The thread's start is kept to a
 * clock tick; it is compared by the
 * earliest instant it may have begun, so an owner that began in the
 * tick of the bound is kept.
 *
 * Must not: sample, read memory or name threads (pure: the waits were
 * decoded by snap__capture_thread_wait, validated there; the owners'
 * starts were read by the caller).
 */
#include <stdlib.h>

#include "lag/lag.h"

typedef struct by_tid {
  snap_thread_t tid;
  int i;
} by_tid_t;

static int cmp_tid(const void *a, const void *b) {
  snap_thread_t x = ((const by_tid_t *)a)->tid, y = ((const by_tid_t *)b)->tid;
  return x < y ? -1 : x > y;
}

/* next[i]: the index of the thread ts[i] waits for, -1 when none. */
static int link_owners(const snap__lag_thread_t *ts, int n, int *next) {
  by_tid_t *idx = malloc(sizeof *idx * (size_t)n);
  if (!idx)
    return SNAP_ENOMEM;
  for (int i = 0; i < n; i++)
    idx[i] = (by_tid_t){ts[i].tid, i};
  qsort(idx, (size_t)n, sizeof *idx, cmp_tid);
  for (int i = 0; i < n; i++) {
    next[i] = -1;
    const snap_wait_t *w = &ts[i].wait;
    if (w->kind == SNAP_WAIT_NONE || w->owner_state != SNAP_OWNER_KNOWN ||
        w->owner == ts[i].tid)
      continue;
    by_tid_t key = {w->owner, 0};
    const by_tid_t *hit = bsearch(&key, idx, (size_t)n, sizeof *idx, cmp_tid);
    if (hit)
      next[i] = hit->i;
  }
  free(idx);
  return SNAP_OK;
}

enum { FRESH, ON_WALK, DONE };

static void push(snap__wait_chain_t *c, int i) {
  if (c->n < SNAP__CHAIN_MAX)
    c->at[c->n++] = i;
  else
    c->truncated = true;
}

/* Walks from `start` (marking ON_WALK, then DONE). Fills *path (may be
   NULL) with the walk, and *cycle with the cycle it ran into, if it ran
   into one met on this very walk. */
static void walk(const int *next, unsigned char *mark, int start,
                 snap__wait_chain_t *path, snap__wait_chain_t *cycle) {
  int i = start;
  while (i >= 0 && mark[i] == FRESH) {
    mark[i] = ON_WALK;
    if (path)
      push(path, i);
    i = next[i];
  }
  if (i >= 0 && mark[i] == ON_WALK) { /* closed on this walk: a cycle */
    int j = i;
    do {
      push(cycle, j);
      j = next[j];
    } while (j != i);
  }
  for (int j = start; j >= 0 && mark[j] == ON_WALK; j = next[j])
    mark[j] = DONE;
}

int snap__wait_analyze(const snap__lag_thread_t *ts, int n, int from,
                       snap__wait_chain_t *chain, snap__wait_chain_t *cycle) {
  chain->n = cycle->n = 0;
  chain->truncated = cycle->truncated = false;
  if (n <= 0)
    return SNAP_OK;
  int *next = malloc(sizeof *next * (size_t)n);
  unsigned char *mark = calloc((size_t)n, 1);
  int rc = next && mark ? link_owners(ts, n, next) : SNAP_ENOMEM;
  if (rc == SNAP_OK) {
    if (from >= 0 && from < n)
      walk(next, mark, from, chain, cycle);
    for (int i = 0; i < n && cycle->n == 0; i++)
      if (mark[i] == FRESH)
        walk(next, mark, i, NULL, cycle);
  }
  free(next);
  free(mark);
  return rc;
}

void snap__wait_judge_owner(snap__lag_thread_t *t, uint64_t wait_from_ns,
                            int look_rc,
                            const snap__plat_thread_look_t *owner) {
  snap_wait_t *w = &t->wait;
  t->owner_why = SNAP__OWNER_WHY_NONE;
  if (w->kind == SNAP_WAIT_NONE || w->owner_state == SNAP_OWNER_NONE)
    return;
  if (w->owner_state == SNAP_OWNER_KNOWN) {
    if (look_rc == SNAP_ENOTHREAD) {
      t->owner_why = SNAP__OWNER_WHY_NOT_LIVE; /* gone since the decode */
    } else if (look_rc == SNAP_OK && owner->began_ns && wait_from_ns &&
               owner->began_ns > wait_from_ns) {
      t->owner_why = SNAP__OWNER_WHY_LATER;
    } else {
      return; /* it can be the owner (or nothing says otherwise) */
    }
    w->owner_state = SNAP_OWNER_UNKNOWN;
    w->owner = 0;
    w->owner_name[0] = '\0';
    return;
  }
  t->owner_why = SNAP__OWNER_WHY_NOT_LIVE;
}
