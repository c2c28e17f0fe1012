/*
 * export_chrome.c — a snapshot as Trace Event Format JSON (chrome://tracing,
 * the Perfetto UI, speedscope).
 *
 * Owns: snap__trace_export_chrome.
 * The document: {"traceEvents":[...],"displayTimeUnit":"ms","otherData":
 * {...}} with
 *  - "M" metadata events: process_name, and thread_name per named thread;
 *  - one "X" (complete) event per slice (slices.c), ts and dur in µs,
 *    args {cpu_ms (when known), state, wait (when blocked on something),
 *    samples, image}; slices come parent before child, so readers that
 *    break ties of equal ts by file order nest them right;
 *  - one "i" instant event per mark, thread-scoped ("s":"t"), named by its
 *    label, args {stack: frame names, leaf first, one a line}.
 * Times: the format has no epoch (Chrome writes its own monotonic clock).
 *  ts is written relative to ts_base_unix_ns (in otherData: the whole
 *  second at or before the first time in the file), with three decimals
 *  (ns). Why not unix µs: readers parse ts as a double, and at 1.7e15 µs
 *  a double's step is 0.25 µs, enough to push a child's end past its
 *  parent's and break the nesting; relative times stay exact (below 2^53
 *  ns, some 104 days).
 * Strings go through snap__tbuf_json_string (escaped, UTF-8 only): the
 *  document always parses.
 * Must not: write files, or call an OS API.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "decimal.h"
#include "trace/trace.h"

/* Numbers without printf: its parsing was a tenth of a long trace's time. */
static void put_u64(snap__tbuf_t *b, uint64_t v) {
  char tmp[SNAP__DEC_MAX];
  snap__tbuf_put(b, tmp, snap__dec_u64(tmp, v));
}

/* ns as µs with three decimals: exact. */
static void put_us(snap__tbuf_t *b, uint64_t ns) {
  char frac[4] = {'.'};
  snap__dec_fixed(frac + 1, ns % 1000, 3);
  put_u64(b, ns / 1000);
  snap__tbuf_put(b, frac, sizeof frac);
}

static void thread_name(const snap__trace_thread_t *th,
                        char out[sizeof th->name + 1]) {
  memcpy(out, th->name, sizeof th->name);
  out[sizeof th->name] = '\0'; /* a full name may lack its NUL */
}

static void event_head(snap__tbuf_t *b, bool *first, const char *ph,
                       int64_t pid, uint64_t tid) {
  snap__tbuf_puts(b, *first ? "\n" : ",\n");
  *first = false;
  snap__tbuf_puts(b, "{\"ph\":\"");
  snap__tbuf_puts(b, ph);
  snap__tbuf_puts(b, "\",\"pid\":");
  if (pid < 0)
    snap__tbuf_put(b, "-", 1);
  put_u64(b, pid < 0 ? 0 - (uint64_t)pid : (uint64_t)pid);
  snap__tbuf_puts(b, ",\"tid\":");
  put_u64(b, tid);
}

