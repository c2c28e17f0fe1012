/*
 * report_text.c — a named report as text: every stack in the frame layout
 * of scripts/lag-report.py (Apple's callStackSymbols: index, image, pc,
 * "symbol + offset"; "image + offset" when unnamed), with "(file:line)"
 * where a line table said, then the images and what named each; for an
 * Apple report, the Spotlight and atos lines a Mac user runs (atos.c).
 *
 * Owns: the text only. Must not: change the document, or leave a failed
 * write unreported (a closed pipe, a full disk: the caller exits non-zero).
 */
#include "report_text.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "atos.h"
#include "report_names.h"

typedef struct out {
  FILE *f;
  bool failed;
  char path[256];
} out_t;

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
  const char *image = str(fr, "image"), *symbol = str(fr, "symbol");
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
  const char *file = str(fr, "source_file");
  if (file && snap_json_uint64(snap_json_get(fr, "source_line"), &u))
    say(o, " (%s:%" PRIu64 ")", file, u);
  say(o, "\n");
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
    say(o, "\n%s", o->path);
    if (thread) {
      int64_t tid = 0;
      snap_json_int64(snap_json_get(thread, "tid"), &tid);
      const char *name = str(thread, "name");
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

/* The pcs of the frames under v that lie in [base, base + size). */
typedef struct pcs {
  uint64_t *v;
  size_t n, cap;
  bool oom;
} pcs_t;

static void collect(pcs_t *p, const snap_json_t *v, unsigned long long base,
                    unsigned long long size, int depth) {
  if (depth > SNAP_JSON_MAX_DEPTH || p->oom)
    return;
  size_t n = snap_json_count(v);
  bool ok;
  unsigned long long pc = hex_of(v, "pc", &ok);
  if (ok && pc - base < size) {
    bool seen = false;
    for (size_t i = 0; i < p->n && !seen; i++)
      seen = p->v[i] == pc;
    if (!seen) {
      if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        uint64_t *nv = realloc(p->v, cap * sizeof *nv);
        if (!nv) {
          p->oom = true;
          return;
        }
        p->v = nv;
        p->cap = cap;
      }
      p->v[p->n++] = pc;
    }
  }
  for (size_t i = 0; i < n; i++) {
    const char *key = NULL;
    const snap_json_t *e = snap_json_is(v, SNAP_JSON_ARRAY)
                               ? snap_json_at(v, i)
                               : snap_json_member(v, i, &key, NULL);
    if (!(key && depth == 0 && strcmp(key, "images") == 0))
      collect(p, e, base, size, depth + 1);
  }
}

int snap__report_text(FILE *f, const snap_json_doc_t *doc,
                      const snap__report_summary_t *sum) {
  out_t o = {.f = f};
  const snap_json_t *root = snap_json_root(doc);
  const char *schema = str(root, "schema"), *kind = str(root, "kind");
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
    const char *name = str(im, "name"), *id = str(im, "build_id"),
               *path = str(im, "path"), *status = str(im, "symbols");
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
    for (size_t i = 0; i < snap_json_count(images) && !o.failed; i++) {
      const snap_json_t *im = snap_json_at(images, i);
      bool ok;
      unsigned long long base = hex_of(im, "base", &ok);
      uint64_t size = 0;
      snap_json_uint64(snap_json_get(im, "size"), &size);
      pcs_t p = {0};
      collect(&p, root, base, size, 0);
      if (p.oom)
        o.failed = true;
      else if (p.n > 0) {
        say(&o, "\n");
        int rc = snap__atos_lines(f, arch ? arch : "arm64", str(im, "name"),
                                  str(im, "path"), str(im, "build_id"), base,
                                  p.v, p.n);
        if (rc != 0)
          say(&o, "# (no atos line: the report's arch, name or UUID is not "
                  "one atos takes)\n");
      }
      free(p.v);
    }
  }
  if (fflush(f) != 0)
    o.failed = true;
  return o.failed ? -1 : 0;
}
