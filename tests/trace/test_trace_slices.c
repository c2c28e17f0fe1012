/*
 * test_trace_slices.c — spans to nested slices (src/trace/slices.c) on
 * synthetic snapshots whose slices are known by construction: each case
 * lists the exact slices (thread, name, depth, begin, end, samples, CPU,
 * state counts, wait kind) that the spans it builds must give, in the
 * documented order (thread, begin, depth).
 *
 * Cases: the pattern (A 200 ms running, B 100 ms blocked on a
 * mutex, A again, C; nested main -> run -> ...) with a running leaf whose
 * pc changes every sample; deeper diffs (only the frames that left end);
 * the same name under another parent; gaps longer and not longer than two
 * periods; failed samples; marks; unknown CPU; two threads at their own
 * rates; and degenerate input: no spans, one span, only failed samples,
 * indices out of range, a zero period, spans out of order, a span that
 * ends before it starts.
 */
#include <inttypes.h>

#include "check.h"
#include "trace/synth.h"

typedef struct want {
  uint32_t thread;
  const char *name;
  uint32_t depth;
  uint64_t begin, end; /* ns after T0 */
  uint32_t samples;
  int64_t cpu_ns;
  uint32_t running, runnable, blocked;
  unsigned wait;
} want_t;

static void expect(const char *what, const synth_t *y, const want_t *w,
                   size_t n_want) {
  snap__trace_slice_t *sl = NULL;
  size_t n = 99;
  int rc = snap__trace_slices(&y->s, &sl, &n);
  CHECK(rc == SNAP_OK, "%s: rc %d", what, rc);
  CHECK(n == n_want, "%s: %zu slices, want %zu", what, n, n_want);
  for (size_t i = 0; i < n && i < n_want; i++) {
    const snap__trace_slice_t *x = &sl[i];
    const char *name =
        x->frame < y->s.n_frames ? y->s.frames[x->frame].name : "(bad frame)";
    bool ok = x->thread == w[i].thread && !strcmp(name, w[i].name) &&
              x->depth == w[i].depth && x->begin_ns == T0 + w[i].begin &&
              x->end_ns == T0 + w[i].end && x->samples == w[i].samples &&
              x->cpu_ns == w[i].cpu_ns &&
              x->by_state[SNAP__STATE_RUNNING] == w[i].running &&
              x->by_state[SNAP__STATE_RUNNABLE] == w[i].runnable &&
              x->by_state[SNAP__STATE_BLOCKED] == w[i].blocked &&
              x->wait_kind == w[i].wait;
    CHECK(ok,
          "%s: slice %zu is t%u %s d%u [%" PRIu64 ", %" PRIu64
          "] n%u cpu %" PRId64 " r%u q%u b%u w%u; want t%u %s d%u [%" PRIu64
          ", %" PRIu64 "] n%u cpu %" PRId64 " r%u q%u b%u w%u",
          what, i, x->thread, name, x->depth, x->begin_ns - T0, x->end_ns - T0,
          x->samples, x->cpu_ns, x->by_state[SNAP__STATE_RUNNING],
          x->by_state[SNAP__STATE_RUNNABLE], x->by_state[SNAP__STATE_BLOCKED],
          x->wait_kind, w[i].thread, w[i].name, w[i].depth, w[i].begin,
          w[i].end, w[i].samples, w[i].cpu_ns, w[i].running, w[i].runnable,
          w[i].blocked, w[i].wait);
  }
  free(sl);
}

#define R SNAP__STATE_RUNNING
#define Q SNAP__STATE_RUNNABLE
#define B SNAP__STATE_BLOCKED

/* A running thread sampled every ms from `from` for n ms in stack main ->
   run -> leaf (from: ms after T0), the leaf's pc new each sample (one span per
   sample, as the span ring stores a changing stack). 1 ms CPU each. */
static void run_leaf(synth_t *y, uint32_t t, const char *leaf, uint64_t from,
                     unsigned n) {
  for (unsigned i = 0; i < n; i++) {
    uint32_t f = synth_stack(y, 0x5000 + (i % 7) * 4, "main", "run", leaf,
                             (const char *)NULL);
    uint64_t at = T0 + (from + i) * MS;
    synth_span(y, t, f, at, at, 1, R, SNAP_WAIT_NONE, (int64_t)MS, NULL);
  }
}

