/*
 * test_trace_export.c — writes synthetic snapshots in the three trace
 * formats for test_trace_export.py, which reads them back with readers
 * nobody here wrote (the Perfetto protos, Python's json) and checks them
 * against the slices each scenario was built to have.
 *
 * Usage: test_trace_export [DIR [SECONDS]]. Writes into DIR:
 *  - pattern.{pftrace,json,folded}: the pattern on the main thread
 *    (A 200 ms running, B 100 ms blocked on a mutex, A again, C with a mark
 *    inside, a failed sample), a worker at 10 ms (computing, then
 *    sleeping) and an unnamed thread whose CPU time is partly unknown;
 *  - hostile.{pftrace,json,folded} and hostile.inputs (the raw names, in
 *    hex): frame names, a thread name, the process name and a label with
 *    quotes, backslashes, control characters, ';', newlines, leading and
 *    trailing spaces, invalid UTF-8 and an empty name;
 *  - fuzzN.{pftrace,json,folded,inputs}: random hostile snapshots;
 *  - bench.{pftrace,json,folded}: SECONDS (default 3; the Python run asks
 *    for 30 natively) at 1 kHz on the main thread and 100 Hz on four
 *    others, stacks 40 deep, the leaf changing every sample. The time each
 *    export takes is printed (not asserted: a shared box).
 * With no DIR it runs the exports in memory only (ctest's plain run:
 * every exporter on every snapshot under the sanitizers).
 */
#include <inttypes.h>
#include <time.h>

#include "check.h"
#include "test_clock.h"
#include "trace/synth.h"
#include "xorshift.h"

#define FUZZ_ROUNDS 12
#define R SNAP__STATE_RUNNING
#define Q SNAP__STATE_RUNNABLE
#define B SNAP__STATE_BLOCKED

static const char *out_dir;

typedef int (*export_fn)(const snap__trace_snapshot_t *, snap__tbuf_t *);
static const struct {
  const char *ext;
  export_fn fn;
} formats[] = {
    {"pftrace", snap__trace_export_perfetto},
    {"json", snap__trace_export_chrome},
    {"folded", snap__trace_export_folded},
};

static void write_file(const char *name, const char *ext, const void *p,
                       size_t n) {
  if (!out_dir)
    return;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.%s", out_dir, name, ext);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL, "cannot write %s", path);
  if (!f)
    return;
  CHECK(fwrite(p, 1, n, f) == n, "short write %s", path);
  CHECK(fclose(f) == 0, "close %s", path);
}

/* Every format of s; timed: the best of `rounds` per format, printed, in
   CPU time, not wall time: the box is shared, and the exporters are one
   thread that neither sleeps nor waits. */
static void export_all(const char *name, const synth_t *y, bool timed,
                       int rounds) {
  for (size_t i = 0; i < sizeof formats / sizeof *formats; i++) {
    double best = 1e30;
    snap__tbuf_t b = {0};
    for (int r = 0; r < rounds; r++) {
      snap__tbuf_free(&b);
      double t = ((double)thread_cpu_ns() / 1e6);
      int rc = formats[i].fn(&y->s, &b);
      t = ((double)thread_cpu_ns() / 1e6) - t;
      CHECK(rc == SNAP_OK && !b.failed, "%s.%s: rc %d", name, formats[i].ext,
            rc);
      if (t < best)
        best = t;
    }
    if (timed)
      printf("bench: %-7s %8.1f ms CPU %10zu bytes\n", formats[i].ext, best,
             b.len);
    write_file(name, formats[i].ext, b.p, b.len);
    snap__tbuf_free(&b);
  }
}

/* The main thread at 1 ms in main -> run -> leaf, n samples from `from`
   ms, the leaf's pc new each sample (one span per sample, as a running
   function's). 1 ms CPU each. */
