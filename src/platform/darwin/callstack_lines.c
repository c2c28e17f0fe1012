/*
 * callstack_lines.c — the parser of Apple's call-stack lines (layout in
 * callstack_lines.h).
 *
 * Algorithm:
 *  1. the index: leading decimal digits (spaces before and after optional:
 *     "%-4d" leaves none after a 4-digit index);
 *  2. the address: the first " 0x" followed by exactly 16 hex digits (8 on
 *     a 32-bit process) and a space, at least one character after the
 *     index; the image is what lies between, trailing padding trimmed;
 *  3. the offset: the decimal number after the last " + "; the symbol is
 *     everything between the address and that " + " (Objective-C, Swift
 *     and C++ names hold spaces, brackets and '+' signs, but never end in
 *     " + <digits>").
 * A symbol that is a hex number, "<redacted>", a UUID (8-4-4-4-12 hex
 * digits) or the line's own image name is no name: Libc prints those where
 * dladdr had none (callstack_lines.h). A function really named like its
 * image is lost here; the provider's dladdr fallback names it.
 *
 * Must not: read past len, allocate, or guess: a line that does not fit the
 * layout is rejected whole.
 */
#include "platform/darwin/callstack_lines.h"

#include <string.h>

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* "0x" + exactly `digits` hex digits at s[0..len), then a space. */
static bool addr_token(const char *s, size_t len, size_t digits,
                       uintptr_t *out) {
  if (len < digits + 3 || s[0] != '0' || s[1] != 'x' || s[digits + 2] != ' ')
    return false;
  uintptr_t v = 0;
  for (size_t i = 0; i < digits; i++) {
    int d = hexval(s[2 + i]);
    if (d < 0)
      return false;
    v = v << 4 | (uintptr_t)d;
  }
  *out = v;
  return true;
}

static bool is_hex_number(const char *s, size_t len) {
  if (len < 3 || s[0] != '0' || s[1] != 'x')
    return false;
  for (size_t i = 2; i < len; i++)
    if (hexval(s[i]) < 0)
      return false;
  return true;
}

/* uuid_unparse's form: 8-4-4-4-12 hex digits, either case. */
static bool is_uuid(const char *s, size_t len) {
  if (len != 36)
    return false;
  for (size_t i = 0; i < len; i++) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : hexval(s[i]) < 0)
      return false;
  }
  return true;
}

/* What Libc prints in the symbol's place when dladdr gave no name. */
static bool is_placeholder(const char *sym, size_t sym_len, const char *image,
                           size_t image_len) {
  return is_hex_number(sym, sym_len) || is_uuid(sym, sym_len) ||
         (sym_len == 10 && memcmp(sym, "<redacted>", 10) == 0) ||
         (image && sym_len == image_len && memcmp(sym, image, sym_len) == 0);
}

bool snap__cs_line_parse(const char *line, size_t len, snap__cs_line_t *out) {
  memset(out, 0, sizeof *out);
  while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' ||
                     line[len - 1] == ' '))
    len--;
  size_t i = 0;
  while (i < len && line[i] == ' ')
    i++;
  size_t digits_at = i;
  unsigned long index = 0;
  for (; i < len && line[i] >= '0' && line[i] <= '9'; i++) {
    if (index > 100000000ul)
      return false;
    index = index * 10 + (unsigned long)(line[i] - '0');
  }
  if (i == digits_at)
    return false;
  while (i < len && line[i] == ' ')
    i++;
  size_t image_at = i;

  /* 2. The address token, 64-bit layout first. */
  const size_t widths[2] = {2 * sizeof(uintptr_t), 8};
  size_t addr_at = 0, width = 0;
  for (int w = 0; w < 2 && !width; w++) {
    if (w == 1 && widths[1] == widths[0])
      break;
    for (size_t p = image_at + 1; p + 1 < len; p++) {
      if (line[p - 1] == ' ' &&
          addr_token(line + p, len - p, widths[w], &out->addr)) {
        addr_at = p;
        width = widths[w];
        break;
      }
    }
  }
  if (!width)
    return false;
  size_t image_end = addr_at - 1;
  while (image_end > image_at && line[image_end - 1] == ' ')
    image_end--;
  if (image_end == image_at)
    return false;

  /* 3. "<symbol> + <offset>" after the address. */
  size_t sym_at = addr_at + width + 3;
  size_t plus = 0;
  for (size_t p = len; p >= sym_at + 3; p--)
    if (line[p - 3] == ' ' && line[p - 2] == '+' && line[p - 1] == ' ') {
      plus = p - 3;
      break;
    }
  if (!plus || plus == sym_at || plus + 3 >= len)
    return false;
  uintptr_t offset = 0;
  for (size_t p = plus + 3; p < len; p++) {
    if (line[p] < '0' || line[p] > '9')
      return false;
    uintptr_t next = offset * 10 + (uintptr_t)(line[p] - '0');
    if (next / 10 != offset)
      return false; /* overflow */
    offset = next;
  }

  out->index = index;
  size_t image_len = image_end - image_at;
  if (!(image_len == 3 && memcmp(line + image_at, "???", 3) == 0)) {
    out->image = line + image_at;
    out->image_len = image_len;
  }
  const char *sym = line + sym_at;
  size_t sym_len = plus - sym_at;
  if (!is_placeholder(sym, sym_len, out->image, out->image_len)) {
    out->symbol = sym;
    out->symbol_len = sym_len;
  }
  out->offset = offset;
  return true;
}
