/*
 * text_buf.c — the growable output buffer every text and file the library
 * writes is built in (lag reports, the trace's exporters), and the text
 * rules they share: what is UTF-8, how a JSON string literal is written.
 * One escaping rule, here, so a lag report and a trace cannot disagree on
 * what a string may hold.
 *
 * Owns: snap__tbuf_* and snap__utf8_* (report/report.h).
 * Algorithm: the buffer doubles when it runs out (from 64 KiB: a trace is
 * rarely smaller) and stays NUL-terminated; the first failed allocation
 * sets `failed` and every later append does nothing, so an exporter checks
 * once at the end instead of after every write.
 * Text: frame names and labels can hold any bytes (a symbol table, a
 * caller's label). Every string that reaches a file goes through
 * snap__utf8_len, which accepts only well-formed UTF-8 (no overlong forms,
 * no UTF-16 surrogates, nothing above U+10FFFF: what Python's strict
 * decoder and protobuf's string checks refuse), and what does not start
 * such a sequence becomes one U+FFFD per maximal subpart (snap__utf8_bad_len:
 * the bytes of a broken sequence up to where it breaks, or the one byte
 * that starts nothing), as Python's decoder replaces them. So every output
 * stays parseable.
 * Must not: write files, or be called where allocation is forbidden (the
 * sampler's stopped window).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

static const char REPLACEMENT[3] = {'\xef', '\xbf', '\xbd'}; /* U+FFFD */

static bool reserve(snap__tbuf_t *b, size_t more) {
  if (b->failed)
    return false;
  if (more < b->cap && b->len < b->cap - more) /* room for more + NUL */
    return true;
  size_t cap = b->cap ? b->cap : 65536;
  while (cap - b->len <= more) {
    if (cap > SIZE_MAX / 2) {
      b->failed = true;
      return false;
    }
    cap *= 2;
  }
  char *p = realloc(b->p, cap);
  if (!p) {
    b->failed = true;
    return false;
  }
  b->p = p;
  b->cap = cap;
  return true;
}

void snap__tbuf_put(snap__tbuf_t *b, const void *s, size_t n) {
  /* The common case (room there) without a call: exporters put a few
     bytes at a time, millions of times for a long trace. */
  if (!(n < b->cap - b->len && !b->failed) && !reserve(b, n))
    return;
  if (n)
    memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

void snap__tbuf_puts(snap__tbuf_t *b, const char *s) {
  snap__tbuf_put(b, s, strlen(s));
}

void snap__tbuf_printf(snap__tbuf_t *b, const char *fmt, ...) {
  /* Most calls are a number or two: try the room there is (at least 128
     bytes), and only when that is too small, grow and format again. */
  if (!reserve(b, 128))
    return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->p[b->len] = '\0';
    return;
  }
  if ((size_t)n >= b->cap - b->len) {
    if (!reserve(b, (size_t)n)) {
      if (b->p)
        b->p[b->len] = '\0';
      return;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
  }
  b->len += (size_t)n;
}

size_t snap__utf8_len(const unsigned char *s) {
  unsigned c = s[0];
  if (c < 0x80)
    return 1;
  size_t n;
  unsigned lo = 0x80, hi = 0xbf; /* the range of the second byte */
  if (c >= 0xc2 && c <= 0xdf)
    n = 2;
  else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0)
      lo = 0xa0; /* overlong below U+0800 */
    else if (c == 0xed)
      hi = 0x9f; /* U+D800..U+DFFF: surrogates are not text */
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0)
      lo = 0x90; /* overlong below U+10000 */
    else if (c == 0xf4)
      hi = 0x8f; /* above U+10FFFF */
  } else
    return 0; /* a continuation byte, 0xc0/0xc1, or 0xf5.. */
  if (s[1] < lo || s[1] > hi)
    return 0; /* a NUL terminator fails here too: never read past it */
  for (size_t i = 2; i < n; i++)
    if ((s[i] & 0xc0) != 0x80)
      return 0;
  return n;
}

size_t snap__utf8_bad_len(const unsigned char *s) {
  /* The bytes that start a valid sequence before it breaks: Unicode's
     "maximal subpart", replaced by one U+FFFD (as Python's and the WHATWG
     decoders do). A byte that starts nothing is one. */
  unsigned c = s[0];
  size_t n;
  unsigned lo = 0x80, hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf)
    n = 2;
  else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    lo = c == 0xe0 ? 0xa0 : 0x80;
    hi = c == 0xed ? 0x9f : 0xbf;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    lo = c == 0xf0 ? 0x90 : 0x80;
    hi = c == 0xf4 ? 0x8f : 0xbf;
  } else
    return 1;
  if (s[1] < lo || s[1] > hi)
    return 1;
  size_t i = 2;
  while (i < n && (s[i] & 0xc0) == 0x80)
    i++;
  return i; /* < n when s did not start a valid sequence */
}

void snap__tbuf_text(snap__tbuf_t *b, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    /* Copy the longest valid run at once. */
    const unsigned char *run = p;
    size_t n;
    while (*p && (n = snap__utf8_len(p)) != 0)
      p += n;
    snap__tbuf_put(b, run, (size_t)(p - run));
    if (*p) {
      snap__tbuf_put(b, REPLACEMENT, sizeof REPLACEMENT);
      p += snap__utf8_bad_len(p);
    }
  }
}

size_t snap__utf8_clean_len(const char *s) {
  size_t len = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    size_t n = snap__utf8_len(p);
    len += n ? n : sizeof REPLACEMENT;
    p += n ? n : snap__utf8_bad_len(p);
  }
  return len;
}

void snap__tbuf_json_string(snap__tbuf_t *b, const char *s) {
  if (!s) {
    snap__tbuf_puts(b, "null"); /* as report_json.c: still parses */
    return;
  }
  snap__tbuf_put(b, "\"", 1);
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    const unsigned char *run = p;
    size_t n = 0;
    while (*p && *p != '"' && *p != '\\' && *p >= 0x20 &&
           (n = snap__utf8_len(p)) != 0)
      p += n;
    snap__tbuf_put(b, run, (size_t)(p - run));
    if (!*p)
      break;
    if (*p == '"' || *p == '\\') {
      char esc[2] = {'\\', (char)*p};
      snap__tbuf_put(b, esc, 2);
    } else if (*p < 0x20) {
      /* JSON forbids raw control characters inside a string. */
      static const char hex[] = "0123456789abcdef";
      char esc[6] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15]};
      snap__tbuf_put(b, esc, 6);
    } else {
      snap__tbuf_put(b, "\\ufffd", 6); /* not text: never break the file */
      p += snap__utf8_bad_len(p) - 1;
    }
    p++;
  }
  snap__tbuf_put(b, "\"", 1);
}

void snap__tbuf_free(snap__tbuf_t *b) {
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
  b->failed = false;
}
