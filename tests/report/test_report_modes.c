/*
 * test_report_modes.c — what the library writes is the owner's alone by
 * default: report files 0600, the report directory (and the parents it
 * makes) 0700, snap_trace_write's file 0600; and exactly the mode a team
 * configured (lag config v3's file_mode), whatever the umask (issue 24,
 * item 3: files were 0644 and directories 0755, so any local user read
 * stacks, paths and thread names).
 *
 * Reports are made without a lag: an ongoing report of a dead process,
 * planted, becomes a hang_killed report the library writes at start.
 * Oracle: lstat's mode bits.
 */
#include "check.h"
#include "report/files_test.h"

/* Starts and stops the watchdog on dir with `mode` (0: the default), after
   planting an ongoing report when dir exists; returns the mode of the
   hang_killed report written (0 when none). */
static unsigned start_and_report(const char *dir, unsigned mode) {
  snap_lag_config_t c;
  snap_lag_config_default(&c);
  c.report_dir = dir;
#ifndef TEST_NO_FILE_MODE
  if (mode)
    c.file_mode = mode;
#else
  (void)mode;
#endif
  int64_t ms = unix_ms() - 60000;
  bool planted = ft_type(dir) == S_IFDIR && ft_plant_ongoing(dir, ms);
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  if (!planted)
    return 0;
  char path[1200];
  snprintf(path, sizeof path, "%s/%lld-hang_killed.json", dir, (long long)ms);
  CHECK(ft_type(path) == S_IFREG, "no hang_killed report %s", path);
  return ft_mode(path);
}

int main(void) {
  char base[] = "/tmp/snap_modes.XXXXXX";
  if (!mkdtemp(base))
    return 1;
  char a[600], ab[600], dir[600], path[1200];

  /* The default, under the usual umask: the directory and the parents the
     start makes are 0700, reports 0600. */
  umask(022);
  snprintf(a, sizeof a, "%s/a", base);
  snprintf(ab, sizeof ab, "%s/a/b", base);
  snprintf(dir, sizeof dir, "%s/a/b/reports", base);
  start_and_report(dir, 0); /* makes the directory */
  CHECK(ft_mode(a) == 0700, "parent made %o, not 0700", ft_mode(a));
  CHECK(ft_mode(ab) == 0700, "parent made %o, not 0700", ft_mode(ab));
  CHECK(ft_mode(dir) == 0700, "report_dir made %o, not 0700", ft_mode(dir));
  unsigned m = start_and_report(dir, 0);
  CHECK(m == 0600, "a report made %o, not 0600", m);

  /* snap_trace_write's file: 0600 too. */
  snap_trace_config_t tc;
  snap_trace_config_default(&tc);
  CHECK_EQ(snap_trace_start(&tc), SNAP_OK);
  sleep_ms(20);
  CHECK_EQ(snap_trace_stop(), SNAP_OK);
  ft_path(path, sizeof path, dir, "t.pftrace");
  CHECK_EQ(snap_trace_write(path, SNAP_TRACE_PERFETTO, 0, 0), SNAP_OK);
  CHECK(ft_mode(path) == 0600, "a trace made %o, not 0600", ft_mode(path));
  /* Replacing a file of a wider mode gives the new file 0600 (the old one
     is not reused). */
  CHECK(chmod(path, 0644) == 0, "chmod");
  CHECK_EQ(snap_trace_write(path, SNAP_TRACE_FOLDED, 0, 0), SNAP_OK);
  CHECK(ft_mode(path) == 0600, "a trace rewritten %o, not 0600", ft_mode(path));

#ifndef TEST_NO_FILE_MODE
  /* A team's group access, exactly, whatever the umask: 0640 files in a
     0750 directory under umask 077, 0660 in 0770. */
  umask(077);
  snprintf(dir, sizeof dir, "%s/group/reports", base);
  start_and_report(dir, 0640);
  CHECK(ft_mode(dir) == 0750, "report_dir made %o, not 0750", ft_mode(dir));
  m = start_and_report(dir, 0640);
  CHECK(m == 0640, "a report made %o, not 0640", m);
  snprintf(dir, sizeof dir, "%s/rw/reports", base);
  start_and_report(dir, 0660);
  CHECK(ft_mode(dir) == 0770, "report_dir made %o, not 0770", ft_mode(dir));
  m = start_and_report(dir, 0660);
  CHECK(m == 0660, "a report made %o, not 0660", m);
  /* Only owner-rw modes without execute or set-id bits. */
  static const unsigned bad[] = {0,         0400,  0200,  0700,
                                 0640 | 01, 04600, 01600, 0666 | 0100};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snap_lag_config_t c;
    snap_lag_config_default(&c);
    c.report_dir = dir;
    c.file_mode = bad[i];
    CHECK(snap_lag_start(&c) == SNAP_EINVAL, "file_mode %o accepted", bad[i]);
    snap_lag_stop();
  }
  /* The default is 0600. */
  snap_lag_config_t d;
  snap_lag_config_default(&d);
  CHECK(d.file_mode == 0600, "default file_mode %o", d.file_mode);
#endif
  umask(022);
  ft_rm_rf(base);
  return check_result("test_report_modes");
}
