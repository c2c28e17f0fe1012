/*
 * report_text.c — a named report as text: every stack in the frame layout
 * of scripts/lag-report.py (Apple's callStackSymbols: index, image, pc,
 * "symbol + offset"; "image + offset" when unnamed), with "(file:line)"
 * where a line table said, then the images and what named each; for an
 * Apple report, the Spotlight and atos lines a Mac user runs (atos.c).
 *
 * Owns: the text only. Every string that comes from the report (or from
 * the files it led to: symbol and file names) goes through esc() first
 * (text_escape.c): a report is hostile, and a terminal acts on ESC, C1,
 * CR and newline. Must not: change the document, print a report string
 * unescaped, or leave a failed write unreported (a closed pipe, a full
 * disk: the caller exits non-zero).
 */
#include "report_text.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "atos.h"
#include "report_names.h"
#include "text_escape.h"

#define SLOTS 6 /* report strings in one line */

typedef struct out {
  FILE *f;
  bool failed;
  char path[256];
  char *slot[SLOTS]; /* esc()'s buffers, reused line after line */
  size_t slot_size[SLOTS];
} out_t;

/* s escaped for a terminal, in buffer `slot` (valid until the next esc()
   of that slot); NULL stays NULL. Out of memory: a placeholder, and the
   write fails. */
static const char *esc(out_t *o, int slot, const char *s) {
  if (!s)
    return NULL;
  size_t len = strlen(s), need = snap__text_escape(NULL, 0, s, len) + 1;
  if (need > o->slot_size[slot]) {
    char *b = realloc(o->slot[slot], need);
    if (!b) {
      o->failed = true;
      return "?";
    }
    o->slot[slot] = b;
    o->slot_size[slot] = need;
  }
  snap__text_escape(o->slot[slot], o->slot_size[slot], s, len);
  return o->slot[slot];
}

