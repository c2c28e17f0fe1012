/*
 * export_perfetto.c — a snapshot as a Perfetto protobuf trace (.pftrace).
 *
 * Owns: snap__trace_export_perfetto, and the few lines of protobuf writing
 * it needs (varints, fixed64, length-delimited fields): the trace format is
 * stable and write-only here, so no protobuf library.
 *
 * What is written (field numbers from Perfetto's protos/perfetto/trace/,
 * checked against the `perfetto` Python package's descriptors):
 *  - Trace.packet = 1, one TracePacket per record, all on one sequence:
 *    trusted_packet_sequence_id = 10 (SEQ below; a file nobody else writes
 *    into needs no uniqueness beyond itself).
 *  - First packet: sequence_flags = 13 with SEQ_INCREMENTAL_STATE_CLEARED
 *    (1), so the reader starts the sequence's state here, and
 *    clock_snapshot = 6 { clocks = 1 { clock_id = 1: BUILTIN_CLOCK_REALTIME,
 *    timestamp = 2 }, primary_trace_clock = 2: BUILTIN_CLOCK_REALTIME }.
 *    Why: the snapshot's times are unix ns (CLOCK_REALTIME), and a packet
 *    without timestamp_clock_id is read as BOOTTIME; trace_processor
 *    converts every packet's clock into the trace's clock through clock
 *    snapshots, and sets the trace's clock from the first snapshot's
 *    primary_trace_clock (it must come before any timestamp is converted:
 *    hence first). With REALTIME as the trace clock the conversion is the
 *    identity, no BOOTTIME reading is invented (the exporter has none), and
 *    the UI shows wall-clock times.
 *  - Every event packet: timestamp = 8 (unix ns) and timestamp_clock_id =
 *    58 = 1 (REALTIME), said per packet rather than through
 *    TracePacketDefaults so that no packet depends on sequence state.
 *  - track_descriptor = 60: the process (uuid = 1, process = 3
 *    { pid = 1, process_name = 6 }), then one per thread (uuid, thread = 4
 *    { pid = 1 (int32), tid = 2 (int64), thread_name = 5 }): the UI nests
 *    thread tracks under their process by pid.
 *  - track_event = 11 { type = 9, track_uuid = 11, name = 23,
 *    debug_annotations = 4 { name = 10, string_value = 6, uint_value = 3,
 *    double_value = 5 } }: TYPE_SLICE_BEGIN (1) with the frame's name and
 *    cpu_ms (when known), state, wait (when its blocked samples waited on
 *    something), samples and image; TYPE_SLICE_END (2), which the
 *    reader matches to the innermost open slice of the track; TYPE_INSTANT
 *    (3) for a mark, named by its label, with its stack (leaf first, one
 *    frame a line).
 * Names are written inline, not interned: interning would shrink the file
 *  (a name per slice begin) at the cost of sequence state a reader must
 *  rebuild; the size is measured in the tests' benchmark.
 * Order: events are generated per thread in nesting order (a slice's END
 *  before the next slice at its depth or above begins, a mark after the
 *  slices that ended by its time), then merged across threads by time,
 *  keeping each thread's order among equal times.
 * Strings: UTF-8 only (bad bytes become U+FFFD, report/text_buf.c), as protobuf
 *  strings must be.
 * Must not: write files (the caller does), or call an OS API.
 */
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"

#define SEQ 0x534e4150u /* "SNAP": the one trusted_packet_sequence_id */
#define CLOCK_REALTIME_ID 1u

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2 };

