/*
 * test_trace_api.c — the sampling trace's calls: their errors, and that an
 * error loses nothing (issue 16: "start/stop/start, stop without start,
 * write with nothing sampled, a path that cannot be written: clear
 * errors, nothing lost").
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "stacksnap.h"
#include "test_clock.h"

static char g_dir[] = "/tmp/snap_trace_api.XXXXXX";

static long file_size(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static int write_fmt(const char *name, unsigned format) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  return snap_trace_write(path, format, 0, 0);
}

/* The microseconds of the folded file's stacks that hold `frame`. */
static long folded_us(const char *name, const char *frame) {
  char path[512], line[8192];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  FILE *f = fopen(path, "r");
  long sum = 0;
  while (f && fgets(line, sizeof line, f)) {
    char *weight = strrchr(line, ' ');
    if (weight && strstr(line, frame) && strstr(line, frame) < weight)
      sum += strtol(weight + 1, NULL, 10);
  }
  if (f)
    fclose(f);
  return sum;
}

/* Named frames for the files to show. busy_ms computes until this thread
   has used ms of CPU time: a sample of a running thread needs it on a CPU,
   so CPU time, not wall time, is what the sampler can have seen of it on
   a loaded box (the folded stacks name it: see the check below). lag_ms
   stays on the CPU for ms of wall time: a lag's length is the clock's. */
__attribute__((noinline)) static void busy_ms(unsigned ms) {
  compute_ms(ms);
  __asm__ volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline)) static void lag_ms(unsigned ms) {
  spin_ms(ms);
  __asm__ volatile("" ::: "memory"); /* not a tail call */
}

/* The text of the one lag report in dir (NULL when not exactly one). */
static char *lag_report(const char *dir) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "cat %s/*-lag.json 2>/dev/null", dir);
  FILE *p = popen(cmd, "r");
  static char text[1 << 17];
  size_t n = p ? fread(text, 1, sizeof text - 1, p) : 0;
  if (p)
    pclose(p);
  text[n] = '\0';
  return n ? text : NULL;
}

/* A lag report written while the trace runs names a trace file beside it
   (issue 16: the report's "trace" field), which holds the lag; without a
   running trace the field is absent. */
static void lag_report_trace(void) {
  for (int traced = 0; traced < 2; traced++) {
    char dir[128];
    snprintf(dir, sizeof dir, "%s/lag%d", g_dir, traced);
    snap_lag_config_t lc;
    snap_lag_config_default(&lc);
    lc.report_dir = dir;
    lc.threshold_ms = 100;
    lc.cpu_percent = 0;
    snap_trace_config_t tc;
    snap_trace_config_default(&tc);
    if (traced)
      CHECK_EQ(snap_trace_start(&tc), SNAP_OK);
    CHECK_EQ(snap_lag_start(&lc), SNAP_OK);
    usleep(50000);
    snap_lag_loop_busy();
    lag_ms(300);
    snap_lag_loop_idle();
    usleep(200000);
    CHECK_EQ(snap_lag_stop(), SNAP_OK);
    if (traced)
      CHECK_EQ(snap_trace_stop(), SNAP_OK);
    const char *text = lag_report(dir);
    CHECK(text != NULL, "no lag report (traced %d)", traced);
    if (!text)
      continue;
    const char *at = strstr(text, "\"trace\":\"");
    if (!traced) {
      CHECK(at == NULL, "a report names a trace while none ran");
      continue;
    }
    CHECK(at != NULL, "the report of a traced lag names no trace");
    if (!at)
      continue;
    char path[700] = "";
    const char *p = at + strlen("\"trace\":\"");
    size_t k = 0;
    while (*p && *p != '"' && k < sizeof path - 1)
      path[k++] = *p++;
    path[k] = '\0';
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size > 16, "the trace %s is missing",
          path);
    FILE *f = fopen(path, "rb");
    unsigned char first = 0;
    if (f) {
      first = (unsigned char)fgetc(f);
      fclose(f);
    }
    CHECK(first == 0x0a, "%s does not start with a Trace's packet field", path);
  }
}

