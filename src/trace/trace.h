/*
 * trace.h — the sampling trace's private interfaces (src/trace/).
 *
 * The trace keeps what threads did, sample by sample, in two structures the
 * sampler thread alone writes: a stack table (stack_table.c: a prefix tree,
 * each node a parent and a pc, shared by every stack that passes through
 * it) and a ring of spans (span_ring.c: consecutive identical samples of a
 * thread merged into one record, varint-encoded). Nothing is named until a
 * trace is written: snapshot.c copies the window asked for under the
 * trace's lock, names each node it references once, and hands exporters a
 * snapshot (below); slices.c turns a thread's spans into nested slices;
 * export_*.c write the three formats.
 *
 * Must not: hold any OS API (platform/ does); be included by capture/,
 * symbols/ or platform/.
 */
#ifndef SNAP_TRACE_H
#define SNAP_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stacksnap.h"

#define SNAP__TRACE_NONE UINT32_MAX /* no node / no frame / no thread */

/* What a thread was doing at a sample. */
enum {
  SNAP__TRACE_UNKNOWN = 0,
  SNAP__TRACE_RUNNING,  /* on a CPU (the sample's signal ran on it) */
  SNAP__TRACE_RUNNABLE, /* wanted a CPU and waited for one (starved) */
  SNAP__TRACE_BLOCKED,  /* in the kernel, waiting (wait_kind says on what) */
  SNAP__TRACE_STATE_COUNT
};
/* "unknown", "running", "runnable", "blocked". */
const char *snap__trace_state_name(unsigned state);

/* ---- A growable output buffer (the exporters') --------------------------- */

typedef struct snap__tbuf {
  char *p;
  size_t len, cap;
  bool failed; /* an allocation failed: the text is incomplete */
} snap__tbuf_t;
void snap__tbuf_put(snap__tbuf_t *b, const void *s, size_t n);
void snap__tbuf_puts(snap__tbuf_t *b, const char *s);
void snap__tbuf_printf(snap__tbuf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A JSON string literal, quotes included: escapes what JSON requires and
   replaces bytes that are not UTF-8 with U+FFFD. */
void snap__tbuf_json_string(snap__tbuf_t *b, const char *s);
void snap__tbuf_free(snap__tbuf_t *b);

/* ---- The snapshot exporters read ----------------------------------------- */

/* One node of the stack table, named. A stack is a leaf frame and its
   parents up to a root (the outermost frame: main, a thread's start). */
typedef struct snap__trace_frame {
  uint32_t parent; /* index into frames, SNAP__TRACE_NONE at a root */
  uint32_t depth;  /* 0 at a root */
  uintptr_t pc;    /* as captured */
  const char *name;  /* the function, else "image + 0x<offset>", else
                        "0x<pc>": never NULL */
  const char *image; /* the image's base name, "???" when none */
  bool in_app;
} snap__trace_frame_t;

/* Consecutive identical samples of one thread: same stack, same state. */
typedef struct snap__trace_span {
  uint64_t start_ns; /* the first sample, unix time in ns */
  uint64_t end_ns;   /* the last sample (== start_ns for one sample) */
  uint32_t thread;   /* index into threads */
  uint32_t frame;    /* the stack's leaf, SNAP__TRACE_NONE when the
                        sample had no stack (it failed) */
  uint32_t count;    /* samples merged, >= 1 */
  uint8_t state;     /* SNAP__TRACE_* */
  uint8_t wait_kind; /* SNAP_WAIT_* (SNAP__TRACE_BLOCKED only) */
  int64_t cpu_ns;    /* the thread's CPU time from its previous sample
                        (the one before start_ns) to end_ns; -1 unknown */
  const char *label; /* a mark (snap_trace_mark): its label; NULL for a
                        periodic sample. A mark is one sample, count 1. */
} snap__trace_span_t;

typedef struct snap__trace_thread {
  snap_thread_t tid;
  char name[32]; /* "" when unknown */
  bool is_main;
} snap__trace_thread_t;

typedef struct snap__trace_snapshot {
  int64_t pid;
  char process_name[64];
  snap__trace_thread_t *threads;
  uint32_t n_threads;
  snap__trace_frame_t *frames;
  uint32_t n_frames;
  snap__trace_span_t *spans; /* sorted by start_ns (ties: thread) */
  size_t n_spans;
  uint64_t main_interval_ns;  /* the sampling periods, for the length of */
  uint64_t other_interval_ns; /* a trailing sample */
  uint64_t since_ns, until_ns; /* the window asked for (unix ns) */
} snap__trace_snapshot_t;

/* ---- Slices (slices.c) ---------------------------------------------------

   A thread's spans as nested slices, the way sampling tracers draw them:
   walk the spans in time order; between two consecutive samples, diff the
   stacks from the root: the frames that left end, the frames that entered
   begin. A sample lasts until the next sample of its thread, or one
   sampling period when there is none within two periods (the thread was
   not sampled: idle, or the window ends). Marks are not slices. */
typedef struct snap__trace_slice {
  uint32_t thread;
  uint32_t frame; /* the slice's frame (its name) */
  uint32_t depth; /* nesting, 0 = root frame */
  uint64_t begin_ns, end_ns; /* unix ns */
  int64_t cpu_ns;            /* CPU time of the thread inside, -1 unknown */
  uint32_t samples;
  uint32_t by_state[SNAP__TRACE_STATE_COUNT]; /* samples by state */
  uint8_t wait_kind; /* the most frequent wait kind of its blocked
                        samples, SNAP_WAIT_NONE when none */
} snap__trace_slice_t;

/* Every slice of the snapshot, ordered by thread, then begin_ns, then
   depth (a parent before its children). *out is malloc'ed (free it). */
int snap__trace_slices(const snap__trace_snapshot_t *s,
                       snap__trace_slice_t **out, size_t *n);
/* The slice's dominant state: blocked when most of its samples were
   blocked, runnable when most were runnable, else running (unknown when
   none known). */
unsigned snap__trace_slice_state(const snap__trace_slice_t *sl);

/* ---- Exporters (export_*.c): the snapshot as a file's bytes ---------------

   Each appends the whole file to out; SNAP_OK, or SNAP_ENOMEM. */
int snap__trace_export_perfetto(const snap__trace_snapshot_t *s,
                                snap__tbuf_t *out);
int snap__trace_export_chrome(const snap__trace_snapshot_t *s,
                              snap__tbuf_t *out);
int snap__trace_export_folded(const snap__trace_snapshot_t *s,
                              snap__tbuf_t *out);

#endif