static void run_leaf(synth_t *y, uint32_t t, const char *leaf, unsigned from,
                     unsigned n) {
  for (unsigned i = 0; i < n; i++) {
    uint32_t f = synth_stack(y, 0x5000 + (i % 7) * 4, "main", "run", leaf,
                             (const char *)NULL);
    uint64_t at = T0 + (from + i) * MS;
    synth_span(y, t, f, at, at, 1, R, SNAP_WAIT_NONE, (int64_t)MS, NULL);
  }
}

static void pattern(void) {
  synth_t y;
  synth_init(&y, MS, 10 * MS);
  uint32_t m = synth_thread(&y, 4242, "main", true);
  uint32_t w = synth_thread(&y, 4300, "worker", false);
  uint32_t u = synth_thread(&y, 4301, "", false);
  run_leaf(&y, m, "A", 0, 200);
  uint32_t b = synth_stack(&y, 0, "main", "run", "B", (const char *)NULL);
  synth_span(&y, m, b, T0 + 200 * MS, T0 + 299 * MS, 100, B, SNAP_WAIT_MUTEX, 0,
             NULL);
  run_leaf(&y, m, "A", 300, 200);
  run_leaf(&y, m, "C", 500, 50);
  uint32_t hook =
      synth_stack(&y, 0, "main", "run", "C", "hook", (const char *)NULL);
  synth_span(&y, m, hook, T0 + 520 * MS + 300, T0 + 520 * MS + 300, 1, R, 0, 0,
             "C mark");
  synth_span(&y, m, SNAP__TRACE_NONE, T0 + 550 * MS, T0 + 550 * MS, 1, R, 0, 0,
             NULL);

  uint32_t compute =
      synth_stack(&y, 0, "start", "job", "compute", (const char *)NULL);
  uint32_t wait =
      synth_stack(&y, 0, "start", "job", "wait", (const char *)NULL);
  for (unsigned i = 0; i < 30; i++)
    synth_span(&y, w, compute, T0 + i * 10 * MS, T0 + i * 10 * MS, 1, R, 0,
               (int64_t)(10 * MS), NULL);
  synth_span(&y, w, wait, T0 + 300 * MS, T0 + 390 * MS, 10, B, SNAP_WAIT_SLEEP,
             0, NULL);

  uint32_t loop =
      synth_stack(&y, 0, "thread_start", "loop", (const char *)NULL);
  for (unsigned i = 0; i < 5; i++)
    synth_span(&y, u, loop, T0 + i * 10 * MS, T0 + i * 10 * MS, 1,
               i < 3 ? R : Q, 0, i == 2 ? -1 : 1000, NULL);
  synth_sort(&y);
  export_all("pattern", &y, false, 1);
  synth_free(&y);
}

static const char *hostile_names[] = {
    "quote\"d",
    "back\\slash",
    "ctl\x01\x1f\x7f",
    "semi;colon",
    "new\nline\r",
    "trailing  ",
    "  leading",
    "",
    "bad\xff\xfe!",
    "overlong\xc0\xaf",
    "surr\xed\xa0\x80",
    "trunc\xe2\x82",
    "ok \xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80",
    "tab\there",
    "   ",
};
#define HOSTILE_LABEL "lab\"el;\n\xff\\end"
#define HOSTILE_THREAD "th\"r;\n\xff"
#define HOSTILE_PROCESS "pro\\c\xc3"

static void put_hex(FILE *f, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    fprintf(f, "%02x", *p);
  fputc('\n', f);
}

