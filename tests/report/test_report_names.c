/*
 * test_report_names.c — the grammar of the names the library writes
 * (src/report/names.c), against the oracle of printing: a name is ours
 * exactly when "%" PRId64 of the date parsed from it gives its text back.
 * Random and edge-case names, both ways; the temp-file shape files.c
 * makes; the modes a config may choose.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "report/report.h"
#include "xorshift.h"

/* The oracle: does name start with a date exactly as printf prints one? */
static bool printed_date(const char *name, int64_t *ms) {
  size_t n = strspn(name, "0123456789");
  if (n == 0 || n > 19 || name[n] != '-')
    return false;
  char digits[24];
  memcpy(digits, name, n);
  digits[n] = '\0';
  unsigned long long v = 0;
  if (sscanf(digits, "%llu", &v) != 1 || v > (unsigned long long)INT64_MAX)
    return false;
  char back[24];
  snprintf(back, sizeof back, "%" PRId64, (int64_t)v);
  if (strcmp(back, digits) != 0)
    return false;
  *ms = (int64_t)v;
  return true;
}

int main(void) {
  static const char *const cases[] = {"1-lag.json",
                                      "0-lag.json",
                                      "00-lag.json",
                                      "0001-hang.json",
                                      "-1-lag.json",
                                      "+1-lag.json",
                                      " 1-lag.json",
                                      "1x-lag.json",
                                      "1",
                                      "",
                                      "-",
                                      "9223372036854775807-lag.json",
                                      "9223372036854775808-lag.json",
                                      "99999999999999999999-lag.json",
                                      "1764318000000-trace.pftrace"};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int64_t want = -1, got = -1;
    bool ours = printed_date(cases[i], &want);
    size_t n = snap__report_ms_prefix(cases[i], &got);
    CHECK((n != 0) == ours, "\"%s\": ours %d, parsed %zu", cases[i], ours, n);
    CHECK(!ours || got == want, "\"%s\": %" PRId64 " vs %" PRId64, cases[i],
          got, want);
  }
  /* Random names over a small alphabet: digits, '-', '+', ' ', 'x'. */
  uint64_t rng = 0x5eed;
  static const char alpha[] = "0123456789-+ x";
  for (int i = 0; i < 200000; i++) {
    char name[24];
    size_t len = snap_xorshift(&rng) % 22;
    for (size_t j = 0; j < len; j++)
      name[j] = alpha[snap_xorshift(&rng) % (sizeof alpha - 1)];
    name[len] = '\0';
    int64_t want = -1, got = -1;
    bool ours = printed_date(name, &want);
    size_t n = snap__report_ms_prefix(name, &got);
    if ((n != 0) != ours || (ours && got != want)) {
      CHECK(false, "\"%s\": ours %d, parsed %zu", name, ours, n);
      break;
    }
  }

  /* Temp names: "." X "." 16 lowercase hex ".tmp". */
  char inner[64];
  CHECK(snap__report_temp_of(".1-lag.json.0123456789abcdef.tmp", inner,
                             sizeof inner) &&
            strcmp(inner, "1-lag.json") == 0,
        "a temp of 1-lag.json");
  CHECK(snap__report_temp_of(".probe.ffffffffffffffff.tmp", inner,
                             sizeof inner) &&
            strcmp(inner, "probe") == 0,
        "the probe's temp");
  static const char *const not_temp[] = {".1-lag.json.tmp",
                                         "1-lag.json.0123456789abcdef.tmp",
                                         "..0123456789abcdef.tmp",
                                         ".1-lag.json.0123456789ABCDEF.tmp",
                                         ".1-lag.json.0123456789abcde.tmp",
                                         ".1-lag.json_0123456789abcdef.tmp",
                                         ".1-lag.json.0123456789abcdef.tmp~",
                                         ".0123456789abcdef.tmp"};
  for (size_t i = 0; i < sizeof not_temp / sizeof *not_temp; i++)
    CHECK(!snap__report_temp_of(not_temp[i], inner, sizeof inner),
          "\"%s\" taken for a temp of ours", not_temp[i]);
  CHECK(!snap__report_temp_of(".1-lag.json.0123456789abcdef.tmp", inner, 10),
        "an inner name longer than the buffer");

  /* Modes. */
  CHECK(snap__report_mode_ok(0600) && snap__report_mode_ok(0640) &&
            snap__report_mode_ok(0660) && snap__report_mode_ok(0666),
        "a valid mode refused");
  CHECK(!snap__report_mode_ok(0) && !snap__report_mode_ok(0400) &&
            !snap__report_mode_ok(0700) && !snap__report_mode_ok(04600) &&
            !snap__report_mode_ok(0601),
        "an invalid mode accepted");
  CHECK_EQ(snap__report_dir_mode(0600), 0700);
  CHECK_EQ(snap__report_dir_mode(0640), 0750);
  CHECK_EQ(snap__report_dir_mode(0660), 0770);
  CHECK_EQ(snap__report_dir_mode(0644), 0755);
  return check_result("test_report_names");
}
