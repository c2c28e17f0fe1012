/*
 * report_json.c — a lag report as JSON text (the format in docs/lag.md).
 *
 * Owns: the text of a report, the names of its kinds (the enum's only
 * translation into text) and the fixed prefix a later start looks for.
 * Must not: write files (report_store.c does) or sample.
 *
 * Why a writer of our own: the report is write-only JSON of a fixed shape;
 * a library dependency for that would be larger than this file. The text
 * is built in the library's one text buffer (src/report/text_buf.c);
 * every string goes through snap__tbuf_json_string, which escapes what
 * JSON requires and replaces bytes that are not well-formed UTF-8 (symbol
 * names can hold anything; overlong forms and surrogates too, which a
 * strict decoder refuses), so a report always parses.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lag/lag.h"
#include "report/report.h"

/* A frame (docs/lag.md): image_offset is pc - image base whenever the
   image is known (what addr2line and a debug file take), symbol_offset pc
   - symbol start when a symbol is; offset keeps schema 1's meaning (the
   symbol's offset, else the image's) for readers of /1. */
static void json_frames(snap__tbuf_t *b, const snap_stack_t *s) {
  snap__tbuf_puts(b, "[");
  int n = snap_stack_count(s);
  for (int i = 0; i < n; i++) {
    const snap_frame_t *f = snap_stack_frame(s, i);
    uintptr_t base = f->symbol ? f->symbol_addr : f->image_base;
    snap__tbuf_printf(b, "%s\n    {\"pc\":\"0x%" PRIxPTR "\",\"image\":",
                      i ? "," : "", f->pc);
    snap__tbuf_json_string(b, f->image);
    snap__tbuf_puts(b, ",\"symbol\":");
    snap__tbuf_json_string(b, f->symbol);
    snap__tbuf_printf(b, ",\"offset\":%" PRIuPTR,
                      base && f->pc >= base ? f->pc - base : f->pc);
    if (f->image_path && f->pc >= f->image_base)
      snap__tbuf_printf(b, ",\"image_offset\":\"0x%" PRIxPTR "\"",
                        f->pc - f->image_base);
    else
      snap__tbuf_puts(b, ",\"image_offset\":null");
    if (f->symbol && f->pc >= f->symbol_addr)
      snap__tbuf_printf(b, ",\"symbol_offset\":%" PRIuPTR,
                        f->pc - f->symbol_addr);
    else
      snap__tbuf_puts(b, ",\"symbol_offset\":null");
    snap__tbuf_printf(b, ",\"in_app\":%s}", f->in_app ? "true" : "false");
  }
  snap__tbuf_puts(b, "]");
}

/* The images the report's frames point into, each once (by path and
   base), in order of first appearance. */
typedef struct image_set {
  const snap_frame_t **v; /* a frame of each image */
  int n, cap;
  bool failed;
} image_set_t;

static void images_add(image_set_t *set, const snap_stack_t *s) {
  int n = snap_stack_count(s);
  for (int i = 0; i < n && !set->failed; i++) {
    const snap_frame_t *f = snap_stack_frame(s, i);
    if (!f->image_path)
      continue;
    int k = 0;
    while (k < set->n && !(set->v[k]->image_path == f->image_path &&
                           set->v[k]->image_base == f->image_base))
      k++;
    if (k < set->n)
      continue;
    if (set->n == set->cap) {
      int cap = set->cap ? 2 * set->cap : 16;
      const snap_frame_t **v = realloc(set->v, (size_t)cap * sizeof *v);
      if (!v) {
        set->failed = true;
        return;
      }
      set->v = v;
      set->cap = cap;
    }
    set->v[set->n++] = f;
  }
}