static void hostile(void) {
  synth_t y;
  synth_init(&y, MS, 10 * MS);
  snprintf(y.s.process_name, sizeof y.s.process_name, "%s", HOSTILE_PROCESS);
  uint32_t t = synth_thread(&y, 4242, HOSTILE_THREAD, true);
  size_t n = sizeof hostile_names / sizeof *hostile_names;
  static char long_name[3001];
  memset(long_name, 'x', 3000);
  uint32_t f = SNAP__TRACE_NONE, parent = SNAP__TRACE_NONE;
  for (size_t i = 0; i < n; i++) {
    parent = f;
    f = synth_node(&y, f, hostile_names[i], i % 2 ? "li\"b\xff" : "app",
                   0x1000 + i);
  }
  uint32_t longf = synth_node(&y, parent, long_name, "app", 0x7777);
  synth_span(&y, t, f, T0, T0 + 2 * MS, 3, R, 0, 3 * MS, NULL);
  synth_span(&y, t, f, T0 + MS + 1, T0 + MS + 1, 1, R, 0, 0, HOSTILE_LABEL);
  synth_span(&y, t, longf, T0 + 3 * MS, T0 + 4 * MS, 2, B, SNAP_WAIT_IO, 2 * MS,
             NULL);
  synth_sort(&y);
  export_all("hostile", &y, false, 1);
  if (out_dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/hostile.inputs", out_dir);
    FILE *in = fopen(path, "w");
    CHECK(in != NULL, "cannot write %s", path);
    if (in) {
      put_hex(in, HOSTILE_PROCESS);
      put_hex(in, HOSTILE_THREAD);
      put_hex(in, HOSTILE_LABEL);
      for (size_t i = 0; i < n; i++)
        put_hex(in, hostile_names[i]);
      fclose(in);
    }
  }
  synth_free(&y);
}

/* Random snapshots (a fixed seed: reproducible): names and labels of
   bytes drawn mostly from what breaks formats (quotes, backslashes, ';',
   newlines, control characters, pieces of UTF-8 sequences), random tree
   shapes, equal and shuffled times, spans whose end is before their start,
   states, wait kinds, threads and frames out of range, marks. Every
   format must still parse (test_trace_export.py) and nest; fuzzN.inputs
   lists the names in hex for its checks. */
static const unsigned char fuzz_bytes[] = {
    '"',  '\\', ';',  '\n', '\r', '\t', ' ',  0x01, 0x1f, 0x7f, 0x80, 0xbf,
    0xc0, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xed, 0xa0, 0xf0, 0x9f, 0x98, 0xf4,
    0x90, 0xff, 'a',  'Z',  '0',  '<',  '&',  '{',  ']',  ':',  ',',  '/'};

static char *fuzz_name(uint64_t *rng) {
  size_t n = snap_xorshift(rng) % 24;
  char *p = malloc(n + 1);
  if (!p)
    abort();
  for (size_t i = 0; i < n; i++)
    p[i] = (char)fuzz_bytes[snap_xorshift(rng) % sizeof fuzz_bytes];
  p[n] = '\0';
  return p;
}

