/*
 * export_folded.c — a snapshot as folded stacks, the input of flamegraph.pl,
 * speedscope and inferno: one line per distinct stack per thread,
 *   <thread>;<root>;...;<leaf> <microseconds>
 * sorted by stack (bytewise: the line without its count), with each
 * line's count the time its thread spent in that stack, in microseconds:
 * every periodic sample weighs the time it covers, from its timestamp to
 * the thread's next sample (the slices' rule, snap__trace_span_cover: a
 * thread other than the main one that went unsampled for more than two
 * periods counts one period; a span from before the window counts from
 * the window's start). Counting samples instead drew time wrong on
 * a busy machine, where a running thread is sampled late and less often
 * than a blocked one (0.57-0.75 samples/ms computing, 0.93-0.96 blocked:
 * a 620 ms phase drawn narrower than a 450 ms one). Marks are excluded:
 * they are extra samples at the app's chosen points. A sample that had no
 * stack counts under <thread>;[no stack], so the counts add up to the
 * time the samples cover. <thread> is the thread's name, else its id.
 *
 * Owns: snap__trace_export_folded.
 * Algorithm: weigh each span by the time it covers (one pass in time order,
 *  remembering each thread's previous span), sum per (thread, leaf node)
 *  (sort + merge), write
 *  each distinct one's text once, sort the texts, merge equal texts (two
 *  nodes can print alike: the same functions through other call sites).
 * Names are made safe for the line format: ';' (the separator) becomes
 *  ':', control characters (newline, tab...) become spaces, leading and
 *  trailing spaces go (the count is whatever follows the last space),
 *  bytes that are not UTF-8 become U+FFFD, and an empty name becomes "?".
 * Must not: write files, or call an OS API.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"

typedef struct leaf_count {
  uint32_t thread, frame;
  uint64_t count; /* ns covered */
  bool shown;     /* the span shows some of the window */
} leaf_count_t;

typedef struct line {
  const char *p; /* into `text`, once it stops growing */
  size_t off, len;
  uint64_t count;
} line_t;

static int by_leaf(const void *a, const void *b) {
  const leaf_count_t *x = a, *y = b;
  if (x->thread != y->thread)
    return x->thread < y->thread ? -1 : 1;
  return x->frame < y->frame ? -1 : x->frame > y->frame;
}

static int by_text(const void *a, const void *b) {
  const line_t *x = a, *y = b;
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->p, y->p, n);
  if (c)
    return c;
  return x->len < y->len ? -1 : x->len > y->len;
}

/* One frame's name, safe for the line. */
static void put_name(snap__tbuf_t *b, const char *name) {
  size_t start = b->len;
  for (const unsigned char *p = (const unsigned char *)name; *p;) {
    size_t n = snap__utf8_len(p);
    if (n == 0) {
      snap__tbuf_put(b, "\xef\xbf\xbd", 3);
      p += snap__utf8_bad_len(p);
    } else if (n > 1) {
      snap__tbuf_put(b, p, n);
      p += n;
    } else {
      char c = (char)*p++;
      if (c == ';')
        c = ':';
      else if ((unsigned char)c < 0x20 || c == 0x7f)
        c = ' ';
      if (c == ' ' && b->len == start)
        continue; /* leading space */
      snap__tbuf_put(b, &c, 1);
    }
  }
  if (b->failed)
    return;
  size_t end = b->len;
  while (end > start && b->p[end - 1] == ' ')
    end--;
  if (end != b->len) { /* nothing written: p may still be NULL */
    b->len = end;
    b->p[end] = '\0';
  }
  if (b->len == start)
    snap__tbuf_put(b, "?", 1);
}

static void put_stack(snap__tbuf_t *b, const snap__trace_snapshot_t *s,
                      uint32_t leaf, uint32_t *path) {
  uint32_t n = 0;
  for (uint32_t f = leaf; f < s->n_frames && n < s->n_frames;
       f = s->frames[f].parent)
    path[n++] = f;
  if (n == 0) {
    snap__tbuf_puts(b, ";[no stack]");
    return;
  }
  while (n--) {
    snap__tbuf_put(b, ";", 1);
    put_name(b, s->frames[path[n]].name);
  }
}

/* l's weight: the time its span sp covers in the window, up to `next`,
   its thread's next span (NULL: none). */
