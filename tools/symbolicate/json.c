/*
 * json.c — stacksnap-symbolicate's JSON: a strict parser into an arena-owned
 * tree, the tree's accessors and edits, and a writer (json.h).
 *
 * Owns: the grammar of RFC 8259 and its limits here (input size, nesting
 * depth), the document arena, and the escaping of every string written.
 *
 * Algorithm. The parser is one loop over an explicit stack of open
 * containers (at most SNAP_JSON_MAX_DEPTH): "expect a value" reads a
 * scalar or opens a container; "have a value" adds it to the innermost open
 * container and reads ',' or the closing bracket. The children of open
 * containers wait in two scratch vectors (elements, members); a closing
 * bracket copies its slice into the arena once, so each container holds an
 * exact array and nodes never move. Every node consumes at least one input
 * byte, so nodes are bounded by the input size. Strings are decoded (and
 * their UTF-8 checked byte by byte, per Unicode's table 3-7) straight into
 * the arena; numbers keep their text. The writer walks the tree with its
 * own stack too, into a 4 KiB buffer flushed to a FILE * or a string.
 *
 * Must not: recurse (a hostile report nests a million deep), read past len,
 * trust a NUL terminator in the input, print, or abort on any input.
 * Overflow of every size computed from input is checked.
 */
#include "json.h"

#include <errno.h>
#include <locale.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct member {
  const char *key;
  size_t key_len;
  snap_json_t *value;
} member_t;

struct snap_json {
  uint8_t type;   /* snap_json_type_t */
  bool boolean;   /* SNAP_JSON_BOOL */
  uint32_t count; /* containers: members or elements */
  union {
    char *text; /* strings (decoded) and numbers (source text), NUL-ended */
    snap_json_t **items;
    member_t *members;
  } u;
  size_t size; /* strings, numbers: length; containers: capacity */
};

/* ---- Arena ---------------------------------------------------------------
   Chunks of growing size (4 KiB to 1 MiB) in a list; a request larger than
   the next chunk gets a chunk of its own. Everything is freed at once. */

typedef struct chunk {
  struct chunk *next;
  size_t used, cap;
} chunk_t;

#define CHUNK_HEADER ((sizeof(chunk_t) + 15) & ~(size_t)15)
#define CHUNK_MIN ((size_t)4096)
#define CHUNK_MAX ((size_t)1 << 20)

struct snap_json_doc {
  chunk_t *chunks;
  size_t next_chunk;
  snap_json_t *root;
};

static void *arena_alloc(snap_json_doc_t *doc, size_t size) {
  if (size > SIZE_MAX / 2)
    return NULL;
  size = (size + 7) & ~(size_t)7; /* nodes hold pointers and size_t */
  chunk_t *c = doc->chunks;
  if (!c || c->cap - c->used < size) {
    size_t cap = doc->next_chunk;
    if (cap < size)
      cap = size;
    c = malloc(CHUNK_HEADER + cap);
    if (!c)
      return NULL;
    c->used = 0;
    c->cap = cap;
    if (doc->chunks && size > doc->next_chunk) {
      /* A large block: behind the current chunk, whose room stays usable. */
      c->next = doc->chunks->next;
      doc->chunks->next = c;
    } else {
      c->next = doc->chunks;
      doc->chunks = c;
      if (doc->next_chunk < CHUNK_MAX)
        doc->next_chunk *= 2;
    }
  }
  void *p = (char *)c + CHUNK_HEADER + c->used;
  c->used += size;
  return p;
}

static snap_json_t *new_node(snap_json_doc_t *doc, snap_json_type_t type) {
  snap_json_t *v = arena_alloc(doc, sizeof *v);
  if (v) {
    memset(v, 0, sizeof *v);
    v->type = (uint8_t)type;
  }
  return v;
}

static char *arena_copy(snap_json_doc_t *doc, const char *s, size_t len) {
  if (len == SIZE_MAX)
    return NULL;
  char *p = arena_alloc(doc, len + 1);
  if (p) {
    if (len)
      memcpy(p, s, len);
    p[len] = '\0';
  }
  return p;
}

static snap_json_doc_t *doc_alloc(void) {
  snap_json_doc_t *doc = calloc(1, sizeof *doc);
  if (doc)
    doc->next_chunk = CHUNK_MIN;
  return doc;
}

void snap_json_free(snap_json_doc_t *doc) {
  if (!doc)
    return;
  for (chunk_t *c = doc->chunks, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  free(doc);
}

snap_json_doc_t *snap_json_doc_new(void) {
  snap_json_doc_t *doc = doc_alloc();
  if (doc && !(doc->root = new_node(doc, SNAP_JSON_NULL))) {
    snap_json_free(doc);
    return NULL;
  }
  return doc;
}

snap_json_t *snap_json_root(const snap_json_doc_t *doc) {
  return doc ? doc->root : NULL;
}

/* ---- UTF-8 ----------------------------------------------------------------
   The length of the well-formed sequence at s (at most n bytes), or 0 when
   it is not one: Unicode 15, table 3-7 (no overlongs, no surrogates, no
   code point beyond U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  if (c < 0x80)
    return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF; /* bounds of the second byte */
  if (c >= 0xC2 && c <= 0xDF)
    len = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0)
      lo = 0xA0;
    else if (c == 0xED)
      hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0)
      lo = 0x90;
    else if (c == 0xF4)
      hi = 0x8F;
  } else
    return 0;
  if (n < len || s[1] < lo || s[1] > hi)
    return 0;
  for (size_t i = 2; i < len; i++)
    if (s[i] < 0x80 || s[i] > 0xBF)
      return 0;
  return len;
}

