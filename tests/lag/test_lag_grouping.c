/*
 * test_lag_grouping.c — identical lags make one report, with the others
 * counted in its repeats, also when some are seen only after they ended
 * (issue 25, item 3: 30 identical 120 ms stalls gave 13 to 20 reports
 * under load, where 1 with repeats 29 was expected), and lags the daily
 * cap drops are counted.
 *
 *  1. Deterministic: stall 1 is reported; its final write's callback (on
 *     the watchdog thread) holds the watchdog, spinning, while stall 2
 *     begins and ends, so stall 2 is seen only once it is over and no
 *     stack of it exists. Stalls 3 to 6 follow. Stall 2 may have a report
 *     of its own (nothing is known to match it by), but it must not take
 *     stall 1's place: stalls 3 to 6 are stall 1's repeats (but for one
 *     during which the watchdog was starved, as in 2).
 *  2. Under load: 30 stalls of 120 ms (threshold 100 ms) beside three busy
 *     loops this test starts: exactly one report known by a stack, every
 *     stall counted once (reports + repeats = 30), and a report of its own
 *     (no stack, seen late) only for a stall during which the watchdog
 *     was starved: its run-queue wait over the stall (its schedstat, read
 *     here) was at least 50 ms, or the hypervisor took that much from a
 *     CPU (/proc/stat's steal), so it may have taken no point sample.
 *     Beside three busy loops alone that leaves at most 2 reports (the
 *     issue's goal; 10-17 before); a busier machine starves the watchdog
 *     more often, and the test counts how often. Its reports go to tmpfs
 *     (loaded_dir says why).
 *  3. The daily cap: max_reports_per_day 2 and four different lags: two
 *     reports, and "<day>-dropped.json" counts the two dropped.
 *
 * Oracles: the number of stalls this test made, and the files.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "busy_child.h"
#include "check.h"
#include "stacksnap.h"
#include "test_clock.h"

#define MS 1000000LL

static atomic_int g_hold_final; /* the next final write's callback holds */
static atomic_int g_holding;
static atomic_int g_release;

static void on_write(const char *path, bool final, void *ctx) {
  (void)path;
  (void)ctx;
  int one = 1;
  if (!final || !atomic_compare_exchange_strong(&g_hold_final, &one, 0))
    return;
  atomic_store(&g_holding, 1);
  volatile uint64_t x = 1;
  while (!atomic_load(&g_release))
    for (int i = 0; i < 10000; i++)
      x = x * 6364136223846793005u + 1;
}

/* What may keep the watchdog from running, read before and after a
   stall: its run-queue wait so far (schedstat; -1 unknown), and what the
   hypervisor took from each CPU (steal), which no schedstat counts. */
static pid_t g_dog;
typedef struct witness {
  int64_t runq;
  int64_t steal[64];
  int cpus;
} witness_t;

static witness_t witness(void) {
  witness_t w = {.runq = g_dog ? runq_wait_ns(g_dog) : -1};
  w.cpus = cpu_steal_ns(w.steal, 64);
  return w;
}

/* Whether the watchdog was starved since `before`: it waited 50 ms or
   more for a CPU, or a CPU was taken from the guest that long (seen
   beside a CI run: a stall the watchdog never sampled, with 9 ms of
   run-queue wait, while cpu0 lost 100 ms); either may leave it no point
   sample in a 120 ms stall. Unknown counts as starved. A starved stall is
   printed (label, index) with what starved it, so that a failure of the
   counts says which stalls the machine took from the watchdog. */
static bool starved_since(const witness_t *before, const char *label,
                          int index) {
  witness_t after = witness();
  int64_t runq =
      before->runq < 0 || after.runq < 0 ? -1 : after.runq - before->runq;
  int64_t steal =
      cpu_steal_max(before->steal, before->cpus, after.steal, after.cpus);
  bool starved = runq < 0 || runq >= 50 * MS || steal >= 50 * MS;
  if (starved)
    printf("  %s stall %d starved: run-queue wait %lld ms, a CPU's steal "
           "%lld ms\n",
           label, index, (long long)(runq / MS), (long long)(steal / MS));
  return starved;
}

