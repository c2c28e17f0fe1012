/*
 * json.c — stacksnap-symbolicate's JSON (json.h) on yyjson 0.10.0
 * (third_party/yyjson) for reading, and the library's string escaper
 * (src/report/text_buf.c) for writing.
 *
 * Owns: the limits of a report read here (input size, nesting depth, no
 * NUL byte), error messages with line and column, an index cursor that
 * makes walking yyjson's linked containers linear, and the writer's
 * layout (Python's json.dumps: compact, or indent=2).
 *
 * Reading: yyjson_read_opts with YYJSON_READ_NUMBER_AS_RAW (every number
 * keeps its text: 19-digit pcs stay exact and floats are written back as
 * read), strict by default (RFC 8259: no comments, trailing commas, NaN,
 * invalid UTF-8 or lone surrogates), then a mutable copy (yyjson_mut_doc)
 * that the program amends. yyjson's reader does not recurse; the depth
 * limit is a scan of the text's brackets before it reads. Numbers the program
 * sets are raw too, so a number is one type here (SNAP_JSON_NUMBER).
 *
 * Writing: a recursive walk (depth bounded by the parser's limit plus the
 * program's few levels, checked) into a snap__tbuf_t; every string, key
 * or value, goes through snap__tbuf_json_string, the library's one JSON
 * string rule (strict UTF-8 kept, each maximal bad subpart as \ufffd, '"'
 * and '\\' escaped, control characters as \u00XX), so a report named here
 * and a trace the library writes escape alike.
 *
 * Indexing: yyjson's mutable arrays and objects are circular lists, so
 * element i costs i steps; per-thread cursors (container, index, node), one
 * per container walked, make the usual walk (i = 0, 1, 2, ..., nested)
 * one step each. A value turned
 * into another, a parse and a free reset it; appends and new members keep
 * every index, so they keep it.
 *
 * Must not: recurse on input, read past len, print, or abort on any input.
 */
#include "json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"
#include "yyjson.h"

struct snap_json_doc {
  yyjson_mut_doc *doc;
};

/* snap_json_t is yyjson_mut_val, by cast. */
static yyjson_mut_val *V(const snap_json_t *v) { return (yyjson_mut_val *)v; }
static snap_json_t *S(yyjson_mut_val *v) { return (snap_json_t *)v; }

/* ---- The cursor --------------------------------------------------------- */

/* One cursor per container being walked: a walk nests (the frames of an
   array, the members of each), so a few, least recently used replaced. */
#define CURSORS 16
typedef struct cursor {
  const yyjson_mut_val *ctn;
  size_t index;
  yyjson_mut_val *node; /* array: the element; object: the key */
  unsigned long long used;
} cursor_t;
static _Thread_local cursor_t cursors[CURSORS];
static _Thread_local unsigned long long cursor_clock;

static void cursor_reset(void) { memset(cursors, 0, sizeof cursors); }

/* v's contents change (it becomes another value): its cursor goes.
   Appends and new members keep every index, so they keep it. */
static void forget(const yyjson_mut_val *v) {
  for (int i = 0; i < CURSORS; i++)
    if (cursors[i].ctn == v)
      memset(&cursors[i], 0, sizeof cursors[i]);
}

/* The first element of a non-empty array, or the first key of an object:
   uni.ptr is the last element (key); an element's next is the next
   element, a key's next its value, whose next is the next key. */
static yyjson_mut_val *first(yyjson_mut_val *c) {
  yyjson_mut_val *last = c->uni.ptr;
  return yyjson_mut_is_obj(c) ? last->next->next : last->next;
}

