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

#include <stdatomic.h>

#include "blocked/thread_state.h"
#include "platform/platform.h"
#include "platform/process.h"
#include "platform/thread_facts.h"
#include "report/report.h"
#include "stacksnap.h"

#define SNAP__TRACE_NONE UINT32_MAX /* no node / no frame / no thread */

/* What a thread was doing at a sample is a snap__state_t
   (blocked/thread_state.h), named by snap__state_name. */

/* The exporters' output buffer (snap__tbuf_t) and its text rules are the
   report layer's: report/report.h. */

/* ---- The snapshot exporters read ----------------------------------------- */

/* One node of the stack table, named. A stack is a leaf frame and its
   parents up to a root (the outermost frame: main, a thread's start). */
typedef struct snap__trace_frame {
  uint32_t parent;   /* index into frames, SNAP__TRACE_NONE at a root */
  uint32_t depth;    /* 0 at a root */
  uintptr_t pc;      /* as captured */
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
  uint8_t state;     /* snap__state_t */
  uint8_t wait_kind; /* SNAP_WAIT_* (SNAP__STATE_BLOCKED only) */
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
  uint64_t main_interval_ns;   /* the sampling periods, for the length of */
  uint64_t other_interval_ns;  /* a trailing sample */
  uint64_t since_ns, until_ns; /* the window asked for (unix ns) */
  void *names_;                /* snapshot.c's: the strings it made */
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
  uint32_t frame;            /* the slice's frame (its name) */
  uint32_t depth;            /* nesting, 0 = root frame */
  uint64_t begin_ns, end_ns; /* unix ns */
  int64_t cpu_ns;            /* CPU time of the thread inside, -1 unknown */
  uint32_t samples;
  uint32_t by_state[SNAP__STATE_COUNT]; /* samples by state */
  uint8_t wait_kind; /* the most frequent wait kind of its blocked
                        samples, SNAP_WAIT_NONE when none */
} snap__trace_slice_t;

/* What span sp shows of its thread's time (rule 1 above), cut at the
   window's start: from start_ns, or since_ns when it began before, until
   the start of next (its thread's next periodic span, or NULL), or one
   period past its last sample when next is none or, for a thread other
   than the main one, starts more than two periods later. A span cut at
   since_ns keeps its samples and CPU time in proportion to the part of
   [start_ns, end_ns] kept (its samples are about evenly spaced); one that
   ended before since_ns keeps one sample and no CPU time (the CPU after
   its last sample is its next span's). The slices are drawn by it and
   the folded stacks weigh each span by it (export_folded.c): one rule.
   False when the span shows nothing of the window. */
typedef struct snap__trace_cover {
  uint64_t from_ns, until_ns;
  uint32_t count;
  int64_t cpu_ns; /* -1 unknown */
} snap__trace_cover_t;
bool snap__trace_span_cover(const snap__trace_snapshot_t *s,
                            const snap__trace_span_t *sp,
                            const snap__trace_span_t *next,
                            snap__trace_cover_t *out);
/* Every slice of the snapshot, ordered by thread, then begin_ns, then
   depth (a parent before its children). *out is malloc'ed (free it). */
int snap__trace_slices(const snap__trace_snapshot_t *s,
                       snap__trace_slice_t **out, size_t *n);
/* The slice's state: snap__state_of_samples of its samples' states. */
unsigned snap__trace_slice_state(const snap__trace_slice_t *sl);

/* ---- Exporters (export_*.c): the snapshot as a file's bytes ---------------

   Each appends the whole file to out; SNAP_OK, or SNAP_ENOMEM. */
int snap__trace_export_perfetto(const snap__trace_snapshot_t *s,
                                snap__tbuf_t *out);
int snap__trace_export_chrome(const snap__trace_snapshot_t *s,
                              snap__tbuf_t *out);
int snap__trace_export_folded(const snap__trace_snapshot_t *s,
                              snap__tbuf_t *out);

/* ---- Storage (stack_table.c, span_ring.c): the sampler's, fixed-size ------

   Both are allocated whole at snap_trace_start from the max_bytes budget
   and never grow: the sampler never allocates, in or out of a stopped
   window. Only the sampler thread writes them, under the trace's lock
   (held outside any stopped window); the writer reads them under it. */

/* A node: a pc under its parent. A stack is its leaf node. Nodes are made
   in order, so a parent's id is always below its children's (compaction
   relies on it). */
