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
 * Must not: sample, read memory or name threads (pure: the waits were
 * decoded by snap__capture_thread_wait, validated there).
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
