/*
 * files_test.h — what the tests of the library's files share: a scratch
 * directory, small file helpers, an ongoing report of a dead process, and
 * one lag of the main thread.
 */
#ifndef SNAP_TEST_FILES_TEST_H
#define SNAP_TEST_FILES_TEST_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "stacksnap.h"
#include "test_clock.h"

/* dir + "/" + name into a static-free buffer of the caller. */
static inline const char *ft_path(char *buf, size_t size, const char *dir,
                                  const char *name) {
  snprintf(buf, size, "%s/%s", dir, name);
  return buf;
}

static inline bool ft_write(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f)
    return false;
  bool ok = fputs(text, f) >= 0;
  return fclose(f) == 0 && ok;
}

/* The whole file into buf (NUL-terminated); false if it cannot be read. */
static inline bool ft_read(const char *path, char *buf, size_t size) {
  FILE *f = fopen(path, "r");
  if (!f)
    return false;
  size_t n = fread(buf, 1, size - 1, f);
  buf[n] = '\0';
  fclose(f);
  return true;
}

/* lstat's file type of path, or 0 when nothing is there. */
static inline unsigned ft_type(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 ? (unsigned)(st.st_mode & S_IFMT) : 0u;
}

static inline unsigned ft_mode(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0u;
}

static inline void ft_rm_rf(const char *dir) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
}

/* A report left ongoing by a process that is gone (pid 0x7fffffff is above
   every pid_max): docs/lag.md's prefix, which a start turns into
   "<ms>-hang_killed.json". */
static inline bool ft_plant_ongoing(const char *dir, int64_t ms) {
  char path[1200], text[400];
  snprintf(path, sizeof path, "%s/%lld-lag.json", dir, (long long)ms);
  snprintf(text, sizeof text,
           "{\"schema\":\"stacksnap.lag/2\",\"kind\":\"lag\",\"ongoing\":true,"
           "\n\"start_unix_ms\":%lld,\n\"duration_ms\":300,"
           "\n\"pid\":2147483647\n}\n",
           (long long)ms);
  return ft_write(path, text);
}

/* One lag of the main thread: busy for ms (asleep, which is busy to the
   loop observer), then idle for a while so the watchdog sees it end. */
static inline void ft_lag(unsigned ms) {
  snap_lag_loop_busy();
  sleep_ms(ms);
  snap_lag_loop_idle();
}

#endif