typedef struct snap__tnode {
  uint32_t parent; /* SNAP__TRACE_NONE at a root */
  uint32_t flags;  /* SNAP__TNODE_* */
  uintptr_t pc;
} snap__tnode_t;
#define SNAP__TNODE_EXACT                                                      \
  0x1u                        /* pc is where the thread was, not a return      \
                                 address (a sampled leaf) */
#define SNAP__TNODE_LIVE 0x2u /* compaction's mark */

typedef struct snap__stack_table {
  snap__tnode_t *nodes;
  uint32_t *slots; /* open addressing: node id + 1, 0 empty */
  uint32_t cap;    /* nodes */
  uint32_t n;
  uint32_t slot_mask; /* slots = slot_mask + 1, a power of two >= 2 cap */
  uint32_t epoch;     /* counts compactions: node ids older than it moved */
} snap__stack_table_t;

/* The nodes of a thread's previous stack, root first (ids[i] is the node
   of pcs[i]), valid while the table's epoch is the same: the next stack
   of that thread reuses the outer frames it shares instead of looking
   each one up again (one probe of a table of megabytes is a cache miss;
   a 40-deep stack whose leaf moved was 40 of them, at every tick). */
typedef struct snap__stack_path {
  uint32_t epoch;
  int n; /* 0: none */
  uintptr_t pcs[256];
  uint32_t ids[256];
} snap__stack_path_t;

/* The bytes a table of cap nodes takes. */
size_t snap__stack_table_bytes(uint32_t cap);
/* Takes `bytes` of memory at mem (aligned for pointers); cap = what fits. */
void snap__stack_table_init(snap__stack_table_t *t, void *mem, size_t bytes);
/* The leaf node of pcs[0..n) (pcs[0] the leaf, as captured; exact0: pcs[0]
   is exact), made where missing: SNAP__TRACE_NONE when n == 0 or the table
   is full (then the stack has no leaf; nodes made on the way are kept). */
uint32_t snap__stack_table_add(snap__stack_table_t *t, const uintptr_t *pcs,
                               int n, bool exact0);
/* The same, starting from the outer frames pcs shares with path's stack
   (path: the same thread's previous stack; updated to pcs). The answer is
   the node snap__stack_table_add gives. */
uint32_t snap__stack_table_add_path(snap__stack_table_t *t,
                                    snap__stack_path_t *path,
                                    const uintptr_t *pcs, int n, bool exact0);
/* Compaction, in three steps around the rewriting of every holder of a
   node id: unmark, then mark each live leaf (and so its parents); plan
   gives every marked node its new id (in order: parents stay below their
   children), after which remap answers old -> new (SNAP__TRACE_NONE for a
   dropped node); finish moves the nodes and rebuilds the index (remap is
   invalid after it). The plan lives in the index's own slots (there are
   at least twice as many as nodes): compaction needs no memory. */
void snap__stack_table_unmark(snap__stack_table_t *t);
void snap__stack_table_mark(snap__stack_table_t *t, uint32_t leaf);
void snap__stack_table_plan(snap__stack_table_t *t);
uint32_t snap__stack_table_remap(const snap__stack_table_t *t, uint32_t old);
void snap__stack_table_finish(snap__stack_table_t *t);

/* A closed span as the ring holds it (times: microseconds since the trace
   started, on the monotonic clock). */
typedef struct snap__tspan {
  uint64_t start_us, end_us;
  uint32_t thread; /* the sampler's thread index */
  uint32_t stack;  /* leaf node, SNAP__TRACE_NONE: no stack */
  uint32_t count;
  uint8_t state, wait_kind;
  int64_t cpu_us; /* -1 unknown */
  uint32_t label; /* a mark's label id + 1; 0 none */
} snap__tspan_t;

/* Spans, varint-encoded back to back in a byte ring (span_ring.c has the
   layout). A steady thread's records are 8-12 bytes; identical samples
   merge before they get here. The oldest records are dropped to make
   room, or when older than the window. */
typedef struct snap__span_ring {
  uint8_t *buf;
  size_t cap;
  size_t head, len;     /* bytes: the oldest record's offset, bytes used */
  uint64_t head_end_us; /* the end of the record before head (the base of
                           head's delta) */
  uint64_t last_end_us; /* the end of the newest record */
  uint64_t records, dropped;
} snap__span_ring_t;

