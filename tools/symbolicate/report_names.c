/*
 * report_names.c — names the frames of a report document in place (see
 * report_names.h for the shape and what is filled in).
 *
 * Owns: checking a report, possibly hostile, before anything is named: the
 * images array (types, counts), each frame's pc and its image_offset
 * against the listed images (a report whose offsets disagree with its own
 * image list is refused, never named from a guess); then one pass over
 * every frame, naming it from its image's files (symbol_files.c), with
 * the names printed as the library prints them (demangled, unversioned).
 * Must not: open files itself (the finder does), name a frame from an
 * image whose file's build id differs (the finder refuses those), or
 * recurse deeper than the JSON reader allows (SNAP_JSON_MAX_DEPTH).
 */
#include "report_names.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"

typedef struct image {
  unsigned long long base, size;
  const char *name, *path, *build_id;
  snap_json_t *node;
  bool used;
  snap__symfound_t found; /* once used, on a finder */
} image_t;

typedef struct pass {
  snap_json_doc_t *doc;
  snap__symfinder_t *finder;
  image_t *images;
  size_t n_images;
  image_t **by_base; /* sorted by base */
  snap__report_summary_t *sum;
  bool naming; /* the second pass: check only in the first */
  char *why;
  size_t why_size;
  char path[256]; /* where in the document, for messages */
} pass_t;

static int fail(pass_t *p, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char msg[256];
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(p->why, p->why_size, "%s%s%s", p->path, p->path[0] ? ": " : "", msg);
  return -1;
}

