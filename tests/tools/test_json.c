/*
 * test_json.c — stacksnap-symbolicate's JSON reader and writer
 * (tools/symbolicate/json.c) on exact cases and hostile input.
 *
 * Without arguments: accessors against values known from outside (C's
 * integer limits, IEEE 754 constants, the UTF-8 bytes of code points),
 * errors with their line, column and reason, edits, the writers' errors on
 * a full disk and a closed pipe, and hostile input: a real lag report cut
 * at every byte, a million '[', 10 MB of random bytes, 10 MB strings,
 * 10000-digit numbers, invalid UTF-8 and lone surrogates. Each must end in
 * a clear error (or a correct tree), never a crash, in bounded CPU time.
 *
 * With --oracle DIR N: the worker of json_oracle.py, which holds Python's
 * json module as the oracle: for each DIR/i.json it writes DIR/i.c.json
 * (compact) and DIR/i.p.json (pretty), or DIR/i.err with the message.
 */
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "json.h"
#include "test_clock.h"
#include "xorshift.h"

/* Generous: "well under a second" natively, but ASan and qemu are ~20x
   slower. A quadratic parser would need minutes on these sizes. */
#define HOSTILE_CPU_LIMIT 15.0

static snap_json_doc_t *parse_str(const char *s, snap_json_error_t *err) {
  return snap_json_parse(s, strlen(s), 0, err);
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  size_t k;
  while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
    n += k;
    if (n == cap) {
      char *q = realloc(buf, cap *= 2);
      if (!q) {
        free(buf);
        buf = NULL;
      }
      buf = q;
    }
  }
  fclose(f);
  *len = n;
  return buf;
}

/* Compact text of a parsed document, for exact comparisons. */
static char *compact(const char *text, unsigned flags) {
  snap_json_error_t err;
  snap_json_doc_t *doc = parse_str(text, &err);
  if (!doc) {
    fprintf(stderr, "unexpected parse error: %s\n", err.message);
    return NULL;
  }
  char *out = snap_json_write_string(snap_json_root(doc), flags, NULL);
  snap_json_free(doc);
  return out;
}

static void test_scalars(void) {
  snap_json_error_t err;
  snap_json_doc_t *doc = parse_str(
      " [null,true,false,0,-0,-0.0e-0,1E+2,18446744073709551615,"
      "-9223372036854775808,9223372036854775807,18446744073709551616,"
      "-9223372036854775809,1.7976931348623157e308,5e-324,1e400,\"\",1.5]\r\n",
      &err);
  CHECK(doc, "%s", err.message);
  snap_json_t *a = snap_json_root(doc);
  CHECK_EQ(snap_json_type(a), SNAP_JSON_ARRAY);
  CHECK_EQ(snap_json_count(a), 17);
  CHECK(!strcmp(snap_json_type_name(snap_json_type(a)), "array") &&
            !strcmp(snap_json_type_name(SNAP_JSON_OBJECT), "object") &&
            !strcmp(snap_json_type_name((snap_json_type_t)99), "unknown"),
        "type names");
  CHECK_EQ(snap_json_type(snap_json_at(a, 0)), SNAP_JSON_NULL);
  CHECK(snap_json_is(snap_json_at(a, 0), SNAP_JSON_NULL), "null");
  bool b = false;
  CHECK(snap_json_bool(snap_json_at(a, 1), &b) && b, "true");
  CHECK(snap_json_bool(snap_json_at(a, 2), &b) && !b, "false");
  CHECK(!snap_json_bool(snap_json_at(a, 3), &b), "0 is no bool");
  int64_t i64 = 7;
  uint64_t u64 = 7;
  double d = 7;
  CHECK(snap_json_int64(snap_json_at(a, 3), &i64) && i64 == 0, "0");
  CHECK(snap_json_int64(snap_json_at(a, 4), &i64) && i64 == 0, "-0");
  CHECK(snap_json_uint64(snap_json_at(a, 4), &u64) && u64 == 0, "-0 u");
  CHECK(!snap_json_int64(snap_json_at(a, 5), &i64), "-0.0e-0 is no integer");
  CHECK(snap_json_double(snap_json_at(a, 5), &d) && d == 0 && signbit(d),
        "-0.0e-0 = -0.0");
  CHECK(!snap_json_int64(snap_json_at(a, 6), &i64), "1E+2 is no integer");
  CHECK(snap_json_double(snap_json_at(a, 6), &d) && d == 100.0, "1E+2");
  CHECK(!snap_json_int64(snap_json_at(a, 7), &i64), "2^64-1 > INT64_MAX");
  CHECK(snap_json_uint64(snap_json_at(a, 7), &u64) && u64 == UINT64_MAX,
        "2^64-1");
  CHECK(snap_json_int64(snap_json_at(a, 8), &i64) && i64 == INT64_MIN,
        "-2^63: %" PRId64, i64);
  CHECK(!snap_json_uint64(snap_json_at(a, 8), &u64), "negative is no u64");
  CHECK(snap_json_int64(snap_json_at(a, 9), &i64) && i64 == INT64_MAX,
        "2^63-1");
  CHECK(!snap_json_uint64(snap_json_at(a, 10), &u64), "2^64 overflows");
  CHECK(!snap_json_int64(snap_json_at(a, 11), &i64), "-2^63-1 overflows");
  CHECK(snap_json_double(snap_json_at(a, 12), &d) && d == DBL_MAX, "DBL_MAX");
  CHECK(snap_json_double(snap_json_at(a, 13), &d) && d == 0x1p-1074,
        "the smallest subnormal");
  CHECK(!snap_json_double(snap_json_at(a, 14), &d), "1e400 overflows");
  size_t len = 9;
  const char *s = snap_json_string(snap_json_at(a, 15), &len);
  CHECK(s && len == 0 && s[0] == '\0', "empty string");
  CHECK(snap_json_double(snap_json_at(a, 16), &d) && d == 1.5, "1.5");
  CHECK(!snap_json_string(snap_json_at(a, 16), &len), "a number is no string");
  CHECK(!snap_json_at(a, 17), "past the end");
  /* The source text stays exact. */
  s = snap_json_number_text(snap_json_at(a, 5), &len);
  CHECK(s && len == 7 && !strcmp(s, "-0.0e-0"), "text %s", s ? s : "?");
  char *out = snap_json_write_string(a, 0, &len);
  CHECK(out && !strcmp(out, "[null,true,false,0,-0,-0.0e-0,1E+2,"
                            "18446744073709551615,-9223372036854775808,"
                            "9223372036854775807,18446744073709551616,"
                            "-9223372036854775809,1.7976931348623157e308,"
                            "5e-324,1e400,\"\",1.5]"),
        "%s", out ? out : "NULL");
  CHECK(out && len == strlen(out), "length");
  free(out);
  snap_json_free(doc);
  /* NULL and wrong types answer "absent". */
  CHECK(!snap_json_get(NULL, "a") && !snap_json_at(NULL, 0) &&
            !snap_json_count(NULL) && !snap_json_string(NULL, NULL) &&
            !snap_json_int64(NULL, &i64) && !snap_json_double(NULL, &d) &&
            snap_json_type(NULL) == SNAP_JSON_NULL && !snap_json_root(NULL),
        "NULL");
  snap_json_free(NULL);
}