static size_t utf8_put(char *out, uint32_t cp) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* ---- Parser ------------------------------------------------------------- */

typedef struct frame {
  snap_json_t *node;
  size_t start;    /* first scratch slot of its children */
  const char *key; /* objects: the key read, waiting for its value */
  size_t key_len;
} frame_t;

typedef struct parser {
  const unsigned char *s;
  size_t len, pos;
  snap_json_doc_t *doc;
  snap_json_error_t *err;
  bool failed;
  snap_json_t **items; /* scratch: elements of open arrays */
  size_t n_items, cap_items;
  member_t *mems; /* scratch: members of open objects */
  size_t n_mems, cap_mems;
  size_t depth;
  frame_t frames[SNAP_JSON_MAX_DEPTH];
} parser_t;

static void fail_at(parser_t *p, size_t offset, const char *fmt, ...) {
  if (p->failed)
    return;
  p->failed = true;
  if (!p->err)
    return;
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < offset && i < p->len; i++)
    if (p->s[i] == '\n') {
      line++;
      line_start = i + 1;
    }
  p->err->offset = offset;
  p->err->line = line;
  p->err->col = offset - line_start + 1;
  char reason[120];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  snprintf(p->err->message, sizeof p->err->message,
           "line %zu col %zu (byte %zu): %s", line, p->err->col, offset,
           reason);
}

static void fail_oom(parser_t *p) { fail_at(p, p->pos, "out of memory"); }

/* The byte at pos, for a message: 'x' or byte 0xNN. */
static const char *describe(parser_t *p, size_t pos, char buf[16]) {
  if (pos >= p->len)
    return "end of input";
  unsigned char c = p->s[pos];
  if (c == 0)
    return "a NUL byte";
  if (c >= 0x21 && c < 0x7F)
    snprintf(buf, 16, "'%c'", c);
  else
    snprintf(buf, 16, "byte 0x%02x", c);
  return buf;
}

static void skip_ws(parser_t *p) {
  while (p->pos < p->len) {
    unsigned char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
      return;
    p->pos++;
  }
}

static int hex4(const unsigned char *s) {
  int v = 0;
  for (int i = 0; i < 4; i++) {
    unsigned char c = s[i];
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return -1;
    v = v * 16 + d;
  }
  return v;
}

/* A string at pos (its '"'), decoded into the arena. Its decoded form is
   never longer than its source, so one block of the source's length holds
   it. */
static char *parse_string(parser_t *p, size_t *out_len) {
  const unsigned char *s = p->s;
  size_t open = p->pos, end = open + 1;
  while (end < p->len && s[end] != '"')
    end += s[end] == '\\' ? 2 : 1;
  if (end > p->len)
    end = p->len;
  char *out = arena_alloc(p->doc, end - open);
  if (!out) {
    fail_oom(p);
    return NULL;
  }
  size_t n = 0, i = open + 1;
  char what[16];
  for (;;) {
    if (i >= p->len) {
      fail_at(p, i, "unexpected end of input in a string (opened at byte %zu)",
              open);
      return NULL;
    }
    unsigned char c = s[i];
    if (c == '"')
      break;
    if (c < 0x20) {
      fail_at(p, i, "%s in a string (control characters must be escaped)",
              c ? "a control character" : "a NUL byte");
      return NULL;
    }
    if (c >= 0x80) {
      size_t k = utf8_seq(s + i, p->len - i);
      if (!k) {
        fail_at(p, i, "invalid UTF-8 (byte 0x%02x)", c);
        return NULL;
      }
      memcpy(out + n, s + i, k);
      n += k;
      i += k;
      continue;
    }
    if (c != '\\') {
      out[n++] = (char)c;
      i++;
      continue;
    }
    if (i + 1 >= p->len) {
      fail_at(p, i + 1, "unexpected end of input in an escape");
      return NULL;
    }
    unsigned char e = s[i + 1];
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *hit = e ? strchr(from, e) : NULL;
    if (hit) {
      out[n++] = to[hit - from];
      i += 2;
      continue;
    }
    if (e != 'u') {
      fail_at(p, i, "invalid escape: a backslash and %s",
              describe(p, i + 1, what));
      return NULL;
    }
    int cp = p->len - i >= 6 ? hex4(s + i + 2) : -1;
    if (cp < 0) {
      fail_at(p, i, "invalid \\u escape (four hex digits expected)");
      return NULL;
    }
    i += 6;
    if (cp >= 0xDC00 && cp <= 0xDFFF) {
      fail_at(p, i - 6, "lone surrogate \\u%04X (a low surrogate first)", cp);
      return NULL;
    }
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      int lo = p->len - i >= 6 && s[i] == '\\' && s[i + 1] == 'u'
                   ? hex4(s + i + 2)
                   : -1;
      if (lo < 0xDC00 || lo > 0xDFFF) {
        fail_at(p, i - 6, "lone surrogate \\u%04X (no low surrogate after it)",
                cp);
        return NULL;
      }
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      i += 6;
    }
    n += utf8_put(out + n, (uint32_t)cp);
  }
  out[n] = '\0';
  p->pos = i + 1;
  *out_len = n;
  return out;
}

