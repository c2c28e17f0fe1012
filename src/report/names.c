/*
 * names.c — which names in a directory are the library's: the date that
 * starts every report and trace name, and the temp files files.c makes.
 *
 * Owns: the grammar of our names, so that retention and the clean-up of
 * temp files remove only what the library itself would have written. A
 * report directory is the app's: it may hold an engineer's
 * "0001-hang.json", a "1-trace.pftrace" copied from elsewhere, a ".x.tmp"
 * of another tool. A name is ours only when printing the date we parsed
 * from it gives the same text back (issue 24, item 4: strtoll accepted
 * leading zeros, and retention deleted names it never writes).
 * Must not: touch a file (files.c does; report_store.c decides).
 */
#include <string.h>

#include "report/report.h"

size_t snap__report_ms_prefix(const char *name, int64_t *ms) {
  /* "%" PRId64 of a date: digits, the first not 0 unless it is the only
     one, at most 19 of them and no more than INT64_MAX. */
  if (!name || name[0] < '0' || name[0] > '9')
    return 0;
  size_t n = 0;
  uint64_t v = 0;
  while (name[n] >= '0' && name[n] <= '9') {
    unsigned d = (unsigned)(name[n] - '0');
    if (v > ((uint64_t)INT64_MAX - d) / 10)
      return 0; /* overflows: not a date we print */
    v = v * 10 + d;
    n++;
  }
  if (name[n] != '-' || (name[0] == '0' && n > 1))
    return 0;
  *ms = (int64_t)v;
  return n;
}

static bool is_lower_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

bool snap__report_temp_of(const char *name, char *inner, size_t size) {
  /* "." X "." 16 hex ".tmp", X not empty: files.c's temp_name. */
  static const char tail[] = ".tmp";
  size_t n = name ? strlen(name) : 0, tl = sizeof tail - 1;
  if (n < 1 + 1 + 1 + 16 + tl || name[0] != '.' ||
      strcmp(name + n - tl, tail) != 0)
    return false;
  const char *hex = name + n - tl - 16;
  if (hex[-1] != '.')
    return false;
  for (int i = 0; i < 16; i++)
    if (!is_lower_hex(hex[i]))
      return false;
  size_t il = (size_t)(hex - 1 - (name + 1));
  if (il == 0 || il >= size)
    return false;
  memcpy(inner, name + 1, il);
  inner[il] = '\0';
  return true;
}