void snap__span_ring_init(snap__span_ring_t *r, void *mem, size_t bytes);
/* Appends, dropping the oldest records to make room; false only when one
   record cannot fit an empty ring. */
bool snap__span_ring_push(snap__span_ring_t *r, const snap__tspan_t *s);
/* Drops records from the oldest while their end is before `before_us`,
   or while more than `keep_len` bytes are used. */
void snap__span_ring_trim(snap__span_ring_t *r, uint64_t before_us,
                          size_t keep_len);
/* Reading from the oldest. */
typedef struct snap__span_iter {
  size_t pos, left;
  uint64_t prev_end_us;
} snap__span_iter_t;
snap__span_iter_t snap__span_ring_iter(const snap__span_ring_t *r);
bool snap__span_ring_next(const snap__span_ring_t *r, snap__span_iter_t *it,
                          snap__tspan_t *out);
/* Rewrites every record's stack through the table's remap (after
   compaction's plan): records only shrink, so it is done in place. */
void snap__span_ring_remap(snap__span_ring_t *r, const snap__stack_table_t *t);

/* ---- The running trace (trace_api.c, sampler*.c, marks.c, snapshot.c) --- */

#define SNAP__TRACE_THREADS 256 /* threads a trace follows (first seen) */
#define SNAP__TRACE_DEPTH 256   /* frames kept of a sample */
#define SNAP__TRACE_LABELS 256  /* distinct mark labels */
#define SNAP__TRACE_LABEL_MAX 48
#define SNAP__TRACE_MARKS 64 /* marks queued for the sampler */
#define SNAP__TRACE_DEPTH_SELF SNAP__TRACE_DEPTH

/* ---- A thread's samples of itself (self_ring.c) -------------------------

   Where the platform has per-thread CPU-time timers (Linux), a running
   thread samples itself: each period of its CPU time its timer's handler
   walks its own stack into its ring (snap__sring_tick, [signal-safe]), and
   the sampler thread drains the ring. Lock-free, one producer (the
   thread), one consumer (the sampler). An entry takes the bytes of the
   pcs it holds, so a ring holds many shallow stacks or a few deep ones. */
typedef struct snap__sring_entry {
  uint64_t t_ns;   /* monotonic, at the tick */
  int64_t cpu_ns;  /* the thread's CPU time then (-1 unknown) */
  int32_t n;       /* pcs, or SNAP_ENOSTACK: the handler could not walk */
  uint32_t bytes;  /* the entry's size in its ring, this head included */
  uintptr_t pcs[]; /* n of them */
} snap__sring_entry_t;
typedef struct snap__sring snap__sring_t;
/* The bytes a ring of `cap` bytes of entries takes, and making one there
   (mem aligned for pointers; cap holds two of the deepest entries at
   least). flags: the walk's SNAP_CAPTURE_*. */
size_t snap__sring_bytes(uint32_t cap);
snap__sring_t *snap__sring_init(void *mem, uint32_t cap, unsigned flags);
/* The main thread's ring also keeps the sampler's waker informed
   (schedule.c): each tick pushes its alarm to alarm_ns later
   (when less than half of that was left: a system call every few ticks),
   so the sampler wakes when the ticks stop; a tick that fills the ring
   past half posts it. Before the timer is armed. */
void snap__sring_watch(snap__sring_t *r, snap__waker_t *w, uint64_t alarm_ns);
/* The timer's function (snap__cpu_tick_fn; ctx: the ring). */
void snap__sring_tick(const snap__regs_t *regs, void *ctx);
/* The sampler's side: the oldest entry not consumed (NULL: none), and
   giving it back; samples dropped because the ring was full. */
const snap__sring_entry_t *snap__sring_peek(snap__sring_t *r);
void snap__sring_pop(snap__sring_t *r);
/* The newest entry not consumed (NULL: none), for a reader other than the
   sampler: valid while the sampler cannot pop (the caller holds the lock
   it drains under). */
const snap__sring_entry_t *snap__sring_newest(snap__sring_t *r);
uint64_t snap__sring_lost(const snap__sring_t *r);

/* The rings' sizes in bytes: the main thread's holds 64 of the deepest
   entries (SNAP__TRACE_DEPTH frames), 300-odd of 45 frames, so its
   half-full post wakes the sampler seldom; another thread's, drained at
   each look, 8 of the deepest. */