static snap_json_t *parse_number(parser_t *p) {
  const unsigned char *s = p->s;
  size_t start = p->pos, i = start;
  char what[16];
#define DIGIT(k) ((k) < p->len && s[k] >= '0' && s[k] <= '9')
  if (s[i] == '-')
    i++;
  if (!DIGIT(i)) {
    fail_at(p, i, "expected a digit after '-', got %s", describe(p, i, what));
    return NULL;
  }
  if (s[i] == '0') {
    i++;
    if (DIGIT(i)) {
      fail_at(p, start, "a number with a leading zero");
      return NULL;
    }
  } else
    while (DIGIT(i))
      i++;
  if (i < p->len && s[i] == '.') {
    i++;
    if (!DIGIT(i)) {
      fail_at(p, i, "expected a digit after '.', got %s", describe(p, i, what));
      return NULL;
    }
    while (DIGIT(i))
      i++;
  }
  if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < p->len && (s[i] == '+' || s[i] == '-'))
      i++;
    if (!DIGIT(i)) {
      fail_at(p, i, "expected a digit in the exponent, got %s",
              describe(p, i, what));
      return NULL;
    }
    while (DIGIT(i))
      i++;
  }
#undef DIGIT
  snap_json_t *v = new_node(p->doc, SNAP_JSON_NUMBER);
  if (!v ||
      !(v->u.text = arena_copy(p->doc, (const char *)s + start, i - start))) {
    fail_oom(p);
    return NULL;
  }
  v->size = i - start;
  p->pos = i;
  return v;
}

static snap_json_t *parse_scalar(parser_t *p) {
  static const struct {
    const char *text;
    size_t len;
    snap_json_type_t type;
    bool value;
  } words[] = {{"true", 4, SNAP_JSON_BOOL, true},
               {"false", 5, SNAP_JSON_BOOL, false},
               {"null", 4, SNAP_JSON_NULL, false}};
  unsigned char c = p->s[p->pos];
  char what[16];
  if (c == '"') {
    size_t len;
    char *text = parse_string(p, &len);
    if (!text)
      return NULL;
    snap_json_t *v = new_node(p->doc, SNAP_JSON_STRING);
    if (!v) {
      fail_oom(p);
      return NULL;
    }
    v->u.text = text;
    v->size = len;
    return v;
  }
  if (c == '-' || (c >= '0' && c <= '9'))
    return parse_number(p);
  for (size_t w = 0; w < sizeof words / sizeof words[0]; w++)
    if (c == (unsigned char)words[w].text[0]) {
      if (p->len - p->pos < words[w].len ||
          memcmp(p->s + p->pos, words[w].text, words[w].len)) {
        fail_at(p, p->pos, "invalid literal (expected %s)", words[w].text);
        return NULL;
      }
      snap_json_t *v = new_node(p->doc, words[w].type);
      if (!v) {
        fail_oom(p);
        return NULL;
      }
      v->boolean = words[w].value;
      p->pos += words[w].len;
      return v;
    }
  if (c == 'N' || c == 'I')
    fail_at(p, p->pos,
            "expected a value, got %s (NaN and Infinity are not "
            "JSON)",
            describe(p, p->pos, what));
  else if (c == '/')
    fail_at(p, p->pos, "expected a value, got '/' (JSON has no comments)");
  else
    fail_at(p, p->pos, "expected a value, got %s", describe(p, p->pos, what));
  return NULL;
}

/* Doubles a scratch vector (returned; NULL when out of memory, the old one
   kept). */
static void *grow(void *vec, size_t *cap, size_t elem) {
  size_t n = *cap ? *cap * 2 : 64;
  if (n > SIZE_MAX / elem)
    return NULL;
  void *q = realloc(vec, n * elem);
  if (q)
    *cap = n;
  return q;
}

/* Reads a key and its ':' at pos (after '{' or ','), into the top frame. */
static bool parse_key(parser_t *p) {
  char what[16];
  skip_ws(p);
  if (p->pos >= p->len || p->s[p->pos] != '"') {
    if (p->pos < p->len && p->s[p->pos] == '}')
      fail_at(p, p->pos, "expected a key, got '}' (a trailing comma?)");
    else
      fail_at(p, p->pos, "expected a key (a string), got %s",
              describe(p, p->pos, what));
    return false;
  }
  frame_t *f = &p->frames[p->depth - 1];
  if (!(f->key = parse_string(p, &f->key_len)))
    return false;
  skip_ws(p);
  if (p->pos >= p->len || p->s[p->pos] != ':') {
    fail_at(p, p->pos, "expected ':' after a key, got %s",
            describe(p, p->pos, what));
    return false;
  }
  p->pos++;
  return true;
}

