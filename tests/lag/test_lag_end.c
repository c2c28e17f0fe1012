/*
 * test_lag_end.c — a lag's reported duration ends when its stretch ended,
 * even when the loop ran more stretches before the watchdog looked (it
 * used to take the latest idle call for the end, counting every later
 * stretch and gap into the lag).
 *
 * The lag is a stretch blocked for 600 ms (a blocking wait: no CPU is
 * assumed, so load cannot change its length much). Then the loop iterates
 * fast, 1 ms busy and 1 ms idle, for 300 ms: dozens of stretches before
 * the watchdog's next look (its tick is half the 300 ms threshold when
 * point sampling is off). The oracle is this test's own clock around the
 * stretch; the report's duration must match it within 20 ms. Five rounds,
 * each on its own call path (nested a different depth) so that no lag
 * anneals into the one before.
 *
 * Built a second time as test_lag_slow_disk (Linux, -Wl,--wrap=fsync):
 * every fsync of the library's report writes takes 150 ms more, as on a
 * busy box where an fsync waits for a journal commit full of other
 * people's writes. The watchdog is blocked on the disk, not stopped: the
 * durations must not shrink by the time it waited (they did, by exactly
 * that, before report-file waits were counted as time the process ran).
 */
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "stacksnap.h"
#include "test_clock.h"

#ifdef TEST_SLOW_DISK
/* The library's fsync calls land here (--wrap=fsync). */
int __real_fsync(int fd);
static atomic_int g_fsyncs;
int __wrap_fsync(int fd) {
  atomic_fetch_add(&g_fsyncs, 1);
  struct timespec t = {0, 150 * 1000000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR)
    ;
  return __real_fsync(fd);
}
#define TEST_NAME "test_lag_slow_disk"
#else
#define TEST_NAME "test_lag_end"
#endif

static char g_path[600];
static atomic_int g_finals;
static void on_write(const char *path, bool final, void *ctx) {
  (void)ctx;
  if (final && strstr(path, "-lag.json")) {
    snprintf(g_path, sizeof g_path, "%s", path);
    atomic_fetch_add(&g_finals, 1);
  }
}

static long duration_of(const char *path) {
  char text[16384] = "";
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  text[fread(text, 1, sizeof text - 1, f)] = '\0';
  fclose(f);
  const char *p = strstr(text, "\"duration_ms\":");
  return p ? atol(p + 14) : -1;
}

/* The lag, nested `depth` calls deep (a call path of its own). */
__attribute__((noinline)) static uint64_t lag(int depth) {
  if (depth > 0) {
    uint64_t r = lag(depth - 1);
    __asm__ volatile("" ::: "memory");
    return r;
  }
  uint64_t t0 = mono_ns();
  snap_lag_loop_busy();
  sleep_ns(600 * 1000000ull);
  snap_lag_loop_idle();
  return mono_ns() - t0;
}

int main(void) {
  char dir[] = "/tmp/snap_lag_end.XXXXXX";
  if (!mkdtemp(dir))
    return 1;
  snap_lag_config_t c;
  snap_lag_config_default(&c);
  c.report_dir = dir;
  c.threshold_ms = 300;
  c.sample_interval_ms = 0; /* tick = threshold / 2 */
  c.cpu_percent = 0;
  c.on_report_write = on_write;
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  for (int round = 0; round < 5; round++) {
    int before = atomic_load(&g_finals);
    uint64_t len = lag(round * 3);
    int64_t tail_end = mono_ns() + 300 * 1000000ll;
    while (mono_ns() < tail_end) {
      snap_lag_loop_busy();
      sleep_ns(1000000);
      snap_lag_loop_idle();
      sleep_ns(1000000);
    }
    for (int i = 0; i < 1000 && atomic_load(&g_finals) == before; i++)
      sleep_ns(10 * 1000000ull);
    long got = duration_of(g_path);
    long want = (long)(len / 1000000u);
    printf("round %d: stretch %ld ms, reported %ld ms\n", round, want, got);
    CHECK(atomic_load(&g_finals) > before, "round %d: no final report", round);
    CHECK(got >= want - 20 && got <= want + 20,
          "round %d: reported %ld ms for a %ld ms stretch", round, got, want);
  }
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
#ifdef TEST_SLOW_DISK
  /* The wrap took: each round's final write alone syncs a file and its
     directory. */
  CHECK(atomic_load(&g_fsyncs) >= 10, "%d slow fsyncs", atomic_load(&g_fsyncs));
#endif
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    return 1;
  return check_result(TEST_NAME);
}