static void weigh(const snap__trace_snapshot_t *s, leaf_count_t *l,
                  const snap__trace_span_t *sp,
                  const snap__trace_span_t *next) {
  snap__trace_cover_t cv;
  l->shown = snap__trace_span_cover(s, sp, next, &cv);
  l->count =
      l->shown && cv.until_ns > cv.from_ns ? cv.until_ns - cv.from_ns : 0;
}

int snap__trace_export_folded(const snap__trace_snapshot_t *s,
                              snap__tbuf_t *out) {
  if (!s || !out)
    return SNAP_EINVAL;
  size_t n = 0;
  for (size_t i = 0; i < s->n_spans; i++)
    if (!s->spans[i].label && s->spans[i].thread < s->n_threads)
      n++;
  leaf_count_t *leaves = malloc((n ? n : 1) * sizeof *leaves);
  line_t *lines = malloc((n ? n : 1) * sizeof *lines);
  uint32_t *path = malloc(((size_t)s->n_frames + 1) * sizeof *path);
  size_t *prev = malloc(((size_t)s->n_threads + 1) * sizeof *prev);
  const snap__trace_span_t **of = malloc((n ? n : 1) * sizeof *of);
  snap__tbuf_t text = {0};
  int rc = SNAP_ENOMEM;
  if (!leaves || !lines || !path || !prev || !of)
    goto done;
  for (uint32_t t = 0; t < s->n_threads; t++)
    prev[t] = SIZE_MAX;

  /* Each span's weight, once the thread's next span is known. */
  n = 0;
  for (size_t i = 0; i < s->n_spans; i++) {
    const snap__trace_span_t *sp = &s->spans[i];
    if (sp->label || sp->thread >= s->n_threads)
      continue;
    uint32_t frame = sp->frame < s->n_frames ? sp->frame : SNAP__TRACE_NONE;
    size_t k = prev[sp->thread];
    if (k != SIZE_MAX)
      weigh(s, &leaves[k], of[k], sp);
    prev[sp->thread] = n;
    of[n] = sp;
    leaves[n++] = (leaf_count_t){sp->thread, frame, 0, false};
  }
  for (uint32_t t = 0; t < s->n_threads; t++)
    if (prev[t] != SIZE_MAX)
      weigh(s, &leaves[prev[t]], of[prev[t]], NULL);
  size_t kept = 0; /* a span from before the window may show nothing */
  for (size_t i = 0; i < n; i++)
    if (leaves[i].shown)
      leaves[kept++] = leaves[i];
  n = kept;
  qsort(leaves, n, sizeof *leaves, by_leaf);

  size_t n_lines = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    uint64_t count = 0;
    for (; j < n && !by_leaf(&leaves[i], &leaves[j]); j++)
      count += leaves[j].count;
    const snap__trace_thread_t *th = &s->threads[leaves[i].thread];
    size_t off = text.len;
    char name[sizeof th->name + 1];
    memcpy(name, th->name, sizeof th->name);
    name[sizeof th->name] = '\0'; /* a full name may lack its NUL */
    if (name[0])
      put_name(&text, name);
    else
      snap__tbuf_printf(&text, "%" PRIu64, (uint64_t)th->tid);
    put_stack(&text, s, leaves[i].frame, path);
    lines[n_lines++] = (line_t){NULL, off, text.len - off, count};
    i = j;
  }
  if (text.failed)
    goto done;

  for (size_t i = 0; i < n_lines; i++)
    lines[i].p = text.p + lines[i].off;
  qsort(lines, n_lines, sizeof *lines, by_text);
  for (size_t i = 0; i < n_lines;) {
    size_t j = i;
    uint64_t count = 0;
    for (; j < n_lines && !by_text(&lines[i], &lines[j]); j++)
      count += lines[j].count;
    /* Microseconds, rounded; a stack that was sampled is never 0. */
    uint64_t us = (count + 500) / 1000;
    snap__tbuf_put(out, lines[i].p, lines[i].len);
    snap__tbuf_printf(out, " %" PRIu64 "\n", us ? us : 1);
    i = j;
  }
  rc = out->failed ? SNAP_ENOMEM : SNAP_OK;
done:
  free(leaves);
  free(lines);
  free(path);
  free(prev);
  free(of);
  snap__tbuf_free(&text);
  return rc;
}