bool snap__parse_hex(const char *s, size_t len, unsigned long long *out) {
  if (!s || len < 3 || len > 18 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
    return false;
  unsigned long long v = 0;
  for (size_t i = 2; i < len; i++) {
    char c = s[i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0)
      return false;
    v = v << 4 | (unsigned)d;
  }
  *out = v;
  return true;
}

/* An optional string member: NULL when absent or null; false when of
   another type. */
static bool opt_string(const snap_json_t *obj, const char *key,
                       const char **out) {
  const snap_json_t *v = snap_json_get(obj, key);
  *out = NULL;
  if (!v || snap_json_type(v) == SNAP_JSON_NULL)
    return true;
  size_t len;
  const char *s = snap_json_string(v, &len);
  if (!s || strlen(s) != len)
    return false; /* not a string, or one with a NUL inside */
  *out = s;
  return true;
}

static int by_base(const void *a, const void *b) {
  const image_t *x = *(image_t *const *)a, *y = *(image_t *const *)b;
  return x->base < y->base ? -1 : x->base > y->base;
}

static int read_images(pass_t *p, snap_json_t *root) {
  snap_json_t *images = snap_json_get(root, "images");
  snprintf(p->path, sizeof p->path, "images");
  if (!snap_json_is(images, SNAP_JSON_ARRAY))
    return fail(p, "missing or not an array (a stacksnap.lag/2 report, or "
                   "JSON of the same shape, lists its images)");
  size_t n = snap_json_count(images);
  if (n > SNAP__REPORT_MAX_IMAGES)
    return fail(p, "%zu images: more than %d", n, SNAP__REPORT_MAX_IMAGES);
  p->images = calloc(n ? n : 1, sizeof *p->images);
  p->by_base = calloc(n ? n : 1, sizeof *p->by_base);
  if (!p->images || !p->by_base)
    return fail(p, "out of memory");
  for (size_t i = 0; i < n; i++) {
    snap_json_t *im = snap_json_at(images, i);
    image_t *m = &p->images[i];
    snprintf(p->path, sizeof p->path, "images[%zu]", i);
    if (!snap_json_is(im, SNAP_JSON_OBJECT))
      return fail(p, "not an object");
    size_t len;
    const char *base = snap_json_string(snap_json_get(im, "base"), &len);
    if (!snap__parse_hex(base, len, &m->base))
      return fail(p, "base: not a hex string \"0x...\"");
    uint64_t size;
    if (!snap_json_uint64(snap_json_get(im, "size"), &size))
      return fail(p, "size: not a non-negative integer");
    m->size = size;
    if (m->base + m->size < m->base)
      return fail(p, "base + size wraps around");
    if (!opt_string(im, "name", &m->name) ||
        !opt_string(im, "path", &m->path) ||
        !opt_string(im, "build_id", &m->build_id))
      return fail(p, "name, path and build_id must be strings or null");
    m->node = im;
    p->by_base[i] = m;
  }
  qsort(p->by_base, n, sizeof *p->by_base, by_base);
  p->n_images = n;
  return 0;
}

/* The listed image holding pc (of overlapping ones, the highest base). */
static image_t *image_of(const pass_t *p, unsigned long long pc) {
  size_t lo = 0, hi = p->n_images;
  while (lo < hi) { /* the first with base > pc */
    size_t mid = lo + (hi - lo) / 2;
    if (p->by_base[mid]->base <= pc)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0)
    return NULL;
  image_t *m = p->by_base[lo - 1];
  return pc - m->base < m->size ? m : NULL;
}

static bool set_str(pass_t *p, snap_json_t *obj, const char *key,
                    const char *s) {
  return snap_json_set_string(p->doc, obj, key, s, strlen(s)) != NULL;
}

/* A function's name as the library prints it: without a symbol version
   (binutils >= 2.35 writes "memcpy@@GLIBC_2.14" into .symtab; no C, C++
   or Swift name holds '@'), demangled (C++, and Swift where its runtime
   is loaded: the library's own demangler). */
static bool set_name(pass_t *p, snap_json_t *f, const char *raw) {
  size_t len = strcspn(raw, "@");
  char *bare = malloc(len + 1);
  if (!bare)
    return false;
  memcpy(bare, raw, len);
  bare[len] = '\0';
  char *demangled = snap__plat_demangle(bare);
  bool ok = set_str(p, f, "symbol", demangled ? demangled : bare);
  free(demangled);
  free(bare);
  return ok;
}

/* One frame, at index `index` of its array. */
static int frame(pass_t *p, snap_json_t *f, size_t index) {
  size_t len;
  const char *pc_text = snap_json_string(snap_json_get(f, "pc"), &len);
  unsigned long long pc;
  if (!snap__parse_hex(pc_text, len, &pc))
    return fail(p, "pc: not a hex string \"0x...\"");
  image_t *m = image_of(p, pc);
  if (!p->naming) {
    if (++p->sum->frames > SNAP__REPORT_MAX_FRAMES)
      return fail(p, "more than %d frames", SNAP__REPORT_MAX_FRAMES);
    snap_json_t *off = snap_json_get(f, "image_offset");
    if (off && snap_json_type(off) != SNAP_JSON_NULL) {
      const char *t = snap_json_string(off, &len);
      unsigned long long o;
      if (!snap__parse_hex(t, len, &o))
        return fail(p, "image_offset: not a hex string or null");
      if (!m)
        return fail(p,
                    "pc %s: no listed image holds it, yet it has an "
                    "image_offset",
                    pc_text);
      if (o != pc - m->base)
        return fail(p, "image_offset %s is not pc %s - base 0x%llx", t, pc_text,
                    m->base);
    }
    if (m) {
      p->sum->in_image++;
      m->used = true;
    }
    return 0;
  }
  if (!m || !(m->found.names || m->found.lines))
    return 0;
  unsigned long long offset = pc - m->base;
  unsigned long long at = index > 0 && offset > 0 ? offset - 1 : offset;
  snap__symname_t nm;
  snap__symname(&m->found, at, &nm);
  bool ok = true;
  if (nm.function && nm.function_start <= offset) {
    p->sum->named++;
    ok = set_name(p, f, nm.function) &&
         snap_json_set_uint64(p->doc, f, "symbol_offset",
                              offset - nm.function_start) &&
         snap_json_set_uint64(p->doc, f, "offset", offset - nm.function_start);
  }
  if (ok && nm.file) {
    p->sum->with_line++;
    ok = set_str(p, f, "source_file", nm.file) &&
         snap_json_set_uint64(p->doc, f, "source_line", nm.line);
    /* The inlined calls there, innermost first (addr2line -i). */
    snap_json_t *arr =
        ok && nm.n_inlined ? snap_json_set_array(p->doc, f, "inlined") : NULL;
    ok = ok && (!nm.n_inlined || arr);
    for (size_t k = 0; ok && k < nm.n_inlined; k++) {
      snap_json_t *e = snap_json_append(p->doc, arr);
      if (e)
        snap_json_assign_object(e);
      ok = e &&
           (!nm.inlined[k].function ||
            set_str(p, e, "function", nm.inlined[k].function)) &&
           (!nm.inlined[k].file ||
            (set_str(p, e, "source_file", nm.inlined[k].file) &&
             snap_json_set_uint64(p->doc, e, "source_line",
                                  nm.inlined[k].line)));
    }
  }
  return ok ? 0 : fail(p, "out of memory");
}

/* Every frame under v: objects with a "pc" inside arrays. */
static int walk(pass_t *p, snap_json_t *v, int depth) {
  if (depth > SNAP_JSON_MAX_DEPTH)
    return fail(p, "nested too deep");
  size_t n = snap_json_count(v), keep = strlen(p->path);
  if (snap_json_is(v, SNAP_JSON_ARRAY)) {
    for (size_t i = 0; i < n; i++) {
      snap_json_t *e = snap_json_at(v, i);
      snprintf(p->path + keep, sizeof p->path - keep, "[%zu]", i);
      if (snap_json_is(e, SNAP_JSON_OBJECT) && snap_json_get(e, "pc") &&
          frame(p, e, i) != 0)
        return -1;
      if (walk(p, e, depth + 1) != 0)
        return -1;
    }
  } else if (snap_json_is(v, SNAP_JSON_OBJECT)) {
    for (size_t i = 0; i < n; i++) {
      const char *key;
      snap_json_t *e = snap_json_member(v, i, &key, NULL);
      if (depth == 0 && strcmp(key, "images") == 0)
        continue;
      snprintf(p->path + keep, sizeof p->path - keep, "%s%s", keep ? "." : "",
               key);
      if (walk(p, e, depth + 1) != 0)
        return -1;
    }
  }
  p->path[keep] = '\0';
  return 0;
}

int snap__report_name(snap_json_doc_t *doc, snap__symfinder_t *finder,
                      snap__report_summary_t *summary, char *why,
                      size_t why_size) {
  pass_t p = {.doc = doc, .finder = finder, .sum = summary};
  p.why = why;
  p.why_size = why_size;
  memset(summary, 0, sizeof *summary);
  why[0] = '\0';
  snap_json_t *root = snap_json_root(doc);
  int rc = -1;
  if (!snap_json_is(root, SNAP_JSON_OBJECT)) {
    fail(&p, "the report is not a JSON object");
    goto out;
  }
  const char *os;
  if (!opt_string(root, "os", &os)) {
    snprintf(p.path, sizeof p.path, "os");
    fail(&p, "not a string");
    goto out;
  }
  summary->apple = os && strcmp(os, "darwin") == 0;
  if (read_images(&p, root) != 0)
    goto out;
  p.path[0] = '\0';
  if (walk(&p, root, 0) != 0) /* check every frame before naming any */
    goto out;
  for (size_t i = 0; i < p.n_images; i++) {
    image_t *m = &p.images[i];
    if (!m->used)
      continue;
    summary->images_used++;
    if (summary->apple || !finder) {
      snprintf(m->found.status, sizeof m->found.status, "%s",
               summary->apple ? "an Apple image: named on a Mac (atos)"
                              : "not looked for");
    } else {
      snap__symfind(finder, m->path, m->build_id, &m->found);
    }
    if (m->found.names)
      summary->images_named++;
    if (!set_str(&p, m->node, "symbols", m->found.status)) {
      fail(&p, "out of memory");
      goto out;
    }
  }
  p.naming = true;
  rc = walk(&p, root, 0);
out:
  free(p.images);
  free(p.by_base);
  return rc;
}