static void test_strings_and_objects(void) {
  snap_json_error_t err;
  /* Escapes; U+00E9, U+20AC, U+1F600 (a surrogate pair) in UTF-8 are
     C3 A9, E2 82 AC, F0 9F 98 80. */
  snap_json_doc_t *doc = parse_str(
      "{\"\\u0000k\":\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u001f\\u00e9\\u20AC"
      "\\ud83d\\ude00\xF0\x9F\x98\x80\",\"dup\":1,\"dup\":2,\"o\":{\"x\":[]}}",
      &err);
  CHECK(doc, "%s", err.message);
  snap_json_t *o = snap_json_root(doc);
  CHECK_EQ(snap_json_count(o), 4);
  const char *key = NULL;
  size_t key_len = 0, len = 0;
  snap_json_t *v = snap_json_member(o, 0, &key, &key_len);
  CHECK(key && key_len == 2 && key[0] == '\0' && key[1] == 'k' && !key[2],
        "key with NUL");
  CHECK(snap_json_get_n(o, "\0k", 2) == v, "get_n with NUL");
  CHECK(!snap_json_get(o, "k"), "no k");
  const char want[] = "a\"b\\c/d\b\f\n\r\t\x1f\xC3\xA9\xE2\x82\xAC"
                      "\xF0\x9F\x98\x80\xF0\x9F\x98\x80";
  const char *s = snap_json_string(v, &len);
  CHECK(s && len == sizeof want - 1 && !memcmp(s, want, len), "decoded");
  int64_t i = 0;
  CHECK(snap_json_int64(snap_json_get(o, "dup"), &i) && i == 1,
        "the first duplicate");
  CHECK(snap_json_member(o, 2, &key, NULL) && !strcmp(key, "dup"), "order");
  CHECK(
      snap_json_is(snap_json_get(snap_json_get(o, "o"), "x"), SNAP_JSON_ARRAY),
      "nested");
  CHECK(!snap_json_member(o, 4, NULL, NULL), "past the end");
  CHECK(!snap_json_get(snap_json_get(o, "nope"), "x"), "chain of absent");
  /* The writer: both duplicates, control characters as \u00XX (the
     library's one rule, src/report/text_buf.c), UTF-8 as is, '/' unescaped. */
  char *out = snap_json_write_string(o, 0, NULL);
  CHECK(out && !strcmp(out, "{\"\\u0000k\":\"a\\\"b\\\\c/"
                            "d\\u0008\\u000c\\u000a\\u000d\\u0009\\u001f"
                            "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xF0\x9F\x98"
                            "\x80\",\"dup\":1,\"dup\":2,\"o\":{\"x\":[]}}"),
        "%s", out ? out : "NULL");
  free(out);
  out = snap_json_write_string(o, SNAP_JSON_PRETTY | SNAP_JSON_FINAL_NEWLINE,
                               NULL);
  CHECK(out && !strcmp(out, "{\n  \"\\u0000k\": "
                            "\"a\\\"b\\\\c/d\\u0008\\u000c\\u000a\\u000d\\u0009"
                            "\\u001f\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xF0"
                            "\x9F\x98\x80\",\n  \"dup\": 1,\n  \"dup\": 2,\n"
                            "  \"o\": {\n    \"x\": []\n  }\n}\n"),
        "%s", out ? out : "NULL");
  free(out);
  snap_json_free(doc);
}

