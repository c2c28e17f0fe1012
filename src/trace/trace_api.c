/*
 * trace_api.c — the sampling trace's public calls: configuration, start,
 * stop, marks, writing a trace file, statistics; and a forked child.
 *
 * Owns: the one trace (g_trace) and its lifecycle, the memory budget's
 * split, the lock over the trace's storage. Must not: sample (sampler.c),
 * name (snapshot.c) or encode (export_*.c).
 *
 * The budget: max_bytes is allocated at start, once: a quarter for the
 * stack table, the rest for the span ring (a stack's nodes are shared,
 * spans are not). The trace's struct itself (thread table, labels, the
 * mark queue: 80 KiB) is counted in it too. A stopped trace stays
 * readable until the next start.
 */
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "trace/trace.h"

static _Atomic int g_state; /* 0 never, 1 running, 2 starting/stopping,
                               3 stopped (readable) */
static snap__trace_t *_Atomic g_trace;
static snap__lazy_lock_t g_lock; /* the trace's storage */
static snap__plat_thread_t g_thread;
static _Atomic bool g_stop;
static _Atomic snap_thread_t g_sampler_tid;
static snap__waker_t g_wake;  /* the sampler sleeps on it */
static snap__sem_t g_flushed; /* posted after a pass a writer asked for */
static bool g_wake_ready;

typedef struct snap__trace_config_v1 {
  uint32_t size;
  unsigned main_interval_us, other_interval_us, window_seconds;
  size_t max_bytes;
} snap__trace_config_v1_t;
_Static_assert(sizeof(snap_trace_config_t) == sizeof(snap__trace_config_v1_t),
               "a new field is a new version: add its frozen layout");

SNAP_EXPORT void snap_trace_config_init(snap_trace_config_t *cfg, size_t size) {
  if (!cfg)
    return;
  snap_trace_config_t d = {.size = (uint32_t)size,
                           .main_interval_us = 1000,
                           .other_interval_us = 10000,
                           .window_seconds = 30,
                           .max_bytes = 8u << 20};
  if (size != sizeof d) {
    memset(cfg, 0, size);
    if (size >= sizeof(uint32_t))
      cfg->size = (uint32_t)size;
    return;
  }
  *cfg = d;
}

/* The smallest budget: the trace's own tables (80 KiB: thread table,
   labels, the mark queue) are counted in it, and what is left must hold
   some samples. stacksnap.h documents it; a value it calls valid must
   start (issue 24, item 14: 64..84 KiB were documented and refused). */
#define MIN_BYTES ((size_t)128 << 10)
#define FLUSH_NS (500 * 1000000u) /* a writer waits for the sampler's pass */
#define START_NS (200 * 1000000u) /* a start waits for its first look */
_Static_assert(sizeof(snap__trace_t) + (32u << 10) <= MIN_BYTES,
               "the trace's own tables grew: raise the documented minimum");

static bool in(uint64_t v, uint64_t lo, uint64_t hi) {
  return v >= lo && v <= hi;
}

static int check(const snap_trace_config_t *c) {
  if (!c || c->size != sizeof *c)
    return SNAP_EINVAL;
  if (!in(c->main_interval_us, 100, 1000000) ||
      (c->other_interval_us && !in(c->other_interval_us, 1000, 1000000)) ||
      !in(c->window_seconds, 1, 3600) ||
      !in(c->max_bytes, MIN_BYTES, (uint64_t)1 << 30))
    return SNAP_EINVAL;
  return SNAP_OK;
}

static void run(void *arg) {
  snap__trace_t *tr = arg;
  atomic_store(&g_sampler_tid, snap__plat_thread_self());
  snap__trace_sampler_run(tr, &g_lock.lock, &g_stop);
}

/* A reader of the trace (a mark, a write, the stats) holds it against a
   start, which frees the previous trace: a reader counts itself in, then
   looks at the state; a start sets state 2, then waits for the count to
   drop to 0 (both sequentially consistent: either the reader sees state 2
   and leaves, or the start sees the reader). `running`: only a running
   trace will do (marks). */
static _Atomic int g_readers;

