/*
 * text_escape.c — report strings as terminal-safe text (text_escape.h).
 *
 * Owns: the one escaper of the text the tool prints (the report as text,
 * its error messages, the comment lines of atos.c). A report comes from a
 * device, maybe hostile: a thread named "\e]52;c;...\a" would set the
 * reader's clipboard (OSC 52), "\e[2J" clear the screen, "\r" or "\n" forge
 * a line that looks like the tool's own. Nothing a terminal acts on gets
 * through; text stays readable (UTF-8 as it is), and an escape says which
 * byte it was.
 *
 * Must not: allocate (snap__text_escape), or cut inside an escape.
 */
#include "text_escape.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The length of the well-formed UTF-8 sequence at s (n bytes left), or 0:
   Unicode 15, table 3-7 (no overlongs, no surrogates, nothing past
   U+10FFFF). */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned char c = s[0], lo = 0x80, hi = 0xBF;
  size_t len;
  if (c < 0x80)
    return 1;
  if (c >= 0xC2 && c <= 0xDF)
    len = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    lo = c == 0xE0 ? 0xA0 : 0x80;
    hi = c == 0xED ? 0x9F : 0xBF;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    lo = c == 0xF0 ? 0x90 : 0x80;
    hi = c == 0xF4 ? 0x8F : 0xBF;
  } else
    return 0;
  if (n < len || s[1] < lo || s[1] > hi)
    return 0;
  for (size_t i = 2; i < len; i++)
    if (s[i] < 0x80 || s[i] > 0xBF)
      return 0;
  return len;
}

static void hex2(char *out, unsigned char c) {
  static const char digits[] = "0123456789abcdef";
  out[0] = digits[c >> 4];
  out[1] = digits[c & 15];
}

size_t snap__text_escape(char *out, size_t out_size, const char *s,
                         size_t len) {
  const unsigned char *u = (const unsigned char *)s;
  size_t total = 0, kept = 0, i = 0;
  bool fits = true;
  while (i < len) {
    char esc[8];
    const char *piece = (const char *)u + i;
    size_t k = utf8_len(u + i, len - i), n = k;
    if (k == 0 || u[i] < 0x20 || u[i] == 0x7f) {
      memcpy(esc, "\\x", 2);
      hex2(esc + 2, u[i]);
      piece = esc, n = 4, k = 1;
    } else if (k == 2 && u[i] == 0xC2 && u[i + 1] < 0xA0) {
      memcpy(esc, "\\u{", 3); /* C1: U+0080..U+009F */
      hex2(esc + 3, u[i + 1]);
      esc[5] = '}';
      piece = esc, n = 6;
    }
    if (fits && total + n < out_size)
      memcpy(out + total, piece, n);
    else
      fits = false;
    total += n;
    i += k;
    if (fits)
      kept = total;
  }
  if (out_size)
    out[kept] = '\0';
  return total;
}

char *snap__text_escaped(const char *s) {
  size_t len = strlen(s), need = snap__text_escape(NULL, 0, s, len);
  char *out = malloc(need + 1);
  if (out)
    snap__text_escape(out, need + 1, s, len);
  return out;
}