/* Each invalid text: yyjson (third_party/yyjson) must refuse it, with a
   message that says where ("line L col C (byte B): reason", B at most the
   text's length). The reason is yyjson's own words, except those of
   json.c: a NUL byte, the depth limit and the size limit (checked
   exactly). */
static const struct {
  const char *text;
  size_t len; /* 0: strlen */
  const char *reason;
  size_t offset;
} invalid[] = {
    {"", 0, "unexpected end of input", 0},
    {" \n\t\r", 0, "unexpected end of input", 4},
    {"[1,2,]", 0, "trailing comma", 5},
    {"{\"a\":1,}", 0, "trailing comma", 7},
    {"[1 2]", 0, "expected ',' or ']'", 3},
    {"{\"a\" 1}", 0, "expected ':'", 5},
    {"{a:1}", 0, "expected a key", 1},
    {"{'a':1}", 0, "expected a key", 1},
    {"[1]//c", 0, "after the JSON value: '/'", 3},
    {"/*c*/1", 0, "no comments", 0},
    {"NaN", 0, "NaN and Infinity", 0},
    {"[-Infinity]", 0, "expected a digit after '-'", 2},
    {"[Infinity]", 0, "NaN and Infinity", 1},
    {"01", 0, "leading zero", 0},
    {"-01", 0, "leading zero", 0},
    {"+1", 0, "expected a value", 0},
    {".5", 0, "expected a value", 0},
    {"1.", 0, "after '.'", 2},
    {"1.e3", 0, "after '.'", 2},
    {"1e", 0, "exponent", 2},
    {"1e+", 0, "exponent", 3},
    {"-", 0, "after '-'", 1},
    {"tru", 0, "invalid literal", 0},
    {"nul", 0, "invalid literal", 0},
    {"True", 0, "expected a value", 0},
    {"[1]]", 0, "after the JSON value", 3},
    {"{} {}", 0, "after the JSON value", 3},
    {"\"abc", 0, "end of input in a string", 4},
    {"\"a\tb\"", 0, "control character", 2},
    {"\"a\nb\"", 0, "control character", 2},
    {"\"a\\x\"", 0, "invalid escape: a backslash and 'x'", 2},
    {"\"\\u12\"", 0, "invalid \\u escape", 1},
    {"\"\\u12G4\"", 0, "invalid \\u escape", 1},
    {"\"\\", 0, "end of input in an escape", 2},
    {"[\"\\ud800\"]", 0, "lone surrogate \\uD800", 2},
    {"[\"\\udc00\\ud800\"]", 0, "lone surrogate \\uDC00", 2},
    {"\"\\ud83d\\u0041\"", 0, "lone surrogate \\uD83D", 1},
    {"\"\\ud83dx\"", 0, "lone surrogate", 1},
    {"\"\\ud83d\"", 0, "lone surrogate", 1},
    {"\"\xFF\"", 0, "invalid UTF-8", 1},
    {"\"\xC0\x80\"", 0, "invalid UTF-8", 1},         /* overlong NUL */
    {"\"\xE0\x80\x80\"", 0, "invalid UTF-8", 1},     /* overlong */
    {"\"\xED\xA0\x80\"", 0, "invalid UTF-8", 1},     /* U+D800 in UTF-8 */
    {"\"\xF4\x90\x80\x80\"", 0, "invalid UTF-8", 1}, /* > U+10FFFF */
    {"\"\xE2\x82\"", 0, "invalid UTF-8", 1},         /* cut short */
    {"\"\x80\"", 0, "invalid UTF-8", 1},             /* a lone continuation */
    {"\xFF", 0, "byte 0xff", 0},
    {"\xEF\xBB\xBF{}", 0, "byte order mark", 0},
    {"[1,\0 2]", 7, "a NUL byte", 3},
    {"\"a\0b\"", 5, "a NUL byte in a string", 2},
    {"{}\0", 3, "after the JSON value: a NUL byte", 2},
    {"[", 0, "unexpected end of input", 1},
    {"[1,", 0, "unexpected end of input", 3},
    {"{\"a\":", 0, "unexpected end of input", 5},
    {"{\"a\":1", 0, "end of input in an object", 6},
    {"]", 0, "expected a value, got ']'", 0},
};