#define SNAP__SRING_ENTRY_MAX                                                  \
  (sizeof(snap__sring_entry_t) + SNAP__TRACE_DEPTH_SELF * sizeof(uintptr_t))
#define SNAP__SRING_MAIN ((uint32_t)(64 * SNAP__SRING_ENTRY_MAX))
/* The main thread's ring's alarm: the sampler wakes 5-10 ms after its
   last tick (snap__sring_watch). */
#define SNAP__TRACE_ALARM_NS (10 * 1000000u)
#define SNAP__SRING_OTHER ((uint32_t)(8 * SNAP__SRING_ENTRY_MAX))

/* A thread the trace follows: its open span (identical samples not yet
   closed into the ring) and what its last sample saw. */
typedef struct snap__trace_thr {
  snap_thread_t tid;
  char name[32];
  bool is_main, gone;
  bool have_last;      /* a sample (or a first look) was taken */
  int64_t cpu_seen;    /* its CPU time read just before its last capture
                          (sampler.c says why before) */
  int64_t runq;        /* its run-queue wait then (main only; -1) */
  uint32_t last_stack; /* the last sample's leaf */
  uint8_t last_state, last_wait;
  bool open;
  snap__tspan_t span; /* the open span, when open */
  /* Sampled by its own CPU-time timer (sampler_timed.c) when timed is set. */
  struct snap__trace_timed *timed;
  bool timer_tried, listed;
} snap__trace_thr_t;

/* A timed thread's timer and ring, carved with the ring from the trace's
   ring memory (the thread table stays small): the last tick recorded (0:
   its last sample was not a tick) and a look since that found it awake. */
typedef struct snap__trace_timed {
  snap__plat_cpu_timer_t timer;
  snap__sring_t *ring;
  uint64_t last_tick_ns;
  uint64_t seen_running_ns;
  uint64_t base_ns;  /* when it was last seen not ticking (armed, or seen
                        blocked) with no tick since: its next tick's span
                        is dated back from its clocks (0: none) */
  uint64_t woke_ns;  /* when it began to run since, as a look dated it
                        (0: not dated) */
  bool nudged;       /* a nudge is queued, not answered yet */
  int64_t nudge_cpu; /* the thread's CPU time at that nudge */
  bool starved;      /* its timer went silent while it ran: its nudges are
                        queued until a look drains two ticks or more */
  uint8_t steady;    /* looks in a row that found it ran on (the step) */
  /* The main thread at the last look that drained ticks (look_ns 0: the
     last look did not): time, CPU time, run-queue wait (-1 unknown). */
  uint64_t look_ns;
  int64_t look_cpu, look_runq;
} snap__trace_timed_t;

/* A mark, queued by any thread for the sampler (marks.c: a bounded
   multi-producer queue; a slot's seq says whose turn it is). */
typedef struct snap__trace_mark {
  _Atomic uint64_t seq;
  uint64_t t_ns; /* monotonic */
  snap_thread_t tid;
  int64_t cpu_ns;
  int n;
  char label[SNAP__TRACE_LABEL_MAX];
  uintptr_t pcs[64];
} snap__trace_mark_t;

typedef struct snap__trace {
  snap_trace_config_t cfg;
  /* The sampler's thread lister (schedule.c); a forked child closes its
     copy of the descriptor (trace_api.c). */
  snap__plat_thread_lister_t lister;
  uint64_t t0_ns;            /* monotonic at start: span times count from it */
  snap__stack_table_t table; /* under lock */
  snap__span_ring_t ring;    /* under lock */
  snap__trace_thr_t thr[SNAP__TRACE_THREADS]; /* under lock */
  uint32_t n_thr;
  char labels[SNAP__TRACE_LABELS][SNAP__TRACE_LABEL_MAX]; /* under lock */
  uint32_t n_labels;
  snap__trace_mark_t marks[SNAP__TRACE_MARKS];
  _Atomic uint64_t mark_head;     /* next slot a producer claims */
  uint64_t mark_tail;             /* next slot the sampler reads */
  _Atomic uint64_t mark_tail_pub; /* mark_tail, for producers */
  void *memory;                   /* the table's and the ring's */
  size_t memory_bytes;
  /* Rings for timed threads, carved from the budget at start: the main
     thread's first, then others' while they last. */
  unsigned char *srings;
  size_t srings_bytes, srings_used;
  /* The main thread's latest running sample, for the lag watchdog
     (snap__trace_main_latest): under lock. */
  uint64_t main_t_ns;
  int64_t main_cpu_ns;
  int main_n;
  uintptr_t main_pcs[SNAP__TRACE_DEPTH];
  /* The main thread's ring when it is timed (under lock): its ticks not
     drained yet are later than main_t_ns. */
  snap__sring_t *main_ring;
  /* The main thread's previous stack in the table, for its next tick
     (the sampler's own). */
  snap__stack_path_t main_path;
  /* The sampler's waker (trace_api.c), and the flush a writer asks for
     (snap__trace_flush): passes asked and passes done, each a count. */
  snap__waker_t *wake;
  snap__sem_t *flushed;
  _Atomic uint64_t flush_asked, flush_done;
  /* Counters (snap_trace_stats). */
  _Atomic uint64_t samples, failed, marks_taken, marks_dropped, missed_ticks,
      threads_untracked, compactions;
  int64_t sampler_cpu_ns;
} snap__trace_t;

