/*
 * test_report_fifo.c — what is named like a report but is not a regular
 * file neither hangs snap_lag_start nor is followed (issue 24, item 2).
 *
 * The directory holds, among real reports: a FIFO named like an ongoing
 * report (recovery used to open it blocking, before looking at what it
 * was: snap_lag_start never returned), a FIFO named like a trace, and a
 * symlink named like an ongoing report whose target holds a report's text
 * (recovery followed it and copied the target into a hang_killed report).
 *
 * snap_lag_start runs in a child process; the parent is the hang's witness: the
 * child must exit within a bound (60 s, for a call that takes
 * milliseconds; before the fix it never returned). Oracles: lstat of
 * each planted name afterwards, the child's exit status.
 */
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

#include "check.h"
#include "report/files_test.h"

#define HANG_BOUND_MS 60000

static int child(const char *dir) {
  snap_lag_config_t c;
  snap_lag_config_default(&c);
  c.report_dir = dir;
  int rc = snap_lag_start(&c);
  if (rc != SNAP_OK) {
    fprintf(stderr, "snap_lag_start: %s\n", snap_strerror(rc));
    return 2;
  }
  return snap_lag_stop() == SNAP_OK ? 0 : 3;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "child") == 0)
    return child(argv[2]);
  char base[] = "/tmp/snap_fifo.XXXXXX";
  if (!mkdtemp(base))
    return 1;
  char dir[600], path[1200], outside[700];
  snprintf(dir, sizeof dir, "%s/reports", base);
  CHECK(mkdir(dir, 0700) == 0, "mkdir");
  int64_t ms = unix_ms() - 60000; /* a minute ago: kept by retention */
  char fifo_report[64], fifo_trace[64], link_report[64], real_report[64];
  snprintf(fifo_report, sizeof fifo_report, "%lld-lag.json", (long long)ms);
  snprintf(fifo_trace, sizeof fifo_trace, "%lld-trace.pftrace", (long long)ms);
  snprintf(link_report, sizeof link_report, "%lld-lag.json", (long long)ms + 1);
  snprintf(real_report, sizeof real_report, "%lld-hang_killed.json",
           (long long)ms + 2);
  CHECK(mkfifo(ft_path(path, sizeof path, dir, fifo_report), 0600) == 0,
        "mkfifo");
  CHECK(mkfifo(ft_path(path, sizeof path, dir, fifo_trace), 0600) == 0,
        "mkfifo");
  /* The link's target: an ongoing report of a dead process, outside. */
  snprintf(outside, sizeof outside, "%s/outside", base);
  CHECK(mkdir(outside, 0700) == 0 && ft_plant_ongoing(outside, ms + 1),
        "outside");
  char target[1200];
  snprintf(target, sizeof target, "%s/%lld-lag.json", outside,
           (long long)ms + 1);
  CHECK(symlink(target, ft_path(path, sizeof path, dir, link_report)) == 0,
        "symlink");
  /* A real report beside them (the start still works around them). */
  CHECK(ft_write(ft_path(path, sizeof path, dir, real_report), "{}\n"),
        "report");

  /* The child is this program again (argv[1] "child"), a fresh process:
     a fork would carry the parent's library state into it. */
  pid_t pid = -1;
  char *child_argv[] = {argv[0], "child", dir, NULL};
  int spawn = posix_spawn(&pid, argv[0], NULL, NULL, child_argv, environ);
  CHECK(spawn == 0, "posix_spawn: %s", strerror(spawn));
  int status = 0;
  bool exited = false;
  for (int waited = 0; pid > 0 && waited < HANG_BOUND_MS; waited += 10) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    sleep_ms(10);
  }
  if (!exited && pid > 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  if (exited && WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    /* The exec of this program failed: under qemu-user (the arm64
       configurations) a spawned aarch64 binary cannot run on the host. */
    printf("test_report_fifo: skipped: cannot spawn this program again "
           "(an emulator runs it)\n");
    return 77;
  }
  CHECK(exited, "snap_lag_start hung on a FIFO named like a report (%d s)",
        HANG_BOUND_MS / 1000);
  CHECK(exited && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "the child failed (status %d)", status);

  /* Each is left as it was: not opened, not replaced, not removed. */
  CHECK(ft_type(ft_path(path, sizeof path, dir, fifo_report)) == S_IFIFO,
        "the FIFO named like a report was replaced or removed");
  CHECK(ft_type(ft_path(path, sizeof path, dir, fifo_trace)) == S_IFIFO,
        "the FIFO named like a trace was replaced or removed");
  CHECK(ft_type(ft_path(path, sizeof path, dir, link_report)) == S_IFLNK,
        "the link named like a report was replaced or removed");
  char killed[64];
  snprintf(killed, sizeof killed, "%lld-hang_killed.json", (long long)ms + 1);
  CHECK(ft_type(ft_path(path, sizeof path, dir, killed)) == 0,
        "the link was followed: its target became %s", killed);
  CHECK(ft_type(ft_path(path, sizeof path, dir, real_report)) == S_IFREG,
        "the real report is gone");
  ft_rm_rf(base);
  return check_result("test_report_fifo");
}
