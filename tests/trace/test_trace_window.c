/*
 * test_trace_window.c — a trace written for a window [since, until] holds
 * what is drawn at its start: a thread's span lasts until its next one
 * (slices.c, rule 1), so the last span that ended before `since` may still
 * be what the thread was doing there.
 *
 * Found under ASan beside busy tests: test_trace_pattern's first phase was
 * drawn up to 41 ms late. Its first tick was dated back to the phase's
 * start, just before the window the program asked for, and its next tick
 * came 41 ms later; the window kept only spans whose last sample was in
 * it, so the phase's start went missing.
 *
 * Driven through the snapshot (snapshot.c) of a trace built by hand:
 * spans pushed into its ring with known times, the window's start between
 * two of them. Oracle: the spans' own times. Checked: the main thread's
 * last span before the window is kept (and no older one); another
 * thread's only while it can still be drawn (two of its periods), and no
 * thread's where a span across the window's start covers it; a mark
 * before the window (an instant) is not; spans in the window all are;
 * and every span is cut at the window's start (an idle main thread's
 * span of a minute counted a minute in the folded stacks of a window of
 * seconds), its samples and CPU time in proportion.
 */
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

/* The span of the snapshot whose stack is the node of pc (each span
   here has its own), or NULL. */
static const snap__trace_span_t *span_of(const snap__trace_snapshot_t *s,
                                         uintptr_t pc) {
  for (size_t i = 0; i < s->n_spans; i++)
    if (s->spans[i].frame < s->n_frames &&
        s->frames[s->spans[i].frame].pc == pc)
      return &s->spans[i];
  return NULL;
}

/* Whether t (unix ns) is at ms into the trace: the snapshot converts the
   trace's clock to unix time when it is taken, a few us from this side's
   conversion; the times here are 5 ms apart or more. */
static bool at(uint64_t t, uint64_t t0_unix, uint64_t ms) {
  uint64_t want = t0_unix + ms * MS * 1000u;
  return (t > want ? t - want : want - t) < MS * 1000u;
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
  tr->n_thr = 4;
  tr->thr[0] = (snap__trace_thr_t){.tid = 100, .is_main = true};
  tr->thr[1] = (snap__trace_thr_t){.tid = 101};
  tr->thr[2] = (snap__trace_thr_t){.tid = 102};
  tr->thr[3] = (snap__trace_thr_t){.tid = 103};
  uint32_t node[9];
  for (uintptr_t k = 1; k <= 8; k++) {
    uintptr_t pc = k << 12;
    node[k] = snap__stack_table_add(&tr->table, &pc, 1, true);
  }

  /* The window starts at 25 ms. Each span has its own stack (node k, pc
     k << 12). */
  push(tr, 0, 0, 5, node[1], 0);   /* main, older: not needed */
  push(tr, 1, 10, 11, node[2], 0); /* other: drawn until 31 ms at most */
  push(tr, 0, 10, 12, node[3], 0); /* main: drawn until its next, 40 ms */
  push(tr, 2, 1, 2, node[4], 0);   /* other: drawn until 22 ms at most */
  push(tr, 0, 20, 20, node[1], 1); /* a mark of main's: an instant */
  push(tr, 3, 10, 11, node[7], 0); /* other: but its next covers 25 ms */
  push(tr, 0, 40, 50, node[5], 0); /* main, in the window */
  push(tr, 1, 30, 60, node[6], 0); /* other, in the window */
  push(tr, 3, 15, 60, node[8], 0); /* other, across the window's start */
  /* ... with 45 samples and 45 ms of CPU: 35 of each are in the window */

  snap__lock_t lock;
  CHECK_EQ(snap__plat_lock_init(&lock), SNAP_OK);
  uint64_t t0_unix = snap__plat_unix_ns() - (snap__plat_now_ns() - tr->t0_ns);
  snap__trace_snapshot_t s;
  CHECK_EQ(snap__trace_snapshot(tr, &lock, t0_unix + 25 * MS * 1000u, 0, &s),
           SNAP_OK);
  const snap__trace_span_t *b = span_of(&s, 3 << 12);
  CHECK(b && at(b->start_ns, t0_unix, 25),
        "main's span before the window is not drawn from its start");
  CHECK(!span_of(&s, 1 << 12), "main's older span or a mark is kept");
  b = span_of(&s, 2 << 12);
  CHECK(b && at(b->start_ns, t0_unix, 25),
        "another thread's span still drawn at the window's start is not");
  CHECK(!span_of(&s, 4 << 12),
        "a span that ended two periods before the window is kept");
  b = span_of(&s, 5 << 12);
  CHECK(b && at(b->start_ns, t0_unix, 40) && at(b->end_ns, t0_unix, 50),
        "a span in the window is missing or moved");
  b = span_of(&s, 6 << 12);
  CHECK(b && at(b->start_ns, t0_unix, 30) && at(b->end_ns, t0_unix, 60),
        "a span in the window is missing or moved");
  b = span_of(&s, 8 << 12);
  CHECK(b && at(b->start_ns, t0_unix, 25) && at(b->end_ns, t0_unix, 60),
        "a span across the window's start is not cut there");
  CHECK(b && b->count == 35 && b->cpu_ns > 34900 * 1000 &&
            b->cpu_ns < 35100 * 1000, /* the window's start, a few us off */
        "the cut span keeps %u samples and %lld ns of CPU, not 35 and 35 ms",
        b ? b->count : 0, b ? (long long)b->cpu_ns : 0);
  CHECK(!span_of(&s, 7 << 12), "a span before the window is kept where a "
                               "span across its start covers it");
  CHECK_EQ(s.n_spans, 5);
  snap__trace_snapshot_free(&s);

  /* A window from the trace's start: nothing is before it. */
  CHECK_EQ(snap__trace_snapshot(tr, &lock, 1, 0, &s), SNAP_OK);
  CHECK_EQ(s.n_spans, 9);
  snap__trace_snapshot_free(&s);
  snap__plat_lock_destroy(&lock);
  free(mem);
  free(tr);
  return check_result("test_trace_window");
}
