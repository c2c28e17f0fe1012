/*
 * slices.c — a snapshot's spans as nested slices per thread (trace.h).
 *
 * Owns: snap__trace_slices and snap__trace_slice_state (the state of a
 * slice is src/blocked/'s answer for its samples: snap__state_of_samples).
 * Algorithm, per thread, over its spans in time order (marks skipped: they
 * are instants, not samples of the slice stream):
 *  1. A span covers start_ns until the next span of its thread; when that
 *     one starts more than two sampling periods after end_ns, the thread
 *     went unsampled (idle, or the window ended) and the span covers one
 *     period past end_ns instead. Not so for the main thread, which the
 *     sampler samples whatever it does: a gap there is the sampler's own
 *     lateness on a busy machine, so its spans last to the next. Open
 *     slices end where the coverage ends when it ends before the next span
 *     starts. The window's start cuts it (snap__trace_span_cover): a span
 *     from before the window is drawn from since_ns, or not at all.
 *  2. Between two spans, diff the stacks from the root: the open slices
 *     from the first depth where the frames differ end (deepest first),
 *     the new stack's frames from there begin. Frames are the same
 *     function when they are the same node or have the same name and
 *     image: a stack table node is a pc, and the pc of a running function
 *     changes every sample while the function (the slice) goes on.
 *  3. A span with no stack (a failed sample) ends every open slice.
 *  4. Each open slice takes the span's samples, state counts, CPU time
 *     (unknown as soon as one span's is) and blocked samples' wait kinds.
 * Slices are appended when they begin, so the list comes out ordered by
 * thread, begin_ns, depth.
 * Must not: trust the snapshot's indices (an index out of range is no
 * frame / no thread) or its parent links (a walk stops after the deepest
 * depth the frames claim, and never goes past n_frames steps).
 */
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"

unsigned snap__trace_slice_state(const snap__trace_slice_t *sl) {
  return snap__state_of_samples(sl->by_state, NULL).state;
}

/* One open slice: where it is in the output, the node it matched last
   (the fast equality test) and its blocked samples by wait kind. */
typedef struct open_slice {
  size_t out;
  uint32_t node;
  uint32_t waits[SNAP_WAIT_KIND_COUNT];
} open_slice_t;

typedef struct builder {
  const snap__trace_snapshot_t *s;
  snap__trace_slice_t *out;
  size_t n, cap;
  open_slice_t *open;
  uint32_t n_open;
  uint32_t *path; /* the current stack, root first */
  uint32_t max_path;
} builder_t;

static bool same_function(const snap__trace_snapshot_t *s, uint32_t a,
                          uint32_t b) {
  if (a == b)
    return true;
  const snap__trace_frame_t *fa = &s->frames[a], *fb = &s->frames[b];
  return strcmp(fa->name, fb->name) == 0 && strcmp(fa->image, fb->image) == 0;
}

/* The stack of leaf, root first, into b->path; its depth. */
static uint32_t stack_of(builder_t *b, uint32_t leaf) {
  const snap__trace_snapshot_t *s = b->s;
  uint32_t n = 0;
  for (uint32_t f = leaf; f < s->n_frames && n < b->max_path;
       f = s->frames[f].parent)
    b->path[n++] = f;
  for (uint32_t i = 0; i < n / 2; i++) { /* leaf first -> root first */
    uint32_t t = b->path[i];
    b->path[i] = b->path[n - 1 - i];
    b->path[n - 1 - i] = t;
  }
  return n;
}

static void close_from(builder_t *b, uint32_t depth, uint64_t at) {
  while (b->n_open > depth) {
    open_slice_t *o = &b->open[--b->n_open];
    snap__trace_slice_t *sl = &b->out[o->out];
    /* Never before it began, nor before a child it holds ended (the
       child began later): nesting holds whatever the times say. */
    sl->end_ns = at > sl->begin_ns ? at : sl->begin_ns;
    at = sl->end_ns;
    uint32_t best = 0;
    sl->wait_kind = SNAP_WAIT_NONE;
    for (unsigned k = 1; k < SNAP_WAIT_KIND_COUNT; k++)
      if (o->waits[k] > best) {
        best = o->waits[k];
        sl->wait_kind = (uint8_t)k;
      }
  }
}