static void json_images(snap__tbuf_t *b, const snap__lag_report_t *r) {
  image_set_t set = {0};
  images_add(&set, r->main_stack);
  images_add(&set, r->costliest.stack);
  for (int i = 0; i < r->nthreads; i++)
    images_add(&set, r->threads[i].stack);
  if (set.failed)
    b->failed = true;
  snap__tbuf_puts(b, ",\n\"images\":[");
  for (int i = 0; i < set.n; i++) {
    const snap_frame_t *f = set.v[i];
    snap__tbuf_printf(b, "%s\n  {\"name\":", i ? "," : "");
    snap__tbuf_json_string(b, f->image);
    snap__tbuf_puts(b, ",\"path\":");
    snap__tbuf_json_string(b, f->image_path);
    snap__tbuf_printf(
        b, ",\"base\":\"0x%" PRIxPTR "\",\"size\":%" PRIuPTR ",\"build_id\":",
        f->image_base, f->image_size);
    snap__tbuf_json_string(b, f->build_id);
    snap__tbuf_printf(b, ",\"in_app\":%s}", f->in_app ? "true" : "false");
  }
  snap__tbuf_puts(b, "]");
  free(set.v);
}

static int64_t ms_or_unknown(int64_t ns) { return ns < 0 ? -1 : ns / 1000000; }

/* The report's groups of the blocked samples' kinds ("blocked_in", a
   format older than the kinds: docs/lag.md): the lock kinds are "lock",
   poll is "wait". */
enum { IN_LOCK, IN_IO, IN_SLEEP, IN_WAIT, IN_OTHER, IN_COUNT };
static unsigned blocked_in_group(unsigned kind) {
  switch (kind) {
  case SNAP_WAIT_MUTEX:
  case SNAP_WAIT_RWLOCK:
  case SNAP_WAIT_UNFAIR_LOCK:
  case SNAP_WAIT_CONDVAR:
  case SNAP_WAIT_SEMAPHORE:
  case SNAP_WAIT_FUTEX: return IN_LOCK;
  case SNAP_WAIT_IO: return IN_IO;
  case SNAP_WAIT_SLEEP: return IN_SLEEP;
  case SNAP_WAIT_POLL: return IN_WAIT;
  default: return IN_OTHER;
  }
}

/* The split's keys after cpu_ms and wall_ms (docs/lag.md): runnable_ms ...
   major_faults (-1 unknown), then the samples by state ("states") and the
   blocked ones by what they waited in ("blocked_in"). */
static void json_split(snap__tbuf_t *b, const snap__split_t *s) {
  snap__tbuf_printf(b,
                    ",\"runnable_ms\":%" PRId64 ",\"blocked_ms\":%" PRId64
                    ",\"voluntary_switches\":%" PRId64
                    ",\"involuntary_switches\":%" PRId64
                    ",\"major_faults\":%" PRId64,
                    ms_or_unknown(s->runnable_ns), ms_or_unknown(s->blocked_ns),
                    s->voluntary, s->involuntary, s->major_faults);
  snap__tbuf_puts(b, ",\"states\":{");
  for (unsigned i = 0; i < SNAP__STATE_COUNT; i++)
    snap__tbuf_printf(b, "%s\"%s\":%u", i ? "," : "", snap__state_name(i),
                      (unsigned)s->states[i]);
  unsigned groups[IN_COUNT] = {0};
  for (unsigned k = SNAP_WAIT_NONE + 1; k < SNAP_WAIT_KIND_COUNT; k++)
    groups[blocked_in_group(k)] += s->waits[k];
  static const char *const names[IN_COUNT] = {"lock", "io", "sleep", "wait",
                                              "other"};
  snap__tbuf_puts(b, "},\"blocked_in\":{");
  for (unsigned i = 0; i < IN_COUNT; i++)
    snap__tbuf_printf(b, "%s\"%s\":%u", i ? "," : "", names[i], groups[i]);
  snap__tbuf_puts(b, "}");
}

/* ,"blocked_on":{...} of a thread whose sample waited (docs/lag.md);
   nothing when it did not. owner_name: the owner's name as the report's
   thread list has it, else as read at the capture; why: an unknown
   owner's reason (snap__owner_why_t). */