static void test_pattern(void) {
  synth_t y;
  synth_init(&y, MS, 10 * MS);
  uint32_t t = synth_thread(&y, 100, "main", true);
  run_leaf(&y, t, "A", 0, 200);
  /* B: 100 blocked samples merged in one span (same stack, same state). */
  uint32_t b = synth_stack(&y, 0, "main", "run", "B", (const char *)NULL);
  synth_span(&y, t, b, T0 + 200 * MS, T0 + 299 * MS, 100, B, SNAP_WAIT_MUTEX, 0,
             NULL);
  run_leaf(&y, t, "A", 300, 200);
  run_leaf(&y, t, "C", 500, 50);
  synth_sort(&y);
  want_t w[] = {
      {0, "main", 0, 0, 550 * MS, 550, 450 * MS, 450, 0, 100, SNAP_WAIT_MUTEX},
      {0, "run", 1, 0, 550 * MS, 550, 450 * MS, 450, 0, 100, SNAP_WAIT_MUTEX},
      {0, "A", 2, 0, 200 * MS, 200, 200 * MS, 200, 0, 0, SNAP_WAIT_NONE},
      {0, "B", 2, 200 * MS, 300 * MS, 100, 0, 0, 0, 100, SNAP_WAIT_MUTEX},
      {0, "A", 2, 300 * MS, 500 * MS, 200, 200 * MS, 200, 0, 0, SNAP_WAIT_NONE},
      {0, "C", 2, 500 * MS, 550 * MS, 50, 50 * MS, 50, 0, 0, SNAP_WAIT_NONE},
  };
  expect("pattern", &y, w, sizeof w / sizeof *w);

  /* The states the exporters print for them. */
  snap__trace_slice_t *sl = NULL;
  size_t n = 0;
  CHECK(snap__trace_slices(&y.s, &sl, &n) == SNAP_OK && n == 6, "pattern");
  if (n == 6) {
    CHECK_EQ(snap__trace_slice_state(&sl[0]), R);
    CHECK_EQ(snap__trace_slice_state(&sl[3]), B);
    CHECK(!strcmp(snap__state_name(snap__trace_slice_state(&sl[3])), "blocked"),
          "B's state name");
  }
  free(sl);
  synth_free(&y);
}

/* main -> run -> X -> Y, then main -> run -> X -> Z, then main -> other ->
   X: Y ends alone, then run and X end (X under another parent is another
   slice), and an "X" in another image is another function. */
static void test_diff(void) {
  synth_t y;
  synth_init(&y, MS, 10 * MS);
  uint32_t t = synth_thread(&y, 100, "main", true);
  uint32_t xy = synth_stack(&y, 0, "main", "run", "X", "Y", (const char *)NULL);
  uint32_t xz = synth_stack(&y, 0, "main", "run", "X", "Z", (const char *)NULL);
  uint32_t ox = synth_stack(&y, 0, "main", "other", "X", (const char *)NULL);
  uint32_t other = y.s.frames[ox].parent;
  uint32_t ox2 = synth_node(&y, other, "X", "libother.so", 0x9000);
  synth_span(&y, t, xy, T0, T0 + 2 * MS, 3, R, 0, 3 * MS, NULL);
  synth_span(&y, t, xz, T0 + 3 * MS, T0 + 3 * MS, 1, R, 0, MS, NULL);
  synth_span(&y, t, ox, T0 + 4 * MS, T0 + 4 * MS, 1, R, 0, MS, NULL);
  synth_span(&y, t, ox2, T0 + 5 * MS, T0 + 5 * MS, 1, R, 0, MS, NULL);
  synth_sort(&y);
  want_t w[] = {
      {0, "main", 0, 0, 6 * MS, 6, 6 * MS, 6, 0, 0, 0},
      {0, "run", 1, 0, 4 * MS, 4, 4 * MS, 4, 0, 0, 0},
      {0, "X", 2, 0, 4 * MS, 4, 4 * MS, 4, 0, 0, 0},
      {0, "Y", 3, 0, 3 * MS, 3, 3 * MS, 3, 0, 0, 0},
      {0, "Z", 3, 3 * MS, 4 * MS, 1, MS, 1, 0, 0, 0},
      {0, "other", 1, 4 * MS, 6 * MS, 2, 2 * MS, 2, 0, 0, 0},
      {0, "X", 2, 4 * MS, 5 * MS, 1, MS, 1, 0, 0, 0},
      {0, "X", 2, 5 * MS, 6 * MS, 1, MS, 1, 0, 0, 0},
  };
  expect("diff", &y, w, sizeof w / sizeof *w);
  synth_free(&y);
}