static void fuzz(unsigned round) {
  uint64_t rng = 0x5eed0000u + round;
  synth_t y;
  synth_init(&y, MS, snap_xorshift(&rng) % 3 ? 10 * MS : 0);
  char *owned[1024];
  size_t n_owned = 0;
  char *pn = fuzz_name(&rng);
  snprintf(y.s.process_name, sizeof y.s.process_name, "%s", pn);
  owned[n_owned++] = pn;
  for (unsigned t = 0; t < 3; t++) {
    char *tn = fuzz_name(&rng);
    synth_thread(&y, 7000 + t, tn, t == 0);
    owned[n_owned++] = tn;
  }
  for (unsigned f = 0; f < 60; f++) {
    uint32_t parent = f && snap_xorshift(&rng) % 4
                          ? (uint32_t)(snap_xorshift(&rng) % f)
                          : SNAP__TRACE_NONE;
    char *nm = fuzz_name(&rng), *im = fuzz_name(&rng);
    owned[n_owned++] = nm;
    owned[n_owned++] = im;
    synth_node(&y, parent, nm, im, 0x1000 + f);
  }
  uint64_t at = T0;
  for (unsigned i = 0; i < 300; i++) {
    at += (snap_xorshift(&rng) % 4) * MS / 2;
    uint64_t r = snap_xorshift(&rng);
    uint32_t thread = r % 16 == 0 ? 3 : (uint32_t)(r % 3);
    uint32_t frame = r % 13 == 0   ? SNAP__TRACE_NONE
                     : r % 29 == 0 ? 999
                                   : (uint32_t)(snap_xorshift(&rng) % 60);
    uint32_t count = 1 + (uint32_t)(snap_xorshift(&rng) % 4);
    uint64_t end = r % 31 == 0 ? at - MS : at + (count - 1) * MS;
    const char *label = NULL;
    if (r % 9 == 0 && n_owned < 1024) {
      char *l = fuzz_name(&rng);
      owned[n_owned++] = l;
      label = l;
    }
    synth_span(&y, thread, frame, at, end, label ? 1 : count,
               (unsigned)(snap_xorshift(&rng) % 6),
               (unsigned)(snap_xorshift(&rng) % 14),
               r % 7 == 0 ? -1 : (int64_t)(snap_xorshift(&rng) % MS), label);
  }
  synth_sort(&y);
  char name[32];
  snprintf(name, sizeof name, "fuzz%u", round);
  export_all(name, &y, false, 1);
  if (out_dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.inputs", out_dir, name);
    FILE *in = fopen(path, "w");
    CHECK(in != NULL, "cannot write %s", path);
    for (size_t i = 0; in && i < n_owned; i++)
      put_hex(in, owned[i]);
    if (in)
      fclose(in);
  }
  for (size_t i = 0; i < n_owned; i++)
    free(owned[i]);
  synth_free(&y);
}

/* `seconds` s: the main thread at 1 kHz and four others at 100 Hz, 40 frames
   deep (39 that stay, a leaf that changes every sample among 1000). The
   nodes are made once; spans only point at them. */
#define BENCH_DEPTH 40
#define BENCH_LEAVES 1000
static void bench(unsigned seconds) {
  static char names[5][BENCH_DEPTH + BENCH_LEAVES][24];
  synth_t y;
  synth_init(&y, MS, 10 * MS);
  for (unsigned t = 0; t < 5; t++) {
    char tn[16];
    snprintf(tn, sizeof tn, t ? "worker-%u" : "main", t);
    synth_thread(&y, 5000 + t, tn, t == 0);
  }
  uint32_t leaf0[5];
  for (unsigned t = 0; t < 5; t++) {
    uint32_t f = SNAP__TRACE_NONE;
    for (unsigned d = 0; d + 1 < BENCH_DEPTH; d++) {
      snprintf(names[t][d], sizeof names[t][d], "t%u_frame_%u", t, d);
      /* Direct appends: synth_node's search is too slow for this size. */
      y.s.frames = synth_grow(y.s.frames, &y.cap_frames, y.s.n_frames + 1,
                              sizeof *y.s.frames);
      y.s.frames[y.s.n_frames] = (snap__trace_frame_t){
          f, d, 0x1000 + d, names[t][d], "bench_app", true};
      f = y.s.n_frames++;
    }
    leaf0[t] = y.s.n_frames;
    for (unsigned l = 0; l < BENCH_LEAVES; l++) {
      char *nm = names[t][BENCH_DEPTH + l];
      snprintf(nm, 24, "leaf_function_%u", l);
      y.s.frames = synth_grow(y.s.frames, &y.cap_frames, y.s.n_frames + 1,
                              sizeof *y.s.frames);
      y.s.frames[y.s.n_frames++] = (snap__trace_frame_t){
          f, BENCH_DEPTH - 1, 0x9000 + l, nm, "bench_app", true};
    }
  }
  for (uint64_t at = 0; at < seconds * 1000ull; at++) {
    synth_span(&y, 0, leaf0[0] + (uint32_t)(at % BENCH_LEAVES), T0 + at * MS,
               T0 + at * MS, 1, R, 0, (int64_t)MS, NULL);
    if (at % 10 == 0)
      for (uint32_t t = 1; t < 5; t++)
        synth_span(&y, t, leaf0[t] + (uint32_t)((at / 10 + t) % BENCH_LEAVES),
                   T0 + at * MS + t, T0 + at * MS + t, 1, R, 0,
                   (int64_t)(10 * MS), NULL);
  }
  synth_sort(&y);
  printf("bench: %u s snapshot: %zu spans, %u frames\n", seconds, y.s.n_spans,
         y.s.n_frames);
  snap__trace_slice_t *sl = NULL;
  size_t n = 0;
  double t = ((double)thread_cpu_ns() / 1e6);
  CHECK(snap__trace_slices(&y.s, &sl, &n) == SNAP_OK, "bench slices");
  printf("bench: slices  %8.1f ms CPU %10zu slices\n",
         ((double)thread_cpu_ns() / 1e6) - t, n);
  CHECK_EQ(n, seconds * 1000 + 39 + 4 * (seconds * 100 + 39));
  free(sl);
  /* Three rounds for the figure (the native Python run's 30 s); one in
     ctest's plain run and under an emulator (the checks' pass). */
  export_all("bench", &y, true, seconds >= 10 ? 3 : 1);
  synth_free(&y);
}

