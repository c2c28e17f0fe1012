/*
 * fuzz_report_json.c — libFuzzer over stacksnap-symbolicate's report
 * reader: the JSON reader and writer (tools/symbolicate/json.c), then the
 * report's checks and naming pass (report_names.c, without files) and its
 * text (report_text.c): the program meets a report from anyone, so it
 * meets any bytes here.
 *
 * Each input: parse. A refusal must carry a message "line L col C (byte
 * B): ..." with B inside the input. A document must survive its own
 * writer: written compact and pretty, each text parses again and writes
 * to the identical text, and pretty and compact agree on content. The
 * accessors must agree with the text (an int64 or uint64 read back prints
 * as the number's text; a key looked up finds a member with that key).
 * The report's text must be terminal-safe whatever the report held: valid
 * UTF-8 with no control byte but newline, no DEL, no C1 (issue 24).
 * abort() on any disagreement: that is a finding.
 *
 * Built only with clang and ASan (SNAP_FUZZ_SECONDS, tests/tools/tools.cmake).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "report_names.h"
#include "report_text.h"

static void finding(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_report_json: %s%s%s\n", what, detail ? ": " : "",
          detail ? detail : "");
  abort();
}

static void check_node(const snap_json_t *v, int depth) {
  if (depth > SNAP_JSON_MAX_DEPTH)
    finding("deeper than the limit", NULL);
  char buf[32];
  size_t len = 0;
  switch (snap_json_type(v)) {
  case SNAP_JSON_NUMBER: {
    const char *text = snap_json_number_text(v, &len);
    if (!text || strlen(text) != len)
      finding("number text", text);
    int64_t i;
    uint64_t u;
    double d;
    if (snap_json_int64(v, &i)) {
      snprintf(buf, sizeof buf, "%" PRId64, i);
      if (strcmp(buf, text) && !(i == 0 && !strcmp(text, "-0")))
        finding("int64 differs from its text", text);
    }
    if (snap_json_uint64(v, &u)) {
      snprintf(buf, sizeof buf, "%" PRIu64, u);
      if (strcmp(buf, text) && !(u == 0 && !strcmp(text, "-0")))
        finding("uint64 differs from its text", text);
    }
    (void)snap_json_double(v, &d);
    break;
  }
  case SNAP_JSON_STRING:
    if (!snap_json_string(v, &len))
      finding("string", NULL);
    break;
  case SNAP_JSON_ARRAY:
    for (size_t i = 0; i < snap_json_count(v); i++)
      check_node(snap_json_at(v, i), depth + 1);
    break;
  case SNAP_JSON_OBJECT:
    for (size_t i = 0; i < snap_json_count(v); i++) {
      const char *key;
      size_t key_len;
      const snap_json_t *m = snap_json_member(v, i, &key, &key_len);
      const snap_json_t *first = snap_json_get_n(v, key, key_len);
      if (!m || !first)
        finding("member lookup", key);
      /* The first member with this key comes at or before i. */
      size_t j = 0;
      while (snap_json_member(v, j, NULL, NULL) != first)
        j++;
      if (j > i)
        finding("lookup found a later member", key);
      check_node(m, depth + 1);
    }
    break;
  default: break;
  }
}

/* Whether text[0..n) is valid UTF-8 (lead and continuation bytes) with no
   C0 control but newline, no DEL and no C1 (C2 80..C2 9F). */
static bool terminal_safe(const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    size_t k = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if ((c < 0x20 && c != '\n') || c == 0x7f || (c >= 0x80 && c < 0xC2) ||
        c > 0xF4 || i + k > n)
      return false;
    for (size_t j = 1; j < k; j++)
      if ((s[i + j] & 0xC0) != 0x80)
        return false;
    if (c == 0xC2 && s[i + 1] < 0xA0)
      return false;
    i += k;
  }
  return true;
}

/* The report reader on the document (no files: a NULL finder), then the
   text writer: every report either names (nothing here) and prints, or is
   refused with a message naming the value; the text is terminal-safe. */
static void name_report(snap_json_doc_t *doc) {
  snap__report_summary_t sum;
  char why[512];
  if (snap__report_name(doc, NULL, &sum, why, sizeof why) != 0) {
    if (!why[0])
      finding("a report refused without a reason", NULL);
    return;
  }
  if (sum.in_image > sum.frames || sum.named != 0)
    finding("summary", NULL);
  char *text = NULL;
  size_t len = 0;
  FILE *sink = open_memstream(&text, &len);
  if (!sink)
    finding("open_memstream", NULL);
  if (snap__report_text(sink, doc, &sum) != 0)
    finding("text to memory failed", NULL);
  fclose(sink);
  if (!terminal_safe((const unsigned char *)text, len))
    finding("a raw control character in the text", text);
  free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  snap_json_error_t err;
  snap_json_doc_t *doc = snap_json_parse((const char *)data, size, 0, &err);
  if (!doc) {
    if (strncmp(err.message, "line ", 5) || err.offset > size)
      finding("bad error", err.message);
    return 0;
  }
  check_node(snap_json_root(doc), 1);
  char *texts[2];
  for (unsigned pretty = 0; pretty < 2; pretty++) {
    unsigned flags = pretty ? SNAP_JSON_PRETTY : 0;
    size_t n1, n2;
    char *s1 = snap_json_write_string(snap_json_root(doc), flags, &n1);
    if (!s1)
      finding("write failed", NULL);
    snap_json_doc_t *doc2 = snap_json_parse(s1, n1, 0, &err);
    if (!doc2)
      finding("our own output does not parse", err.message);
    char *s2 = snap_json_write_string(snap_json_root(doc2), flags, &n2);
    if (!s2 || n1 != n2 || memcmp(s1, s2, n1))
      finding("written twice, two texts", s1);
    if (pretty) {
      /* Pretty, parsed, written compact: the compact text. */
      char *c = snap_json_write_string(snap_json_root(doc2), 0, NULL);
      if (!c || strcmp(c, texts[0]))
        finding("pretty and compact disagree", c);
      free(c);
    }
    free(s2);
    snap_json_free(doc2);
    texts[pretty] = s1;
  }
  free(texts[0]);
  free(texts[1]);
  name_report(doc);
  snap_json_free(doc);
  return 0;
}