static void test_invalid(void) {
  for (size_t k = 0; k < sizeof invalid / sizeof invalid[0]; k++) {
    size_t len = invalid[k].len ? invalid[k].len : strlen(invalid[k].text);
    snap_json_error_t err;
    snap_json_doc_t *doc = snap_json_parse(invalid[k].text, len, 0, &err);
    CHECK(!doc, "case %zu parsed", k);
    snap_json_free(doc);
    CHECK(!strncmp(err.message, "line ", 5) && err.offset <= len,
          "case %zu: \"%s\"", k, err.message);
    /* json.c's own reasons, exactly. */
    if (strstr(invalid[k].reason, "NUL byte"))
      CHECK(strstr(err.message, "a NUL byte") &&
                err.offset == invalid[k].offset,
            "case %zu: %s", k, err.message);
  }
  /* Line and column, 1-based, in bytes. */
  snap_json_error_t err;
  CHECK(!parse_str("{\n  \"a\": 1,\n  \"b\" 2\n}", &err), "parsed");
  CHECK(!strncmp(err.message, "line 3 col 7 (byte 18): ", 24), "%s",
        err.message);
  CHECK(err.line == 3 && err.col == 7 && err.offset == 18, "position");
  /* err may be NULL. */
  CHECK(!snap_json_parse("[", 1, 0, NULL), "NULL err");
  /* The size limit. */
  CHECK(!snap_json_parse("[1,2,3]", 7, 6, &err) &&
            strstr(err.message, "larger than the limit (6 bytes)"),
        "%s", err.message);
  snap_json_doc_t *doc = snap_json_parse("[1,2,3]", 7, 7, &err);
  CHECK(doc, "at the limit: %s", err.message);
  snap_json_free(doc);
  /* Valid texts that strict parsers sometimes refuse. */
  static const char *valid[] = {
      "0",
      "-0",
      "\"\"",
      " [ ] ",
      "{ }",
      "1e5",
      "1E-5",
      "-1.5e+300",
      "\"\\u0000\"",
      "\"\\/\"",
      "\"\x7f\"",
      "\"\xF4\x8F\xBF\xBF\"",
      "\"\xEF\xBB\xBF\"",
      "null",
      "[[],{},[{}]]",
  };
  for (size_t k = 0; k < sizeof valid / sizeof valid[0]; k++) {
    doc = parse_str(valid[k], &err);
    CHECK(doc, "valid %zu: %s", k, err.message);
    snap_json_free(doc);
  }
}

static void test_depth(void) {
  enum { D = SNAP_JSON_MAX_DEPTH };
  char text[2 * D + 3];
  memset(text, '[', D);
  memset(text + D, ']', D);
  text[2 * D] = '\0';
  snap_json_error_t err;
  snap_json_doc_t *doc = parse_str(text, &err);
  CHECK(doc, "%d deep: %s", D, err.message);
  char *out = doc ? snap_json_write_string(snap_json_root(doc), 0, NULL) : NULL;
  CHECK(out && !strcmp(out, text), "written back");
  free(out);
  snap_json_free(doc);
  memset(text, '[', D + 1);
  memset(text + D + 1, ']', D + 1);
  text[2 * D + 2] = '\0';
  CHECK(!parse_str(text, &err) && strstr(err.message, "nesting deeper than") &&
            err.offset == D,
        "%s", err.message);
  /* Objects count too. */
  char obj[6 * (D + 1) + 2];
  for (int i = 0; i <= D; i++) {
    memcpy(obj + 5 * i, "{\"a\":", 5);
    obj[5 * (D + 1) + 1 + i] = '}';
  }
  obj[5 * (D + 1)] = '1';
  obj[6 * (D + 1) + 1] = '\0';
  CHECK(!parse_str(obj, &err) && strstr(err.message, "nesting deeper than"),
        "%s", err.message);
}

