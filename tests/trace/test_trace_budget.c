/*
 * test_trace_budget.c — every max_bytes stacksnap.h documents as valid
 * starts a trace (issue 24, item 14: 64..84 KiB were documented valid
 * and refused with SNAP_EINVAL, the trace's own 80 KiB tables being
 * counted in the budget), and one byte below the documented minimum is
 * refused.
 *
 * Oracle: the header's own text, read from the source tree (the range in
 * max_bytes' comment, "<N> KiB..1 GiB").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "stacksnap.h"

/* The documented minimum of max_bytes, in bytes; 0 when not found. */
static size_t documented_min(void) {
  FILE *f = fopen(SNAP_HEADER, "r");
  if (!f)
    return 0;
  static char text[1 << 17];
  text[fread(text, 1, sizeof text - 1, f)] = '\0';
  fclose(f);
  const char *field = strstr(text, "size_t max_bytes;");
  if (!field)
    return 0;
  /* The comment above the field: the last "KiB..1 GiB" before it. */
  const char *hit = NULL;
  for (const char *p = text; (p = strstr(p, " KiB..1 GiB")) && p < field; p++)
    hit = p;
  if (!hit)
    return 0;
  const char *start = hit;
  while (start > text && start[-1] >= '0' && start[-1] <= '9')
    start--;
  return (size_t)strtoul(start, NULL, 10) << 10;
}

int main(void) {
  size_t min = documented_min();
  CHECK(min > 0, "no documented range found in %s", SNAP_HEADER);
  if (!min)
    return check_result("test_trace_budget");
  printf("documented minimum: %zu KiB\n", min >> 10);
  snap_trace_config_t c;
  snap_trace_config_default(&c);
  c.max_bytes = min - 1;
  CHECK_EQ(snap_trace_start(&c), SNAP_EINVAL);
  /* The documented minimum and the next 24 KiB, 4 KiB at a time. */
  for (size_t b = min; b <= min + (24u << 10); b += 4u << 10) {
    c.max_bytes = b;
    int rc = snap_trace_start(&c);
    CHECK(rc == SNAP_OK, "max_bytes %zu (documented valid): %s", b,
          snap_strerror(rc));
    if (rc != SNAP_OK)
      continue;
    CHECK_EQ(snap_trace_mark("budget"), SNAP_OK);
    CHECK_EQ(snap_trace_stop(), SNAP_OK);
    snap_trace_stats_t st = {.size = sizeof st};
    CHECK_EQ(snap_trace_stats(&st), SNAP_OK);
    CHECK(st.bytes_reserved <= b, "%llu bytes reserved over a cap of %zu",
          (unsigned long long)st.bytes_reserved, b);
  }
  return check_result("test_trace_budget");
}
