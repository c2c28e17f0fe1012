/*
 * completed.c — stacks a signal completed, kept while their thread stays
 * blocked (snap__completed_put / snap__completed_get).
 *
 * Why: a quiet walk that ends short in a restartable wait is completed by
 * a signal (capture.c), and the signal runs the thread's handler: its CPU
 * clock moves. A sampler that samples a thread again whenever its clock
 * moved (the trace, src/trace/sampler.c) then asked again every tick and
 * signalled a thread blocked for a second ~800 times (measured: 10 ms of
 * the blocked thread's CPU per second, ~150 us of the sampler's per
 * tick). Kept here with the platform's witness taken after the signal
 * (snap__plat_blocked_again: back in the same wait, scheduled in only for
 * the signal), the stack is answered again, without a signal or a walk,
 * for as long as the witness is unchanged: the thread has not run since,
 * so its stack cannot have changed.
 *
 * A few entries, replaced in turn: the threads worth keeping are the few
 * a sampler returns to (the main thread, above all).
 *
 * Must not: be used from the stopped window (it locks); hold its lock
 * across anything but a copy.
 */
#include "capture/completed.h"

#include <string.h>

#define ENTRIES 4

typedef struct completed_entry {
  snap_thread_t thread; /* 0: empty */
  unsigned flags;
  uint64_t seen[sizeof(((snap__plat_blocked_t *)0)->seen) / sizeof(uint64_t)];
  int n;
  snap__plat_wait_regs_t wait;
  uintptr_t pcs[SNAP_MAX_FRAMES];
} completed_entry_t;

static snap__lazy_lock_t g_lock;
static completed_entry_t g_entries[ENTRIES];
static unsigned g_next;

void snap__completed_put(snap_thread_t thread, unsigned flags,
                         const snap__plat_blocked_t *at, const uintptr_t *pcs,
                         int n, const snap__plat_wait_regs_t *wait) {
  if (n <= 0 || n > SNAP_MAX_FRAMES)
    return;
  snap__plat_lazy_lock(&g_lock);
  completed_entry_t *e = NULL;
  for (int i = 0; i < ENTRIES && !e; i++)
    if (g_entries[i].thread == thread)
      e = &g_entries[i];
  if (!e)
    e = &g_entries[g_next++ % ENTRIES];
  e->thread = thread;
  e->flags = flags;
  memcpy(e->seen, at->seen, sizeof e->seen);
  e->n = n;
  e->wait = *wait;
  memcpy(e->pcs, pcs, (size_t)n * sizeof *pcs);
  snap__plat_lazy_unlock(&g_lock);
}

int snap__completed_get(snap_thread_t thread, unsigned flags,
                        const snap__plat_blocked_t *now, uintptr_t *pcs,
                        int max, snap__plat_wait_regs_t *wait) {
  int n = -1;
  snap__plat_lazy_lock(&g_lock);
  for (int i = 0; i < ENTRIES; i++) {
    completed_entry_t *e = &g_entries[i];
    if (e->thread != thread)
      continue;
    if (e->flags == flags && memcmp(e->seen, now->seen, sizeof e->seen) == 0) {
      n = e->n < max ? e->n : max;
      memcpy(pcs, e->pcs, (size_t)n * sizeof *pcs);
      *wait = e->wait;
    }
    break;
  }
  snap__plat_lazy_unlock(&g_lock);
  return n;
}