static void test_edits(void) {
  snap_json_error_t err;
  snap_json_doc_t *doc = parse_str(
      "{\"pc\":\"0x7f0000001234\",\"image\":\"libx.so\",\"symbol\":null,"
      "\"offset\":4660,\"in_app\":true}",
      &err);
  CHECK(doc, "%s", err.message);
  snap_json_t *f = snap_json_root(doc);
  /* Replace in place, append new keys at the end. */
  CHECK(snap_json_set_string(doc, f, "symbol", "main", 4), "set symbol");
  CHECK(snap_json_set_uint64(doc, f, "size", UINT64_MAX), "set u64");
  CHECK(snap_json_set_int64(doc, f, "offset", INT64_MIN), "set i64");
  CHECK(snap_json_set_bool(doc, f, "in_app", false), "set bool");
  snap_json_t *src = snap_json_set_object(doc, f, "source");
  CHECK(snap_json_set_string(doc, src, "file", "a\"b\n\x01\xFF\xC3", 7),
        "a string that is not UTF-8");
  CHECK(snap_json_set_int64(doc, src, "line", 42), "line");
  CHECK(snap_json_set_null(doc, f, "pc"), "null");
  snap_json_t *arr = snap_json_set_array(doc, f, "list");
  CHECK(!snap_json_set(doc, arr, "k"), "set on an array");
  CHECK(!snap_json_append(doc, src), "append to an object");
  /* Nodes never move: the first element survives a thousand appends. */
  snap_json_t *first = snap_json_append(doc, arr);
  CHECK(snap_json_assign_int64(doc, first, -1), "assign");
  for (int i = 1; i < 1000; i++) {
    snap_json_t *e = snap_json_append(doc, arr);
    CHECK(e && snap_json_assign_uint64(doc, e, (uint64_t)i), "append %d", i);
  }
  CHECK(snap_json_at(arr, 0) == first && snap_json_count(arr) == 1000,
        "stable");
  int64_t v = 0;
  CHECK(snap_json_int64(first, &v) && v == -1, "first kept");
  CHECK(snap_json_int64(snap_json_at(arr, 999), &v) && v == 999, "last");
  /* Shrink the list back to three for the text below. */
  snap_json_assign_array(arr);
  CHECK(snap_json_count(arr) == 0, "emptied");
  snap_json_assign_bool(snap_json_append(doc, arr), true);
  snap_json_t *inner = snap_json_append(doc, arr);
  snap_json_assign_object(inner);
  CHECK(snap_json_set_string(doc, inner, "", "", 0), "empty key");
  CHECK(snap_json_assign_string(doc, snap_json_append(doc, arr), "\0z", 2),
        "a NUL");
  char *out = snap_json_write_string(f, 0, NULL);
  CHECK(out && !strcmp(out, "{\"pc\":null,\"image\":\"libx.so\",\"symbol\":"
                            "\"main\",\"offset\":-9223372036854775808,"
                            "\"in_app\":false,\"size\":18446744073709551615,"
                            "\"source\":{\"file\":\"a\\\"b\\u000a\\u0001"
                            "\\ufffd\\ufffd\",\"line\":42},"
                            "\"list\":[true,{\"\":\"\"},\"\\u0000z\"]}"),
        "%s", out ? out : "NULL");
  /* What the writer wrote parses; read and written again, the bytes that
     were not UTF-8 are U+FFFD itself (valid: written as is), and from
     then on the text is a fixed point. */
  char *again = out ? compact(out, 0) : NULL;
  char *third = again ? compact(again, 0) : NULL;
  CHECK(again && strstr(again, "\xEF\xBF\xBD\xEF\xBF\xBD") && third &&
            !strcmp(again, third),
        "re-parsed");
  free(again);
  free(third);
  free(out);
  snap_json_free(doc);
  /* A document built from nothing. */
  doc = snap_json_doc_new();
  CHECK(doc, "new");
  out = snap_json_write_string(snap_json_root(doc), SNAP_JSON_PRETTY, NULL);
  CHECK(out && !strcmp(out, "null"), "%s", out ? out : "NULL");
  free(out);
  snap_json_assign_object(snap_json_root(doc));
  snap_json_set_array(doc, snap_json_root(doc), "a");
  out = snap_json_write_string(snap_json_root(doc), SNAP_JSON_PRETTY, NULL);
  CHECK(out && !strcmp(out, "{\n  \"a\": []\n}"), "%s", out ? out : "NULL");
  free(out);
  snap_json_free(doc);
}

