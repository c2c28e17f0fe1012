/*
 * snapshot.c — a window of the trace, copied and named, for the
 * exporters.
 *
 * Owns: what a trace file holds (the spans that overlap the window asked
 * for, and each thread's last one before it, whole: what of it shows is
 * the slices' rule; the stack nodes they reach, the threads and labels
 * they name), the conversion of the trace's clock to unix time, and
 * naming each node once. Must not: hold the trace's lock while naming or
 * allocating much (the sampler waits on it): under the lock it only copies
 * (spans decoded into an array, the node table, thread and label names), then
 * lets go.
 *
 * Naming: every node's pc, once, in batches through the naming layer
 * without its cache (one-off pcs would only crowd the cache). A node is
 * named by the call before its return address, but for a sampled leaf
 * (exact) and a frame interrupted by a signal (its child is a signal
 * trampoline), which are named at their pc.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/symbolicate.h"
#include "trace/trace.h"

/* What is copied under the lock. */
typedef struct copy {
  snap__tspan_t *spans;
  size_t n_spans;
  snap__tnode_t *nodes;
  uint32_t n_nodes;
  snap__trace_thread_t *threads;
  uint32_t n_threads;
  char (*labels)[SNAP__TRACE_LABEL_MAX];
  uint32_t n_labels;
  uint64_t t0_unix_ns; /* unix time of the trace's clock's 0 */
} copy_t;

static bool overlaps(const snap__tspan_t *s, uint64_t since_us,
                     uint64_t until_us) {
  return s->end_us >= since_us && s->start_us <= until_us;
}

/* A span is drawn until its thread's next one (slices.c, rule 1), so the
   last one that ended before the window may be what its thread was doing
   at the window's start: each thread's newest (*have) among those not
   overlapping the window is kept, whole. Whether it shows, and from
   where, is the slices' rule (snap__trace_span_cover), not this file's.
   A mark is an instant: never. */
static void note_before(const snap__tspan_t *s, uint64_t since_us,
                        uint32_t n_thr, snap__tspan_t *before, bool *have) {
  if (s->label || s->end_us >= since_us || s->thread >= n_thr)
    return;
  if (!have[s->thread] || s->start_us > before[s->thread].start_us)
    before[s->thread] = *s, have[s->thread] = true;
}

static int copy_window(snap__trace_t *tr, snap__lock_t *lock,
                       uint64_t since_unix, uint64_t until_unix, copy_t *c) {
  memset(c, 0, sizeof *c);
  snap__plat_lock_lock(lock);
  uint64_t mono = snap__plat_now_ns(), unix_ns = snap__plat_unix_ns();
  c->t0_unix_ns = unix_ns - (mono - tr->t0_ns);
  uint64_t since_us =
      since_unix > c->t0_unix_ns ? (since_unix - c->t0_unix_ns) / 1000u : 0;
  uint64_t until_us = until_unix == 0 ? UINT64_MAX
                      : until_unix > c->t0_unix_ns
                          ? (until_unix - c->t0_unix_ns) / 1000u
                          : 0;
  size_t most = (size_t)tr->ring.records + 2u * tr->n_thr;
  c->spans = malloc((most ? most : 1) * sizeof *c->spans);
  c->nodes = malloc((tr->table.n ? tr->table.n : 1) * sizeof *c->nodes);
  c->threads = calloc(tr->n_thr ? tr->n_thr : 1, sizeof *c->threads);
  c->labels = malloc((tr->n_labels ? tr->n_labels : 1) * sizeof *c->labels);
  snap__tspan_t *before = malloc((tr->n_thr ? tr->n_thr : 1) * sizeof *before);
  if (!c->spans || !c->nodes || !c->threads || !c->labels || !before) {
    snap__plat_lock_unlock(lock);
    free(before);
    return SNAP_ENOMEM;
  }
  bool have[SNAP__TRACE_THREADS] = {false};
  snap__span_iter_t it = snap__span_ring_iter(&tr->ring);
  snap__tspan_t s;
  while (snap__span_ring_next(&tr->ring, &it, &s))
    if (overlaps(&s, since_us, until_us))
      c->spans[c->n_spans++] = s;
    else
      note_before(&s, since_us, tr->n_thr, before, have);
  for (uint32_t i = 0; i < tr->n_thr; i++) {
    const snap__trace_thr_t *th = &tr->thr[i];
    if (!th->open)
      continue;
    if (overlaps(&th->span, since_us, until_us))
      c->spans[c->n_spans++] = th->span;
    else
      note_before(&th->span, since_us, tr->n_thr, before, have);
  }
  for (uint32_t i = 0; i < tr->n_thr; i++) {
    const snap__trace_thr_t *th = &tr->thr[i];
    c->threads[i].tid = th->tid;
    c->threads[i].is_main = th->is_main;
    memcpy(c->threads[i].name, th->name, sizeof c->threads[i].name);
    c->threads[i].name[sizeof c->threads[i].name - 1] = '\0';
  }
  c->n_threads = tr->n_thr;
  memcpy(c->nodes, tr->table.nodes, (size_t)tr->table.n * sizeof *c->nodes);
  c->n_nodes = tr->table.n;
  memcpy(c->labels, tr->labels, (size_t)tr->n_labels * sizeof *c->labels);
  c->n_labels = tr->n_labels;
  snap__plat_lock_unlock(lock);
  for (uint32_t i = 0; i < c->n_threads; i++)
    if (have[i])
      c->spans[c->n_spans++] = before[i];
  free(before);
  return SNAP_OK;
}