static snap__trace_t *reader_enter(bool running) {
  atomic_fetch_add(&g_readers, 1);
  int st = atomic_load(&g_state);
  snap__trace_t *tr = atomic_load(&g_trace);
  if ((st != 1 && (running || st != 3)) || !tr) {
    atomic_fetch_sub(&g_readers, 1);
    return NULL;
  }
  return tr;
}

static void reader_leave(void) { atomic_fetch_sub(&g_readers, 1); }

/* In a forked child the sampler does not exist: the trace is forgotten
   (its memory left alone), and the child may start its own. */
static void forget_in_child(void) {
  snap__trace_t *tr = atomic_load(&g_trace);
  if (tr) /* its sampler's directory: our descriptor, never the child's */
    snap__plat_thread_lister_close(&tr->lister);
  atomic_store(&g_trace, NULL);
  atomic_store(&g_readers, 0); /* readers of the parent's other threads */
  atomic_store(&g_state, 0);
  /* The waker's descriptors are the parent's too (an eventfd and a
     timerfd on Linux): a push here would move its sampler's alarm. The
     child's first start makes its own; the old ones are left, not
     destroyed (on Apple that would call into libdispatch in a forked
     child), and close at exec. */
  g_wake_ready = false;
}

SNAP_EXPORT int snap_trace_start(const snap_trace_config_t *cfg) {
  int rc = check(cfg);
  if (rc != SNAP_OK)
    return rc;
  int expect = atomic_load(&g_state);
  if (expect == 1 || expect == 2 ||
      !atomic_compare_exchange_strong(&g_state, &expect, 2))
    return SNAP_EBUSY;
  static bool hooked; /* under state 2 */
  if (!hooked)
    hooked = snap__plat_on_fork(SNAP__FORK_TRACE, NULL, NULL,
                                forget_in_child) == SNAP_OK;
  if (!g_wake_ready) {
    if ((rc = snap__plat_waker_init(&g_wake)) != SNAP_OK) {
      atomic_store(&g_state, expect);
      return rc;
    }
    if ((rc = snap__plat_sem_init(&g_flushed, 0)) != SNAP_OK) {
      snap__plat_waker_destroy(&g_wake);
      atomic_store(&g_state, expect);
      return rc;
    }
    g_wake_ready = true;
  }
  /* The previous trace goes now, once its last reader left. */
  while (atomic_load(&g_readers) > 0)
    (void)snap__plat_waker_wait(&g_wake, snap__plat_now_ns() + 1000000u);
  snap__plat_lazy_lock(&g_lock);
  snap__trace_t *old = atomic_exchange(&g_trace, NULL);
  snap__plat_lazy_unlock(&g_lock);
  if (old) {
    free(old->memory);
    free(old);
  }
  size_t own = sizeof(snap__trace_t); /* < MIN_BYTES: checked above */
  snap__trace_t *tr = NULL;
  void *mem = NULL;
  if (!(tr = calloc(1, sizeof *tr)) || !(mem = malloc(cfg->max_bytes - own))) {
    free(tr);
    atomic_store(&g_state, 0);
    return SNAP_ENOMEM;
  }
  tr->lister = (snap__plat_thread_lister_t)SNAP__PLAT_THREAD_LISTER_INIT;
  size_t bytes = cfg->max_bytes - own;
  /* The timed threads' rings (sampler_timed.c, self_ring.c): the main
     thread's and up to 31 others', at most a quarter of the budget; a
     thread for which none is left is sampled the old way. */
  size_t head = (sizeof(snap__trace_timed_t) + 15) & ~(size_t)15;
  size_t srings = head + snap__sring_bytes(SNAP__SRING_MAIN) +
                  31 * (head + snap__sring_bytes(SNAP__SRING_OTHER));
  if (srings > bytes / 4)
    srings = bytes / 4 & ~(size_t)15;
  size_t rest = bytes - srings;
  size_t table = rest / 4 & ~(size_t)15;
  tr->cfg = *cfg;
  tr->memory = mem;
  tr->memory_bytes = bytes;
  tr->srings = (unsigned char *)mem + rest;
  tr->srings_bytes = srings;
  snap__stack_table_init(&tr->table, mem, table);
  snap__span_ring_init(&tr->ring, (char *)mem + table, rest - table);
  snap__trace_marks_init(tr);
  tr->t0_ns = snap__plat_now_ns();
  tr->sampler_cpu_ns = -1;
  tr->wake = &g_wake;
  tr->flushed = &g_flushed;
  atomic_store(&g_stop, false);
  atomic_store(&g_trace, tr);
  rc = snap__plat_thread_start(&g_thread, run, tr, "stacksnap-trace");
  if (rc != SNAP_OK) {
    atomic_store(&g_trace, NULL);
    free(mem);
    free(tr);
    atomic_store(&g_state, 0);
    return rc;
  }
  atomic_store(&g_state, 1);
  /* The trace covers what follows the start: the sampler's first look
     arms the main thread's timer, and its ticks are dated no earlier than
     that (sampler_timed.c). On a busy machine the new thread may first
     run tens of ms later, and a phase begun meanwhile was drawn short;
     so the start waits for that look, up to START_NS, as a reader (a
     stop and a start on other threads meanwhile free this trace only
     once it left). */
  if ((tr = reader_enter(true)) != NULL) {
    (void)snap__trace_flush(tr, START_NS);
    reader_leave();
  }
  return SNAP_OK;
}

