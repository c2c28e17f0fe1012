/*
 * synth.h — synthetic trace snapshots for the exporter tests: threads,
 * frames (a parent-linked tree, as the stack table names it) and spans
 * built by hand, so that every expected slice is known before any of the
 * library's trace code runs.
 */
#ifndef SNAP_TEST_TRACE_SYNTH_H
#define SNAP_TEST_TRACE_SYNTH_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"

#define MS UINT64_C(1000000)
/* An arbitrary wall-clock instant (2023-11-14T22:13:20Z), in unix ns. */
#define T0 UINT64_C(1700000000000000000)

typedef struct synth {
  snap__trace_snapshot_t s;
  size_t cap_frames, cap_spans;
} synth_t;

static void *synth_grow(void *p, size_t *cap, size_t need, size_t size) {
  if (need <= *cap)
    return p;
  size_t cap2 = *cap ? *cap * 2 : 64;
  while (cap2 < need)
    cap2 *= 2;
  p = realloc(p, cap2 * size);
  if (!p) {
    fprintf(stderr, "synth: out of memory\n");
    exit(2);
  }
  *cap = cap2;
  return p;
}

static void synth_init(synth_t *y, uint64_t main_ns, uint64_t other_ns) {
  memset(y, 0, sizeof *y);
  y->s.pid = 4242;
  snprintf(y->s.process_name, sizeof y->s.process_name, "synthapp");
  y->s.threads = calloc(16, sizeof *y->s.threads);
  y->s.main_interval_ns = main_ns;
  y->s.other_interval_ns = other_ns;
}

static uint32_t synth_thread(synth_t *y, uint64_t tid, const char *name,
                             bool is_main) {
  uint32_t t = y->s.n_threads++;
  y->s.threads[t].tid = tid;
  snprintf(y->s.threads[t].name, sizeof y->s.threads[t].name, "%s", name);
  y->s.threads[t].is_main = is_main;
  return t;
}

/* A node under parent (SNAP__TRACE_NONE: a root); names are not copied. */
static uint32_t synth_node(synth_t *y, uint32_t parent, const char *name,
                           const char *image, uintptr_t pc) {
  for (uint32_t f = 0; f < y->s.n_frames; f++) {
    const snap__trace_frame_t *x = &y->s.frames[f];
    if (x->parent == parent && x->pc == pc && !strcmp(x->name, name) &&
        !strcmp(x->image, image))
      return f;
  }
  y->s.frames = synth_grow(y->s.frames, &y->cap_frames, y->s.n_frames + 1,
                           sizeof *y->s.frames);
  uint32_t f = y->s.n_frames++;
  snap__trace_frame_t *x = &y->s.frames[f];
  x->parent = parent;
  x->depth = parent == SNAP__TRACE_NONE ? 0 : y->s.frames[parent].depth + 1;
  x->pc = pc;
  x->name = name;
  x->image = image;
  x->in_app = true;
  return f;
}

/* The leaf of a stack given root first, NULL-terminated; every frame in
   image "app", with a pc made from its depth (so the same names give the
   same nodes) unless leaf_pc is nonzero (a running leaf: a new pc). */
static uint32_t synth_stack(synth_t *y, uintptr_t leaf_pc, ...) {
  va_list ap;
  va_start(ap, leaf_pc);
  uint32_t f = SNAP__TRACE_NONE;
  const char *name = va_arg(ap, const char *);
  for (uintptr_t d = 0; name; d++) {
    const char *next = va_arg(ap, const char *);
    uintptr_t pc = !next && leaf_pc ? leaf_pc : 0x1000 + d * 0x10;
    f = synth_node(y, f, name, "app", pc);
    name = next;
  }
  va_end(ap);
  return f;
}

static void synth_span(synth_t *y, uint32_t thread, uint32_t frame,
                       uint64_t start, uint64_t end, uint32_t count,
                       unsigned state, unsigned wait, int64_t cpu,
                       const char *label) {
  y->s.spans = synth_grow(y->s.spans, &y->cap_spans, y->s.n_spans + 1,
                          sizeof *y->s.spans);
  snap__trace_span_t *sp = &y->s.spans[y->s.n_spans++];
  memset(sp, 0, sizeof *sp);
  sp->start_ns = start;
  sp->end_ns = end;
  sp->thread = thread;
  sp->frame = frame;
  sp->count = count;
  sp->state = (uint8_t)state;
  sp->wait_kind = (uint8_t)wait;
  sp->cpu_ns = cpu;
  sp->label = label;
}

static int synth_span_cmp(const void *a, const void *b) {
  const snap__trace_span_t *x = a, *y = b;
  if (x->start_ns != y->start_ns)
    return x->start_ns < y->start_ns ? -1 : 1;
  return x->thread < y->thread ? -1 : x->thread > y->thread;
}

/* As the snapshot promises: spans by start_ns, ties by thread. */
static void synth_sort(synth_t *y) {
  qsort(y->s.spans, y->s.n_spans, sizeof *y->s.spans, synth_span_cmp);
  if (y->s.n_spans) {
    y->s.since_ns = y->s.spans[0].start_ns;
    y->s.until_ns = y->s.spans[y->s.n_spans - 1].end_ns;
  }
}

static void synth_free(synth_t *y) {
  free(y->s.threads);
  free(y->s.frames);
  free(y->s.spans);
  memset(y, 0, sizeof *y);
}

#endif