/* Closes the top container: its children leave the scratch vector for an
   exact array in the arena. */
static snap_json_t *close_container(parser_t *p) {
  frame_t *f = &p->frames[--p->depth];
  snap_json_t *v = f->node;
  if (v->type == SNAP_JSON_ARRAY) {
    size_t n = p->n_items - f->start;
    if (n) {
      v->u.items = arena_alloc(p->doc, n * sizeof *v->u.items);
      if (!v->u.items) {
        fail_oom(p);
        return NULL;
      }
      memcpy(v->u.items, p->items + f->start, n * sizeof *v->u.items);
    }
    v->count = (uint32_t)n;
    v->size = n;
    p->n_items = f->start;
  } else {
    size_t n = p->n_mems - f->start;
    if (n) {
      v->u.members = arena_alloc(p->doc, n * sizeof *v->u.members);
      if (!v->u.members) {
        fail_oom(p);
        return NULL;
      }
      memcpy(v->u.members, p->mems + f->start, n * sizeof *v->u.members);
    }
    v->count = (uint32_t)n;
    v->size = n;
    p->n_mems = f->start;
  }
  return v;
}

static snap_json_t *parse_text(parser_t *p) {
  char what[16];
  snap_json_t *v;
  if (p->len >= 3 && !memcmp(p->s, "\xEF\xBB\xBF", 3)) {
    fail_at(p, 0, "a byte order mark (JSON text has none)");
    return NULL;
  }
  for (;;) {
    /* Expect a value. */
    skip_ws(p);
    if (p->pos >= p->len) {
      fail_at(p, p->pos, "unexpected end of input (expected a value)");
      return NULL;
    }
    unsigned char c = p->s[p->pos];
    if (c == '[' || c == '{') {
      if (p->depth == SNAP_JSON_MAX_DEPTH) {
        fail_at(p, p->pos, "nesting deeper than %d", SNAP_JSON_MAX_DEPTH);
        return NULL;
      }
      v = new_node(p->doc, c == '[' ? SNAP_JSON_ARRAY : SNAP_JSON_OBJECT);
      if (!v) {
        fail_oom(p);
        return NULL;
      }
      frame_t *f = &p->frames[p->depth++];
      f->node = v;
      f->start = c == '[' ? p->n_items : p->n_mems;
      f->key = NULL;
      p->pos++;
      skip_ws(p);
      if (p->pos < p->len && p->s[p->pos] == (c == '[' ? ']' : '}')) {
        p->pos++;
        if (!(v = close_container(p)))
          return NULL;
      } else if (c == '[') {
        continue;
      } else {
        if (!parse_key(p))
          return NULL;
        continue;
      }
    } else if (c == ']' && p->depth &&
               p->frames[p->depth - 1].node->type == SNAP_JSON_ARRAY) {
      fail_at(p, p->pos, "expected a value, got ']' (a trailing comma?)");
      return NULL;
    } else if (!(v = parse_scalar(p))) {
      return NULL;
    }
    /* Have a value v: give it to the innermost open container. */
    for (;;) {
      if (!p->depth)
        return v;
      frame_t *f = &p->frames[p->depth - 1];
      bool array = f->node->type == SNAP_JSON_ARRAY;
      if (array) {
        if (p->n_items == p->cap_items) {
          snap_json_t **q = grow(p->items, &p->cap_items, sizeof *q);
          if (!q) {
            fail_oom(p);
            return NULL;
          }
          p->items = q;
        }
        p->items[p->n_items++] = v;
      } else {
        if (p->n_mems == p->cap_mems) {
          member_t *q = grow(p->mems, &p->cap_mems, sizeof *q);
          if (!q) {
            fail_oom(p);
            return NULL;
          }
          p->mems = q;
        }
        p->mems[p->n_mems++] = (member_t){f->key, f->key_len, v};
      }
      skip_ws(p);
      char close = array ? ']' : '}';
      if (p->pos < p->len && p->s[p->pos] == ',') {
        p->pos++;
        if (!array && !parse_key(p))
          return NULL;
        break; /* to the next value */
      }
      if (p->pos < p->len && p->s[p->pos] == close) {
        p->pos++;
        if (!(v = close_container(p)))
          return NULL;
        continue;
      }
      if (p->pos >= p->len)
        fail_at(p, p->pos, "unexpected end of input in an %s",
                array ? "array" : "object");
      else
        fail_at(p, p->pos, "expected ',' or '%c', got %s", close,
                describe(p, p->pos, what));
      return NULL;
    }
  }
}

