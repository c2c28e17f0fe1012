/*
 * test_report_trace_targets.c — snap_trace_write never replaces what is
 * not a regular file (issue 24, item 5: a FIFO, a symlink, and, as root,
 * /dev/null itself became a regular file).
 *
 * Targets made by the test in its own directory: a FIFO, a symlink to a
 * file, a dangling symlink, a directory, and (argument "device") a
 * character device made with mknod, the same as /dev/null (1, 3); the
 * system's own is never touched. Each must be refused with SNAP_ENOTREG
 * and be left as it was; a regular file is replaced as before.
 * The device needs CAP_MKNOD: without it that run reports "skipped" (77).
 * Oracle: lstat's type, inode and device numbers; the link target's bytes.
 */
#include <sys/sysmacros.h>

#include "check.h"
#include "report/files_test.h"

#define SKIP 77

static int write_to(const char *path) {
  return snap_trace_write(path, SNAP_TRACE_PERFETTO, 0, 0);
}

static void device(const char *dir) {
  char path[1200];
  ft_path(path, sizeof path, dir, "null");
  struct stat before, after;
  CHECK(lstat(path, &before) == 0, "lstat");
  CHECK_EQ(write_to(path), SNAP_ENOTREG);
  CHECK(lstat(path, &after) == 0 && S_ISCHR(after.st_mode) &&
            after.st_ino == before.st_ino && after.st_rdev == makedev(1, 3),
        "the device node was replaced");
}

int main(int argc, char **argv) {
  bool dev = argc > 1 && strcmp(argv[1], "device") == 0;
  char dir[] = "/tmp/snap_targets.XXXXXX";
  if (!mkdtemp(dir))
    return 1;
  char path[1200], target[1200];
  if (dev && mknod(ft_path(path, sizeof path, dir, "null"), S_IFCHR | 0666,
                   makedev(1, 3)) != 0) {
    printf("skipped: mknod: %s\n", strerror(errno));
    ft_rm_rf(dir);
    return SKIP;
  }
  snap_trace_config_t tc;
  snap_trace_config_default(&tc);
  CHECK_EQ(snap_trace_start(&tc), SNAP_OK);
  sleep_ms(20);
  CHECK_EQ(snap_trace_stop(), SNAP_OK);

  if (dev) {
    device(dir);
  } else {
    /* A FIFO. */
    ft_path(path, sizeof path, dir, "fifo.pftrace");
    CHECK(mkfifo(path, 0600) == 0, "mkfifo");
    CHECK_EQ(write_to(path), SNAP_ENOTREG);
    CHECK(ft_type(path) == S_IFIFO, "the FIFO was replaced");

    /* A symlink to a file: neither the link nor its target changes. */
    ft_path(target, sizeof target, dir, "target");
    CHECK(ft_write(target, "target\n"), "target");
    ft_path(path, sizeof path, dir, "link.pftrace");
    CHECK(symlink(target, path) == 0, "symlink");
    CHECK_EQ(write_to(path), SNAP_ENOTREG);
    CHECK(ft_type(path) == S_IFLNK, "the symlink was replaced");
    char text[64];
    CHECK(ft_read(target, text, sizeof text) && strcmp(text, "target\n") == 0,
          "the link's target changed");

    /* A dangling symlink. */
    ft_path(path, sizeof path, dir, "dangling.pftrace");
    CHECK(symlink("/nonexistent/x", path) == 0, "symlink");
    CHECK_EQ(write_to(path), SNAP_ENOTREG);
    CHECK(ft_type(path) == S_IFLNK, "the dangling symlink was replaced");

    /* A directory. */
    ft_path(path, sizeof path, dir, "dir.pftrace");
    CHECK(mkdir(path, 0700) == 0, "mkdir");
    CHECK_EQ(write_to(path), SNAP_ENOTREG);
    CHECK(ft_type(path) == S_IFDIR, "the directory was replaced");

    /* A regular file: replaced (a new inode), as before. */
    ft_path(path, sizeof path, dir, "regular.pftrace");
    CHECK(ft_write(path, "old\n"), "regular");
    CHECK_EQ(write_to(path), SNAP_OK);
    CHECK(ft_type(path) == S_IFREG, "the regular file is not one now");
    CHECK(ft_read(path, text, sizeof text) && strcmp(text, "old\n") != 0,
          "the regular file was not replaced");
  }
  ft_rm_rf(dir);
  return check_result(dev ? "test_report_trace_device"
                          : "test_report_trace_targets");
}