static void pb_varint(snap__tbuf_t *b, uint64_t v) {
  uint8_t tmp[10];
  size_t n = 0;
  do {
    tmp[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  snap__tbuf_put(b, tmp, n);
}

static void pb_tag(snap__tbuf_t *b, uint32_t field, unsigned wire) {
  pb_varint(b, ((uint64_t)field << 3) | wire);
}

static void pb_uint(snap__tbuf_t *b, uint32_t field, uint64_t v) {
  pb_tag(b, field, WIRE_VARINT);
  pb_varint(b, v);
}

/* int32/int64 fields: two's complement as a 64-bit varint. */
static void pb_int(snap__tbuf_t *b, uint32_t field, int64_t v) {
  pb_uint(b, field, (uint64_t)v);
}

static void pb_double(snap__tbuf_t *b, uint32_t field, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  uint8_t le[8];
  for (int i = 0; i < 8; i++)
    le[i] = (uint8_t)(bits >> (8 * i)); /* protobuf's fixed64: little end */
  pb_tag(b, field, WIRE_FIXED64);
  snap__tbuf_put(b, le, sizeof le);
}

static void pb_string(snap__tbuf_t *b, uint32_t field, const char *s) {
  pb_tag(b, field, WIRE_LEN);
  /* One pass for the usual, valid name; the replacing writer otherwise. */
  const unsigned char *p = (const unsigned char *)s;
  size_t n = 1;
  while (*p && (*p < 0x80 || (n = snap__utf8_len(p)) != 0))
    p += *p < 0x80 ? 1 : n;
  if (!*p) {
    pb_varint(b, (size_t)(p - (const unsigned char *)s));
    snap__tbuf_put(b, s, (size_t)(p - (const unsigned char *)s));
  } else {
    pb_varint(b, snap__utf8_clean_len(s));
    snap__tbuf_text(b, s);
  }
}

/* A nested message: its length is known only at its end. Leave room for
   the longest length varint we allow (5 bytes: 32 GiB), then close the
   hole with a memmove of the (small) message. */
#define LEN_ROOM 5
static size_t pb_open(snap__tbuf_t *b, uint32_t field) {
  pb_tag(b, field, WIRE_LEN);
  static const uint8_t room[LEN_ROOM];
  snap__tbuf_put(b, room, LEN_ROOM);
  return b->len;
}

static void pb_close(snap__tbuf_t *b, size_t start) {
  if (b->failed)
    return;
  size_t len = b->len - start;
  uint8_t tmp[LEN_ROOM];
  size_t n = 0;
  uint64_t v = len;
  do {
    tmp[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v && n < LEN_ROOM);
  char *hole = b->p + start - LEN_ROOM;
  memcpy(hole, tmp, n);
  memmove(hole + n, b->p + start, len);
  b->len -= LEN_ROOM - n;
  b->p[b->len] = '\0';
}

/* ---- TracePacket fields ---------------------------------------------- */

enum {
  TRACE_PACKET = 1,
  TP_CLOCK_SNAPSHOT = 6,
  TP_TIMESTAMP = 8,
  TP_SEQUENCE_ID = 10,
  TP_TRACK_EVENT = 11,
  TP_SEQUENCE_FLAGS = 13,
  TP_TIMESTAMP_CLOCK_ID = 58,
  TP_TRACK_DESCRIPTOR = 60,
  SEQ_INCREMENTAL_STATE_CLEARED = 1,
  TE_DEBUG_ANNOTATIONS = 4,
  TE_TYPE = 9,
  TE_TRACK_UUID = 11,
  TE_NAME = 23,
  TYPE_SLICE_BEGIN = 1,
  TYPE_SLICE_END = 2,
  TYPE_INSTANT = 3,
  DA_UINT = 3,
  DA_DOUBLE = 5,
  DA_STRING = 6,
  DA_NAME = 10,
};

static size_t packet_open(snap__tbuf_t *b) {
  size_t p = pb_open(b, TRACE_PACKET);
  pb_uint(b, TP_SEQUENCE_ID, SEQ);
  return p;
}

static size_t event_open(snap__tbuf_t *b, uint64_t ts, uint64_t track,
                         unsigned type, size_t *packet) {
  *packet = packet_open(b);
  pb_uint(b, TP_TIMESTAMP, ts);
  pb_uint(b, TP_TIMESTAMP_CLOCK_ID, CLOCK_REALTIME_ID);
  size_t ev = pb_open(b, TP_TRACK_EVENT);
  pb_uint(b, TE_TYPE, type);
  pb_uint(b, TE_TRACK_UUID, track);
  return ev;
}

static void annotation_string(snap__tbuf_t *b, const char *name,
                              const char *v) {
  size_t a = pb_open(b, TE_DEBUG_ANNOTATIONS);
  pb_string(b, DA_NAME, name);
  pb_string(b, DA_STRING, v);
  pb_close(b, a);
}

static void annotation_uint(snap__tbuf_t *b, const char *name, uint64_t v) {
  size_t a = pb_open(b, TE_DEBUG_ANNOTATIONS);
  pb_string(b, DA_NAME, name);
  pb_uint(b, DA_UINT, v);
  pb_close(b, a);
}

static void annotation_double(snap__tbuf_t *b, const char *name, double v) {
  size_t a = pb_open(b, TE_DEBUG_ANNOTATIONS);
  pb_string(b, DA_NAME, name);
  pb_double(b, DA_DOUBLE, v);
  pb_close(b, a);
}

/* Track uuids: any nonzero 64-bit ids unique in the file; mixed from the
   pid so that two processes' traces opened together do not collide. */
static uint64_t track_uuid(int64_t pid, uint64_t k) {
  uint64_t x = (uint64_t)pid * 0x9e3779b97f4a7c15ull + k;
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x ? x : 1;
}

/* ---- Events in order ----------------------------------------------------- */

enum { EV_END, EV_BEGIN, EV_MARK };

typedef struct event {
  uint64_t ts;
  size_t seq;   /* generation order: ties keep each thread's order */
  size_t index; /* the slice, or the mark's span */
  uint32_t kind;
} event_t;

typedef struct events {
  event_t *v;
  size_t n, cap;
} events_t;

static bool push(events_t *e, uint64_t ts, uint32_t kind, size_t index) {
  if (e->n == e->cap) {
    size_t cap = e->cap ? e->cap * 2 : 4096;
    event_t *p = realloc(e->v, cap * sizeof *p);
    if (!p)
      return false;
    e->v = p;
    e->cap = cap;
  }
  e->v[e->n] = (event_t){ts, e->n, index, kind};
  e->n++;
  return true;
}

static int by_time(const void *a, const void *b) {
  const event_t *x = a, *y = b;
  if (x->ts != y->ts)
    return x->ts < y->ts ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* One thread's slices [lo, hi) and marks, in nesting order. `open` has
   room for every slice of the thread. */
static bool thread_events(const snap__trace_snapshot_t *s, uint32_t thread,
                          const snap__trace_slice_t *sl, size_t lo, size_t hi,
                          size_t *open, events_t *e) {
  size_t n_open = 0, m = 0, k = lo;
  for (;;) {
    while (m < s->n_spans &&
           (!s->spans[m].label || s->spans[m].thread != thread))
      m++;
    bool slice_next =
        k < hi && (m >= s->n_spans || sl[k].begin_ns <= s->spans[m].start_ns);
    if (slice_next) {
      while (n_open > sl[k].depth) {
        size_t o = open[--n_open];
        if (!push(e, sl[o].end_ns, EV_END, o))
          return false;
      }
      if (!push(e, sl[k].begin_ns, EV_BEGIN, k))
        return false;
      open[n_open++] = k++;
    } else if (m < s->n_spans) {
      uint64_t at = s->spans[m].start_ns;
      while (n_open && sl[open[n_open - 1]].end_ns <= at) {
        size_t o = open[--n_open];
        if (!push(e, sl[o].end_ns, EV_END, o))
          return false;
      }
      if (!push(e, at, EV_MARK, m))
        return false;
      m++;
    } else {
      break;
    }
  }
  while (n_open) {
    size_t o = open[--n_open];
    if (!push(e, sl[o].end_ns, EV_END, o))
      return false;
  }
  return true;
}

/* ---- The file ------------------------------------------------------------ */

static void mark_stack(snap__tbuf_t *scratch, const snap__trace_snapshot_t *s,
                       uint32_t leaf) {
  scratch->len = 0;
  snap__tbuf_put(scratch, "", 0);
  uint32_t steps = 0;
  for (uint32_t f = leaf; f < s->n_frames && steps < s->n_frames;
       f = s->frames[f].parent, steps++) {
    if (steps)
      snap__tbuf_put(scratch, "\n", 1);
    snap__tbuf_puts(scratch, s->frames[f].name);
  }
}

static void write_event(snap__tbuf_t *b, snap__tbuf_t *scratch,
                        const snap__trace_snapshot_t *s,
                        const snap__trace_slice_t *sl, const event_t *ev,
                        const uint64_t *thread_uuid) {
  size_t packet, te;
  if (ev->kind == EV_MARK) {
    const snap__trace_span_t *sp = &s->spans[ev->index];
    te = event_open(b, ev->ts, thread_uuid[sp->thread], TYPE_INSTANT, &packet);
    pb_string(b, TE_NAME, sp->label);
    mark_stack(scratch, s, sp->frame);
    annotation_string(b, "stack", scratch->failed ? "" : scratch->p);
  } else {
    const snap__trace_slice_t *x = &sl[ev->index];
    unsigned type = ev->kind == EV_BEGIN ? TYPE_SLICE_BEGIN : TYPE_SLICE_END;
    te = event_open(b, ev->ts, thread_uuid[x->thread], type, &packet);
    if (ev->kind == EV_BEGIN) {
      const snap__trace_frame_t *f = &s->frames[x->frame];
      pb_string(b, TE_NAME, f->name);
      if (x->cpu_ns >= 0)
        annotation_double(b, "cpu_ms", (double)x->cpu_ns / 1e6);
      annotation_string(b, "state",
                        snap__state_name(snap__trace_slice_state(x)));
      if (x->wait_kind != SNAP_WAIT_NONE)
        annotation_string(b, "wait", snap_wait_kind_name(x->wait_kind));
      annotation_uint(b, "samples", x->samples);
      annotation_string(b, "image", f->image);
    }
  }
  pb_close(b, te);
  pb_close(b, packet);
}

int snap__trace_export_perfetto(const snap__trace_snapshot_t *s,
                                snap__tbuf_t *out) {
  if (!s || !out)
    return SNAP_EINVAL;
  snap__trace_slice_t *sl = NULL;
  size_t n_sl = 0;
  int rc = snap__trace_slices(s, &sl, &n_sl);
  if (rc != SNAP_OK)
    return rc;
  uint64_t *thread_uuid =
      malloc(((size_t)s->n_threads + 1) * sizeof *thread_uuid);
  size_t *open = malloc((n_sl + 1) * sizeof *open);
  events_t ev = {0};
  snap__tbuf_t scratch = {0};
  if (!thread_uuid || !open) {
    rc = SNAP_ENOMEM;
    goto done;
  }

  /* Events, thread by thread (slices come grouped by thread), then
     merged by time. */
  for (uint32_t t = 0, k = 0; t < s->n_threads; t++) {
    size_t lo = k;
    while (k < n_sl && sl[k].thread == t)
      k++;
    if (!thread_events(s, t, sl, lo, k, open, &ev)) {
      rc = SNAP_ENOMEM;
      goto done;
    }
  }
  if (ev.n > 1) /* an empty window has ev.v NULL: qsort's is nonnull */
    qsort(ev.v, ev.n, sizeof *ev.v, by_time);

  /* The clock, first. Its reading: the window's start, else the first
     event's time (any REALTIME reading will do: it is the only clock). */
  uint64_t t0 = s->since_ns ? s->since_ns : ev.n ? ev.v[0].ts : 0;
  size_t p = packet_open(out);
  pb_uint(out, TP_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
  size_t cs = pb_open(out, TP_CLOCK_SNAPSHOT);
  size_t clk = pb_open(out, 1 /* clocks */);
  pb_uint(out, 1 /* clock_id */, CLOCK_REALTIME_ID);
  pb_uint(out, 2 /* timestamp */, t0);
  pb_close(out, clk);
  pb_uint(out, 2 /* primary_trace_clock */, CLOCK_REALTIME_ID);
  pb_close(out, cs);
  pb_close(out, p);

  /* The process's track, then one per thread. */
  p = packet_open(out);
  size_t td = pb_open(out, TP_TRACK_DESCRIPTOR);
  pb_uint(out, 1 /* uuid */, track_uuid(s->pid, 0));
  size_t pd = pb_open(out, 3 /* process */);
  pb_int(out, 1 /* pid */, (int32_t)s->pid);
  if (s->process_name[0])
    pb_string(out, 6 /* process_name */, s->process_name);
  pb_close(out, pd);
  pb_close(out, td);
  pb_close(out, p);
  for (uint32_t t = 0; t < s->n_threads; t++) {
    const snap__trace_thread_t *th = &s->threads[t];
    char name[sizeof th->name + 1];
    memcpy(name, th->name, sizeof th->name);
    name[sizeof th->name] = '\0'; /* a full name may lack its NUL */
    thread_uuid[t] = track_uuid(s->pid, (uint64_t)t + 1);
    p = packet_open(out);
    td = pb_open(out, TP_TRACK_DESCRIPTOR);
    pb_uint(out, 1 /* uuid */, thread_uuid[t]);
    size_t thd = pb_open(out, 4 /* thread */);
    pb_int(out, 1 /* pid */, (int32_t)s->pid);
    pb_int(out, 2 /* tid */, (int64_t)th->tid);
    if (name[0])
      pb_string(out, 5 /* thread_name */, name);
    pb_close(out, thd);
    pb_close(out, td);
    pb_close(out, p);
  }

  for (size_t i = 0; i < ev.n && !out->failed; i++)
    write_event(out, &scratch, s, sl, &ev.v[i], thread_uuid);
  rc = out->failed ? SNAP_ENOMEM : SNAP_OK;
done:
  free(sl);
  free(thread_uuid);
  free(open);
  free(ev.v);
  snap__tbuf_free(&scratch);
  return rc;
}
