/*
 * marks.c — the queue that carries snap_trace_mark's samples from any
 * thread to the sampler.
 *
 * Owns: a bounded multi-producer, single-consumer queue of fixed slots.
 * Each slot's seq says whose turn it is: a producer claims position p
 * (head, fetch-add) and may fill slot p % N once seq == p; it publishes
 * with seq = p + 1; the sampler reads the slot at tail once seq == tail +
 * 1 and frees it with seq = tail + N. A full queue is seen before
 * claiming (head - tail >= N, read relaxed: a mark may be dropped while a
 * slot is being freed, never queued twice), so a producer never waits.
 * Must not: lock, allocate or make a system call (a hooked API calls
 * snap_trace_mark on every call), or block a producer.
 */
#include <string.h>

#include "trace/trace.h"

void snap__trace_marks_init(snap__trace_t *tr) {
  for (uint64_t i = 0; i < SNAP__TRACE_MARKS; i++)
    atomic_store_explicit(&tr->marks[i].seq, i, memory_order_relaxed);
  atomic_store(&tr->mark_head, 0);
  tr->mark_tail = 0;
  atomic_store(&tr->mark_tail_pub, 0);
}

bool snap__trace_mark_push(snap__trace_t *tr, const char *label,
                           const uintptr_t *pcs, int n, uint64_t t_ns,
                           int64_t cpu_ns) {
  uint64_t p = atomic_load_explicit(&tr->mark_head, memory_order_relaxed);
  for (;;) {
    uint64_t tail =
        atomic_load_explicit(&tr->mark_tail_pub, memory_order_acquire);
    if (p - tail >= SNAP__TRACE_MARKS)
      return false; /* full */
    if (atomic_compare_exchange_weak_explicit(&tr->mark_head, &p, p + 1,
                                              memory_order_relaxed,
                                              memory_order_relaxed))
      break;
  }
  snap__trace_mark_t *m = &tr->marks[p % SNAP__TRACE_MARKS];
  /* The slot was freed (seq == p) before tail passed it: tail > p - N. */
  while (atomic_load_explicit(&m->seq, memory_order_acquire) != p)
    ; /* not reached: claimed only below the published tail + N */
  m->t_ns = t_ns;
  m->tid = snap_thread_self();
  m->cpu_ns = cpu_ns;
  size_t len = label ? strnlen(label, SNAP__TRACE_LABEL_MAX - 1) : 0;
  if (len == 0)
    memcpy(m->label, "mark", 5);
  else {
    memcpy(m->label, label, len);
    m->label[len] = '\0';
  }
  if (n > (int)(sizeof m->pcs / sizeof m->pcs[0]))
    n = (int)(sizeof m->pcs / sizeof m->pcs[0]);
  memcpy(m->pcs, pcs, (size_t)(n > 0 ? n : 0) * sizeof *pcs);
  m->n = n > 0 ? n : 0;
  atomic_store_explicit(&m->seq, p + 1, memory_order_release);
  return true;
}

snap__trace_mark_t *snap__trace_mark_peek(snap__trace_t *tr) {
  snap__trace_mark_t *m = &tr->marks[tr->mark_tail % SNAP__TRACE_MARKS];
  if (atomic_load_explicit(&m->seq, memory_order_acquire) != tr->mark_tail + 1)
    return NULL; /* empty, or the next one is still being written */
  return m;
}

void snap__trace_mark_done(snap__trace_t *tr, snap__trace_mark_t *m) {
  atomic_store_explicit(&m->seq, tr->mark_tail + SNAP__TRACE_MARKS,
                        memory_order_release);
  tr->mark_tail++;
  atomic_store_explicit(&tr->mark_tail_pub, tr->mark_tail,
                        memory_order_release);
}