/* Samples at 0,1,2 ms, then 4 ms (a gap of exactly two periods: the
   sample at 2 lasts until 4), then 10 ms (more than two: the one at 4
   lasts one period, to 5), same stack throughout. */
static void test_gaps(void) {
  /* The main thread: sampled every period whatever it does, so a gap is
     the sampler's lateness and its slices go on (slices.c). */
  synth_t y;
  synth_init(&y, MS, 10 * MS);
  uint32_t t = synth_thread(&y, 100, "main", true);
  uint32_t a = synth_stack(&y, 0, "main", "A", (const char *)NULL);
  synth_span(&y, t, a, T0, T0 + 2 * MS, 3, R, 0, 3 * MS, NULL);
  synth_span(&y, t, a, T0 + 4 * MS, T0 + 4 * MS, 1, Q, 0, MS, NULL);
  synth_span(&y, t, a, T0 + 10 * MS, T0 + 10 * MS, 1, R, 0, MS, NULL);
  synth_sort(&y);
  want_t w[] = {
      {0, "main", 0, 0, 11 * MS, 5, 5 * MS, 4, 1, 0, 0},
      {0, "A", 1, 0, 11 * MS, 5, 5 * MS, 4, 1, 0, 0},
  };
  expect("gaps (main)", &y, w, sizeof w / sizeof *w);
  synth_free(&y);

  /* Another thread (sampled only while it runs, every 10 ms): not longer
     than two periods joins, longer ends its slices one period after its
     last sample. */
  synth_init(&y, MS, 10 * MS);
  t = synth_thread(&y, 200, "worker", false);
  a = synth_stack(&y, 0, "start", "B", (const char *)NULL);
  synth_span(&y, t, a, T0, T0 + 20 * MS, 3, R, 0, 30 * MS, NULL);
  synth_span(&y, t, a, T0 + 40 * MS, T0 + 40 * MS, 1, R, 0, 10 * MS, NULL);
  synth_span(&y, t, a, T0 + 70 * MS, T0 + 70 * MS, 1, Q, 0, 10 * MS, NULL);
  synth_sort(&y);
  want_t v[] = {
      {0, "start", 0, 0, 50 * MS, 4, 40 * MS, 4, 0, 0, 0},
      {0, "B", 1, 0, 50 * MS, 4, 40 * MS, 4, 0, 0, 0},
      {0, "start", 0, 70 * MS, 80 * MS, 1, 10 * MS, 0, 1, 0, 0},
      {0, "B", 1, 70 * MS, 80 * MS, 1, 10 * MS, 0, 1, 0, 0},
  };
  expect("gaps (other thread)", &y, v, sizeof v / sizeof *v);
  synth_free(&y);
}

/* A failed sample (no stack) ends everything; a mark (another stack, a
   label) neither splits slices nor counts; a span of unknown CPU makes
   every slice around it unknown, not the ones before. */