static void test_write_errors(void) {
  snap_json_doc_t *doc = parse_str("{\"a\":[1,2,3],\"b\":\"xyz\"}", NULL);
  CHECK(doc, "parse");
  /* A full disk: /dev/full fails every write with ENOSPC. The text is
     larger than stdio's buffer, so the error comes from fwrite or fflush. */
  FILE *f = fopen("/dev/full", "w");
  CHECK(f, "/dev/full: %s", strerror(errno));
  if (f) {
    int rc = snap_json_write_file(snap_json_root(doc), 0, f);
    CHECK(rc == ENOSPC, "/dev/full: %d (%s)", rc, strerror(rc));
    fclose(f);
  }
  /* A closed pipe, SIGPIPE ignored: EPIPE. */
  int fds[2];
  CHECK(pipe(fds) == 0, "pipe");
  void (*old)(int) = signal(SIGPIPE, SIG_IGN);
  close(fds[0]);
  f = fdopen(fds[1], "w");
  if (f) {
    int rc = snap_json_write_file(snap_json_root(doc), SNAP_JSON_PRETTY, f);
    CHECK(rc == EPIPE, "closed pipe: %d (%s)", rc, strerror(rc));
    fclose(f);
  }
  signal(SIGPIPE, old);
  /* A good file: the same text as the string writer. */
  f = tmpfile();
  CHECK(f, "tmpfile");
  if (f) {
    CHECK(snap_json_write_file(snap_json_root(doc), SNAP_JSON_FINAL_NEWLINE,
                               f) == 0,
          "write");
    rewind(f);
    char buf[64] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    CHECK(n == 24 && !strcmp(buf, "{\"a\":[1,2,3],\"b\":\"xyz\"}\n"), "%s",
          buf);
    fclose(f);
  }
  CHECK(snap_json_write_file(NULL, 0, NULL) == EINVAL, "no file");
  snap_json_free(doc);
}

/* ---- Hostile input ------------------------------------------------------ */

static void time_check(const char *what, double t0) {
  double t = clock_s(CLOCK_PROCESS_CPUTIME_ID) - t0;
  printf("  %-44s %.3f s CPU\n", what, t);
  CHECK(t < HOSTILE_CPU_LIMIT, "%s took %.1f s CPU", what, t);
}

/* A lag report cut at every stride-th byte (and at each of its last 16):
   every cut before the last non-space byte fails with an error inside the
   cut, the rest parse. The cost is quadratic in the report's size, and
   qemu emulating pointer authentication (the arm64-pac configuration) runs
   this parser ~75x slower than the host: every byte of a 4 KB report, a
   sample of the larger ones. */
static void test_truncated(const char *path, size_t stride) {
  size_t len = 0;
  char *text = read_file(path, &len);
  CHECK(text && len > 1000, "%s", path);
  if (!text)
    return;
  size_t last = len;
  while (last && strchr(" \t\r\n", text[last - 1]))
    last--;
  double t0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  size_t bad = 0;
  size_t cuts = 0;
  for (size_t cut = 0; cut <= len;
       cut += cut + 16 >= len || cut + stride > len ? 1 : stride) {
    cuts++;
    /* A copy of exactly cut bytes: ASan sees any read past it. */
    char *piece = malloc(cut ? cut : 1);
    memcpy(piece, text, cut);
    snap_json_error_t err;
    snap_json_doc_t *doc = snap_json_parse(piece, cut, 0, &err);
    bool want = cut >= last;
    if (!!doc != want || (!doc && err.offset > cut) ||
        (!doc && !err.message[0]))
      bad++;
    snap_json_free(doc);
    free(piece);
  }
  CHECK(bad == 0, "%zu cuts of %s wrong", bad, path);
  char what[80];
  snprintf(what, sizeof what, "%zu cuts of a %zu-byte report", cuts, len);
  time_check(what, t0);
  /* And whole: written back compact, it parses to the same text. */
  snap_json_error_t err;
  snap_json_doc_t *doc = snap_json_parse(text, len, 0, &err);
  CHECK(doc, "%s", err.message);
  char *out = doc ? snap_json_write_string(snap_json_root(doc), 0, NULL) : 0;
  char *again = out ? compact(out, 0) : NULL;
  CHECK(again && !strcmp(out, again), "round trip");
  free(again);
  free(out);
  snap_json_free(doc);
  free(text);
}

/* yyjson's mutable containers are linked lists: element i is i steps
   away. The walk the program makes (every element of a 200 000-frame
   array, and the members of each frame between two elements) must stay
   linear: json.c keeps a cursor per container walked. Quadratic, this is
   2e10 steps (minutes); linear, milliseconds. */
