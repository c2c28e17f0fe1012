/*
 * ring.c — the point-stack ring: the main thread's stack sampled every
 * sample interval while the loop is busy, and the costliest stack in it.
 *
 * Owns: the ring's memory (allocated once at start), the choice of the
 * costliest stack, and the last point after which the main thread ran
 * (a bound of when its wait began: report.c). Must not: sample (the watchdog
 * fills slots) or run on the main thread.
 *
 * Why "same innermost function = same stack", as Matrix does: the point
 * samples of one hot loop land on different pcs of the same function, and
 * the function is what a reader fixes. Ties go to the most recent sample,
 * the closest to the moment the lag was seen.
 */
#include <stdlib.h>
#include <string.h>

#include "lag/lag.h"

int snap__ring_init(snap__ring_t *r, unsigned size) {
  memset(r, 0, sizeof *r);
  if (size == 0)
    return SNAP_OK;
  r->slots = calloc(size, sizeof *r->slots);
  if (!r->slots)
    return SNAP_ENOMEM;
  r->size = size;
  return SNAP_OK;
}

void snap__ring_free(snap__ring_t *r) {
  free(r->slots);
  memset(r, 0, sizeof *r);
}

snap__point_t *snap__ring_next(snap__ring_t *r) {
  return r->size ? &r->slots[r->written % r->size] : NULL;
}

void snap__ring_commit(snap__ring_t *r) { r->written++; }

/* The function a point stopped in. */
static uintptr_t innermost_function(const snap_stack_t *s) {
  const snap_frame_t *f = snap_stack_frame(s, 0);
  return f ? snap__frame_function(f) : 0;
}

void snap__ring_costliest(const snap__ring_t *r, uint32_t seq,
                          uint64_t since_ns, snap__costliest_t *out) {
  memset(out, 0, sizeof *out);
  unsigned held = r->written < r->size ? (unsigned)r->written : r->size;
  if (held == 0)
    return;
  /* Oldest to newest, named (a cache hit for a repeated stack). */
  const snap_stack_t **named = calloc(held, sizeof *named);
  uintptr_t *fn = calloc(held, sizeof *fn);
  const snap__point_t **pts = calloc(held, sizeof *pts);
  if (!named || !fn || !pts)
    goto out;
  unsigned n = 0;
  for (unsigned i = 0; i < held; i++) {
    const snap__point_t *p = &r->slots[(r->written - held + i) % r->size];
    if (p->t_ns < since_ns || (seq && p->seq != seq) || p->n <= 0)
      continue;
    named[n] = snap_symbolicate(p->pcs, p->n, SNAP_SYMBOLICATE_EXACT_PC0);
    if (!named[n])
      continue;
    fn[n] = innermost_function(named[n]);
    pts[n] = p;
    n++;
  }
  out->samples = n;
  unsigned best_hits = 0;
  int best = -1;
  for (unsigned i = 0; i < n; i++) {
    unsigned hits = 0;
    for (unsigned j = 0; j < n; j++)
      hits += fn[j] == fn[i];
    if (hits >= best_hits) { /* >=: ties go to the newer */
      best_hits = hits;
      best = (int)i;
    }
  }
  if (best < 0)
    goto out;
  out->hits = best_hits;
  /* CPU over the intervals that end at a winning point: the main thread
     was in that function (as far as sampling can tell) during them; the
     split of the same intervals, and the winning points by state. */
  for (unsigned i = 0; i < n; i++) {
    snap__split_count(&out->all, &pts[i]->state);
    if (fn[i] != fn[best])
      continue;
    snap__split_count(&out->split, &pts[i]->state);
    if (i == 0 || pts[i]->seq != pts[i - 1]->seq)
      continue;
    if (pts[i]->cpu_ns >= 0 && pts[i - 1]->cpu_ns >= 0)
      out->cpu_ns += pts[i]->cpu_ns - pts[i - 1]->cpu_ns;
    out->wall_ns += (int64_t)(pts[i]->t_ns - pts[i - 1]->t_ns);
    snap__split_add(&out->split, &pts[i - 1]->sched, &pts[i]->sched,
                    pts[i]->t_ns - pts[i - 1]->t_ns);
  }
  out->stack = named[best];
  named[best] = NULL;
out:
  if (named)
    for (unsigned i = 0; i < held; i++)
      snap_stack_release(named[i]);
  free(named);
  free(fn);
  free(pts);
}

uint64_t snap__ring_still_since(const snap__ring_t *r, uint32_t seq,
                                uint64_t since_ns, uint64_t before_ns,
                                int64_t cpu_ns) {
  uint64_t first = 0;
  unsigned held = r->written < r->size ? (unsigned)r->written : r->size;
  for (unsigned i = 1; i <= held; i++) {
    const snap__point_t *p = &r->slots[(r->written - i) % r->size];
    if (p->seq == seq && p->t_ns >= since_ns && p->t_ns < before_ns &&
        p->cpu_ns >= cpu_ns && (!first || p->t_ns < first))
      first = p->t_ns;
  }
  return first;
}
