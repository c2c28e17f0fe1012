/*
 * test_kept_files.c — the /proc files the Linux backend keeps open are
 * never the app's: an app that closes a descriptor it did not open, and
 * gets the number back for a file of its own, must find its file intact
 * (not read, not closed by us), and our next read must still be right.
 *
 * Oracle: the kernel's own /proc/self/fd links name our kept files; the
 * app's file is a temporary file whose content and descriptor the test
 * checks after each of our reads.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "platform/linux/linux.h"

/* The descriptor whose /proc/self/fd link ends in `suffix`, or -1. */
static int fd_ending_in(const char *suffix) {
  DIR *d = opendir("/proc/self/fd");
  int found = -1;
  struct dirent *e;
  while (d && (e = readdir(d)) && found < 0) {
    char path[300], target[300];
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0)
      continue;
    target[n] = '\0';
    size_t tl = strlen(target), sl = strlen(suffix);
    if (tl >= sl && strcmp(target + tl - sl, suffix) == 0)
      found = atoi(e->d_name);
  }
  if (d)
    closedir(d);
  return found;
}

int main(void) {
  int tid = (int)syscall(SYS_gettid);
  char buf[1024], suffix[64];
  CHECK(snap__linux_read_task(tid, "stat", buf, sizeof buf) > 0, "stat");
  snprintf(suffix, sizeof suffix, "/task/%d/stat", tid);
  int kept = fd_ending_in(suffix);
  CHECK(kept >= 0, "the stat file is kept open");
  if (kept < 0)
    return check_result("test_kept_files");

  /* The app closes it and gets the number back for its own file. */
  close(kept);
  char name[] = "/tmp/snap_kept.XXXXXX";
  int app = mkstemp(name);
  if (app != kept) { /* make it the same number */
    CHECK(dup2(app, kept) == kept, "dup2");
    close(app);
    app = kept;
  }
  unlink(name);
  CHECK(write(app, "app data", 8) == 8, "write");

  /* Our next read of the same file: right, and the app's file untouched. */
  ssize_t n = snap__linux_read_task(tid, "stat", buf, sizeof buf);
  char want[32];
  snprintf(want, sizeof want, "%d (", tid);
  CHECK(n > 0 && strncmp(buf, want, strlen(want)) == 0,
        "our read after the app took the number: %.40s", buf);
  CHECK(fcntl(app, F_GETFD) >= 0, "the app's descriptor was closed");
  CHECK(lseek(app, 0, SEEK_CUR) == 8, "the app's file offset moved");

  /* Another thread's files: ours are closed, the app's is not. */
  (void)snap__linux_read_task(1, "stat", buf, sizeof buf); /* not ours */
  CHECK(fcntl(app, F_GETFD) >= 0,
        "the app's descriptor was closed when we moved on");
  char back[16] = "";
  CHECK(pread(app, back, 8, 0) == 8 && memcmp(back, "app data", 8) == 0,
        "the app's file changed: %.8s", back);
  close(app);
  return check_result("test_kept_files");
}