int snap__trace_export_chrome(const snap__trace_snapshot_t *s,
                              snap__tbuf_t *out) {
  if (!s || !out)
    return SNAP_EINVAL;
  snap__trace_slice_t *sl = NULL;
  size_t n_sl = 0;
  int rc = snap__trace_slices(s, &sl, &n_sl);
  if (rc != SNAP_OK)
    return rc;

  uint64_t first_ns = s->since_ns ? s->since_ns : UINT64_MAX;
  for (size_t i = 0; i < s->n_spans; i++) /* none drawn before since */
    if (s->spans[i].start_ns < first_ns && s->spans[i].start_ns >= s->since_ns)
      first_ns = s->spans[i].start_ns;
  uint64_t base =
      first_ns == UINT64_MAX ? 0 : first_ns / 1000000000u * 1000000000u;

  snap__tbuf_t scratch = {0};
  bool first = true;
  uint64_t main_tid = s->n_threads ? s->threads[0].tid : 0;
  for (uint32_t t = 0; t < s->n_threads; t++)
    if (s->threads[t].is_main)
      main_tid = s->threads[t].tid;
  snap__tbuf_puts(out, "{\"traceEvents\":[");
  if (s->process_name[0]) {
    event_head(out, &first, "M", s->pid, main_tid);
    snap__tbuf_puts(out, ",\"name\":\"process_name\",\"args\":{\"name\":");
    snap__tbuf_json_string(out, s->process_name);
    snap__tbuf_puts(out, "}}");
  }
  for (uint32_t t = 0; t < s->n_threads; t++) {
    char name[sizeof s->threads[t].name + 1];
    thread_name(&s->threads[t], name);
    if (!name[0])
      continue;
    event_head(out, &first, "M", s->pid, s->threads[t].tid);
    snap__tbuf_puts(out, ",\"name\":\"thread_name\",\"args\":{\"name\":");
    snap__tbuf_json_string(out, name);
    snap__tbuf_puts(out, "}}");
  }

  for (size_t i = 0; i < n_sl && !out->failed; i++) {
    const snap__trace_slice_t *x = &sl[i];
    const snap__trace_frame_t *f = &s->frames[x->frame];
    event_head(out, &first, "X", s->pid, s->threads[x->thread].tid);
    snap__tbuf_puts(out, ",\"ts\":");
    put_us(out, x->begin_ns - base);
    snap__tbuf_puts(out, ",\"dur\":");
    put_us(out, x->end_ns - x->begin_ns);
    snap__tbuf_puts(out, ",\"name\":");
    snap__tbuf_json_string(out, f->name);
    snap__tbuf_puts(out, ",\"cat\":\"sample\",\"args\":{");
    if (x->cpu_ns >= 0) { /* ms with six decimals: exact */
      char frac[7] = {'.'};
      snap__dec_fixed(frac + 1, (uint64_t)x->cpu_ns % 1000000, 6);
      snap__tbuf_puts(out, "\"cpu_ms\":");
      put_u64(out, (uint64_t)x->cpu_ns / 1000000);
      snap__tbuf_put(out, frac, sizeof frac);
      snap__tbuf_put(out, ",", 1);
    }
    snap__tbuf_puts(out, "\"state\":\"");
    snap__tbuf_puts(out, snap__state_name(snap__trace_slice_state(x)));
    if (x->wait_kind != SNAP_WAIT_NONE) {
      snap__tbuf_puts(out, "\",\"wait\":\"");
      snap__tbuf_puts(out, snap_wait_kind_name(x->wait_kind));
    }
    snap__tbuf_puts(out, "\",\"samples\":");
    put_u64(out, x->samples);
    snap__tbuf_puts(out, ",\"image\":");
    snap__tbuf_json_string(out, f->image);
    snap__tbuf_puts(out, "}}");
  }

  for (size_t i = 0; i < s->n_spans && !out->failed; i++) {
    const snap__trace_span_t *sp = &s->spans[i];
    if (!sp->label || sp->thread >= s->n_threads)
      continue;
    event_head(out, &first, "i", s->pid, s->threads[sp->thread].tid);
    snap__tbuf_puts(out, ",\"s\":\"t\",\"ts\":");
    put_us(out, sp->start_ns - base);
    snap__tbuf_puts(out, ",\"name\":");
    snap__tbuf_json_string(out, sp->label);
    snap__tbuf_puts(out, ",\"cat\":\"mark\",\"args\":{\"stack\":");
    scratch.len = 0;
    snap__tbuf_put(&scratch, "", 0);
    uint32_t steps = 0;
    for (uint32_t f = sp->frame; f < s->n_frames && steps < s->n_frames;
         f = s->frames[f].parent, steps++) {
      if (steps)
        snap__tbuf_put(&scratch, "\n", 1);
      snap__tbuf_puts(&scratch, s->frames[f].name);
    }
    snap__tbuf_json_string(out, scratch.failed ? "" : scratch.p);
    snap__tbuf_puts(out, "}}");
  }
  snap__tbuf_printf(out,
                    "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{"
                    "\"producer\":\"stacksnap\",\"ts_base_unix_ns\":\"%" PRIu64
                    "\",\"since_unix_ns\":\"%" PRIu64
                    "\",\"until_unix_ns\":\"%" PRIu64 "\"}}\n",
                    base, s->since_ns, s->until_ns);
  rc = out->failed || scratch.failed ? SNAP_ENOMEM : SNAP_OK;
  free(sl);
  snap__tbuf_free(&scratch);
  return rc;
}