snap_json_doc_t *snap_json_parse(const char *text, size_t len, size_t max_input,
                                 snap_json_error_t *err) {
  parser_t *p = calloc(1, sizeof *p);
  snap_json_doc_t *doc = doc_alloc();
  if (err)
    memset(err, 0, sizeof *err);
  if (!p || !doc) {
    free(p);
    snap_json_free(doc);
    if (err)
      snprintf(err->message, sizeof err->message, "out of memory");
    return NULL;
  }
  p->s = (const unsigned char *)text;
  p->len = len;
  p->doc = doc;
  p->err = err;
  if (!max_input)
    max_input = SNAP_JSON_DEFAULT_MAX_INPUT;
  if (max_input > SNAP_JSON_MAX_INPUT_CEILING)
    max_input = SNAP_JSON_MAX_INPUT_CEILING;
  snap_json_t *root = NULL;
  if (!text && len) {
    fail_at(p, 0, "no text");
  } else if (len > max_input) {
    p->len = 0; /* the message's line count reads nothing */
    fail_at(p, 0, "input of %zu bytes is larger than the limit (%zu bytes)",
            len, max_input);
  } else if ((root = parse_text(p))) {
    skip_ws(p);
    if (p->pos < p->len) {
      char what[16];
      fail_at(p, p->pos, "data after the JSON value: %s",
              describe(p, p->pos, what));
    }
  }
  bool failed = p->failed || !root;
  free(p->items);
  free(p->mems);
  free(p);
  if (failed) {
    snap_json_free(doc);
    return NULL;
  }
  doc->root = root;
  return doc;
}

/* ---- Reading ------------------------------------------------------------ */

snap_json_type_t snap_json_type(const snap_json_t *v) {
  return v ? (snap_json_type_t)v->type : SNAP_JSON_NULL;
}

bool snap_json_is(const snap_json_t *v, snap_json_type_t type) {
  return v && v->type == type;
}

const char *snap_json_type_name(snap_json_type_t type) {
  static const char *const names[] = {"null",   "bool",  "number",
                                      "string", "array", "object"};
  return (unsigned)type < sizeof names / sizeof names[0] ? names[type]
                                                         : "unknown";
}

size_t snap_json_count(const snap_json_t *v) {
  return v && (v->type == SNAP_JSON_ARRAY || v->type == SNAP_JSON_OBJECT)
             ? v->count
             : 0;
}

snap_json_t *snap_json_at(const snap_json_t *array, size_t i) {
  if (!snap_json_is(array, SNAP_JSON_ARRAY) || i >= array->count)
    return NULL;
  return array->u.items[i];
}

snap_json_t *snap_json_member(const snap_json_t *object, size_t i,
                              const char **key, size_t *key_len) {
  if (!snap_json_is(object, SNAP_JSON_OBJECT) || i >= object->count)
    return NULL;
  const member_t *m = &object->u.members[i];
  if (key)
    *key = m->key;
  if (key_len)
    *key_len = m->key_len;
  return m->value;
}

static member_t *find_member(const snap_json_t *object, const char *key,
                             size_t key_len) {
  if (!snap_json_is(object, SNAP_JSON_OBJECT) || !key)
    return NULL;
  for (uint32_t i = 0; i < object->count; i++) {
    member_t *m = &object->u.members[i];
    if (m->key_len == key_len && !memcmp(m->key, key, key_len))
      return m;
  }
  return NULL;
}

snap_json_t *snap_json_get_n(const snap_json_t *object, const char *key,
                             size_t key_len) {
  member_t *m = find_member(object, key, key_len);
  return m ? m->value : NULL;
}

snap_json_t *snap_json_get(const snap_json_t *object, const char *key) {
  return key ? snap_json_get_n(object, key, strlen(key)) : NULL;
}

const char *snap_json_string(const snap_json_t *v, size_t *len) {
  if (!snap_json_is(v, SNAP_JSON_STRING))
    return NULL;
  if (len)
    *len = v->size;
  return v->u.text;
}

bool snap_json_bool(const snap_json_t *v, bool *out) {
  if (!snap_json_is(v, SNAP_JSON_BOOL))
    return false;
  if (out)
    *out = v->boolean;
  return true;
}

const char *snap_json_number_text(const snap_json_t *v, size_t *len) {
  if (!snap_json_is(v, SNAP_JSON_NUMBER))
    return NULL;
  if (len)
    *len = v->size;
  return v->u.text;
}

/* A number's magnitude when its text is an integer of at most UINT64_MAX;
 *negative says whether it had a '-'. */
static bool integer_text(const snap_json_t *v, uint64_t *mag, bool *negative) {
  if (!snap_json_is(v, SNAP_JSON_NUMBER))
    return false;
  const char *s = v->u.text;
  size_t i = 0;
  *negative = s[0] == '-';
  if (*negative)
    i++;
  if (i >= v->size)
    return false;
  uint64_t m = 0;
  for (; i < v->size; i++) {
    if (s[i] < '0' || s[i] > '9')
      return false; /* a fraction or an exponent */
    unsigned d = (unsigned)(s[i] - '0');
    if (m > (UINT64_MAX - d) / 10)
      return false;
    m = m * 10 + d;
  }
  *mag = m;
  return true;
}