static pid_t find_dog_once(void) {
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  pid_t found = 0;
  while (d && !found && (e = readdir(d))) {
    char path[300], comm[64] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (f) {
      if (fgets(comm, sizeof comm, f) &&
          strncmp(comm, "stacksnap-lag", 13) == 0)
        found = (pid_t)atoi(e->d_name);
      fclose(f);
    }
  }
  if (d)
    closedir(d);
  return found;
}

/* The watchdog names its thread once it runs, which a busy machine may
   delay: looked for up to 10 s. */
static pid_t find_dog(void) {
  pid_t dog = 0;
  for (int i = 0; i < 1000 && !dog; i++) {
    dog = find_dog_once();
    if (!dog)
      sleep_ns(10 * MS);
  }
  return dog;
}

/* The stall: one function, so every stall has the same stack. */
__attribute__((noinline)) void grouping_stall(int64_t ns) {
  snap_lag_loop_busy();
  sleep_ns(ns);
  snap_lag_loop_idle();
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void grouping_other_a(void) {
  snap_lag_loop_busy();
  sleep_ns(150 * MS);
  snap_lag_loop_idle();
  __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) void grouping_other_b(void) {
  snap_lag_loop_busy();
  sleep_ns(150 * MS);
  snap_lag_loop_idle();
  __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) void grouping_other_c(void) {
  snap_lag_loop_busy();
  sleep_ns(150 * MS);
  snap_lag_loop_idle();
  __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) void grouping_other_d(void) {
  snap_lag_loop_busy();
  sleep_ns(150 * MS);
  snap_lag_loop_idle();
  __asm__ volatile("" ::: "memory");
}

typedef struct tally {
  int reports, with_stack, lags, dropped_file;
  int max_repeats;
} tally_t;

static bool nonempty_array_after(const char *s, const char *key) {
  const char *p = s ? strstr(s, key) : NULL;
  return p && p[strlen(key)] != ']';
}

static tally_t tally(const char *dir) {
  tally_t t = {0, 0, 0, -1, 0};
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    long long ms;
    char kind[16];
    if (sscanf(e->d_name, "%lld-%15[a-z_].json", &ms, kind) != 2)
      continue;
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    char *text = calloc(1, 1 << 20);
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    text[n] = 0;
    fclose(f);
    if (strcmp(kind, "dropped") == 0) {
      const char *p = strstr(text, "\"dropped\":");
      t.dropped_file = p ? atoi(p + 10) : -2;
    } else if (strcmp(kind, "lag") == 0) {
      const char *p = strstr(text, "\"repeats\":");
      int repeats = p ? atoi(p + 10) : 0;
      bool stack = nonempty_array_after(text, "\"main_stack\":[") ||
                   nonempty_array_after(strstr(text, "\"costliest_stack\":"),
                                        "\"frames\":[");
      t.reports++;
      t.with_stack += stack;
      t.lags += 1 + repeats;
      if (repeats > t.max_repeats)
        t.max_repeats = repeats;
      printf("  %s: repeats %d, %s\n", e->d_name, repeats,
             stack ? "known by a stack" : "no stack");
    }
    free(text);
  }
  if (d)
    closedir(d);
  return t;
}

static void start(char *dir, unsigned cap) {
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  snap_lag_config_t c;
  snap_lag_config_default(&c);
  c.report_dir = dir;
  c.threshold_ms = 100;
  c.cpu_percent = 0;
  c.max_reports_per_day = cap;
  c.on_report_write = on_write;
  int rc = snap_lag_start(&c);
  CHECK(rc == SNAP_OK, "snap_lag_start: %d", rc);
  sleep_ns(100 * MS);
}

static void finish(const char *dir) {
  sleep_ns(400 * MS); /* the last stall's end is seen */
  snap_lag_stop();
  (void)dir;
}

static void cleanup(const char *dir) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
}

/* The seen-late case's stalls: 250 ms, so that its first detection
   (whose first naming of images is slow under the sanitizers) still
   finds the stall going on: that case is about the stall seen late. */
#define LATE_STALL (250 * MS)