static void test_failed_marks_cpu(void) {
  synth_t y;
  synth_init(&y, MS, 10 * MS);
  uint32_t t = synth_thread(&y, 100, "main", true);
  uint32_t a = synth_stack(&y, 0, "main", "A", (const char *)NULL);
  uint32_t m = synth_stack(&y, 0, "main", "A", "hook", (const char *)NULL);
  uint32_t c = synth_stack(&y, 0, "main", "C", (const char *)NULL);
  synth_span(&y, t, a, T0, T0 + 4 * MS, 5, R, 0, 5 * MS, NULL);
  synth_span(&y, t, m, T0 + 2 * MS + 500, T0 + 2 * MS + 500, 1, R, 0, 0,
             "sensitive api");
  synth_span(&y, t, SNAP__TRACE_NONE, T0 + 5 * MS, T0 + 5 * MS, 1, R, 0, 0,
             NULL);
  synth_span(&y, t, a, T0 + 6 * MS, T0 + 6 * MS, 1, R, 0, MS, NULL);
  synth_span(&y, t, c, T0 + 7 * MS, T0 + 8 * MS, 2, B, SNAP_WAIT_IO, -1, NULL);
  synth_span(&y, t, c, T0 + 9 * MS, T0 + 9 * MS, 1, B, SNAP_WAIT_SLEEP, 0,
             NULL);
  synth_span(&y, t, c, T0 + 10 * MS, T0 + 10 * MS, 1, B, SNAP_WAIT_IO, 0, NULL);
  synth_sort(&y);
  want_t w[] = {
      {0, "main", 0, 0, 5 * MS, 5, 5 * MS, 5, 0, 0, 0},
      {0, "A", 1, 0, 5 * MS, 5, 5 * MS, 5, 0, 0, 0},
      {0, "main", 0, 6 * MS, 11 * MS, 5, -1, 1, 0, 4, SNAP_WAIT_IO},
      {0, "A", 1, 6 * MS, 7 * MS, 1, MS, 1, 0, 0, 0},
      {0, "C", 1, 7 * MS, 11 * MS, 4, -1, 0, 0, 4, SNAP_WAIT_IO},
  };
  expect("failed, marks, cpu", &y, w, sizeof w / sizeof *w);
  synth_free(&y);
}

/* Two threads interleaved in time, each at its own rate: the worker's
   samples 10 ms apart are continuous, its last lasts 10 ms. */
static void test_threads(void) {
  synth_t y;
  synth_init(&y, MS, 10 * MS);
  uint32_t w0 = synth_thread(&y, 200, "worker", false);
  uint32_t m0 = synth_thread(&y, 100, "main", true);
  uint32_t job = synth_stack(&y, 0, "start", "job", (const char *)NULL);
  uint32_t a = synth_stack(&y, 0, "main", "A", (const char *)NULL);
  for (unsigned i = 0; i < 3; i++)
    synth_span(&y, w0, job, T0 + i * 10 * MS, T0 + i * 10 * MS, 1, R, 0,
               10 * MS, NULL);
  synth_span(&y, m0, a, T0 + 5 * MS, T0 + 24 * MS, 20, R, 0, 20 * MS, NULL);
  synth_sort(&y);
  want_t w[] = {
      {0, "start", 0, 0, 30 * MS, 3, 30 * MS, 3, 0, 0, 0},
      {0, "job", 1, 0, 30 * MS, 3, 30 * MS, 3, 0, 0, 0},
      {1, "main", 0, 5 * MS, 25 * MS, 20, 20 * MS, 20, 0, 0, 0},
      {1, "A", 1, 5 * MS, 25 * MS, 20, 20 * MS, 20, 0, 0, 0},
  };
  expect("threads", &y, w, sizeof w / sizeof *w);

  /* Out of order (not as promised, but no reason to misbehave): the same
     slices. */
  snap__trace_span_t tmp = y.s.spans[0];
  y.s.spans[0] = y.s.spans[y.s.n_spans - 1];
  y.s.spans[y.s.n_spans - 1] = tmp;
  expect("threads, spans out of order", &y, w, sizeof w / sizeof *w);
  synth_free(&y);
}