/* An allocation that fails leaves `failed` set and the text short; the
   buffer's writers must say so and not crash. (No allocator seam: a
   buffer whose length is near SIZE_MAX cannot grow.) */
static void tbuf_edges(void) {
  snap__tbuf_t b = {0};
  snap__tbuf_printf(&b, "%d-%s", 42, "x");
  CHECK(b.len == 4 && !strcmp(b.p, "42-x"), "printf: %s", b.p);
  char big[1000];
  memset(big, 'y', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  snap__tbuf_printf(&b, "[%s]", big); /* longer than the first try */
  CHECK(b.len == 4 + 1001 && b.p[b.len] == '\0' && b.p[4] == '[' &&
            b.p[b.len - 1] == ']',
        "long printf: %zu", b.len);
  snap__tbuf_free(&b);
  snap__tbuf_json_string(&b, "a\"b\\c\x01\xff\xed\xa0\x80\xf4\x90\x80\x80z");
  CHECK(!strcmp(b.p, "\"a\\\"b\\\\c\\u0001\\ufffd\\ufffd\\ufffd\\ufffd"
                     "\\ufffd\\ufffd\\ufffd\\ufffdz\""),
        "json: %s", b.p);
  snap__tbuf_free(&b);
  snap__tbuf_json_string(&b, NULL);
  CHECK(!strcmp(b.p, "null"), "json NULL: %s", b.p);
  snap__tbuf_free(&b);
  /* A sequence cut short is one U+FFFD (Unicode's maximal subpart). */
  snap__tbuf_json_string(&b, "\xe2\x82z\xf0\x9f\x98");
  CHECK(!strcmp(b.p, "\"\\ufffdz\\ufffd\""), "json cut: %s", b.p);
  snap__tbuf_free(&b);
  snap__tbuf_text(&b, "\xc3\xa9\xc3");
  CHECK(b.len == 5 && !memcmp(b.p, "\xc3\xa9\xef\xbf\xbd", 5), "text");
  CHECK_EQ(snap__utf8_clean_len("\xc3\xa9\xc3"), 5);
  snap__tbuf_free(&b);
  b.len = SIZE_MAX - 8;
  b.cap = SIZE_MAX - 7;
  snap__tbuf_puts(&b, "0123456789abcdef");
  CHECK(b.failed, "a buffer that cannot grow says so");
  b.len = b.cap = 0;
  snap__tbuf_free(&b);
}

/* A thread whose name is only blanks, first in the folded text: its name
   becomes "?" (the fuzz rounds found the writer storing the terminator
   through the still-NULL buffer). */
static void folded_blank_thread(void) {
  synth_t y;
  synth_init(&y, MS, 10 * MS);
  uint32_t t = synth_thread(&y, 77, " \t\n ", true);
  uint32_t f = synth_stack(&y, 0, "main", (const char *)NULL);
  synth_span(&y, t, f, T0, T0, 1, R, 0, 0, NULL);
  snap__tbuf_t b = {0};
  CHECK_EQ(snap__trace_export_folded(&y.s, &b), SNAP_OK);
  /* One sample, nothing after it: one period, 1 ms. */
  CHECK(b.p && !strcmp(b.p, "?;main 1000\n"), "blank thread: %s", b.p);
  snap__tbuf_free(&b);
  synth_free(&y);
}

/* Issue 25 (item 6): on a busy machine a computing main thread is sampled
   late and less often than a blocked one (0.57-0.75 samples/ms against
   0.93-0.96). A 620 ms compute phase sampled at 0.6/ms (one sample every
   5/3 ms) and a 450 ms blocked phase at 1/ms: the folded stacks count
   time, so the compute phase is 620 ms and the blocked one 450 ms (in
   microseconds), not 372 against 450 samples. A worker sampled every
   10 ms, then not for 2 s (idle, unsampled), then again: its last sample
   before the pause covers one period, not the pause. */
static void folded_counts_time(void) {
  synth_t y;
  synth_init(&y, MS, 10 * MS);
  uint32_t m = synth_thread(&y, 1, "main", true);
  uint32_t w = synth_thread(&y, 2, "worker", false);
  uint32_t compute = synth_stack(&y, 0, "run", "compute", (const char *)NULL);
  uint32_t wait = synth_stack(&y, 0, "run", "wait", (const char *)NULL);
  uint32_t job = synth_stack(&y, 0, "job", (const char *)NULL);
  /* 372 samples 5/3 ms apart: 0 .. 618.33 ms, then the wait at 620. */
  for (int i = 0; i < 372; i++) {
    uint64_t at = T0 + (uint64_t)i * 5 * MS / 3;
    synth_span(&y, m, compute, at, at, 1, R, SNAP_WAIT_NONE, (int64_t)MS, NULL);
  }
  for (int i = 0; i < 450; i++) {
    uint64_t at = T0 + 620 * MS + (uint64_t)i * MS;
    synth_span(&y, m, wait, at, at, 1, B, SNAP_WAIT_MUTEX, 0, NULL);
  }
  for (int i = 0; i < 10; i++) {
    uint64_t at = T0 + (uint64_t)i * 10 * MS;
    synth_span(&y, w, job, at, at, 1, R, SNAP_WAIT_NONE, (int64_t)MS, NULL);
  }
  synth_span(&y, w, job, T0 + 2090 * MS, T0 + 2090 * MS, 1, R, SNAP_WAIT_NONE,
             (int64_t)MS, NULL);
  synth_sort(&y);
  snap__tbuf_t b = {0};
  CHECK_EQ(snap__trace_export_folded(&y.s, &b), SNAP_OK);
  const char *want = "main;run;compute 620000\n"
                     "main;run;wait 450000\n"
                     "worker;job 110000\n";
  CHECK(b.p && !strcmp(b.p, want), "folded by time:\n%swant\n%s", b.p, want);
  snap__tbuf_free(&b);
  synth_free(&y);
}

int main(int argc, char **argv) {
  out_dir = argc > 1 ? argv[1] : NULL;
  /* Under qemu with pointer authentication every call of the library is
     slow (the emulated PAC): the Python run asks for 30 s natively only. */
  unsigned seconds = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 3;
  if (seconds == 0 || seconds > 600)
    seconds = 3;
  tbuf_edges();
  folded_counts_time();
  folded_blank_thread();
  pattern();
  hostile();
  for (unsigned round = 0; round < FUZZ_ROUNDS; round++)
    fuzz(round);
  bench(seconds);
  return check_result("test_trace_export");
}
