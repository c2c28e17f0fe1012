/*
 * span_ring.c — the trace's spans, varint-encoded in a byte ring.
 *
 * Owns: the encoding of a closed span and the ring that keeps them, oldest
 * dropped first (to make room, or past the window). Must not: allocate
 * (its memory is given at init), lock (its callers hold the trace's lock),
 * or know what a stack or a thread is beyond their ids.
 *
 * A record: zigzag(end - previous record's end), end - start, count - 1,
 * thread, stack + 1 (0: none), wait_kind * SNAP__STATE_COUNT + state |
 * (cpu known) << 6 | (label) << 7, [cpu µs], [label id] — all LEB128
 * varints but the one byte (state and kind share its low 6 bits as one
 * number: 5 states and 11 kinds need 55 values, which two bit fields of
 * 3 and 4 bits would not leave room for). Ends are microseconds since the trace
 * began, so a steady thread's records take 8-12 bytes and samples merged into
 * them nothing more. Records are appended when a span closes, not in start
 * order; readers sort. Dropping the oldest record makes its end the base of the
 * next.
 */
#include <string.h>

#include "trace/trace.h"

_Static_assert(SNAP_WAIT_KIND_COUNT *SNAP__STATE_COUNT <= 64,
               "a span's state and wait kind share 6 bits");

#define MAX_RECORD 64 /* 8 varints of at most 10 bytes, and a byte */

void snap__span_ring_init(snap__span_ring_t *r, void *mem, size_t bytes) {
  memset(r, 0, sizeof *r);
  r->buf = mem;
  r->cap = bytes;
}

static size_t put_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    p[n++] = b | (v ? 0x80 : 0);
  } while (v);
  return n;
}

static size_t encode(const snap__tspan_t *s, uint64_t prev_end, uint8_t *p) {
  int64_t d = (int64_t)(s->end_us - prev_end);
  uint64_t zz = ((uint64_t)d << 1) ^ (uint64_t)(d >> 63);
  size_t n = put_varint(p, zz);
  n += put_varint(p + n, s->end_us - s->start_us);
  n += put_varint(p + n, s->count ? s->count - 1 : 0);
  n += put_varint(p + n, s->thread);
  n += put_varint(p + n,
                  s->stack == SNAP__TRACE_NONE ? 0 : (uint64_t)s->stack + 1);
  unsigned state = s->state < SNAP__STATE_COUNT ? s->state : 0;
  unsigned kind =
      s->wait_kind < SNAP_WAIT_KIND_COUNT ? s->wait_kind : SNAP_WAIT_OTHER;
  p[n++] = (uint8_t)((kind * SNAP__STATE_COUNT + state) |
                     (s->cpu_us >= 0) << 6 | (s->label != 0) << 7);
  if (s->cpu_us >= 0)
    n += put_varint(p + n, (uint64_t)s->cpu_us);
  if (s->label)
    n += put_varint(p + n, s->label);
  return n;
}

/* Reads a byte at ring offset pos (wrapping). */
static uint8_t byte_at(const snap__span_ring_t *r, size_t pos) {
  return r->buf[pos % r->cap];
}

static size_t get_varint(const snap__span_ring_t *r, size_t pos, uint64_t *v) {
  uint64_t x = 0;
  size_t n = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    uint8_t b = byte_at(r, pos + n++);
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80))
      break;
  }
  *v = x;
  return n;
}