static void say(out_t *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(out_t *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (vfprintf(o->f, fmt, ap) < 0)
    o->failed = true;
  va_end(ap);
}

static const char *str(const snap_json_t *obj, const char *key) {
  size_t len;
  const char *s = snap_json_string(snap_json_get(obj, key), &len);
  return s && strlen(s) == len ? s : NULL;
}

static unsigned long long hex_of(const snap_json_t *obj, const char *key,
                                 bool *ok) {
  size_t len;
  const char *s = snap_json_string(snap_json_get(obj, key), &len);
  unsigned long long v = 0;
  *ok = snap__parse_hex(s, len, &v);
  return v;
}

/* lag-report.py's frame_line, byte for byte, plus the source position. */
static void frame_line(out_t *o, size_t i, const snap_json_t *fr) {
  const char *image = esc(o, 0, str(fr, "image")),
             *symbol = esc(o, 1, str(fr, "symbol"));
  bool ok, image_ok;
  unsigned long long pc = hex_of(fr, "pc", &ok);
  unsigned long long image_offset = hex_of(fr, "image_offset", &image_ok);
  /* As lag-report.py: the symbol's offset when named, the image's when
     not, else schema 1's `offset`. */
  uint64_t u, offset = 0;
  if (symbol && snap_json_uint64(snap_json_get(fr, "symbol_offset"), &u))
    offset = u;
  else if (!symbol && image_ok)
    offset = image_offset;
  else if (snap_json_uint64(snap_json_get(fr, "offset"), &u))
    offset = u;
  if (!image || !image[0])
    image = "???";
  bool in_app = false;
  snap_json_bool(snap_json_get(fr, "in_app"), &in_app);
  say(o, "%s %-4zu%-30s 0x%016llx %s + %" PRIu64, in_app ? "*" : " ", i, image,
      pc, symbol ? symbol : image, offset);
  const char *file = esc(o, 2, str(fr, "source_file"));
  if (file && snap_json_uint64(snap_json_get(fr, "source_line"), &u))
    say(o, " (%s:%" PRIu64 ")", file, u);
  say(o, "\n");
  /* The inlined calls at the frame, innermost first: each function
     inlined, and where it was called. */
  const snap_json_t *in = snap_json_get(fr, "inlined");
  for (size_t k = 0;
       k < snap_json_count(in) && snap_json_is(in, SNAP_JSON_ARRAY); k++) {
    const snap_json_t *e = snap_json_at(in, k);
    const char *fn = esc(o, 0, str(e, "function")),
               *at = esc(o, 1, str(e, "source_file"));
    say(o, "%43s inlined %s", "", fn ? fn : "??");
    if (at && snap_json_uint64(snap_json_get(e, "source_line"), &u))
      say(o, ", called at %s:%" PRIu64, at, u);
    say(o, "\n");
  }
}

static bool is_frames(const snap_json_t *v) {
  return snap_json_is(v, SNAP_JSON_ARRAY) && snap_json_count(v) > 0 &&
         snap_json_get(snap_json_at(v, 0), "pc");
}

/* Prints every array of frames under v, headed by where it is. thread:
   the innermost object with a "tid" above it, for the heading. */
static void stacks(out_t *o, const snap_json_t *v, const snap_json_t *thread,
                   int depth) {
  if (depth > SNAP_JSON_MAX_DEPTH || o->failed)
    return;
  size_t keep = strlen(o->path), n = snap_json_count(v);
  if (snap_json_get(v, "tid"))
    thread = v;
  if (is_frames(v)) {
    say(o, "\n%s", esc(o, 0, o->path));
    if (thread) {
      int64_t tid = 0;
      snap_json_int64(snap_json_get(thread, "tid"), &tid);
      const char *name = esc(o, 1, str(thread, "name"));
      say(o, " (thread %" PRId64 "%s%s%s)", tid, name ? " '" : "",
          name ? name : "", name ? "'" : "");
    }
    say(o, ":\n");
    for (size_t i = 0; i < n; i++)
      frame_line(o, i, snap_json_at(v, i));
    return;
  }
  for (size_t i = 0; i < n && !o->failed; i++) {
    const char *key = NULL;
    const snap_json_t *e = snap_json_is(v, SNAP_JSON_ARRAY)
                               ? snap_json_at(v, i)
                               : snap_json_member(v, i, &key, NULL);
    if (key && depth == 0 && strcmp(key, "images") == 0)
      continue;
    if (key)
      snprintf(o->path + keep, sizeof o->path - keep, "%s%s", keep ? "." : "",
               key);
    else
      snprintf(o->path + keep, sizeof o->path - keep, "[%zu]", i);
    stacks(o, e, thread, depth + 1);
  }
  o->path[keep] = '\0';
}

/* Every frame's pc under v with its place in the document (for the
   atos lines: one walk of the document for all images, not one per
   image; a pc's first place is its place in the line). */
typedef struct seen_pc {
  uint64_t pc;
  size_t at;
} seen_pc_t;

typedef struct pcs {
  seen_pc_t *v;
  size_t n, cap;
  bool oom;
} pcs_t;

static void collect(pcs_t *p, const snap_json_t *v, int depth) {
  if (depth > SNAP_JSON_MAX_DEPTH || p->oom)
    return;
  bool ok;
  unsigned long long pc = hex_of(v, "pc", &ok);
  if (ok) {
    if (p->n == p->cap) {
      size_t cap = p->cap ? 2 * p->cap : 64;
      seen_pc_t *nv = realloc(p->v, cap * sizeof *nv);
      if (!nv) {
        p->oom = true;
        return;
      }
      p->v = nv;
      p->cap = cap;
    }
    p->v[p->n] = (seen_pc_t){pc, p->n};
    p->n++;
  }
  size_t n = snap_json_count(v);
  for (size_t i = 0; i < n; i++) {
    const char *key = NULL;
    const snap_json_t *e = snap_json_is(v, SNAP_JSON_ARRAY)
                               ? snap_json_at(v, i)
                               : snap_json_member(v, i, &key, NULL);
    if (!(key && depth == 0 && strcmp(key, "images") == 0))
      collect(p, e, depth + 1);
  }
}

static int by_pc(const void *a, const void *b) {
  const seen_pc_t *x = a, *y = b;
  if (x->pc != y->pc)
    return x->pc < y->pc ? -1 : 1;
  return x->at < y->at ? -1 : x->at > y->at;
}

static int by_place(const void *a, const void *b) {
  const seen_pc_t *x = a, *y = b;
  return x->at < y->at ? -1 : x->at > y->at;
}

/* Sorts by pc and keeps each pc's first place only. */
static void sort_unique(pcs_t *p) {
  qsort(p->v, p->n, sizeof *p->v, by_pc);
  size_t k = 0;
  for (size_t i = 0; i < p->n; i++)
    if (k == 0 || p->v[k - 1].pc != p->v[i].pc)
      p->v[k++] = p->v[i];
  p->n = k;
}

/* The first of the sorted pcs at or above base. */
static size_t lower_bound(const pcs_t *p, uint64_t base) {
  size_t lo = 0, hi = p->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (p->v[mid].pc < base)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* The atos lines of one image: its pcs in the order the report first
   shows them. */
static void atos_image(out_t *o, const snap_json_t *im, const char *arch,
                       const pcs_t *p) {
  bool ok;
  unsigned long long base = hex_of(im, "base", &ok);
  uint64_t size = 0;
  snap_json_uint64(snap_json_get(im, "size"), &size);
  size_t from = lower_bound(p, base), to = from;
  while (to < p->n && p->v[to].pc - base < size)
    to++;
  if (to == from)
    return;
  seen_pc_t *mine = malloc((to - from) * sizeof *mine);
  uint64_t *pcs = malloc((to - from) * sizeof *pcs);
  if (!mine || !pcs) {
    o->failed = true;
  } else {
    memcpy(mine, p->v + from, (to - from) * sizeof *mine);
    qsort(mine, to - from, sizeof *mine, by_place);
    for (size_t i = 0; i < to - from; i++)
      pcs[i] = mine[i].pc;
    say(o, "\n");
    if (snap__atos_lines(o->f, arch, str(im, "name"), str(im, "path"),
                         str(im, "build_id"), base, pcs, to - from) != 0)
      say(o, "# (no atos line: the report's arch, name or UUID is not "
             "one atos takes)\n");
  }
  free(mine);
  free(pcs);
}

int snap__report_text(FILE *f, const snap_json_doc_t *doc,
                      const snap__report_summary_t *sum) {
  out_t o = {.f = f};
  const snap_json_t *root = snap_json_root(doc);
  const char *schema = esc(&o, 0, str(root, "schema")),
             *kind = esc(&o, 1, str(root, "kind"));
  say(&o, "Report: %s%s%s\n", schema ? schema : "(no schema)",
      kind ? ", kind " : "", kind ? kind : "");
  uint64_t dur;
  if (snap_json_uint64(snap_json_get(root, "duration_ms"), &dur))
    say(&o, "Duration: %" PRIu64 " ms\n", dur);
  say(&o,
      "Frames: %zu, %zu in listed images, %zu named here (%zu with "
      "file:line)\n",
      sum->frames, sum->in_image, sum->named, sum->with_line);
  say(&o, "Frames: * = the app's own image (in_app), innermost first\n");
  stacks(&o, root, NULL, 0);

  const snap_json_t *images = snap_json_get(root, "images");
  say(&o, "\nImages (base - end, name, build id, path):\n");
  for (size_t i = 0; i < snap_json_count(images); i++) {
    const snap_json_t *im = snap_json_at(images, i);
    bool ok, in_app = false;
    unsigned long long base = hex_of(im, "base", &ok);
    uint64_t size = 0;
    snap_json_uint64(snap_json_get(im, "size"), &size);
    snap_json_bool(snap_json_get(im, "in_app"), &in_app);
    const char *name = esc(&o, 0, str(im, "name")),
               *id = esc(&o, 1, str(im, "build_id")),
               *path = esc(&o, 2, str(im, "path")),
               *status = esc(&o, 3, str(im, "symbols"));
    say(&o, "%s 0x%llx - 0x%llx %s <%s> %s\n", in_app ? "*" : " ", base,
        base + size, name ? name : "???", id ? id : "no build id",
        path ? path : "");
    if (status)
      say(&o, "    symbols: %s\n", status);
  }
  if (sum->apple && !o.failed) {
    const char *arch = str(root, "arch");
    say(&o, "\nOn a Mac, per image: find its dSYM by UUID, then name its "
            "frames with atos:\n");
    pcs_t p = {0};
    collect(&p, root, 0);
    if (p.oom)
      o.failed = true;
    else
      sort_unique(&p);
    for (size_t i = 0; i < snap_json_count(images) && !o.failed; i++)
      atos_image(&o, snap_json_at(images, i), arch ? arch : "arm64", &p);
    free(p.v);
  }
  if (fflush(f) != 0)
    o.failed = true;
  for (int i = 0; i < SLOTS; i++)
    free(o.slot[i]);
  return o.failed ? -1 : 0;
}