static void json_wait_fields(snap__tbuf_t *b, const snap_wait_t *w,
                             const char *owner_name, unsigned why) {
  static const char *const owner_unknown[] = {
      [SNAP__OWNER_WHY_NOT_LIVE] = "no_live_thread",
      [SNAP__OWNER_WHY_LATER] = "began_after_wait",
  };
  static const char *const owner[] = {
      [SNAP_OWNER_NONE] = "none",
      [SNAP_OWNER_UNKNOWN] = "unknown",
      [SNAP_OWNER_KNOWN] = "known",
  };
  snap__tbuf_puts(b, "\"kind\":");
  snap__tbuf_json_string(b, snap_wait_kind_name(w->kind));
  if (w->address)
    snap__tbuf_printf(b, ",\"address\":\"0x%" PRIxPTR "\"", w->address);
  else
    snap__tbuf_puts(b, ",\"address\":null");
  snap__tbuf_printf(b, ",\"owner\":\"%s\"",
                    w->owner_state <= SNAP_OWNER_KNOWN ? owner[w->owner_state]
                                                       : "unknown");
  if (w->owner_state == SNAP_OWNER_KNOWN) {
    snap__tbuf_printf(
        b, ",\"owner_tid\":%" PRIu64 ",\"owner_name\":", (uint64_t)w->owner);
    snap__tbuf_json_string(b, owner_name);
  } else {
    snap__tbuf_puts(b, ",\"owner_tid\":null,\"owner_name\":null");
  }
  if (w->owner_state == SNAP_OWNER_UNKNOWN && why > SNAP__OWNER_WHY_NONE &&
      why <= SNAP__OWNER_WHY_LATER)
    snap__tbuf_printf(b, ",\"owner_unknown\":\"%s\"", owner_unknown[why]);
  if (w->kind == SNAP_WAIT_IO && w->fd >= 0)
    snap__tbuf_printf(b, ",\"fd\":%d", (int)w->fd);
}

/* The name of the owner of w: from the listed thread, else the capture's. */
static const char *owner_name(const snap__lag_report_t *r,
                              const snap_wait_t *w) {
  for (int i = 0; i < r->nthreads; i++)
    if (r->threads[i].tid == w->owner && r->threads[i].name[0])
      return r->threads[i].name;
  return w->owner_name;
}

static void json_chain(snap__tbuf_t *b, const snap__lag_report_t *r,
                       const snap__wait_chain_t *c, bool links) {
  snap__tbuf_puts(b, "[");
  for (int i = 0; i < c->n; i++) {
    const snap__lag_thread_t *t = &r->threads[c->at[i]];
    if (!links) {
      snap__tbuf_printf(b, "%s%" PRIu64, i ? "," : "", (uint64_t)t->tid);
      continue;
    }
    snap__tbuf_printf(b, "%s\n  {\"tid\":%" PRIu64 ",\"name\":", i ? "," : "",
                      (uint64_t)t->tid);
    snap__tbuf_json_string(b, t->name);
    snap__tbuf_puts(b, ",");
    json_wait_fields(b, &t->wait, owner_name(r, &t->wait), t->owner_why);
    if (t->error != SNAP_OK) {
      snap__tbuf_puts(b, ",\"error\":");
      snap__tbuf_json_string(b, snap_strerror(t->error));
    }
    snap__tbuf_puts(b, ",\"frames\":");
    json_frames(b, t->stack);
    snap__tbuf_puts(b, "}");
  }
  snap__tbuf_puts(b, "]");
}

const char *snap__lag_kind_name(snap__lag_kind_t kind) {
  static const char *const names[SNAP__KIND_COUNT] = {
      [SNAP__KIND_LAG] = "lag",
      [SNAP__KIND_HANG] = "hang",
      [SNAP__KIND_CPU] = "cpu",
      [SNAP__KIND_HANG_KILLED] = "hang_killed",
  };
  return (unsigned)kind < SNAP__KIND_COUNT ? names[kind] : NULL;
}

int snap__lag_json_prefix(char *out, size_t size, unsigned schema,
                          snap__lag_kind_t kind, bool ongoing) {
  return snprintf(out, size,
                  "{\"schema\":\"stacksnap.lag/%u\",\"kind\":\"%s\","
                  "\"ongoing\":%s",
                  schema, snap__lag_kind_name(kind),
                  ongoing ? "true" : "false");
}