SNAP_EXPORT int snap_trace_stop(void) {
  int expect = 1;
  /* Stopping what does not run is done already, as for snap_lag_stop. */
  if (!atomic_compare_exchange_strong(&g_state, &expect, 2))
    return expect == 2 ? SNAP_EBUSY : SNAP_OK;
  atomic_store(&g_stop, true);
  snap__plat_waker_post(&g_wake);
  snap__plat_thread_join(&g_thread);
  atomic_store(&g_state, 3);
  return SNAP_OK;
}

SNAP_EXPORT int snap_trace_mark(const char *label) {
  snap__trace_t *tr = reader_enter(true);
  if (!tr)
    return SNAP_EINVAL;
  uintptr_t pcs[64];
  int n = snap_capture_self(pcs, 64, 1, 0); /* frame 0: the caller */
  int rc = SNAP_OK;
  if (!snap__trace_mark_push(tr, label, pcs, n, snap__plat_now_ns(), -1)) {
    atomic_fetch_add_explicit(&tr->marks_dropped, 1, memory_order_relaxed);
    rc = SNAP_EBUSY;
  } else {
    atomic_fetch_add_explicit(&tr->marks_taken, 1, memory_order_relaxed);
  }
  reader_leave();
  return rc;
}

int snap__trace_main_latest(uintptr_t *pcs, int max, uint64_t since_ns,
                            uint64_t *t_ns, int64_t *cpu_ns) {
  snap__trace_t *tr = reader_enter(true);
  if (!tr)
    return SNAP_EINVAL;
  int n = SNAP_EBUSY;
  snap__plat_lazy_lock(&g_lock);
  /* A timed main thread's newest tick may wait in its ring for the
     sampler's next look: the sampler drains it under this lock, so it
     holds still while read. */
  const snap__sring_entry_t *e =
      tr->main_ring ? snap__sring_newest(tr->main_ring) : NULL;
  if (e && e->n > 0 && e->t_ns >= since_ns && e->t_ns > tr->main_t_ns) {
    n = e->n < max ? e->n : max;
    memcpy(pcs, e->pcs, (size_t)n * sizeof *pcs);
    *t_ns = e->t_ns;
    *cpu_ns = e->cpu_ns;
  } else if (tr->main_n > 0 && tr->main_t_ns >= since_ns) {
    n = tr->main_n < max ? tr->main_n : max;
    memcpy(pcs, tr->main_pcs, (size_t)n * sizeof *pcs);
    *t_ns = tr->main_t_ns;
    *cpu_ns = tr->main_cpu_ns;
  }
  snap__plat_lazy_unlock(&g_lock);
  reader_leave();
  return n;
}

/* "dir" and "name" of a path, into buf. */
static bool split_path(const char *path, char *dir, size_t dsize,
                       const char **name) {
  const char *slash = strrchr(path, '/');
  *name = slash ? slash + 1 : path;
  if (!**name)
    return false;
  size_t dlen = slash ? (size_t)(slash - path) : 1;
  if (dlen >= dsize)
    return false;
  if (!slash)
    memcpy(dir, ".", 2);
  else if (dlen == 0)
    memcpy(dir, "/", 2);
  else {
    memcpy(dir, path, dlen);
    dir[dlen] = '\0';
  }
  return true;
}

