/*
 * report_json.c — a lag report as JSON text (the format in docs/lag.md).
 *
 * Owns: the text of a report, the names of its kinds (the enum's only
 * translation into text) and the fixed prefix a later start looks for.
 * Must not: write files (report_store.c does) or sample.
 *
 * Why a writer of our own: the report is write-only JSON of a fixed shape;
 * a library dependency for that would be larger than this file. Every
 * string goes through json_string(), which escapes what JSON requires and
 * replaces bytes that are not UTF-8 text (symbol names can hold anything),
 * so a report always parses.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lag/lag.h"

typedef struct buf {
  char *p;
  size_t len, cap;
  bool failed;
} buf_t;

static void reserve(buf_t *b, size_t more) {
  if (b->failed || b->len + more + 1 <= b->cap)
    return;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + more + 1)
    cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) {
    b->failed = true;
    return;
  }
  b->p = p;
  b->cap = cap;
}

static void put(buf_t *b, const char *s, size_t n) {
  reserve(b, n);
  if (b->failed)
    return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void puts_(buf_t *b, const char *s) { put(b, s, strlen(s)); }

static void printf_(buf_t *b, const char *fmt, ...) {
  char tmp[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0)
    put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Length of a valid UTF-8 sequence at s (1..4), or 0. */
static int utf8_len(const unsigned char *s) {
  if (s[0] < 0x80)
    return 1;
  int n = (s[0] & 0xe0) == 0xc0   ? 2
          : (s[0] & 0xf0) == 0xe0 ? 3
          : (s[0] & 0xf8) == 0xf0 ? 4
                                  : 0;
  if (n == 0 || (n == 2 && s[0] < 0xc2))
    return 0;
  for (int i = 1; i < n; i++)
    if ((s[i] & 0xc0) != 0x80)
      return 0;
  return n;
}

static void json_string(buf_t *b, const char *s) {
  if (!s) {
    puts_(b, "null");
    return;
  }
  puts_(b, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    if (*p == '"' || *p == '\\') {
      char esc[2] = {'\\', (char)*p};
      put(b, esc, 2);
      p++;
    } else if (*p < 0x20) {
      printf_(b, "\\u%04x", *p);
      p++;
    } else {
      int n = utf8_len(p);
      if (n == 0) {
        puts_(b, "\\ufffd"); /* not text: never break the document */
        p++;
      } else {
        put(b, (const char *)p, (size_t)n);
        p += n;
      }
    }
  }
  puts_(b, "\"");
}

/* A frame (docs/lag.md): image_offset is pc - image base whenever the
   image is known (what addr2line and a debug file take), symbol_offset pc
   - symbol start when a symbol is; offset keeps schema 1's meaning (the
   symbol's offset, else the image's) for readers of /1. */