static void copy_free(copy_t *c) {
  free(c->spans);
  free(c->nodes);
  free(c->threads);
  free(c->labels);
}

static int by_start(const void *a, const void *b) {
  const snap__trace_span_t *x = a, *y = b;
  if (x->start_ns != y->start_ns)
    return x->start_ns < y->start_ns ? -1 : 1;
  return x->thread < y->thread ? -1 : x->thread > y->thread;
}

/* Names frames[0..n): strings into a block owned by the snapshot. */
typedef struct names {
  char **strings; /* every string made, freed with the snapshot */
  size_t n, cap;
} names_t;

static const char *keep(names_t *nm, char *s) {
  if (!s)
    return NULL;
  if (nm->n == nm->cap) {
    size_t cap = nm->cap ? nm->cap * 2 : 256;
    char **p = realloc(nm->strings, cap * sizeof *p);
    if (!p) {
      free(s);
      return NULL;
    }
    nm->strings = p;
    nm->cap = cap;
  }
  return nm->strings[nm->n++] = s;
}

static char *dup_or_null(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

static char *hex_name(const char *image, uintptr_t off, bool have_image) {
  char tmp[320];
  if (have_image)
    snprintf(tmp, sizeof tmp, "%s + 0x%" PRIxPTR, image, off);
  else
    snprintf(tmp, sizeof tmp, "0x%" PRIxPTR, off);
  return dup_or_null(tmp);
}

#define BATCH 256

/* One batch of frames, by their lookup address (as return addresses:
   an exact pc goes in as pc + 1, so that "the call before" is the pc). */
static void name_batch(snap__trace_snapshot_t *s, names_t *nm,
                       const uint32_t *idx, const bool *exact, int n) {
  uintptr_t pcs[BATCH] = {0};
  for (int i = 0; i < n; i++)
    pcs[i] = s->frames[idx[i]].pc + (exact[idx[i]] ? 1 : 0);
  const snap_stack_t *st = NULL;
  (void)snap__symbolicate_uncached(pcs, n, 0, &st);
  for (int i = 0; i < n; i++) {
    snap__trace_frame_t *f = &s->frames[idx[i]];
    const snap_frame_t *fr = st ? snap_stack_frame(st, i) : NULL;
    if (fr && fr->symbol) {
      f->name = keep(nm, dup_or_null(fr->symbol));
    } else {
      f->name = keep(
          nm, hex_name(fr ? fr->image : "???",
                       fr && fr->image_base ? f->pc - fr->image_base : f->pc,
                       fr && fr->image_base));
    }
    f->image = keep(nm, dup_or_null(fr && fr->image ? fr->image : "???"));
    f->in_app = fr && fr->in_app;
    if (!f->name)
      f->name = "?";
    if (!f->image)
      f->image = "???";
  }
  snap_stack_release(st);
}

static void name_frames(snap__trace_snapshot_t *s, names_t *nm, const copy_t *c,
                        const uint32_t *old_of) {
  uint32_t n = s->n_frames;
  bool *exact = calloc(n ? n : 1, sizeof *exact);
  uint32_t *idx = malloc((n ? n : 1) * sizeof *idx);
  if (!exact || !idx) {
    free(exact);
    free(idx);
    for (uint32_t i = 0; i < n; i++)
      s->frames[i].name = "?", s->frames[i].image = "???";
    return;
  }
  for (uint32_t i = 0; i < n; i++) {
    if (c->nodes[old_of[i]].flags & SNAP__TNODE_EXACT)
      exact[i] = true;
    if (snap__plat_is_sigreturn(s->frames[i].pc) &&
        s->frames[i].parent != SNAP__TRACE_NONE)
      exact[s->frames[i].parent] = true; /* interrupted there */
  }
  /* A signal trampoline goes alone: the naming layer names the pc after
     one as exact. */
  int k = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (snap__plat_is_sigreturn(s->frames[i].pc)) {
      name_batch(s, nm, &i, exact, 1);
      continue;
    }
    idx[k++] = i;
    if (k == BATCH) {
      name_batch(s, nm, idx, exact, k);
      k = 0;
    }
  }
  if (k)
    name_batch(s, nm, idx, exact, k);
  free(exact);
  free(idx);
}