static void test_linear_walk(void) {
  enum { N = 200000 };
  char *text = malloc(N * 12 + 2);
  size_t n = 0;
  text[n++] = '[';
  for (int i = 0; i < N; i++) {
    memcpy(text + n, i ? ",{\"pc\":1}" : "{\"pc\":1}", i ? 9 : 8);
    n += i ? 9 : 8;
  }
  text[n++] = ']';
  snap_json_error_t err;
  snap_json_doc_t *doc = snap_json_parse(text, n, 0, &err);
  CHECK(doc, "%s", err.message);
  double t0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  snap_json_t *a = snap_json_root(doc);
  size_t seen = 0;
  for (size_t i = 0; i < snap_json_count(a); i++) {
    snap_json_t *f = snap_json_at(a, i);
    const char *key;
    for (size_t k = 0; snap_json_member(f, k, &key, NULL); k++)
      seen += !strcmp(key, "pc");
    snap_json_set_uint64(doc, f, "line", i); /* an edit between elements */
  }
  CHECK_EQ(seen, N);
  time_check("200 000 frames walked and amended", t0);
  snap_json_free(doc);
  free(text);
}

static void test_hostile(void) {
  enum { MB = 1 << 20 };
  size_t n = 10 * MB;
  char *buf = malloc(n + 64);
  snap_json_error_t err;
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  double t0;

  /* A million '[': refused at the depth limit, no stack used. */
  memset(buf, '[', MB);
  t0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  CHECK(!snap_json_parse(buf, MB, 0, &err) &&
            strstr(err.message, "nesting deeper than") &&
            err.offset == SNAP_JSON_MAX_DEPTH,
        "%s", err.message);
  time_check("1e6 '['", t0);

  /* 10 MB of random bytes; then random bytes of JSON's alphabet. */
  for (size_t i = 0; i < n; i += 8) {
    uint64_t r = snap_xorshift(&rng);
    memcpy(buf + i, &r, 8);
  }
  t0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  snap_json_doc_t *doc = snap_json_parse(buf, n, 0, &err);
  CHECK(!doc && err.message[0], "random bytes parsed");
  snap_json_free(doc);
  time_check("10 MB of random bytes", t0);
  static const char alphabet[] = "[]{},:\"\\u0123456789abcdefABCDEF.eE+-"
                                 " \n\t\rtruefalsenull\xC3\xA9\xF0\x9F";
  int parsed = 0;
  t0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  for (size_t start = 0; start < 2000; start++) {
    /* Many short texts: a long one fails within a few bytes. */
    size_t len = 1 + snap_xorshift(&rng) % 64;
    for (size_t i = 0; i < len; i++)
      buf[i] = alphabet[snap_xorshift(&rng) % (sizeof alphabet - 1)];
    doc = snap_json_parse(buf, len, 0, &err);
    parsed += doc != NULL;
    CHECK(doc || err.message[0], "no message");
    snap_json_free(doc);
  }
  printf("  (%d of 2000 random texts were JSON)\n", parsed);
  time_check("2000 random texts of JSON's bytes", t0);

  /* A 10 MB string of every kind of character: parsed, exact. */
  size_t k = 0;
  buf[k++] = '"';
  static const char *const pieces[] = {"a",
                                       "\\n",
                                       "\\u00e9",
                                       "\xC3\xA9",
                                       "\xE2\x82\xAC",
                                       "\\ud83d\\ude00",
                                       "\xF0\x9F\x98\x80",
                                       "\\\"",
                                       "\\u0000"};
  static const char *const decoded[] = {"a",
                                        "\n",
                                        "\xC3\xA9",
                                        "\xC3\xA9",
                                        "\xE2\x82\xAC",
                                        "\xF0\x9F\x98\x80",
                                        "\xF0\x9F\x98\x80",
                                        "\"",
                                        ""};
  static const size_t decoded_len[] = {1, 1, 2, 2, 3, 4, 4, 1, 1};
  char *want = malloc(n);
  size_t w = 0;
  while (k < n - 16) {
    size_t p = snap_xorshift(&rng) % 9;
    memcpy(buf + k, pieces[p], strlen(pieces[p]));
    k += strlen(pieces[p]);
    memcpy(want + w, decoded[p], decoded_len[p]);
    w += decoded_len[p];
  }
  buf[k++] = '"';
  t0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  doc = snap_json_parse(buf, k, 0, &err);
  CHECK(doc, "10 MB string: %s", err.message);
  size_t got_len = 0;
  const char *got = snap_json_string(snap_json_root(doc), &got_len);
  CHECK(got && got_len == w && !memcmp(got, want, w), "decoded %zu of %zu",
        got_len, w);
  char *out = snap_json_write_string(snap_json_root(doc), 0, NULL);
  snap_json_doc_t *doc2 = out ? snap_json_parse(out, strlen(out), 0, &err) : 0;
  got = snap_json_string(snap_json_root(doc2), &got_len);
  CHECK(got && got_len == w && !memcmp(got, want, w), "written back");
  snap_json_free(doc2);
  free(out);
  snap_json_free(doc);
  time_check("a 10 MB string, parsed and written back", t0);
  /* The same with one bad byte at its end: the error is there. */
  buf[k - 1] = '\xFF';
  buf[k++] = '"';
  t0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  CHECK(!snap_json_parse(buf, k, 0, &err) && err.offset == k - 2 &&
            strstr(err.message, "invalid UTF-8"),
        "%s", err.message);
  buf[k - 2] = '\x01';
  CHECK(!snap_json_parse(buf, k, 0, &err) && err.offset == k - 2 &&
            strstr(err.message, "control character"),
        "%s", err.message);
  memcpy(buf + k - 2, "\\udbff\"", 7);
  CHECK(!snap_json_parse(buf, k + 5, 0, &err) && err.offset >= k - 2 &&
            err.offset <= k + 5 && strstr(err.message, "surrogate"),
        "%s", err.message);
  /* Unterminated: the error at the end. */
  CHECK(!snap_json_parse(buf, k - 2, 0, &err) && err.offset + 8 >= k - 2 &&
            strstr(err.message, "end of data"),
        "%s", err.message);
  time_check("10 MB strings with one bad byte at the end", t0);
  free(want);

  /* Numbers of 10000 digits: kept exactly; no integer; as a double,
     overflow refused and underflow rounded to 0. */
  t0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  static const char *const forms[] = {"%s", "-%s", "0.%s", "1e%s", "1e-%s"};
  char digits[10001];
  for (int i = 0; i < 10000; i++)
    digits[i] = (char)('1' + snap_xorshift(&rng) % 9);
  digits[10000] = '\0';
  for (size_t fi = 0; fi < sizeof forms / sizeof forms[0]; fi++) {
    snprintf(buf, n, forms[fi], digits);
    size_t len = strlen(buf);
    doc = snap_json_parse(buf, len, 0, &err);
    CHECK(doc, "form %zu: %s", fi, err.message);
    snap_json_t *num = snap_json_root(doc);
    size_t tl = 0;
    const char *t = snap_json_number_text(num, &tl);
    CHECK(t && tl == len && !memcmp(t, buf, len), "exact text");
    int64_t i64;
    uint64_t u64;
    double d = -1;
    CHECK(!snap_json_int64(num, &i64) && !snap_json_uint64(num, &u64),
          "form %zu is no 64-bit integer", fi);
    bool ok = snap_json_double(num, &d);
    if (fi < 2 || fi == 3)
      CHECK(!ok, "form %zu overflows a double", fi);
    else if (fi == 2)
      CHECK(ok && d > 0.1 && d < 1.0, "0.1.. = %g", d);
    else
      CHECK(ok && d == 0.0, "underflow: %g", d);
    char *o = snap_json_write_string(num, 0, NULL);
    CHECK(o && !strcmp(o, buf), "written back");
    free(o);
    snap_json_free(doc);
  }
  time_check("numbers of 10000 digits", t0);
  free(buf);
}