static void json_frames(buf_t *b, const snap_stack_t *s) {
  puts_(b, "[");
  int n = snap_stack_count(s);
  for (int i = 0; i < n; i++) {
    const snap_frame_t *f = snap_stack_frame(s, i);
    uintptr_t base = f->symbol ? f->symbol_addr : f->image_base;
    printf_(b, "%s\n    {\"pc\":\"0x%" PRIxPTR "\",\"image\":", i ? "," : "",
            f->pc);
    json_string(b, f->image);
    puts_(b, ",\"symbol\":");
    json_string(b, f->symbol);
    printf_(b, ",\"offset\":%" PRIuPTR,
            base && f->pc >= base ? f->pc - base : f->pc);
    if (f->image_path && f->pc >= f->image_base)
      printf_(b, ",\"image_offset\":\"0x%" PRIxPTR "\"", f->pc - f->image_base);
    else
      puts_(b, ",\"image_offset\":null");
    if (f->symbol && f->pc >= f->symbol_addr)
      printf_(b, ",\"symbol_offset\":%" PRIuPTR, f->pc - f->symbol_addr);
    else
      puts_(b, ",\"symbol_offset\":null");
    printf_(b, ",\"in_app\":%s}", f->in_app ? "true" : "false");
  }
  puts_(b, "]");
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

static void json_images(buf_t *b, const snap__lag_report_t *r) {
  image_set_t set = {0};
  images_add(&set, r->main_stack);
  images_add(&set, r->costliest.stack);
  for (int i = 0; i < r->nthreads; i++)
    images_add(&set, r->threads[i].stack);
  if (set.failed)
    b->failed = true;
  puts_(b, ",\n\"images\":[");
  for (int i = 0; i < set.n; i++) {
    const snap_frame_t *f = set.v[i];
    printf_(b, "%s\n  {\"name\":", i ? "," : "");
    json_string(b, f->image);
    puts_(b, ",\"path\":");
    json_string(b, f->image_path);
    printf_(b,
            ",\"base\":\"0x%" PRIxPTR "\",\"size\":%" PRIuPTR ",\"build_id\":",
            f->image_base, f->image_size);
    json_string(b, f->build_id);
    printf_(b, ",\"in_app\":%s}", f->in_app ? "true" : "false");
  }
  puts_(b, "]");
  free(set.v);
}

static int64_t ms_or_unknown(int64_t ns) { return ns < 0 ? -1 : ns / 1000000; }

/* The split's keys after cpu_ms and wall_ms (docs/lag.md): runnable_ms ...
   major_faults (-1 unknown), then the samples by state ("states") and the
   blocked ones by what they waited in ("blocked_in"). */
static void json_split(buf_t *b, const snap__split_t *s) {
  printf_(b,
          ",\"runnable_ms\":%" PRId64 ",\"blocked_ms\":%" PRId64
          ",\"voluntary_switches\":%" PRId64
          ",\"involuntary_switches\":%" PRId64 ",\"major_faults\":%" PRId64,
          ms_or_unknown(s->runnable_ns), ms_or_unknown(s->blocked_ns),
          s->voluntary, s->involuntary, s->major_faults);
  puts_(b, ",\"states\":{");
  for (unsigned i = 0; i < SNAP__SCHED_STATE_COUNT; i++)
    printf_(b, "%s\"%s\":%u", i ? "," : "", snap__sched_state_name(i),
            s->states[i]);
  puts_(b, "},\"blocked_in\":{");
  for (unsigned i = SNAP__WAIT_NONE + 1; i < SNAP__WAIT_COUNT; i++)
    printf_(b, "%s\"%s\":%u", i > SNAP__WAIT_NONE + 1 ? "," : "",
            snap__sched_wait_name(i), s->waits[i]);
  puts_(b, "}");
}

/* ,"blocked_on":{...} of a thread whose sample waited (docs/lag.md);
   nothing when it did not. owner_name: the owner's name as the report's
   thread list has it, else as read at the capture. */
static void json_wait_fields(buf_t *b, const snap_wait_t *w,
                             const char *owner_name) {
  static const char *const owner[] = {
      [SNAP_OWNER_NONE] = "none",
      [SNAP_OWNER_UNKNOWN] = "unknown",
      [SNAP_OWNER_KNOWN] = "known",
  };
  puts_(b, "\"kind\":");
  json_string(b, snap_wait_kind_name(w->kind));
  if (w->address)
    printf_(b, ",\"address\":\"0x%" PRIxPTR "\"", w->address);
  else
    puts_(b, ",\"address\":null");
  printf_(b, ",\"owner\":\"%s\"",
          w->owner_state <= SNAP_OWNER_KNOWN ? owner[w->owner_state]
                                             : "unknown");
  if (w->owner_state == SNAP_OWNER_KNOWN) {
    printf_(b,
            ",\"owner_tid\":%" PRIu64 ",\"owner_name\":", (uint64_t)w->owner);
    json_string(b, owner_name);
  } else {
    puts_(b, ",\"owner_tid\":null,\"owner_name\":null");
  }
  if (w->kind == SNAP_WAIT_IO && w->fd >= 0)
    printf_(b, ",\"fd\":%d", (int)w->fd);
}

/* The name of the owner of w: from the listed thread, else the capture's. */
static const char *owner_name(const snap__lag_report_t *r,
                              const snap_wait_t *w) {
  for (int i = 0; i < r->nthreads; i++)
    if (r->threads[i].tid == w->owner && r->threads[i].name[0])
      return r->threads[i].name;
  return w->owner_name;
}

static void json_chain(buf_t *b, const snap__lag_report_t *r,
                       const snap__wait_chain_t *c, bool links) {
  puts_(b, "[");
  for (int i = 0; i < c->n; i++) {
    const snap__lag_thread_t *t = &r->threads[c->at[i]];
    if (!links) {
      printf_(b, "%s%" PRIu64, i ? "," : "", (uint64_t)t->tid);
      continue;
    }
    printf_(b, "%s\n  {\"tid\":%" PRIu64 ",\"name\":", i ? "," : "",
            (uint64_t)t->tid);
    json_string(b, t->name);
    puts_(b, ",");
    json_wait_fields(b, &t->wait, owner_name(r, &t->wait));
    if (t->error != SNAP_OK) {
      puts_(b, ",\"error\":");
      json_string(b, snap_strerror(t->error));
    }
    puts_(b, ",\"frames\":");
    json_frames(b, t->stack);
    puts_(b, "}");
  }
  puts_(b, "]");
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
  buf_t b = {0};
  char prefix[128];
  snap__lag_json_prefix(prefix, sizeof prefix, SNAP__LAG_SCHEMA, r->kind,
                        r->ongoing);
  puts_(&b, prefix);
  printf_(&b, ",\n\"start_unix_ms\":%" PRId64, r->start_unix_ms);
  printf_(&b, ",\n\"updated_unix_ms\":%" PRId64, r->updated_unix_ms);
  printf_(&b, ",\n\"duration_ms\":%" PRIu64, r->duration_ms);
  printf_(&b, ",\n\"threshold_ms\":%u", r->threshold_ms);
  if (r->trace[0]) { /* the sampling trace beside it (docs/trace.md) */
    puts_(&b, ",\n\"trace\":");
    json_string(&b, r->trace);
  }
  int64_t pid = snap__plat_process_id();
  printf_(&b, ",\n\"pid\":%" PRId64, pid);
  /* Which process that pid is (a later start tells a live writer from a
     dead one by it); left out when the OS does not say. */
  char start[64];
  if (snap__plat_process_start(pid, start, sizeof start) == SNAP_OK) {
    puts_(&b, ",\n\"pid_start\":");
    json_string(&b, start);
  }
  puts_(&b, ",\n\"os\":");
  json_string(&b, snap__plat_os_name());
  puts_(&b, ",\"arch\":");
  json_string(&b, snap__plat_arch_name());
  printf_(&b, ",\n\"repeats\":%u", r->repeats);
  printf_(&b,
          ",\n\"main_thread\":{\"tid\":%" PRIu64 ",\"cpu_ms\":%" PRId64
          ",\"wall_ms\":%" PRId64,
          (uint64_t)r->main_tid, r->main_cpu_ms, r->main_wall_ms);
  json_split(&b, &r->main_split);
  puts_(&b, "}");
  if (r->cpu_window_ms)
    printf_(&b, ",\n\"cpu\":{\"percent\":%u,\"window_ms\":%u}", r->cpu_percent,
            r->cpu_window_ms);
  if (!r->main_stack && r->main_error != SNAP_OK) {
    puts_(&b, ",\n\"main_stack_error\":");
    json_string(&b, snap_strerror(r->main_error));
  }
  puts_(&b, ",\n\"main_stack\":");
  json_frames(&b, r->main_stack);
  printf_(&b,
          ",\n\"costliest_stack\":{\"hits\":%u,\"samples\":%u,"
          "\"cpu_ms\":%" PRId64 ",\"wall_ms\":%" PRId64 ",\"frames\":",
          r->costliest.hits, r->costliest.samples,
          r->costliest.cpu_ns / 1000000, r->costliest.wall_ns / 1000000);
  json_frames(&b, r->costliest.stack);
  json_split(&b, &r->costliest.split);
  puts_(&b, "}");
  puts_(&b, ",\n\"class\":{\"l1\":");
  json_string(&b, r->l1);
  puts_(&b, ",\"l2\":");
  json_string(&b, r->l2);
  puts_(&b, "}");
  printf_(&b, ",\n\"threads_total\":%d", r->threads_total);
  puts_(&b, ",\n\"threads\":[");
  for (int i = 0; i < r->nthreads; i++) {
    const snap__lag_thread_t *t = &r->threads[i];
    printf_(&b, "%s\n  {\"tid\":%" PRIu64 ",\"name\":", i ? "," : "",
            (uint64_t)t->tid);
    json_string(&b, t->name);
    printf_(&b, ",\"main\":%s,\"running\":%s", t->main ? "true" : "false",
            t->running ? "true" : "false");
    if (t->error != SNAP_OK) {
      puts_(&b, ",\"error\":");
      json_string(&b, snap_strerror(t->error));
    }
    if (t->wait.kind != SNAP_WAIT_NONE) {
      puts_(&b, ",\"blocked_on\":{");
      json_wait_fields(&b, &t->wait, owner_name(r, &t->wait));
      puts_(&b, "}");
    }
    puts_(&b, ",\"frames\":");
    json_frames(&b, t->stack);
    puts_(&b, "}");
  }
  puts_(&b, "]");
  json_images(&b, r);
  /* The chain from main (it waits on something), and a deadlock. */
  if (r->main_chain.n > 0 &&
      r->threads[r->main_chain.at[0]].wait.kind != SNAP_WAIT_NONE) {
    puts_(&b, ",\n\"main_blocked_on\":");
    json_chain(&b, r, &r->main_chain, true);
    if (r->main_chain.truncated)
      puts_(&b, ",\n\"main_blocked_on_truncated\":true");
  }
  if (r->deadlock.n > 0) {
    puts_(&b, ",\n\"deadlock\":");
    json_chain(&b, r, &r->deadlock, false);
    if (r->deadlock.truncated)
      puts_(&b, ",\n\"deadlock_truncated\":true");
  }
  puts_(&b, "\n}\n");
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
