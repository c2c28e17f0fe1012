/*
 * test_lag_ours.c — the library's own threads are not the app's: a lag
 * report taken while a trace runs lists neither the trace's sampler
 * (before: "blocks the sampling signal", since ours block every signal)
 * nor the watchdog, and the trace written after it holds no thread of
 * ours (before: the watchdog, once under the main thread's name — the
 * name a new thread carries until it sets its own).
 *
 * Oracle: the thread names /proc gives this process's threads
 * (stacksnap-lag, stacksnap-trace: what the library names them), checked
 * present while both run, so the test cannot pass by not seeing them;
 * the report's and the trace's text must not carry them. The app's own
 * worker thread must be in both: the filter takes ours only.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "stacksnap.h"
#include "test_clock.h"

static char g_path[600];
static atomic_int g_finals;
static atomic_bool g_stop;
static atomic_bool g_named; /* the worker has its name (traces read it once) */

static void on_write(const char *path, bool final, void *ctx) {
  (void)ctx;
  if (final && strstr(path, "-lag.json")) {
    snprintf(g_path, sizeof g_path, "%s", path);
    atomic_fetch_add(&g_finals, 1);
  }
}

/* Whether a thread of this process is named name now (/proc). */
static bool thread_named(const char *name) {
  DIR *d = opendir("/proc/self/task");
  bool seen = false;
  for (struct dirent *e; d && !seen && (e = readdir(d));) {
    char path[300], comm[64] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    if (fgets(comm, sizeof comm, f))
      comm[strcspn(comm, "\n")] = '\0';
    fclose(f);
    seen = strcmp(comm, name) == 0;
  }
  if (d)
    closedir(d);
  return seen;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  static char text[1 << 20];
  text[fread(text, 1, sizeof text - 1, f)] = '\0';
  fclose(f);
  return text;
}

/* The app's own worker: computes without pause, so the trace, which
   samples other threads only when it finds them on a CPU, catches it even
   on a busy machine (the test waits for that, below). */
static void *worker(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "app-worker");
  atomic_store(&g_named, true);
  while (!atomic_load(&g_stop))
    __asm__ volatile("" ::: "memory");
  return NULL;
}

int main(void) {
  char dir[] = "/tmp/snap_lag_ours.XXXXXX";
  if (!mkdtemp(dir))
    return 1;
  pthread_t w;
  CHECK_EQ(pthread_create(&w, NULL, worker, NULL), 0);
  /* A trace reads a thread's name when it first sees it. */
  while (!atomic_load(&g_named))
    sleep_ms(1);

  snap_trace_config_t tc;
  snap_trace_config_default(&tc);
  CHECK_EQ(snap_trace_start(&tc), SNAP_OK);
  snap_lag_config_t c;
  snap_lag_config_default(&c);
  c.report_dir = dir;
  c.threshold_ms = 150;
  c.cpu_percent = 0;
  c.on_report_write = on_write;
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  CHECK(thread_named("stacksnap-lag") && thread_named("stacksnap-trace"),
        "the library's threads are not where the test looks");

  /* One lag: 400 ms busy in a sleep (no CPU assumed). */
  snap_lag_loop_busy();
  sleep_ms(400);
  snap_lag_loop_idle();
  for (int i = 0; i < 1000 && atomic_load(&g_finals) == 0; i++) {
    snap_lag_loop_busy(); /* the loop goes on */
    snap_lag_loop_idle();
    sleep_ms(10);
  }
  CHECK(atomic_load(&g_finals) > 0, "no final lag report");

  char *report = slurp(g_path);
  CHECK(report != NULL, "cannot read %s", g_path);
  if (report) {
    CHECK(strstr(report, "app-worker") != NULL,
          "the app's worker is not in the report");
    CHECK(strstr(report, "stacksnap-trace") == NULL,
          "the report lists the trace's sampler thread");
    CHECK(strstr(report, "stacksnap-lag") == NULL,
          "the report lists the watchdog");
  }

  /* The trace, until it holds the worker (on a loaded machine the worker
     may not have been on a CPU at any look yet): 20 s at most. */
  char trace[700];
  snprintf(trace, sizeof trace, "%s/trace.json", dir);
  char *t = NULL;
  for (int i = 0; i < 200; i++) {
    CHECK_EQ(snap_trace_write(trace, SNAP_TRACE_CHROME_JSON, 0, 0), SNAP_OK);
    t = slurp(trace);
    if (!t || strstr(t, "app-worker"))
      break;
    sleep_ms(100);
  }
  CHECK(t != NULL, "cannot read %s", trace);
  if (t) {
    CHECK(strstr(t, "app-worker") != NULL, "the app's worker is not traced");
    CHECK(strstr(t, "stacksnap-") == NULL,
          "the trace holds a thread of the library's");
  }

  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  CHECK_EQ(snap_trace_stop(), SNAP_OK);
  atomic_store(&g_stop, true);
  pthread_join(w, NULL);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    return 1;
  return check_result("test_lag_ours");
}