bool snap_json_int64(const snap_json_t *v, int64_t *out) {
  uint64_t m;
  bool neg;
  if (!integer_text(v, &m, &neg))
    return false;
  if (neg) {
    if (m > (uint64_t)INT64_MAX + 1)
      return false;
    /* -(2^63) has no positive twin: subtract from -1 instead. */
    *out = m ? -(int64_t)(m - 1) - 1 : 0;
  } else {
    if (m > (uint64_t)INT64_MAX)
      return false;
    *out = (int64_t)m;
  }
  return true;
}

bool snap_json_uint64(const snap_json_t *v, uint64_t *out) {
  uint64_t m;
  bool neg;
  if (!integer_text(v, &m, &neg) || (neg && m))
    return false;
  *out = m;
  return true;
}

bool snap_json_double(const snap_json_t *v, double *out) {
  if (!snap_json_is(v, SNAP_JSON_NUMBER))
    return false;
  /* strtod reads the locale's decimal point: put it where the '.' is. */
  const char *dp = localeconv()->decimal_point;
  size_t dp_len = dp && *dp ? strlen(dp) : 1;
  if (!dp || !*dp)
    dp = ".";
  char small[64], *buf = small;
  size_t need = v->size + dp_len + 1;
  if (need > sizeof small && !(buf = malloc(need)))
    return false;
  size_t n = 0;
  for (size_t i = 0; i < v->size; i++) {
    if (v->u.text[i] == '.') {
      memcpy(buf + n, dp, dp_len);
      n += dp_len;
    } else
      buf[n++] = v->u.text[i];
  }
  buf[n] = '\0';
  errno = 0;
  char *end;
  double d = strtod(buf, &end);
  bool ok = end == buf + n && !(errno == ERANGE && (d > 1.0 || d < -1.0));
  if (buf != small)
    free(buf);
  if (ok)
    *out = d;
  return ok;
}

/* ---- Editing ------------------------------------------------------------ */

snap_json_t *snap_json_set(snap_json_doc_t *doc, snap_json_t *obj,
                           const char *key) {
  if (!doc || !snap_json_is(obj, SNAP_JSON_OBJECT) || !key)
    return NULL;
  size_t key_len = strlen(key);
  snap_json_t *v = new_node(doc, SNAP_JSON_NULL);
  if (!v)
    return NULL;
  member_t *m = find_member(obj, key, key_len);
  if (m) {
    m->value = v;
    return v;
  }
  if (obj->count == UINT32_MAX)
    return NULL;
  const char *k = arena_copy(doc, key, key_len);
  if (!k)
    return NULL;
  if (obj->count == obj->size) {
    size_t cap = obj->size ? obj->size * 2 : 8;
    member_t *mems = arena_alloc(doc, cap * sizeof *mems);
    if (!mems)
      return NULL;
    if (obj->count)
      memcpy(mems, obj->u.members, obj->count * sizeof *mems);
    obj->u.members = mems;
    obj->size = cap;
  }
  obj->u.members[obj->count++] = (member_t){k, key_len, v};
  return v;
}

snap_json_t *snap_json_append(snap_json_doc_t *doc, snap_json_t *array) {
  if (!doc || !snap_json_is(array, SNAP_JSON_ARRAY) ||
      array->count == UINT32_MAX)
    return NULL;
  snap_json_t *v = new_node(doc, SNAP_JSON_NULL);
  if (!v)
    return NULL;
  if (array->count == array->size) {
    size_t cap = array->size ? array->size * 2 : 8;
    snap_json_t **items = arena_alloc(doc, cap * sizeof *items);
    if (!items)
      return NULL;
    if (array->count)
      memcpy(items, array->u.items, array->count * sizeof *items);
    array->u.items = items;
    array->size = cap;
  }
  array->u.items[array->count++] = v;
  return v;
}

static void make(snap_json_t *v, snap_json_type_t type) {
  memset(v, 0, sizeof *v);
  v->type = (uint8_t)type;
}

bool snap_json_assign_string(snap_json_doc_t *doc, snap_json_t *v,
                             const char *s, size_t len) {
  if (!doc || !v || (!s && len))
    return false;
  char *text = arena_copy(doc, s, len);
  if (!text)
    return false;
  make(v, SNAP_JSON_STRING);
  v->u.text = text;
  v->size = len;
  return true;
}

static bool assign_number(snap_json_doc_t *doc, snap_json_t *v,
                          const char *text) {
  if (!doc || !v)
    return false;
  size_t len = strlen(text);
  char *copy = arena_copy(doc, text, len);
  if (!copy)
    return false;
  make(v, SNAP_JSON_NUMBER);
  v->u.text = copy;
  v->size = len;
  return true;
}

bool snap_json_assign_int64(snap_json_doc_t *doc, snap_json_t *v,
                            int64_t value) {
  char buf[24];
  /* Digits by hand: INT64_MIN has no positive twin to negate. */
  uint64_t m = value < 0 ? (uint64_t)0 - (uint64_t)value : (uint64_t)value;
  size_t i = sizeof buf;
  buf[--i] = '\0';
  do {
    buf[--i] = (char)('0' + m % 10);
    m /= 10;
  } while (m);
  if (value < 0)
    buf[--i] = '-';
  return assign_number(doc, v, buf + i);
}