int main(void) {
  CHECK(mkdtemp(g_dir) != NULL, "mkdtemp");
  snap_trace_config_t c;
  snap_trace_config_default(&c);
  CHECK_EQ(c.size, (uint32_t)sizeof c);
  CHECK_EQ(c.main_interval_us, 1000u);
  CHECK_EQ(c.other_interval_us, 10000u);
  CHECK_EQ(c.window_seconds, 30u);
  CHECK_EQ(c.max_bytes, (size_t)8 << 20);

  /* Nothing started: a stop has nothing to do (as snap_lag_stop), every
     other call says there is no trace, nothing is written. */
  CHECK_EQ(snap_trace_stop(), SNAP_OK);
  CHECK_EQ(snap_trace_mark("x"), SNAP_EINVAL);
  CHECK_EQ(write_fmt("none.json", SNAP_TRACE_CHROME_JSON), SNAP_EINVAL);
  CHECK(file_size("none.json") < 0, "a file written with no trace");
  snap_trace_stats_t st = {.size = sizeof st};
  CHECK_EQ(snap_trace_stats(&st), SNAP_OK);
  CHECK_EQ(st.samples, 0u);
  snap_trace_stats_t bad_size = {.size = 3};
  CHECK_EQ(snap_trace_stats(&bad_size), SNAP_EINVAL);
  CHECK_EQ(snap_trace_stats(NULL), SNAP_EINVAL);

  /* Bad configurations. */
  CHECK_EQ(snap_trace_start(NULL), SNAP_EINVAL);
  snap_trace_config_t b = c;
  b.size = 8;
  CHECK_EQ(snap_trace_start(&b), SNAP_EINVAL);
  b = c;
  b.main_interval_us = 10;
  CHECK_EQ(snap_trace_start(&b), SNAP_EINVAL);
  b = c;
  b.other_interval_us = 10;
  CHECK_EQ(snap_trace_start(&b), SNAP_EINVAL);
  b = c;
  b.window_seconds = 0;
  CHECK_EQ(snap_trace_start(&b), SNAP_EINVAL);
  b = c;
  b.max_bytes = 1000;
  CHECK_EQ(snap_trace_start(&b), SNAP_EINVAL);

  /* Start; a second start is busy; a write with almost nothing sampled
     is a valid trace. */
  CHECK_EQ(snap_trace_start(&c), SNAP_OK);
  CHECK_EQ(snap_trace_start(&c), SNAP_EBUSY);
  CHECK_EQ(write_fmt("early.json", SNAP_TRACE_CHROME_JSON), SNAP_OK);
  CHECK(file_size("early.json") > 0, "no early trace");
  busy_ms(100);
  CHECK_EQ(snap_trace_mark("api mark"), SNAP_OK);
  busy_ms(50);

  /* Bad writes: nothing is left at the path, the trace is intact. */
  CHECK_EQ(snap_trace_write(NULL, SNAP_TRACE_PERFETTO, 0, 0), SNAP_EINVAL);
  CHECK_EQ(snap_trace_write("", SNAP_TRACE_PERFETTO, 0, 0), SNAP_EINVAL);
  CHECK_EQ(write_fmt("bad.fmt", 0), SNAP_EINVAL);
  CHECK_EQ(write_fmt("bad.fmt", 4), SNAP_EINVAL);
  CHECK(file_size("bad.fmt") < 0, "a file written for a bad format");
  char path[512];
  snprintf(path, sizeof path, "%s/x.json", g_dir);
  CHECK_EQ(snap_trace_write(path, SNAP_TRACE_CHROME_JSON, 200, 100),
           SNAP_EINVAL);
  CHECK_EQ(snap_trace_write("/nonexistent-dir/x/trace.pftrace",
                            SNAP_TRACE_PERFETTO, 0, 0),
           SNAP_EIO);
  snprintf(path, sizeof path, "%s/is-a-dir", g_dir);
  mkdir(path, 0700); /* not a regular file: left alone */
  CHECK_EQ(snap_trace_write(path, SNAP_TRACE_PERFETTO, 0, 0), SNAP_ENOTREG);
  if (geteuid() != 0) { /* root writes anywhere */
    snprintf(path, sizeof path, "%s/ro", g_dir);
    mkdir(path, 0500);
    snprintf(path, sizeof path, "%s/ro/t.folded", g_dir);
    CHECK_EQ(snap_trace_write(path, SNAP_TRACE_FOLDED, 0, 0), SNAP_EIO);
  }

  /* Stop, then the recording is still there to write, in every format. */
  CHECK_EQ(snap_trace_stop(), SNAP_OK);
  CHECK_EQ(snap_trace_stop(), SNAP_OK); /* twice: as snap_lag_stop */
  CHECK_EQ(snap_trace_mark("late"), SNAP_EINVAL);
  CHECK_EQ(snap_trace_stats(&st), SNAP_OK);
  printf("first trace: %llu samples, %llu spans, %llu marks, %llu failed\n",
         (unsigned long long)st.samples, (unsigned long long)st.spans,
         (unsigned long long)st.marks, (unsigned long long)st.failed);
  CHECK(st.samples > 10, "only %llu samples in 150 ms of CPU at 1 kHz",
        (unsigned long long)st.samples);
  CHECK_EQ(st.marks, 1u);
  CHECK(st.bytes_reserved <= c.max_bytes, "%llu bytes reserved over the cap",
        (unsigned long long)st.bytes_reserved);
  CHECK_EQ(write_fmt("a.pftrace", SNAP_TRACE_PERFETTO), SNAP_OK);
  CHECK_EQ(write_fmt("a.json", SNAP_TRACE_CHROME_JSON), SNAP_OK);
  CHECK_EQ(write_fmt("a.folded", SNAP_TRACE_FOLDED), SNAP_OK);
  CHECK(file_size("a.pftrace") > 0 && file_size("a.json") > 0 &&
            file_size("a.folded") > 0,
        "empty trace files after a stop");
  /* The folded file names this test's function. */
  snprintf(path, sizeof path, "%s/a.folded", g_dir);
  FILE *f = fopen(path, "r");
  char text[1 << 16] = "";
  if (f) {
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
  }
  CHECK(strstr(text, "busy_ms") != NULL, "the folded stacks lack busy_ms");

  /* Start again: a new trace, without the old one's spans or mark (the
     start waits for the sampler's first look, which may have closed a
     span of its own already). */
  uint64_t first_spans = st.spans;
  CHECK_EQ(snap_trace_start(&c), SNAP_OK);
  CHECK_EQ(snap_trace_stats(&st), SNAP_OK);
  CHECK(st.marks == 0 && st.spans <= 2 && first_spans > 2,
        "a restarted trace holds %llu spans and %llu marks (the old one had "
        "%llu spans)",
        (unsigned long long)st.spans, (unsigned long long)st.marks,
        (unsigned long long)first_spans);
  /* Written while it runs, the trace holds the ticks of just before: the
     sampler sleeps while the main thread ticks, so the write has it drain
     them first (trace_api.c, FLUSH_NS). Without that it held none of
     these 100 ms (its ring's half-full post comes at 32 ticks, 128 ms at
     the kernel's 250 Hz). Measured as all of the main thread's time in a
     window from busy_ms's start, whatever its stacks: under TSan a tick
     in the vdso's clock read (busy_ms reads the clock) walks no further
     than TSan's interceptor, so a third of the time lacked busy_ms's
     frame (53-81 ms of it named busy_ms, also before this window). */
  char main_name[32] = "", main_prefix[40];
  FILE *comm = fopen("/proc/thread-self/comm", "r");
  if (comm) {
    if (fgets(main_name, sizeof main_name, comm))
      main_name[strcspn(main_name, "\n")] = '\0';
    fclose(comm);
  }
  snprintf(main_prefix, sizeof main_prefix, "%s;", main_name);
  int64_t busy_from = unix_ns();
  busy_ms(100);
  snprintf(path, sizeof path, "%s/running.folded", g_dir);
  CHECK_EQ(snap_trace_write(path, SNAP_TRACE_FOLDED, (uint64_t)busy_from, 0),
           SNAP_OK);
  long main_us = folded_us("running.folded", main_prefix);
  long busy_us = folded_us("running.folded", "busy_ms");
  printf("written while running: the main thread %.1f ms, busy_ms %.1f ms, "
         "of 100 ms of CPU\n",
         (double)main_us / 1000.0, (double)busy_us / 1000.0);
  CHECK(main_name[0] && main_us >= 60000,
        "a trace written while running holds %.1f ms of the main thread "
        "(\"%s\") in busy_ms's 100 ms of CPU",
        (double)main_us / 1000.0, main_name);
  CHECK(busy_us > 0, "a trace written while running never names busy_ms");
  CHECK_EQ(snap_trace_stop(), SNAP_OK);
  CHECK_EQ(write_fmt("b.json", SNAP_TRACE_CHROME_JSON), SNAP_OK);

  /* A window with nothing in it: a valid, empty trace. */
  snprintf(path, sizeof path, "%s/empty.json", g_dir);
  CHECK_EQ(snap_trace_write(path, SNAP_TRACE_CHROME_JSON, 1000, 2000), SNAP_OK);
  CHECK(file_size("empty.json") > 0, "no empty trace written");

  lag_report_trace();

  char cmd[600];
  snprintf(cmd, sizeof cmd, "chmod -R u+w %s; rm -rf %s", g_dir, g_dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", g_dir);
  return check_result("test_trace_api");
}