static void seen_late_case(void) {
  char dir[] = "/tmp/snap-grouping-XXXXXX";
  start(dir, 1000);
  atomic_store(&g_hold_final, 1);
  grouping_stall(LATE_STALL); /* 1: reported; its final write holds */
  int64_t end = mono_ns() + 10000 * MS;
  while (!atomic_load(&g_holding) && mono_ns() < end)
    sleep_ns(2 * MS);
  CHECK(atomic_load(&g_holding), "the watchdog was never held");
  grouping_stall(LATE_STALL); /* 2: begins and ends unseen */
  sleep_ns(50 * MS);
  atomic_store(&g_release, 1);
  g_dog = find_dog();
  int starved = 0;              /* of stalls 3 to 6: see loaded_case */
  for (int i = 0; i < 4; i++) { /* 3 to 6 */
    sleep_ns(150 * MS);
    witness_t w0 = witness();
    grouping_stall(LATE_STALL);
    starved += starved_since(&w0, "seen-late case", 3 + i);
  }
  finish(dir);
  printf("seen late:\n");
  tally_t t = tally(dir);
  CHECK(t.lags == 6, "seen late: %d lags counted, 6 stalls", t.lags);
  CHECK(t.with_stack == 1,
        "seen late: %d reports known by a stack, 1 expected (a stall seen "
        "late took the first one's place)",
        t.with_stack);
  CHECK(t.max_repeats >= 4 - starved,
        "seen late: repeats %d, 4 expected (%d of stalls 3-6 starved the "
        "watchdog)",
        t.max_repeats, starved);
  cleanup(dir);
}

/* The loaded case's report directory: on tmpfs where there is one. Its
   tolerance is the watchdog's starvation, which it measures; a final
   write's fsync on a disk the rest of the machine is writing (CI's other
   tests) can wait 100 ms and more (src/report/files.c), and a watchdog
   held there would see the next stall late, for a cause the test does
   not measure. (The CI failures first blamed on it, 2 reports with 0
   stalls starved, were the hypervisor's steal: starved_since.) */
static void loaded_dir(char *dir, size_t size) {
  snprintf(dir, size, "%s/snap-grouping-XXXXXX",
           access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
}

static void loaded_case(void) {
  pid_t kids[3];
  for (int i = 0; i < 3; i++) {
    kids[i] = busy_child(-1);
  }
  char dir[64];
  loaded_dir(dir, sizeof dir);
  start(dir, 1000);
  g_dog = find_dog();
  CHECK(g_dog != 0, "no stacksnap-lag thread");
  int starved = 0;
  for (int i = 0; i < 30; i++) {
    witness_t w0 = witness();
    grouping_stall(120 * MS);
    starved += starved_since(&w0, "loaded case", i + 1);
    sleep_ns(100 * MS);
  }
  finish(dir);
  for (int i = 0; i < 3; i++)
    if (kids[i] > 0) {
      kill(kids[i], SIGKILL);
      waitpid(kids[i], NULL, 0);
    }
  printf("30 stalls beside three busy loops:\n");
  tally_t t = tally(dir);
  CHECK(t.lags == 30, "loaded: %d lags counted, 30 stalls", t.lags);
  CHECK(t.with_stack == 1, "loaded: %d reports known by a stack, 1 expected",
        t.with_stack);
  printf("  %d of 30 stalls with the watchdog starved (>= 50 ms run-queue "
         "wait, or a CPU's steal)\n",
         starved);
  CHECK(t.reports - 1 <= starved,
        "loaded: %d reports, but the watchdog was starved in only %d stalls",
        t.reports, starved);
  cleanup(dir);
}

static void cap_case(void) {
  char dir[] = "/tmp/snap-grouping-XXXXXX";
  start(dir, 2);
  void (*lags[4])(void) = {grouping_other_a, grouping_other_b, grouping_other_c,
                           grouping_other_d};
  for (int i = 0; i < 4; i++) {
    lags[i]();
    sleep_ns(200 * MS);
  }
  finish(dir);
  printf("daily cap 2, four lags:\n");
  tally_t t = tally(dir);
  CHECK(t.reports == 2, "cap: %d reports, 2 expected", t.reports);
  CHECK(t.dropped_file == 2, "cap: the dropped file says %d, 2 expected",
        t.dropped_file);
  cleanup(dir);
}

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : "";
  if (!*only || strcmp(only, "late") == 0)
    seen_late_case();
  if (!*only || strcmp(only, "cap") == 0)
    cap_case();
  if (!*only || strcmp(only, "loaded") == 0)
    loaded_case();
  return check_result("test_lag_grouping");
}