static void test_degenerate(void) {
  synth_t y;
  synth_init(&y, MS, 10 * MS);
  uint32_t t = synth_thread(&y, 100, "main", true);
  uint32_t o = synth_thread(&y, 101, "other", false);
  expect("no spans", &y, NULL, 0);
  CHECK_EQ(snap__trace_slices(NULL, NULL, NULL), SNAP_EINVAL);

  uint32_t a = synth_stack(&y, 0, "main", (const char *)NULL);
  synth_span(&y, t, a, T0, T0, 1, R, 0, 7, NULL);
  want_t one[] = {{0, "main", 0, 0, MS, 1, 7, 1, 0, 0, 0}};
  expect("one span", &y, one, 1);

  /* Only failed samples on every thread; a thread and a frame that do
     not exist. */
  y.s.n_spans = 0;
  synth_span(&y, t, SNAP__TRACE_NONE, T0, T0 + 9 * MS, 10, R, 0, 0, NULL);
  synth_span(&y, o, SNAP__TRACE_NONE, T0 + 3 * MS, T0 + 3 * MS, 1, Q, 0, 0,
             NULL);
  synth_span(&y, 7, a, T0 + 4 * MS, T0 + 4 * MS, 1, R, 0, 0, NULL);
  synth_span(&y, o, 12345, T0 + 13 * MS, T0 + 13 * MS, 1, R, 0, 0, NULL);
  expect("no stacks", &y, NULL, 0);

  /* A period of 0 (unset) for both: a last sample lasts 1 ms; a state
     and a wait kind out of range count as unknown and "other". */
  y.s.n_spans = 0;
  y.s.main_interval_ns = y.s.other_interval_ns = 0;
  synth_span(&y, o, a, T0, T0, 1, 77, 200, 0, NULL);
  synth_span(&y, o, a, T0 + MS, T0 + MS, 1, B, 200, 0, NULL);
  want_t zero[] = {{1, "main", 0, 0, 2 * MS, 2, 0, 0, 0, 1, SNAP_WAIT_OTHER}};
  expect("zero period", &y, zero, 1);
  synth_free(&y);
}

/* A span whose end is before its start (not as promised: a clock step, a
   damaged record) lasts from its start; and a parent never ends before a
   child it holds. */
static void test_end_before_start(void) {
  synth_t y;
  synth_init(&y, MS, 10 * MS);
  uint32_t t = synth_thread(&y, 100, "main", true);
  uint32_t a = synth_stack(&y, 0, "main", "A", (const char *)NULL);
  uint32_t b = synth_stack(&y, 0, "main", "A", "B", (const char *)NULL);
  synth_span(&y, t, a, T0 + 4 * MS, T0 + 4 * MS, 1, R, 0, 0, NULL);
  synth_span(&y, t, b, T0 + 5 * MS, T0, 1, R, 0, 0, NULL);
  want_t w[] = {
      {0, "main", 0, 4 * MS, 6 * MS, 2, 0, 2, 0, 0, 0},
      {0, "A", 1, 4 * MS, 6 * MS, 2, 0, 2, 0, 0, 0},
      {0, "B", 2, 5 * MS, 6 * MS, 1, 0, 1, 0, 0, 0},
  };
  expect("end before start", &y, w, sizeof w / sizeof *w);
  synth_free(&y);
}

static void test_states(void) {
  snap__trace_slice_t sl;
  memset(&sl, 0, sizeof sl);
  CHECK_EQ(snap__trace_slice_state(&sl), SNAP__STATE_UNKNOWN);
  sl.by_state[SNAP__STATE_UNKNOWN] = 10;
  CHECK_EQ(snap__trace_slice_state(&sl), SNAP__STATE_UNKNOWN);
  sl.by_state[B] = 3;
  sl.by_state[R] = 2;
  CHECK_EQ(snap__trace_slice_state(&sl), B); /* 3 of 5 known */
  sl.by_state[R] = 3;
  CHECK_EQ(snap__trace_slice_state(&sl), R); /* a tie is not most */
  sl.by_state[B] = 0;
  sl.by_state[Q] = 4;
  CHECK_EQ(snap__trace_slice_state(&sl), Q);
  /* The names are src/blocked/'s (tests/blocked/test_blocked_state.c). */
  CHECK(!strcmp(snap__state_name(B), "blocked"), "blocked's name");
}

int main(void) {
  test_pattern();
  test_diff();
  test_gaps();
  test_failed_marks_cpu();
  test_threads();
  test_degenerate();
  test_end_before_start();
  test_states();
  return check_result("test_trace_slices");
}