/* Element i of an array, or the key of member i of an object. */
static yyjson_mut_val *nth(yyjson_mut_val *c, size_t i) {
  bool obj = yyjson_mut_is_obj(c);
  size_t n = obj                    ? yyjson_mut_obj_size(c)
             : yyjson_mut_is_arr(c) ? yyjson_mut_arr_size(c)
                                    : 0;
  if (i >= n)
    return NULL;
  cursor_t *cur = &cursors[0];
  for (int j = 0; j < CURSORS; j++) {
    if (cursors[j].ctn == c) {
      cur = &cursors[j];
      break;
    }
    if (cursors[j].used < cur->used)
      cur = &cursors[j];
  }
  size_t k = 0;
  yyjson_mut_val *x = first(c);
  if (cur->ctn == c && cur->index <= i) {
    k = cur->index;
    x = cur->node;
  }
  for (; k < i; k++)
    x = obj ? x->next->next : x->next;
  cur->ctn = c;
  cur->index = i;
  cur->node = x;
  cur->used = ++cursor_clock;
  return x;
}

/* ---- Documents ---------------------------------------------------------- */

const char *snap_json_reader_version(void) {
  return "yyjson " YYJSON_VERSION_STRING;
}

/* Fills err: message "line L col C (byte B): reason". */
static void set_error(snap_json_error_t *err, const char *text, size_t len,
                      size_t at, const char *reason) {
  if (!err)
    return;
  if (at > len)
    at = len;
  size_t line = 1, col = 1;
  for (size_t i = 0; i < at; i++) {
    if (text[i] == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  err->offset = at;
  err->line = line;
  err->col = col;
  snprintf(err->message, sizeof err->message, "line %zu col %zu (byte %zu): %s",
           line, col, at, reason);
}

/* The offset of the first bracket nested deeper than SNAP_JSON_MAX_DEPTH,
   or len: brackets outside strings, counted before yyjson reads (on a text
   that is not JSON the count may be off; yyjson refuses that anyway). */
static size_t too_deep(const char *t, size_t len) {
  size_t depth = 0;
  bool in_str = false;
  for (size_t i = 0; i < len; i++) {
    char c = t[i];
    if (in_str) {
      if (c == '\\')
        i++;
      else if (c == '"')
        in_str = false;
    } else if (c == '"') {
      in_str = true;
    } else if (c == '[' || c == '{') {
      if (++depth > SNAP_JSON_MAX_DEPTH)
        return i;
    } else if (c == ']' || c == '}') {
      depth--;
    }
  }
  return len;
}

snap_json_doc_t *snap_json_parse(const char *text, size_t len, size_t max_input,
                                 snap_json_error_t *err) {
  if (max_input == 0)
    max_input = SNAP_JSON_DEFAULT_MAX_INPUT;
  if (max_input > SNAP_JSON_MAX_INPUT_CEILING)
    max_input = SNAP_JSON_MAX_INPUT_CEILING;
  char reason[96];
  if (len > max_input) {
    snprintf(reason, sizeof reason, "larger than the limit (%zu bytes)",
             max_input);
    set_error(err, text, 0, 0, reason);
    return NULL;
  }
  const char *nul = len ? memchr(text, '\0', len) : NULL;
  if (nul) {
    set_error(err, text, len, (size_t)(nul - text), "a NUL byte");
    return NULL;
  }
  size_t deep = too_deep(text, len);
  if (deep < len) {
    snprintf(reason, sizeof reason, "nesting deeper than %d",
             SNAP_JSON_MAX_DEPTH);
    set_error(err, text, len, deep, reason);
    return NULL;
  }
  yyjson_read_err re;
  yyjson_doc *in =
      yyjson_read_opts((char *)text, len, YYJSON_READ_NUMBER_AS_RAW, NULL, &re);
  if (!in) {
    set_error(err, text, len, re.pos, re.msg ? re.msg : "not JSON");
    return NULL;
  }
  snap_json_doc_t *doc = malloc(sizeof *doc);
  yyjson_mut_doc *m = doc ? yyjson_doc_mut_copy(in, NULL) : NULL;
  yyjson_doc_free(in);
  if (!m) {
    free(doc);
    set_error(err, text, len, 0, "out of memory");
    return NULL;
  }
  doc->doc = m;
  cursor_reset();
  return doc;
}

snap_json_doc_t *snap_json_doc_new(void) {
  snap_json_doc_t *doc = malloc(sizeof *doc);
  yyjson_mut_doc *m = doc ? yyjson_mut_doc_new(NULL) : NULL;
  yyjson_mut_val *root = m ? yyjson_mut_null(m) : NULL;
  if (!root) {
    yyjson_mut_doc_free(m);
    free(doc);
    return NULL;
  }
  yyjson_mut_doc_set_root(m, root);
  doc->doc = m;
  return doc;
}

void snap_json_free(snap_json_doc_t *doc) {
  if (!doc)
    return;
  cursor_reset();
  yyjson_mut_doc_free(doc->doc);
  free(doc);
}

snap_json_t *snap_json_root(const snap_json_doc_t *doc) {
  return doc ? S(yyjson_mut_doc_get_root(doc->doc)) : NULL;
}

/* ---- Reading ------------------------------------------------------------ */

snap_json_type_t snap_json_type(const snap_json_t *v) {
  switch (yyjson_mut_get_type(V(v))) {
  case YYJSON_TYPE_BOOL: return SNAP_JSON_BOOL;
  case YYJSON_TYPE_RAW:
  case YYJSON_TYPE_NUM: return SNAP_JSON_NUMBER;
  case YYJSON_TYPE_STR: return SNAP_JSON_STRING;
  case YYJSON_TYPE_ARR: return SNAP_JSON_ARRAY;
  case YYJSON_TYPE_OBJ: return SNAP_JSON_OBJECT;
  default: return SNAP_JSON_NULL;
  }
}

bool snap_json_is(const snap_json_t *v, snap_json_type_t type) {
  return v && snap_json_type(v) == type;
}

const char *snap_json_type_name(snap_json_type_t type) {
  static const char *const names[] = {"null",   "bool",  "number",
                                      "string", "array", "object"};
  return (unsigned)type < sizeof names / sizeof names[0] ? names[type]
                                                         : "unknown";
}

size_t snap_json_count(const snap_json_t *v) {
  if (yyjson_mut_is_arr(V(v)))
    return yyjson_mut_arr_size(V(v));
  if (yyjson_mut_is_obj(V(v)))
    return yyjson_mut_obj_size(V(v));
  return 0;
}

snap_json_t *snap_json_at(const snap_json_t *array, size_t i) {
  return yyjson_mut_is_arr(V(array)) ? S(nth(V(array), i)) : NULL;
}

snap_json_t *snap_json_member(const snap_json_t *object, size_t i,
                              const char **key, size_t *key_len) {
  yyjson_mut_val *k = yyjson_mut_is_obj(V(object)) ? nth(V(object), i) : NULL;
  if (!k)
    return NULL;
  if (key)
    *key = yyjson_mut_get_str(k);
  if (key_len)
    *key_len = yyjson_mut_get_len(k);
  return S(k->next);
}

snap_json_t *snap_json_get_n(const snap_json_t *object, const char *key,
                             size_t key_len) {
  size_t n = yyjson_mut_is_obj(V(object)) ? yyjson_mut_obj_size(V(object)) : 0;
  yyjson_mut_val *k = n ? first(V(object)) : NULL;
  for (size_t i = 0; i < n; i++, k = k->next->next)
    if (yyjson_mut_get_len(k) == key_len &&
        memcmp(yyjson_mut_get_str(k), key, key_len) == 0)
      return S(k->next);
  return NULL;
}

snap_json_t *snap_json_get(const snap_json_t *object, const char *key) {
  return snap_json_get_n(object, key, strlen(key));
}

const char *snap_json_string(const snap_json_t *v, size_t *len) {
  if (!yyjson_mut_is_str(V(v)))
    return NULL;
  if (len)
    *len = yyjson_mut_get_len(V(v));
  return yyjson_mut_get_str(V(v));
}

bool snap_json_bool(const snap_json_t *v, bool *out) {
  if (!yyjson_mut_is_bool(V(v)))
    return false;
  *out = yyjson_mut_get_bool(V(v));
  return true;
}

const char *snap_json_number_text(const snap_json_t *v, size_t *len) {
  if (!yyjson_mut_is_raw(V(v)))
    return NULL;
  if (len)
    *len = yyjson_mut_get_len(V(v));
  return yyjson_mut_get_raw(V(v));
}

/* The value of an integer-syntax number text, its sign apart. */
static bool magnitude(const char *t, bool *neg, uint64_t *mag) {
  *neg = *t == '-';
  t += *neg;
  if (!*t)
    return false;
  uint64_t m = 0;
  for (; *t; t++) {
    if (*t < '0' || *t > '9')
      return false; /* a fraction or an exponent: not an integer */
    unsigned d = (unsigned)(*t - '0');
    if (m > (UINT64_MAX - d) / 10)
      return false;
    m = m * 10 + d;
  }
  *mag = m;
  return true;
}

bool snap_json_int64(const snap_json_t *v, int64_t *out) {
  const char *t = snap_json_number_text(v, NULL);
  bool neg;
  uint64_t m;
  if (!t || !magnitude(t, &neg, &m))
    return false;
  if (neg ? m > (uint64_t)INT64_MAX + 1 : m > (uint64_t)INT64_MAX)
    return false;
  *out = neg ? (m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m)
             : (int64_t)m;
  return true;
}

bool snap_json_uint64(const snap_json_t *v, uint64_t *out) {
  const char *t = snap_json_number_text(v, NULL);
  bool neg;
  uint64_t m;
  if (!t || !magnitude(t, &neg, &m) || (neg && m != 0))
    return false;
  *out = m;
  return true;
}

bool snap_json_double(const snap_json_t *v, double *out) {
  const char *t = snap_json_number_text(v, NULL);
  if (!t)
    return false;
  /* yyjson's own number reader: locale-independent, correctly rounded;
     a magnitude past a double's is an error (not infinity). */
  yyjson_val num;
  yyjson_read_err re;
  if (!yyjson_read_number(t, &num, 0, NULL, &re))
    return false;
  if (yyjson_is_real(&num))
    *out = yyjson_get_real(&num);
  else if (yyjson_is_sint(&num))
    *out = (double)yyjson_get_sint(&num);
  else if (yyjson_is_uint(&num))
    *out = (double)yyjson_get_uint(&num);
  else
    return false;
  return true;
}

/* ---- Editing ------------------------------------------------------------ */

snap_json_t *snap_json_set(snap_json_doc_t *doc, snap_json_t *obj,
                           const char *key) {
  if (!doc || !yyjson_mut_is_obj(V(obj)))
    return NULL;
  snap_json_t *v = snap_json_get(obj, key);
  if (v) {
    forget(V(v));
    yyjson_mut_set_null(V(v));
    return v;
  }
  yyjson_mut_val *k = yyjson_mut_strcpy(doc->doc, key);
  yyjson_mut_val *n = k ? yyjson_mut_null(doc->doc) : NULL;
  if (!n || !yyjson_mut_obj_add(V(obj), k, n))
    return NULL;
  return S(n);
}

bool snap_json_assign_string(snap_json_doc_t *doc, snap_json_t *v,
                             const char *s, size_t len) {
  yyjson_mut_val *copy = yyjson_mut_strncpy(doc->doc, s ? s : "", len);
  if (!copy)
    return false;
  forget(V(v));
  return yyjson_mut_set_strn(V(v), yyjson_mut_get_str(copy), len);
}

static bool assign_number(snap_json_doc_t *doc, snap_json_t *v,
                          const char *text) {
  yyjson_mut_val *copy = yyjson_mut_rawcpy(doc->doc, text);
  if (!copy)
    return false;
  forget(V(v));
  return yyjson_mut_set_raw(V(v), yyjson_mut_get_raw(copy), strlen(text));
}

bool snap_json_assign_int64(snap_json_doc_t *doc, snap_json_t *v,
                            int64_t value) {
  char t[24];
  snprintf(t, sizeof t, "%lld", (long long)value);
  return assign_number(doc, v, t);
}

bool snap_json_assign_uint64(snap_json_doc_t *doc, snap_json_t *v,
                             uint64_t value) {
  char t[24];
  snprintf(t, sizeof t, "%llu", (unsigned long long)value);
  return assign_number(doc, v, t);
}

void snap_json_assign_bool(snap_json_t *v, bool value) {
  forget(V(v));
  yyjson_mut_set_bool(V(v), value);
}
void snap_json_assign_null(snap_json_t *v) {
  forget(V(v));
  yyjson_mut_set_null(V(v));
}
void snap_json_assign_object(snap_json_t *v) {
  forget(V(v));
  yyjson_mut_set_obj(V(v));
}
void snap_json_assign_array(snap_json_t *v) {
  forget(V(v));
  yyjson_mut_set_arr(V(v));
}

snap_json_t *snap_json_set_string(snap_json_doc_t *doc, snap_json_t *obj,
                                  const char *key, const char *s, size_t len) {
  snap_json_t *v = snap_json_set(doc, obj, key);
  return v && snap_json_assign_string(doc, v, s, len) ? v : NULL;
}
snap_json_t *snap_json_set_int64(snap_json_doc_t *doc, snap_json_t *obj,
                                 const char *key, int64_t value) {
  snap_json_t *v = snap_json_set(doc, obj, key);
  return v && snap_json_assign_int64(doc, v, value) ? v : NULL;
}
snap_json_t *snap_json_set_uint64(snap_json_doc_t *doc, snap_json_t *obj,
                                  const char *key, uint64_t value) {
  snap_json_t *v = snap_json_set(doc, obj, key);
  return v && snap_json_assign_uint64(doc, v, value) ? v : NULL;
}
snap_json_t *snap_json_set_bool(snap_json_doc_t *doc, snap_json_t *obj,
                                const char *key, bool value) {
  snap_json_t *v = snap_json_set(doc, obj, key);
  if (v)
    snap_json_assign_bool(v, value);
  return v;
}
snap_json_t *snap_json_set_null(snap_json_doc_t *doc, snap_json_t *obj,
                                const char *key) {
  return snap_json_set(doc, obj, key);
}
snap_json_t *snap_json_set_object(snap_json_doc_t *doc, snap_json_t *obj,
                                  const char *key) {
  snap_json_t *v = snap_json_set(doc, obj, key);
  if (v)
    snap_json_assign_object(v);
  return v;
}
snap_json_t *snap_json_set_array(snap_json_doc_t *doc, snap_json_t *obj,
                                 const char *key) {
  snap_json_t *v = snap_json_set(doc, obj, key);
  if (v)
    snap_json_assign_array(v);
  return v;
}

snap_json_t *snap_json_append(snap_json_doc_t *doc, snap_json_t *array) {
  if (!doc || !yyjson_mut_is_arr(V(array)))
    return NULL;
  yyjson_mut_val *n = yyjson_mut_null(doc->doc);
  if (!n || !yyjson_mut_arr_append(V(array), n))
    return NULL;
  return S(n);
}

/* ---- Writing ------------------------------------------------------------ */

/* A string of len bytes (may hold NUL) as a JSON literal, by the library's
   rule (snap__tbuf_json_string, which stops at a NUL: each NUL between
   the pieces is written as \u0000). */
static void put_string(snap__tbuf_t *b, const char *s, size_t len) {
  if (!memchr(s, '\0', len)) {
    snap__tbuf_json_string(b, s);
    return;
  }
  snap__tbuf_t piece = {0};
  snap__tbuf_put(b, "\"", 1);
  for (size_t at = 0; at <= len;) {
    const char *end = memchr(s + at, '\0', len - at);
    size_t n = end ? (size_t)(end - (s + at)) : len - at;
    piece.len = 0;
    snap__tbuf_json_string(&piece, s + at); /* stops at the NUL */
    if (piece.failed) {
      b->failed = true;
      break;
    }
    snap__tbuf_put(b, piece.p + 1, piece.len - 2); /* without the quotes */
    if (!end)
      break;
    snap__tbuf_put(b, "\\u0000", 6);
    at += n + 1;
  }
  snap__tbuf_put(b, "\"", 1);
  snap__tbuf_free(&piece);
}

static void newline(snap__tbuf_t *b, int depth) {
  snap__tbuf_put(b, "\n", 1);
  for (int i = 0; i < depth; i++)
    snap__tbuf_put(b, "  ", 2);
}

/* The parser's limit, plus the levels the program adds. */
#define WRITE_MAX_DEPTH (SNAP_JSON_MAX_DEPTH + 16)

static bool write_value(snap__tbuf_t *b, yyjson_mut_val *v, bool pretty,
                        int depth) {
  if (depth > WRITE_MAX_DEPTH)
    return false;
  switch (yyjson_mut_get_type(v)) {
  case YYJSON_TYPE_BOOL:
    snap__tbuf_puts(b, yyjson_mut_get_bool(v) ? "true" : "false");
    return true;
  case YYJSON_TYPE_RAW:
    snap__tbuf_put(b, yyjson_mut_get_raw(v), yyjson_mut_get_len(v));
    return true;
  case YYJSON_TYPE_STR:
    put_string(b, yyjson_mut_get_str(v), yyjson_mut_get_len(v));
    return true;
  case YYJSON_TYPE_ARR:
  case YYJSON_TYPE_OBJ: {
    bool obj = yyjson_mut_is_obj(v);
    size_t n = obj ? yyjson_mut_obj_size(v) : yyjson_mut_arr_size(v);
    snap__tbuf_put(b, obj ? "{" : "[", 1);
    yyjson_mut_val *x = n ? first(v) : NULL;
    for (size_t i = 0; i < n; i++) {
      if (i)
        snap__tbuf_put(b, ",", 1);
      if (pretty)
        newline(b, depth + 1);
      if (obj) {
        put_string(b, yyjson_mut_get_str(x), yyjson_mut_get_len(x));
        snap__tbuf_put(b, pretty ? ": " : ":", pretty ? 2 : 1);
        x = x->next;
      }
      if (!write_value(b, x, pretty, depth + 1))
        return false;
      x = x->next;
    }
    if (pretty && n)
      newline(b, depth);
    snap__tbuf_put(b, obj ? "}" : "]", 1);
    return true;
  }
  default: snap__tbuf_puts(b, "null"); return true;
  }
}

static bool write_all(const snap_json_t *v, unsigned flags, snap__tbuf_t *b) {
  if (!write_value(b, V(v), flags & SNAP_JSON_PRETTY, 0))
    return false;
  if (flags & SNAP_JSON_FINAL_NEWLINE)
    snap__tbuf_put(b, "\n", 1);
  if (!b->p) /* nothing written at all: still a string */
    snap__tbuf_put(b, "", 0);
  return !b->failed;
}

char *snap_json_write_string(const snap_json_t *v, unsigned flags,
                             size_t *len) {
  snap__tbuf_t b = {0};
  if (!write_all(v, flags, &b)) {
    snap__tbuf_free(&b);
    return NULL;
  }
  if (len)
    *len = b.len;
  return b.p;
}

int snap_json_write_file(const snap_json_t *v, unsigned flags, FILE *f) {
  if (!f)
    return EINVAL;
  snap__tbuf_t b = {0};
  int rc = 0;
  if (!write_all(v, flags, &b))
    rc = ENOMEM;
  else if ((errno = 0, fwrite(b.p, 1, b.len, f) != b.len) || fflush(f) != 0)
    rc = errno ? errno : EIO;
  snap__tbuf_free(&b);
  return rc;
}