bool snap_json_assign_uint64(snap_json_doc_t *doc, snap_json_t *v,
                             uint64_t value) {
  char buf[24];
  size_t i = sizeof buf;
  buf[--i] = '\0';
  do {
    buf[--i] = (char)('0' + value % 10);
    value /= 10;
  } while (value);
  return assign_number(doc, v, buf + i);
}

void snap_json_assign_bool(snap_json_t *v, bool value) {
  if (v) {
    make(v, SNAP_JSON_BOOL);
    v->boolean = value;
  }
}

void snap_json_assign_null(snap_json_t *v) {
  if (v)
    make(v, SNAP_JSON_NULL);
}

void snap_json_assign_object(snap_json_t *v) {
  if (v)
    make(v, SNAP_JSON_OBJECT);
}

void snap_json_assign_array(snap_json_t *v) {
  if (v)
    make(v, SNAP_JSON_ARRAY);
}

snap_json_t *snap_json_set_string(snap_json_doc_t *doc, snap_json_t *obj,
                                  const char *key, const char *s, size_t len) {
  /* The copy first: a failed set leaves obj as it was. */
  if (!doc || (!s && len))
    return NULL;
  char *text = arena_copy(doc, s, len);
  snap_json_t *v = text ? snap_json_set(doc, obj, key) : NULL;
  if (v) {
    v->type = SNAP_JSON_STRING;
    v->u.text = text;
    v->size = len;
  }
  return v;
}

/* A number into a detached node first, then set: a failed set changes
   nothing. */
static snap_json_t *set_number(snap_json_doc_t *doc, snap_json_t *obj,
                               const char *key, const snap_json_t *number) {
  snap_json_t *v = snap_json_set(doc, obj, key);
  if (v)
    *v = *number;
  return v;
}

snap_json_t *snap_json_set_int64(snap_json_doc_t *doc, snap_json_t *obj,
                                 const char *key, int64_t value) {
  snap_json_t tmp;
  make(&tmp, SNAP_JSON_NULL);
  if (!snap_json_is(obj, SNAP_JSON_OBJECT) ||
      !snap_json_assign_int64(doc, &tmp, value))
    return NULL;
  return set_number(doc, obj, key, &tmp);
}

snap_json_t *snap_json_set_uint64(snap_json_doc_t *doc, snap_json_t *obj,
                                  const char *key, uint64_t value) {
  snap_json_t tmp;
  make(&tmp, SNAP_JSON_NULL);
  if (!snap_json_is(obj, SNAP_JSON_OBJECT) ||
      !snap_json_assign_uint64(doc, &tmp, value))
    return NULL;
  return set_number(doc, obj, key, &tmp);
}

snap_json_t *snap_json_set_bool(snap_json_doc_t *doc, snap_json_t *obj,
                                const char *key, bool value) {
  snap_json_t *v = snap_json_set(doc, obj, key);
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
  snap_json_assign_object(v);
  return v;
}

snap_json_t *snap_json_set_array(snap_json_doc_t *doc, snap_json_t *obj,
                                 const char *key) {
  snap_json_t *v = snap_json_set(doc, obj, key);
  snap_json_assign_array(v);
  return v;
}

/* ---- Writer ------------------------------------------------------------- */

typedef struct writer {
  unsigned flags;
  int err; /* first error: an errno */
  FILE *f; /* or a string: */
  char *out;
  size_t out_len, out_cap;
  size_t n;
  char buf[4096];
} writer_t;

static void w_flush(writer_t *w) {
  if (w->err || !w->n)
    return;
  if (w->f) {
    errno = 0;
    if (fwrite(w->buf, 1, w->n, w->f) != w->n)
      w->err = errno ? errno : EIO;
  } else {
    if (w->out_cap - w->out_len < w->n + 1) {
      size_t cap = w->out_cap ? w->out_cap : 4096;
      while (cap - w->out_len < w->n + 1) {
        if (cap > SIZE_MAX / 2) {
          w->err = ENOMEM;
          return;
        }
        cap *= 2;
      }
      char *q = realloc(w->out, cap);
      if (!q) {
        w->err = ENOMEM;
        return;
      }
      w->out = q;
      w->out_cap = cap;
    }
    memcpy(w->out + w->out_len, w->buf, w->n);
    w->out_len += w->n;
  }
  w->n = 0;
}

static void w_put(writer_t *w, const char *s, size_t len) {
  while (len && !w->err) {
    if (w->n == sizeof w->buf)
      w_flush(w);
    size_t k = sizeof w->buf - w->n;
    if (k > len)
      k = len;
    memcpy(w->buf + w->n, s, k);
    w->n += k;
    s += k;
    len -= k;
  }
}

static void w_char(writer_t *w, char c) { w_put(w, &c, 1); }