/* marks.c */
void snap__trace_marks_init(snap__trace_t *tr);
/* Queues a mark of the calling thread: false when the queue is full. */
bool snap__trace_mark_push(snap__trace_t *tr, const char *label,
                           const uintptr_t *pcs, int n, uint64_t t_ns,
                           int64_t cpu_ns);
/* The sampler's side: the oldest queued mark, or NULL; done() frees it. */
snap__trace_mark_t *snap__trace_mark_peek(snap__trace_t *tr);
void snap__trace_mark_done(snap__trace_t *tr, snap__trace_mark_t *m);

/* schedule.c: the sampler thread's loop (main thread, others when due,
   marks, the window), under the trace's lock but for the captures. */
void snap__trace_sampler_run(snap__trace_t *tr, snap__lock_t *lock,
                             _Atomic bool *stop);
/* For a writer of a running trace: asks the sampler for a pass (the main
   thread's ticks drained into its spans) and waits for it, up to
   timeout_ns; false if it did not come in time (a busy machine). */
bool snap__trace_flush(snap__trace_t *tr, uint64_t timeout_ns);
/* The thread index of tid, made on first sight (SNAP__TRACE_NONE when
   the table is full). Under the lock. */
uint32_t snap__trace_thread_index(snap__trace_t *tr, snap_thread_t tid);
/* Closes a thread's open span into the ring. Under the lock. */
void snap__trace_close_span(snap__trace_t *tr, snap__trace_thr_t *th);

/* Adds a stack to the table, compacting (and dropping the oldest spans)
   when it is full. Under the lock. */
uint32_t snap__trace_add_stack(snap__trace_t *tr, const uintptr_t *pcs, int n,
                               bool exact0);
/* The same, from a thread's previous stack (path, NULL: none). */
uint32_t snap__trace_add_stack_path(snap__trace_t *tr, snap__stack_path_t *path,
                                    const uintptr_t *pcs, int n, bool exact0);

/* trace_api.c, for the lag watchdog (one sampler: it takes the main
   thread's stack from the trace instead of stopping the thread again):
   the main thread's latest running sample taken at or after since_ns
   (monotonic), its pcs into pcs[0..max) (pcs[0] exact), *t_ns and
   *cpu_ns its time and the thread's CPU time then. The count; SNAP_EINVAL
   when no trace runs; SNAP_EBUSY when none that recent. */
int snap__trace_main_latest(uintptr_t *pcs, int max, uint64_t since_ns,
                            uint64_t *t_ns, int64_t *cpu_ns);

/* snapshot.c: the spans of [since, until] (unix ns, 0 = open) as a named
   snapshot; the lock is taken to copy and let go before naming. */
int snap__trace_snapshot(snap__trace_t *tr, snap__lock_t *lock,
                         uint64_t since_unix_ns, uint64_t until_unix_ns,
                         snap__trace_snapshot_t *out);
void snap__trace_snapshot_free(snap__trace_snapshot_t *s);

/* trace_api.c, for lag reports: writes dir/name, a file of `mode`, as a
   Perfetto trace of [since, until] (unix ns; 0 = now) if a trace is
   running now. SNAP_OK, or SNAP_EINVAL when none runs, or as
   snap_trace_write. */
int snap__trace_write_running(const char *dir, const char *name,
                              uint64_t since_unix_ns, uint64_t until_unix_ns,
                              unsigned mode);

#endif