int snap__trace_snapshot(snap__trace_t *tr, snap__lock_t *lock,
                         uint64_t since_unix_ns, uint64_t until_unix_ns,
                         snap__trace_snapshot_t *out) {
  memset(out, 0, sizeof *out);
  copy_t c;
  int rc = copy_window(tr, lock, since_unix_ns, until_unix_ns, &c);
  if (rc != SNAP_OK) {
    copy_free(&c);
    return rc;
  }
  /* The nodes the spans reach, renumbered in order (parents first). */
  uint32_t *new_of = malloc((c.n_nodes ? c.n_nodes : 1) * sizeof *new_of);
  uint32_t *old_of = malloc((c.n_nodes ? c.n_nodes : 1) * sizeof *old_of);
  names_t *nm = calloc(1, sizeof *nm);
  out->spans = calloc(c.n_spans ? c.n_spans : 1, sizeof *out->spans);
  out->frames = calloc(c.n_nodes ? c.n_nodes : 1, sizeof *out->frames);
  if (!new_of || !old_of || !nm || !out->spans || !out->frames) {
    free(new_of);
    free(old_of);
    free(nm);
    free(out->spans);
    free(out->frames);
    copy_free(&c);
    memset(out, 0, sizeof *out);
    return SNAP_ENOMEM;
  }
  for (uint32_t i = 0; i < c.n_nodes; i++)
    c.nodes[i].flags &= ~SNAP__TNODE_LIVE;
  for (size_t i = 0; i < c.n_spans; i++)
    for (uint32_t id = c.spans[i].stack;
         id < c.n_nodes && !(c.nodes[id].flags & SNAP__TNODE_LIVE);
         id = c.nodes[id].parent)
      c.nodes[id].flags |= SNAP__TNODE_LIVE;
  uint32_t nf = 0;
  for (uint32_t i = 0; i < c.n_nodes; i++) {
    new_of[i] = SNAP__TRACE_NONE;
    if (!(c.nodes[i].flags & SNAP__TNODE_LIVE))
      continue;
    snap__trace_frame_t *f = &out->frames[nf];
    uint32_t p = c.nodes[i].parent;
    f->parent = p < c.n_nodes ? new_of[p] : SNAP__TRACE_NONE;
    f->depth =
        f->parent == SNAP__TRACE_NONE ? 0 : out->frames[f->parent].depth + 1;
    f->pc = c.nodes[i].pc;
    old_of[nf] = i;
    new_of[i] = nf++;
  }
  out->n_frames = nf;
  out->pid = snap__plat_process_id();
  (void)snap__plat_main_executable(out->process_name, sizeof out->process_name);
  const char *slash = strrchr(out->process_name, '/');
  if (slash)
    memmove(out->process_name, slash + 1, strlen(slash + 1) + 1);
  for (size_t i = 0; i < c.n_spans; i++) {
    const snap__tspan_t *s = &c.spans[i];
    snap__trace_span_t *d = &out->spans[i];
    d->start_ns = c.t0_unix_ns + s->start_us * 1000u;
    d->end_ns = c.t0_unix_ns + s->end_us * 1000u;
    d->thread = s->thread;
    d->frame = s->stack < c.n_nodes ? new_of[s->stack] : SNAP__TRACE_NONE;
    d->count = s->count;
    d->state = s->state;
    d->wait_kind = s->wait_kind;
    d->cpu_ns = s->cpu_us >= 0 ? s->cpu_us * 1000 : -1;
    d->label = s->label && s->label <= c.n_labels
                   ? keep(nm, dup_or_null(c.labels[s->label - 1]))
                   : NULL;
    if (s->label && !d->label)
      d->label = "mark";
  }
  out->n_spans = c.n_spans;
  if (out->n_spans > 1) /* no spans may be no array: qsort's is nonnull */
    qsort(out->spans, out->n_spans, sizeof *out->spans, by_start);
  out->threads = c.threads;
  out->n_threads = c.n_threads;
  c.threads = NULL;
  out->main_interval_ns = (uint64_t)tr->cfg.main_interval_us * 1000u;
  out->other_interval_ns = (uint64_t)tr->cfg.other_interval_us * 1000u;
  out->since_ns = since_unix_ns;
  out->until_ns = until_unix_ns ? until_unix_ns : snap__plat_unix_ns();
  name_frames(out, nm, &c, old_of);
  out->names_ = nm;
  free(new_of);
  free(old_of);
  copy_free(&c);
  return SNAP_OK;
}

void snap__trace_snapshot_free(snap__trace_snapshot_t *s) {
  names_t *nm = s->names_;
  if (nm) {
    for (size_t i = 0; i < nm->n; i++)
      free(nm->strings[i]);
    free(nm->strings);
    free(nm);
  }
  free(s->threads);
  free(s->frames);
  free(s->spans);
  memset(s, 0, sizeof *s);
}
