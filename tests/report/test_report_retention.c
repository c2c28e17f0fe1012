/*
 * test_report_retention.c — retention and the clean-up of temp files
 * remove only the exact names the library writes (issue 24, item 4:
 * "0001-hang.json" was read as a report of 1970 and deleted, and with it
 * "1-trace.pftrace", which belonged to nobody).
 *
 * A report directory is the app's: it may hold an engineer's notes named
 * almost like reports. Every name below is dated long past retention, so
 * a name the library took for its own would go. Controls: names the
 * library does write, equally old, go.
 * Oracle: lstat of each name after snap_lag_start.
 */
#include "check.h"
#include "report/files_test.h"

static const char *const k_foreign[] = {
    "0001-hang.json",                /* leading zeros */
    "1-trace.pftrace",               /* no report of ours is dated 1 */
    "00-lag.json",                   /* a zero that is not the only digit */
    "+5-lag.json",                   /* a sign */
    " 6-lag.json",                   /* a space */
    "99999999999999999999-lag.json", /* past int64 */
    "7-lag.json.bak",                /* more after the name */
    "8-lags.json",                   /* a kind we do not write */
    "0009-trace.pftrace",
    ".0001-hang.json.tmp", /* an old-style temp of a name not ours */
    ".0001-hang.json.0123456789abcdef.tmp", /* a temp of a name not ours */
    ".10-lag.json.0123456789ABCDEF.tmp",    /* not our hex */
    ".10-lag.json.0123456789abcde.tmp",     /* 15 digits */
    ".x.tmp",                               /* another tool's */
    ".probe.tmp",
    "notes.txt",
};

static const char *const k_ours[] = {
    "2-hang.json",     /* past retention */
    "2-trace.pftrace", /* its trace */
    "3-cpu.json",
    ".11-lag.json.tmp",                  /* an older version's temp */
    ".12-lag.json.0123456789abcdef.tmp", /* a temp left by a kill */
    ".12-trace.pftrace.fedcba9876543210.tmp",
    ".probe.0011223344556677.tmp",
    "..probe.tmp.tmp", /* an older version's probe */
};

int main(void) {
  char dir[] = "/tmp/snap_retention.XXXXXX";
  if (!mkdtemp(dir))
    return 1;
  char path[1200];
  size_t nf = sizeof k_foreign / sizeof *k_foreign;
  size_t no = sizeof k_ours / sizeof *k_ours;
  for (size_t i = 0; i < nf; i++)
    CHECK(ft_write(ft_path(path, sizeof path, dir, k_foreign[i]), "x\n"), "%s",
          k_foreign[i]);
  for (size_t i = 0; i < no; i++)
    CHECK(ft_write(ft_path(path, sizeof path, dir, k_ours[i]), "x\n"), "%s",
          k_ours[i]);

  snap_lag_config_t c;
  snap_lag_config_default(&c);
  c.report_dir = dir;
  c.retention_days = 1;
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);

  for (size_t i = 0; i < nf; i++)
    CHECK(ft_type(ft_path(path, sizeof path, dir, k_foreign[i])) == S_IFREG,
          "retention removed \"%s\", a name it never writes", k_foreign[i]);
  for (size_t i = 0; i < no; i++)
    CHECK(ft_type(ft_path(path, sizeof path, dir, k_ours[i])) == 0,
          "\"%s\" is ours and old: it should be gone", k_ours[i]);
  ft_rm_rf(dir);
  return check_result("test_report_retention");
}
