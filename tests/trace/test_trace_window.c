/*
 * test_trace_window.c — a trace written for a window [since, until] draws
 * what each thread was doing at its start: a thread's span lasts until its
 * next one (slices.c, rule 1), so the last span that ended before `since`
 * may still be what the thread was doing there.
 *
 * Found under ASan beside busy tests: test_trace_pattern's first phase was
 * drawn up to 41 ms late. Its first tick was dated back to the phase's
 * start, just before the window the program asked for, and its next tick
 * came 41 ms later; the window kept only spans whose last sample was in
 * it, so the phase's start went missing.
 *
 * Driven through the snapshot (snapshot.c), its slices (slices.c) and its
 * folded stacks (export_folded.c) of a trace built by hand: spans pushed
 * into its ring with known times, the window's start between two of them.
 * Oracle: the spans' own times and the coverage rule. Checked: the main
 * thread's last span before the window is drawn from the window's start
 * to its next span (and no older one is); another thread's only where
 * its coverage reaches the window (its next span within two periods),
 * and not when it ended two periods before its next (it was drawn that
 * long when the window cut it first, then measured the gap from the cut);
 * no thread's where a span across the window's start covers it; a mark
 * before the window (an instant) is not; spans in the window all are;
 * a span across the start is cut there, its samples and CPU time in
 * proportion (an idle main thread's span of a minute counted a minute in
 * the folded stacks of a window of seconds); the folded stacks weigh the
 * same coverage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "trace/trace.h"

#define MS 1000u /* the ring's times are microseconds */

static void push(snap__trace_t *tr, uint32_t thread, uint64_t start_ms,
                 uint64_t end_ms, uint32_t stack, uint32_t label) {
  /* A sample a ms, each with its ms of CPU. */
  snap__tspan_t s = {.start_us = start_ms * MS,
                     .end_us = end_ms * MS,
                     .thread = thread,
                     .stack = stack,
                     .count = (uint32_t)(end_ms - start_ms),
                     .state = SNAP__STATE_RUNNING,
                     .cpu_us = (int64_t)(end_ms - start_ms) * MS,
                     .label = label};
  if (!s.count)
    s.count = 1;
  CHECK(snap__span_ring_push(&tr->ring, &s), "push");
}

/* The snapshot's span whose stack is the node of pc (each span here has
   its own), or NULL. */
static const snap__trace_span_t *span_of(const snap__trace_snapshot_t *s,
                                         uintptr_t pc) {
  for (size_t i = 0; i < s->n_spans; i++)
    if (s->spans[i].frame < s->n_frames &&
        s->frames[s->spans[i].frame].pc == pc)
      return &s->spans[i];
  return NULL;
}

/* The slice whose frame is the node of pc, or NULL. */
static const snap__trace_slice_t *slice_of(const snap__trace_snapshot_t *s,
                                           const snap__trace_slice_t *sl,
                                           size_t n, uintptr_t pc) {
  for (size_t i = 0; i < n; i++)
    if (sl[i].frame < s->n_frames && s->frames[sl[i].frame].pc == pc)
      return &sl[i];
  return NULL;
}

/* Whether t (unix ns) is at ms into the trace: the snapshot converts the
   trace's clock to unix time when it is taken, a few us from this side's
   conversion; the times here are 5 ms apart or more. */
static bool at(uint64_t t, uint64_t t0_unix, uint64_t ms) {
  uint64_t want = t0_unix + ms * MS * 1000u;
  return (t > want ? t - want : want - t) < MS * 1000u;
}

/* Whether slice x of pc is drawn over [from, to] ms. */
static bool drawn(const snap__trace_snapshot_t *s,
                  const snap__trace_slice_t *sl, size_t n, uintptr_t pc,
                  uint64_t t0_unix, uint64_t from, uint64_t to) {
  const snap__trace_slice_t *x = slice_of(s, sl, n, pc);
  return x && at(x->begin_ns, t0_unix, from) && at(x->end_ns, t0_unix, to);
}

/* The folded stacks' microseconds for the thread with id tid. */
static long long folded_us(const char *text, unsigned tid) {
  char head[32];
  int len = snprintf(head, sizeof head, "%u;", tid);
  long long sum = 0;
  for (const char *l = text; l && *l;) {
    const char *nl = strchr(l, '\n');
    const char *sp = memrchr(l, ' ', nl ? (size_t)(nl - l) : strlen(l));
    if (strncmp(l, head, (size_t)len) == 0 && sp)
      sum += atoll(sp + 1);
    l = nl ? nl + 1 : NULL;
  }
  return sum;
}