/* Writes the window to dir/name in `format`, a file of `mode`, through
   the library's one file writer (src/report/: never through a link, never
   over a FIFO or a device); `running`: only from a running trace. */
static int write_file(const char *dir, const char *name, unsigned format,
                      uint64_t since_unix_ns, uint64_t until_unix_ns,
                      bool running, unsigned mode) {
  snap__trace_t *tr = reader_enter(running);
  if (!tr)
    return SNAP_EINVAL;
  /* A running trace's main thread may have ticks the sampler has not
     drained yet (it sleeps while they come): a pass first, if it comes
     within FLUSH_NS (a busy machine may hold the sampler back longer;
     then the newest ticks are left out). */
  if (atomic_load(&g_state) == 1)
    (void)snap__trace_flush(tr, FLUSH_NS);
  snap__trace_snapshot_t snap;
  int rc = snap__trace_snapshot(tr, &g_lock.lock, since_unix_ns, until_unix_ns,
                                &snap);
  reader_leave();
  if (rc != SNAP_OK)
    return rc;
  snap__tbuf_t out = {0};
  rc = format == SNAP_TRACE_PERFETTO ? snap__trace_export_perfetto(&snap, &out)
       : format == SNAP_TRACE_CHROME_JSON
           ? snap__trace_export_chrome(&snap, &out)
           : snap__trace_export_folded(&snap, &out);
  snap__trace_snapshot_free(&snap);
  if (rc == SNAP_OK && out.failed)
    rc = SNAP_ENOMEM;
  if (rc == SNAP_OK)
    rc = snap__report_replace(dir, name, out.p ? out.p : "", out.len, mode);
  snap__tbuf_free(&out);
  return rc;
}

SNAP_EXPORT int snap_trace_write(const char *path, unsigned format,
                                 uint64_t since_unix_ns,
                                 uint64_t until_unix_ns) {
  char dir[4096];
  const char *name;
  if (!path || !*path || format < SNAP_TRACE_PERFETTO ||
      format > SNAP_TRACE_FOLDED ||
      (until_unix_ns && since_unix_ns > until_unix_ns) ||
      !split_path(path, dir, sizeof dir, &name))
    return SNAP_EINVAL;
  return write_file(dir, name, format, since_unix_ns, until_unix_ns, false,
                    SNAP__REPORT_MODE);
}

int snap__trace_write_running(const char *dir, const char *name,
                              uint64_t since_unix_ns, uint64_t until_unix_ns,
                              unsigned mode) {
  return write_file(dir, name, SNAP_TRACE_PERFETTO, since_unix_ns,
                    until_unix_ns, true, mode);
}

SNAP_EXPORT int snap_trace_stats(snap_trace_stats_t *out) {
  if (!out || out->size != sizeof *out)
    return SNAP_EINVAL;
  snap_trace_stats_t r = {.size = out->size, .sampler_cpu_ns = -1};
  snap__trace_t *tr = reader_enter(false);
  if (tr) {
    snap__plat_lazy_lock(&g_lock);
    r.samples = atomic_load(&tr->samples);
    r.failed = atomic_load(&tr->failed);
    r.spans = tr->ring.records;
    r.spans_dropped = tr->ring.dropped;
    r.marks = atomic_load(&tr->marks_taken);
    r.marks_dropped = atomic_load(&tr->marks_dropped);
    r.missed_ticks = atomic_load(&tr->missed_ticks);
    r.stack_nodes = tr->table.n;
    r.bytes_used = tr->ring.len + (uint64_t)tr->table.n * sizeof(snap__tnode_t);
    r.bytes_reserved = tr->memory_bytes + sizeof *tr;
    r.sampler_cpu_ns =
        atomic_load(&g_state) == 1
            ? snap__plat_thread_cpu_ns(atomic_load(&g_sampler_tid))
            : tr->sampler_cpu_ns;
    snap__plat_lazy_unlock(&g_lock);
    reader_leave();
  }
  *out = r;
  return SNAP_OK;
}