char *snap__lag_report_json(const snap__lag_report_t *r, size_t *len) {
  snap__tbuf_t b = {0};
  char prefix[128];
  snap__lag_json_prefix(prefix, sizeof prefix, SNAP__LAG_SCHEMA, r->kind,
                        r->ongoing);
  snap__tbuf_puts(&b, prefix);
  snap__tbuf_printf(&b, ",\n\"start_unix_ms\":%" PRId64, r->start_unix_ms);
  snap__tbuf_printf(&b, ",\n\"updated_unix_ms\":%" PRId64, r->updated_unix_ms);
  if (r->ongoing && r->next_write_by_unix_ms > 0)
    snap__tbuf_printf(&b, ",\n\"next_write_by_unix_ms\":%" PRId64,
                      r->next_write_by_unix_ms);
  snap__tbuf_printf(&b, ",\n\"duration_ms\":%" PRIu64, r->duration_ms);
  snap__tbuf_printf(&b, ",\n\"threshold_ms\":%u", r->threshold_ms);
  if (r->trace[0]) { /* the sampling trace beside it (docs/trace.md) */
    snap__tbuf_puts(&b, ",\n\"trace\":");
    snap__tbuf_json_string(&b, r->trace);
  }
  int64_t pid = snap__plat_process_id();
  snap__tbuf_printf(&b, ",\n\"pid\":%" PRId64, pid);
  /* Which process that pid is (a later start tells a live writer from a
     dead one by it); left out when the OS does not say. */
  char start[64];
  if (snap__plat_process_start(pid, start, sizeof start) == SNAP_OK) {
    snap__tbuf_puts(&b, ",\n\"pid_start\":");
    snap__tbuf_json_string(&b, start);
  }
  snap__tbuf_puts(&b, ",\n\"os\":");
  snap__tbuf_json_string(&b, snap__plat_os_name());
  snap__tbuf_puts(&b, ",\"arch\":");
  snap__tbuf_json_string(&b, snap__plat_arch_name());
  snap__tbuf_printf(&b, ",\n\"repeats\":%u", r->repeats);
  if (r->kind == SNAP__KIND_LAG || r->kind == SNAP__KIND_HANG)
    snap__tbuf_printf(&b, ",\"dropped_before\":%u", r->dropped_before);
  snap__tbuf_printf(&b,
                    ",\n\"main_thread\":{\"tid\":%" PRIu64
                    ",\"cpu_ms\":%" PRId64 ",\"wall_ms\":%" PRId64,
                    (uint64_t)r->main_tid, r->main_cpu_ms, r->main_wall_ms);
  json_split(&b, &r->main_split);
  if (r->kind == SNAP__KIND_LAG || r->kind == SNAP__KIND_HANG)
    snap__tbuf_printf(&b, ",\"seen_late\":%s", r->seen_late ? "true" : "false");
  snap__tbuf_puts(&b, "}");
  if (r->cpu_window_ms)
    snap__tbuf_printf(&b, ",\n\"cpu\":{\"percent\":%u,\"window_ms\":%u}",
                      r->cpu_percent, r->cpu_window_ms);
  if (!r->main_stack && r->main_error != SNAP_OK) {
    snap__tbuf_puts(&b, ",\n\"main_stack_error\":");
    snap__tbuf_json_string(&b, snap_strerror(r->main_error));
  }
  snap__tbuf_puts(&b, ",\n\"main_stack\":");
  json_frames(&b, r->main_stack);
  snap__tbuf_printf(
      &b,
      ",\n\"costliest_stack\":{\"hits\":%u,\"samples\":%u,"
      "\"cpu_ms\":%" PRId64 ",\"wall_ms\":%" PRId64 ",\"frames\":",
      r->costliest.hits, r->costliest.samples, r->costliest.cpu_ns / 1000000,
      r->costliest.wall_ns / 1000000);
  json_frames(&b, r->costliest.stack);
  json_split(&b, &r->costliest.split);
  snap__tbuf_puts(&b, "}");
  snap__tbuf_puts(&b, ",\n\"class\":{\"l1\":");
  snap__tbuf_json_string(&b, r->l1);
  snap__tbuf_puts(&b, ",\"l2\":");
  snap__tbuf_json_string(&b, r->l2);
  snap__tbuf_puts(&b, "}");
  snap__tbuf_printf(&b, ",\n\"threads_total\":%d", r->threads_total);
  snap__tbuf_puts(&b, ",\n\"threads\":[");
  for (int i = 0; i < r->nthreads; i++) {
    const snap__lag_thread_t *t = &r->threads[i];
    snap__tbuf_printf(&b, "%s\n  {\"tid\":%" PRIu64 ",\"name\":", i ? "," : "",
                      (uint64_t)t->tid);
    snap__tbuf_json_string(&b, t->name);
    /* "running": on a CPU or wanting one, as src/blocked/ judged it. */
    bool running = t->state.state == SNAP__STATE_RUNNING ||
                   t->state.state == SNAP__STATE_RUNNABLE ||
                   t->state.state == SNAP__STATE_READY;
    snap__tbuf_printf(&b, ",\"main\":%s,\"running\":%s",
                      t->main ? "true" : "false", running ? "true" : "false");
    if (t->error != SNAP_OK) {
      snap__tbuf_puts(&b, ",\"error\":");
      snap__tbuf_json_string(&b, snap_strerror(t->error));
    }
    if (t->state.state == SNAP__STATE_BLOCKED &&
        t->wait.kind != SNAP_WAIT_NONE) {
      snap__tbuf_puts(&b, ",\"blocked_on\":{");
      json_wait_fields(&b, &t->wait, owner_name(r, &t->wait), t->owner_why);
      snap__tbuf_puts(&b, "}");
    }
    snap__tbuf_puts(&b, ",\"frames\":");
    json_frames(&b, t->stack);
    snap__tbuf_puts(&b, "}");
  }
  snap__tbuf_puts(&b, "]");
  json_images(&b, r);
  /* The chain from main (it waits on something), and a deadlock. */
  if (r->main_chain.n > 0 &&
      r->threads[r->main_chain.at[0]].wait.kind != SNAP_WAIT_NONE) {
    snap__tbuf_puts(&b, ",\n\"main_blocked_on\":");
    json_chain(&b, r, &r->main_chain, true);
    if (r->main_chain.truncated)
      snap__tbuf_puts(&b, ",\n\"main_blocked_on_truncated\":true");
  }
  if (r->deadlock.n > 0) {
    snap__tbuf_puts(&b, ",\n\"deadlock\":");
    json_chain(&b, r, &r->deadlock, false);
    if (r->deadlock.truncated)
      snap__tbuf_puts(&b, ",\n\"deadlock_truncated\":true");
  }
  snap__tbuf_puts(&b, "\n}\n");
  if (b.failed) {
    free(b.p);
    return NULL;
  }
  *len = b.len;
  return b.p;
}