static bool begin(builder_t *b, uint32_t thread, uint32_t frame, uint64_t at) {
  if (b->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 1024;
    snap__trace_slice_t *p = realloc(b->out, cap * sizeof *p);
    if (!p)
      return false;
    b->out = p;
    b->cap = cap;
  }
  snap__trace_slice_t *sl = &b->out[b->n];
  memset(sl, 0, sizeof *sl);
  sl->thread = thread;
  sl->frame = frame;
  sl->depth = b->n_open;
  sl->begin_ns = sl->end_ns = at;
  open_slice_t *o = &b->open[b->n_open++];
  memset(o, 0, sizeof *o);
  o->out = b->n++;
  o->node = frame;
  return true;
}

static uint64_t period_of(const snap__trace_snapshot_t *s, uint32_t thread) {
  uint64_t p =
      s->threads[thread].is_main ? s->main_interval_ns : s->other_interval_ns;
  /* A period of 0 (not configured) would make a last sample last
     nothing: borrow the other one, else 1 ms (the default main rate). */
  if (!p)
    p = s->main_interval_ns ? s->main_interval_ns : s->other_interval_ns;
  return p ? p : 1000000;
}

bool snap__trace_span_cover(const snap__trace_snapshot_t *s,
                            const snap__trace_span_t *sp,
                            const snap__trace_span_t *next,
                            snap__trace_cover_t *out) {
  uint64_t end_ns = sp->end_ns > sp->start_ns ? sp->end_ns : sp->start_ns;
  uint64_t until = end_ns;
  if (sp->thread < s->n_threads) {
    uint64_t period = period_of(s, sp->thread);
    bool main_thread = s->threads[sp->thread].is_main;
    until = !next || (!main_thread && next->start_ns > end_ns &&
                      next->start_ns - end_ns > 2 * period)
                ? end_ns + period
                : next->start_ns;
  }
  *out = (snap__trace_cover_t){sp->start_ns, until, sp->count, sp->cpu_ns};
  if (sp->start_ns >= s->since_ns)
    return true;
  if (until <= s->since_ns)
    return false;
  out->from_ns = s->since_ns;
  if (end_ns <= s->since_ns) {
    out->count = 1;
    out->cpu_ns = sp->cpu_ns < 0 ? -1 : 0;
    return true;
  }
  double kept =
      (double)(end_ns - s->since_ns) / (double)(end_ns - sp->start_ns);
  uint32_t n = (uint32_t)((double)sp->count * kept + 0.5);
  out->count = n ? n : 1;
  if (sp->cpu_ns > 0)
    out->cpu_ns = (int64_t)((double)sp->cpu_ns * kept + 0.5);
  return true;
}

typedef struct span_key {
  uint32_t thread;
  uint64_t start_ns;
  size_t index;
} span_key_t;