/* Decodes the record at pos; returns its length. */
static size_t decode(const snap__span_ring_t *r, size_t pos, uint64_t prev_end,
                     snap__tspan_t *s) {
  uint64_t zz, len, count, thread, stack, cpu = 0, label = 0;
  size_t n = get_varint(r, pos, &zz);
  n += get_varint(r, pos + n, &len);
  n += get_varint(r, pos + n, &count);
  n += get_varint(r, pos + n, &thread);
  n += get_varint(r, pos + n, &stack);
  uint8_t bits = byte_at(r, pos + n++);
  if (bits & 0x40)
    n += get_varint(r, pos + n, &cpu);
  if (bits & 0x80)
    n += get_varint(r, pos + n, &label);
  int64_t d = (int64_t)(zz >> 1) ^ -(int64_t)(zz & 1);
  s->end_us = prev_end + (uint64_t)d;
  s->start_us = s->end_us - len;
  s->count = (uint32_t)count + 1;
  s->thread = (uint32_t)thread;
  s->stack = stack ? (uint32_t)(stack - 1) : SNAP__TRACE_NONE;
  s->state = (uint8_t)((bits & 0x3f) % SNAP__STATE_COUNT);
  s->wait_kind = (uint8_t)((bits & 0x3f) / SNAP__STATE_COUNT);
  s->cpu_us = bits & 0x40 ? (int64_t)cpu : -1;
  s->label = (uint32_t)label;
  return n;
}

static void drop_oldest(snap__span_ring_t *r) {
  snap__tspan_t s;
  size_t n = decode(r, r->head, r->head_end_us, &s);
  r->head = (r->head + n) % r->cap;
  r->len -= n;
  r->head_end_us = s.end_us;
  r->dropped++;
  r->records--;
}

bool snap__span_ring_push(snap__span_ring_t *r, const snap__tspan_t *s) {
  uint8_t rec[MAX_RECORD];
  if (r->records == 0) /* an empty ring: its base is this record's end */
    r->head_end_us = r->last_end_us = s->end_us;
  size_t n = encode(s, r->last_end_us, rec);
  if (n > r->cap)
    return false;
  while (r->len + n > r->cap)
    drop_oldest(r);
  if (r->records == 0) { /* dropped down to nothing: re-base */
    r->head_end_us = r->last_end_us = s->end_us;
    n = encode(s, r->last_end_us, rec);
  }
  size_t at = (r->head + r->len) % r->cap;
  size_t first = n < r->cap - at ? n : r->cap - at;
  memcpy(r->buf + at, rec, first);
  memcpy(r->buf, rec + first, n - first);
  r->len += n;
  r->last_end_us = s->end_us;
  r->records++;
  return true;
}

void snap__span_ring_trim(snap__span_ring_t *r, uint64_t before_us,
                          size_t keep_len) {
  while (r->records > 0) {
    snap__tspan_t s;
    (void)decode(r, r->head, r->head_end_us, &s);
    if (s.end_us >= before_us && r->len <= keep_len)
      return;
    drop_oldest(r);
  }
}

snap__span_iter_t snap__span_ring_iter(const snap__span_ring_t *r) {
  return (snap__span_iter_t){.pos = r->head,
                             .left = (size_t)r->records,
                             .prev_end_us = r->head_end_us};
}

bool snap__span_ring_next(const snap__span_ring_t *r, snap__span_iter_t *it,
                          snap__tspan_t *out) {
  if (it->left == 0)
    return false;
  size_t n = decode(r, it->pos, it->prev_end_us, out);
  it->pos = (it->pos + n) % r->cap;
  it->prev_end_us = out->end_us;
  it->left--;
  return true;
}

void snap__span_ring_remap(snap__span_ring_t *r, const snap__stack_table_t *t) {
  /* Sequential rewrite: each record re-encodes no longer than it was (a
     stack id only shrinks), so the write position never passes the read
     position. The deltas stay, as the ends do. */
  size_t rd = r->head, wr = r->head, len = 0;
  uint64_t prev = r->head_end_us;
  for (uint64_t i = 0; i < r->records; i++) {
    snap__tspan_t s;
    size_t n = decode(r, rd, prev, &s);
    rd = (rd + n) % r->cap;
    if (s.stack != SNAP__TRACE_NONE)
      s.stack = snap__stack_table_remap(t, s.stack);
    uint8_t rec[MAX_RECORD];
    size_t m = encode(&s, prev, rec);
    for (size_t k = 0; k < m; k++)
      r->buf[(wr + k) % r->cap] = rec[k];
    wr = (wr + m) % r->cap;
    len += m;
    prev = s.end_us;
  }
  r->len = len;
}