void snap__lag_report_clear(snap__lag_report_t *r) {
  snap_stack_release(r->main_stack);
  snap_stack_release(r->costliest.stack);
  for (int i = 0; i < r->nthreads; i++)
    snap_stack_release(r->threads[i].stack);
  free(r->threads);
  memset(r, 0, sizeof *r);
}

/* A top-level number of a report's text: every top-level key starts a
   line (report_store.c's top_field rule); -1 when absent. */
static int64_t top_number(const char *text, const char *key) {
  char pat[48];
  int n = snprintf(pat, sizeof pat, "\n\"%s\":", key);
  const char *p = n > 0 && (size_t)n < sizeof pat ? strstr(text, pat) : NULL;
  if (!p || p[n] < '0' || p[n] > '9')
    return -1;
  return strtoll(p + n, NULL, 10);
}

int snap__lag_killed_bounds(const char *text, char *buf, size_t size) {
  int64_t after = top_number(text, "updated_unix_ms");
  int64_t by = top_number(text, "next_write_by_unix_ms");
  int n = 0;
  if (after >= 0 && by >= after)
    n = snprintf(buf, size,
                 ",\"killed_after_unix_ms\":%" PRId64
                 ",\"killed_by_unix_ms\":%" PRId64,
                 after, by);
  else if (after >= 0)
    n = snprintf(buf, size, ",\"killed_after_unix_ms\":%" PRId64, after);
  return n > 0 && (size_t)n < size ? n : 0;
}