int main(void) {
  snap__trace_t *tr = calloc(1, sizeof *tr);
  size_t bytes = 1 << 20;
  void *mem = malloc(bytes);
  CHECK(tr && mem, "memory");
  snap__stack_table_init(&tr->table, mem, bytes / 2);
  snap__span_ring_init(&tr->ring, (char *)mem + bytes / 2, bytes / 2);
  snap_trace_config_default(&tr->cfg);
  tr->cfg.main_interval_us = 1000;
  tr->cfg.other_interval_us = 10000;
  /* The trace began a second ago: its times are all in the past. */
  tr->t0_ns = snap__plat_now_ns() - 1000000000u;
  tr->n_thr = 5;
  for (uint32_t i = 0; i < 5; i++)
    tr->thr[i] = (snap__trace_thr_t){.tid = 100 + i, .is_main = i == 0};
  uint32_t node[11];
  for (uintptr_t k = 1; k <= 10; k++) {
    uintptr_t pc = k << 12;
    node[k] = snap__stack_table_add(&tr->table, &pc, 1, true);
  }

  /* The window starts at 25 ms; the main period is 1 ms, the others' 10.
     Each span has its own stack (node k, pc k << 12). */
  push(tr, 0, 0, 5, node[1], 0);   /* main, older: not drawn */
  push(tr, 1, 10, 11, node[2], 0); /* other, next at 30: drawn 25-30 */
  push(tr, 0, 10, 12, node[3], 0); /* main: drawn 25-40, its next */
  push(tr, 2, 1, 2, node[4], 0);   /* other, no next: until 12 */
  push(tr, 0, 20, 20, node[1], 1); /* a mark of main's: an instant */
  push(tr, 3, 10, 11, node[7], 0); /* other: its next covers 25 ms */
  push(tr, 4, 10, 11, node[9], 0); /* other, next 24 ms later: until 21 */
  push(tr, 0, 40, 50, node[5], 0); /* main, in the window */
  push(tr, 1, 30, 60, node[6], 0); /* other, in the window */
  push(tr, 3, 15, 60, node[8], 0); /* other, across the window's start */
  /* ... with 45 samples and 45 ms of CPU: 35 of each are in the window */
  push(tr, 4, 35, 60, node[10], 0);

  snap__lock_t lock;
  CHECK_EQ(snap__plat_lock_init(&lock), SNAP_OK);
  uint64_t t0_unix = snap__plat_unix_ns() - (snap__plat_now_ns() - tr->t0_ns);
  snap__trace_snapshot_t s;
  CHECK_EQ(snap__trace_snapshot(tr, &lock, t0_unix + 25 * MS * 1000u, 0, &s),
           SNAP_OK);
  CHECK(!span_of(&s, 1 << 12), "main's older span or a mark is kept");
  CHECK_EQ(s.n_spans, 9); /* 4 in the window, each thread's last before */
  snap__trace_slice_t *sl = NULL;
  size_t n = 0;
  CHECK_EQ(snap__trace_slices(&s, &sl, &n), SNAP_OK);
  CHECK(drawn(&s, sl, n, 3 << 12, t0_unix, 25, 40),
        "main's span before the window is not drawn from its start");
  const snap__trace_slice_t *x = slice_of(&s, sl, n, 3 << 12);
  CHECK(x && x->samples == 1 && x->cpu_ns == 0,
        "a span that ended before the window keeps %u samples and %lld ns of "
        "CPU there, not 1 and 0",
        x ? x->samples : 0, x ? (long long)x->cpu_ns : 0);
  CHECK(drawn(&s, sl, n, 2 << 12, t0_unix, 25, 30),
        "another thread's span still drawn at the window's start is not");
  CHECK(!slice_of(&s, sl, n, 4 << 12),
        "a span whose coverage ended before the window is drawn");
  CHECK(!slice_of(&s, sl, n, 9 << 12),
        "a span that ended two periods before its next is drawn in the "
        "window");
  CHECK(!slice_of(&s, sl, n, 7 << 12), "a span before the window is drawn "
                                       "where a span across its start "
                                       "covers it");
  CHECK(drawn(&s, sl, n, 5 << 12, t0_unix, 40, 51),
        "a main span in the window is missing or moved");
  CHECK(drawn(&s, sl, n, 6 << 12, t0_unix, 30, 70),
        "a span in the window is missing or moved");
  CHECK(drawn(&s, sl, n, 10 << 12, t0_unix, 35, 70),
        "a span in the window is missing or moved");
  CHECK(drawn(&s, sl, n, 8 << 12, t0_unix, 25, 70),
        "a span across the window's start is not cut there");
  x = slice_of(&s, sl, n, 8 << 12);
  CHECK(x && x->samples == 35 && x->cpu_ns > 34900 * 1000 &&
            x->cpu_ns < 35100 * 1000, /* the window's start, a few us off */
        "the cut span keeps %u samples and %lld ns of CPU, not 35 and 35 ms",
        x ? x->samples : 0, x ? (long long)x->cpu_ns : 0);
  free(sl);

  /* The folded stacks weigh the same coverage: main 15 + 11 ms, thread 1
     5 + 40, thread 2 nothing, thread 3 45, thread 4 35. */
  snap__tbuf_t f = {0};
  CHECK_EQ(snap__trace_export_folded(&s, &f), SNAP_OK);
  snap__tbuf_put(&f, "", 1);
  const char *text = f.failed ? "" : f.p;
  long long want[5] = {26000, 45000, 0, 45000, 35000};
  for (unsigned t = 0; t < 5; t++) {
    long long got = folded_us(text, 100 + t);
    CHECK(llabs(got - want[t]) < 200,
          "thread %u: the folded stacks weigh %lld us, not %lld", 100 + t, got,
          want[t]);
  }
  snap__tbuf_free(&f);
  snap__trace_snapshot_free(&s);

  /* A window from the trace's start: nothing is before it. */
  CHECK_EQ(snap__trace_snapshot(tr, &lock, 1, 0, &s), SNAP_OK);
  CHECK_EQ(s.n_spans, 11);
  snap__trace_snapshot_free(&s);
  snap__plat_lock_destroy(&lock);
  free(mem);
  free(tr);
  return check_result("test_trace_window");
}