static void w_indent(writer_t *w, size_t depth) {
  if (!(w->flags & SNAP_JSON_PRETTY))
    return;
  w_char(w, '\n');
  for (size_t i = 0; i < depth; i++)
    w_put(w, "  ", 2);
}

/* A string as JSON: escapes what RFC 8259 requires (the way Python's
   json.dumps(ensure_ascii=False) does), keeps well-formed UTF-8 and
   writes U+FFFD for each byte that is not part of it. */
static void w_string(writer_t *w, const char *text, size_t len) {
  const unsigned char *s = (const unsigned char *)text;
  w_char(w, '"');
  size_t run = 0, i = 0;
  while (i < len) {
    unsigned char c = s[i];
    size_t k = 1;
    const char *esc = NULL;
    char hex[8];
    if (c == '"')
      esc = "\\\"";
    else if (c == '\\')
      esc = "\\\\";
    else if (c < 0x20) {
      switch (c) {
      case '\b': esc = "\\b"; break;
      case '\f': esc = "\\f"; break;
      case '\n': esc = "\\n"; break;
      case '\r': esc = "\\r"; break;
      case '\t': esc = "\\t"; break;
      default: snprintf(hex, sizeof hex, "\\u%04x", c); esc = hex;
      }
    } else if (c >= 0x80 && !(k = utf8_seq(s + i, len - i))) {
      esc = "\xEF\xBF\xBD"; /* U+FFFD */
      k = 1;
    }
    if (!esc) {
      i += k;
      continue;
    }
    w_put(w, text + run, i - run);
    w_put(w, esc, strlen(esc));
    i += k;
    run = i;
  }
  w_put(w, text + run, len - run);
  w_char(w, '"');
}

typedef struct wframe {
  const snap_json_t *node;
  size_t next;
} wframe_t;

static void w_value(writer_t *w, const snap_json_t *root) {
  wframe_t *stack = NULL;
  size_t depth = 0, cap = 0;
  const snap_json_t *v = root;
  bool pretty = w->flags & SNAP_JSON_PRETTY;
  while (!w->err) {
    /* Write v, or open it. */
    switch (v ? v->type : SNAP_JSON_NULL) {
    case SNAP_JSON_NULL: w_put(w, "null", 4); break;
    case SNAP_JSON_BOOL:
      if (v->boolean)
        w_put(w, "true", 4);
      else
        w_put(w, "false", 5);
      break;
    case SNAP_JSON_NUMBER: w_put(w, v->u.text, v->size); break;
    case SNAP_JSON_STRING: w_string(w, v->u.text, v->size); break;
    default: {
      bool array = v->type == SNAP_JSON_ARRAY;
      if (!v->count) {
        w_put(w, array ? "[]" : "{}", 2);
        break;
      }
      if (depth == cap) {
        wframe_t *q = grow(stack, &cap, sizeof *q);
        if (!q) {
          w->err = ENOMEM;
          break;
        }
        stack = q;
      }
      stack[depth++] = (wframe_t){v, 0};
      w_char(w, array ? '[' : '{');
    }
    }
    /* The next child of the innermost open container, closing the ones
       that are done. */
    v = NULL;
    while (depth && !w->err) {
      wframe_t *f = &stack[depth - 1];
      const snap_json_t *c = f->node;
      bool array = c->type == SNAP_JSON_ARRAY;
      if (f->next == c->count) {
        depth--;
        w_indent(w, depth);
        w_char(w, array ? ']' : '}');
        continue;
      }
      if (f->next)
        w_char(w, ',');
      w_indent(w, depth);
      if (array) {
        v = c->u.items[f->next];
      } else {
        const member_t *m = &c->u.members[f->next];
        w_string(w, m->key, m->key_len);
        w_put(w, ": ", pretty ? 2 : 1);
        v = m->value;
      }
      f->next++;
      break;
    }
    if (!depth && !v)
      break;
  }
  free(stack);
  if (w->flags & SNAP_JSON_FINAL_NEWLINE)
    w_char(w, '\n');
  w_flush(w);
}

char *snap_json_write_string(const snap_json_t *v, unsigned flags,
                             size_t *len) {
  writer_t *w = calloc(1, sizeof *w);
  if (!w)
    return NULL;
  w->flags = flags;
  w_value(w, v);
  char *out = w->out;
  if (!w->err && !out)
    out = calloc(1, 1); /* nothing written: cannot happen, but be exact */
  if (w->err) {
    free(out);
    out = NULL;
  } else {
    out[w->out_len] = '\0';
    if (len)
      *len = w->out_len;
  }
  free(w);
  return out;
}

int snap_json_write_file(const snap_json_t *v, unsigned flags, FILE *f) {
  if (!f)
    return EINVAL;
  writer_t *w = calloc(1, sizeof *w);
  if (!w)
    return ENOMEM;
  w->flags = flags;
  w->f = f;
  w_value(w, v);
  int err = w->err;
  free(w);
  if (!err) {
    errno = 0;
    if (fflush(f) != 0 || ferror(f))
      err = errno ? errno : EIO;
  }
  return err;
}