/* ---- The oracle's worker ------------------------------------------------ */

static int oracle(const char *dir, int count) {
  int failures = 0;
  for (int i = 0; i < count; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%d.json", dir, i);
    size_t len;
    char *text = read_file(path, &len);
    if (!text) {
      fprintf(stderr, "%s: %s\n", path, strerror(errno));
      return 1;
    }
    snap_json_error_t err;
    snap_json_doc_t *doc = snap_json_parse(text, len, 0, &err);
    if (!doc) {
      snprintf(path, sizeof path, "%s/%d.err", dir, i);
      FILE *f = fopen(path, "w");
      if (!f || fprintf(f, "%s\n", err.message) < 0 || fclose(f))
        failures++;
    }
    for (int pretty = 0; doc && pretty < 2; pretty++) {
      snprintf(path, sizeof path, "%s/%d.%c.json", dir, i, pretty ? 'p' : 'c');
      FILE *f = fopen(path, "wb");
      if (!f ||
          snap_json_write_file(snap_json_root(doc),
                               pretty ? SNAP_JSON_PRETTY : 0, f) ||
          fclose(f)) {
        fprintf(stderr, "%s: write failed\n", path);
        failures++;
      }
    }
    snap_json_free(doc);
    free(text);
  }
  return failures != 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--oracle"))
    return oracle(argv[2], atoi(argv[3]));
  if (argc != 1) {
    fprintf(stderr, "usage: test_json [--oracle DIR COUNT]\n");
    return 2;
  }
  test_scalars();
  test_strings_and_objects();
  test_invalid();
  test_depth();
  test_edits();
  test_write_errors();
  printf("hostile input:\n");
  test_truncated(TEST_JSON_CORPUS "/lag_report_small.json", 1);
  test_truncated(TEST_JSON_CORPUS "/lag_report_v1.json", 61);
  test_truncated(TEST_JSON_CORPUS "/lag_report_v2.json", 61);
  test_linear_walk();
  test_hostile();
  return check_result("test_json");
}