static int by_thread_time(const void *a, const void *b) {
  const span_key_t *x = a, *y = b;
  if (x->thread != y->thread)
    return x->thread < y->thread ? -1 : 1;
  if (x->start_ns != y->start_ns)
    return x->start_ns < y->start_ns ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* The span indices that are samples (no marks) of a known thread, by
   thread then time. Spans arrive sorted by time, so the split by thread
   is a stable counting pass; a snapshot out of order gets sorted. */
static size_t *sample_order(const snap__trace_snapshot_t *s, size_t *n_out) {
  size_t n = 0;
  for (size_t i = 0; i < s->n_spans; i++)
    if (!s->spans[i].label && s->spans[i].thread < s->n_threads)
      n++;
  *n_out = n;
  size_t *idx = malloc((n ? n : 1) * sizeof *idx);
  size_t *first = calloc((size_t)s->n_threads + 1, sizeof *first);
  if (!idx || !first) {
    free(idx);
    free(first);
    return NULL;
  }
  for (size_t i = 0; i < s->n_spans; i++)
    if (!s->spans[i].label && s->spans[i].thread < s->n_threads)
      first[s->spans[i].thread + 1]++;
  for (uint32_t t = 0; t < s->n_threads; t++)
    first[t + 1] += first[t];
  for (size_t i = 0; i < s->n_spans; i++) {
    const snap__trace_span_t *sp = &s->spans[i];
    if (!sp->label && sp->thread < s->n_threads)
      idx[first[sp->thread]++] = i;
  }
  free(first);
  /* Only once every slot is filled: a thread's neighbour slot may not be. */
  bool sorted = true;
  for (size_t i = 1; i < n && sorted; i++) {
    const snap__trace_span_t *a = &s->spans[idx[i - 1]], *b = &s->spans[idx[i]];
    sorted = a->thread != b->thread || a->start_ns <= b->start_ns;
  }
  if (!sorted) {
    span_key_t *keys = malloc(n * sizeof *keys);
    if (!keys) {
      free(idx);
      return NULL;
    }
    for (size_t i = 0; i < n; i++)
      keys[i] = (span_key_t){s->spans[idx[i]].thread, s->spans[idx[i]].start_ns,
                             idx[i]};
    qsort(keys, n, sizeof *keys, by_thread_time);
    for (size_t i = 0; i < n; i++)
      idx[i] = keys[i].index;
    free(keys);
  }
  return idx;
}

int snap__trace_slices(const snap__trace_snapshot_t *s,
                       snap__trace_slice_t **out, size_t *n) {
  if (!s || !out || !n)
    return SNAP_EINVAL;
  *out = NULL;
  *n = 0;
  builder_t b = {.s = s};
  /* The deepest stack: a parent chain is at most n_frames long (a cycle
     in a damaged table stops there). */
  uint32_t max_depth = 0;
  for (uint32_t f = 0; f < s->n_frames; f++)
    if (s->frames[f].depth + 1 > max_depth)
      max_depth = s->frames[f].depth + 1;
  b.max_path = max_depth < s->n_frames ? max_depth : s->n_frames;
  size_t n_idx = 0;
  size_t *idx = sample_order(s, &n_idx);
  b.path = malloc(((size_t)b.max_path + 1) * sizeof *b.path);
  b.open = malloc(((size_t)b.max_path + 1) * sizeof *b.open);
  int rc = SNAP_OK;
  if (!idx || !b.path || !b.open) {
    rc = SNAP_ENOMEM;
    goto done;
  }
  for (size_t k = 0; k < n_idx; k++) {
    const snap__trace_span_t *sp = &s->spans[idx[k]];
    const snap__trace_span_t *next =
        k + 1 < n_idx && s->spans[idx[k + 1]].thread == sp->thread
            ? &s->spans[idx[k + 1]]
            : NULL;
    uint32_t thread = sp->thread;
    snap__trace_cover_t cv;
    if (!snap__trace_span_cover(s, sp, next, &cv))
      continue; /* before the window, not drawn at its start */
    uint32_t depth = sp->frame < s->n_frames ? stack_of(&b, sp->frame) : 0;

    /* 2. Diff from the root against what is open. */
    uint32_t same = 0;
    while (same < b.n_open && same < depth &&
           same_function(s, b.open[same].node, b.path[same])) {
      b.open[same].node = b.path[same];
      same++;
    }
    close_from(&b, same, cv.from_ns);
    for (uint32_t d = same; d < depth; d++)
      if (!begin(&b, thread, b.path[d], cv.from_ns)) {
        rc = SNAP_ENOMEM;
        goto done;
      }

    /* 4. What this span adds to every open slice. */
    unsigned state = sp->state < SNAP__STATE_COUNT ? sp->state : 0;
    unsigned wait =
        sp->wait_kind < SNAP_WAIT_KIND_COUNT ? sp->wait_kind : SNAP_WAIT_OTHER;
    for (uint32_t d = 0; d < b.n_open; d++) {
      snap__trace_slice_t *sl = &b.out[b.open[d].out];
      if (sl->cpu_ns >= 0) /* begins at 0; -1 once unknown */
        sl->cpu_ns = cv.cpu_ns < 0 ? -1 : sl->cpu_ns + cv.cpu_ns;
      sl->samples += cv.count;
      sl->by_state[state] += cv.count;
      if (state == SNAP__STATE_BLOCKED)
        b.open[d].waits[wait] += cv.count;
    }

    /* 1. How long it lasts: to the next span, or one period. The main
       thread is sampled every period whatever it does, so a gap in its
       samples is the sampler's lateness (a busy machine), not a pause of
       the thread: its spans last to the next. */
    if (!next || cv.until_ns != next->start_ns)
      close_from(&b, 0, cv.until_ns);
  }
done:
  if (rc != SNAP_OK) {
    free(b.out);
  } else {
    *out = b.out;
    *n = b.n;
  }
  free(idx);
  free(b.path);
  free(b.open);
  return rc;
}
