/*
 * test_lag_config.c — the lag watchdog's contract at its edges: defaults,
 * every bad configuration, start twice, stop twice, stop from on_report,
 * a report_dir that cannot be made, retention, the daily cap, temporary
 * files left by a killed write, files that are not ours, and the adapters
 * where their loop is absent.
 *
 * Reports are checked with an independent JSON parser in the scenario
 * tests; here only file names and counts matter.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "stacksnap.h"
#include "test_clock.h"

static char g_dir[256];

static void touch(const char *name, const char *text) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", g_dir, name);
  FILE *f = fopen(p, "w");
  CHECK(f != NULL, "cannot create %s", p);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

static bool exists(const char *name) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", g_dir, name);
  return access(p, F_OK) == 0;
}

static int count_suffix(const char *suffix) {
  DIR *d = opendir(g_dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    size_t l = strlen(e->d_name), s = strlen(suffix);
    n += l >= s && strcmp(e->d_name + l - s, suffix) == 0;
  }
  if (d)
    closedir(d);
  return n;
}

static atomic_int g_reports, g_stop_rc = 1;
static void on_report(const char *path, void *ctx) {
  (void)path;
  if (ctx)
    atomic_store(&g_stop_rc, snap_lag_stop());
  atomic_fetch_add(&g_reports, 1);
}

static void test_defaults(void) {
  snap_lag_config_t c;
  memset(&c, 0xff, sizeof c);
  snap_lag_config_default(&c);
  CHECK_EQ(c.threshold_ms, 250);
  CHECK_EQ(c.sample_interval_ms, 50);
  CHECK_EQ(c.ring_size, 20);
  CHECK_EQ(c.hang_ms, 8000);
  CHECK_EQ(c.cpu_percent, 80);
  CHECK_EQ(c.retention_days, 7);
  CHECK_EQ(c.max_reports_per_day, 20);
  CHECK(c.report_dir == NULL && c.on_report == NULL && c.ctx == NULL,
        "defaults");
  CHECK(!c.report_when_traced, "defaults");
  CHECK(c.on_report_write == NULL, "defaults");
  CHECK_EQ(c.dump_budget_ms, 200);
  snap_lag_config_default(NULL); /* no crash */
}

/* API v1: the config carries its size; a size the library does not know
   is refused, and the library reads no byte past the caller's size. */
static void test_config_size(void) {
  snap_lag_config_t c;
  memset(&c, 0xff, sizeof c);
  snap_lag_config_default(&c);
  CHECK_EQ(c.size, sizeof c);
  CHECK((void *)&c.size == (void *)&c, "size is not the first field");
  c.report_dir = g_dir;
  static const uint32_t bad[] = {0,
                                 1,
                                 sizeof(uint32_t),
                                 sizeof(snap_lag_config_t) - 1,
                                 sizeof(snap_lag_config_t) + 1,
                                 sizeof(snap_lag_config_t) + 8,
                                 UINT32_MAX};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    c.size = bad[i];
    CHECK(snap_lag_start(&c) == SNAP_EINVAL, "size %u accepted", bad[i]);
  }
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  /* An unknown size through the initialiser: zeroes, then refused. */
  unsigned char big[sizeof c + 64];
  memset(big, 0xff, sizeof big);
  snap_lag_config_init((snap_lag_config_t *)(void *)big, sizeof big);
  CHECK_EQ(((snap_lag_config_t *)(void *)big)->size, sizeof big);
  CHECK_EQ(big[sizeof big - 1], 0);
  CHECK_EQ(snap_lag_start((snap_lag_config_t *)(void *)big), SNAP_EINVAL);
  /* A config that ends where the caller's memory ends (an inaccessible
     page right after it): snap_lag_start reads only `size` bytes. */
  long page = sysconf(_SC_PAGESIZE);
  unsigned char *m = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(m != MAP_FAILED, "mmap");
  if (m != MAP_FAILED) {
    CHECK(mprotect(m + page, (size_t)page, PROT_NONE) == 0, "mprotect");
    snap_lag_config_t *edge =
        (snap_lag_config_t *)(void *)(m + page - sizeof c);
    snap_lag_config_default(edge);
    edge->report_dir = g_dir;
    CHECK_EQ(snap_lag_start(edge), SNAP_OK);
    CHECK_EQ(snap_lag_stop(), SNAP_OK);
    /* A caller built against version 2 (1.1.0, before file_mode): its
       struct ends where v3's file_mode would start; the start takes the
       default mode without reading past it. */
    size_t v2 = (offsetof(snap_lag_config_t, dump_budget_ms) +
                 sizeof(unsigned) + _Alignof(void *) - 1) /
                _Alignof(void *) * _Alignof(void *);
    CHECK(v2 <= offsetof(snap_lag_config_t, file_mode),
          "file_mode lies inside version 2's %zu bytes", v2);
    snap_lag_config_t *old = (snap_lag_config_t *)(void *)(m + page - v2);
    snap_lag_config_init(old, v2);
    CHECK_EQ(old->size, v2);
    old->report_dir = g_dir;
    CHECK_EQ(snap_lag_start(old), SNAP_OK);
    CHECK_EQ(snap_lag_stop(), SNAP_OK);
    munmap(m, (size_t)page * 2);
  }
}

static void test_bad_configs(void) {
  CHECK_EQ(snap_lag_start(NULL), SNAP_EINVAL);
  snap_lag_config_t c;
  snap_lag_config_default(&c);
  CHECK_EQ(snap_lag_start(&c), SNAP_EINVAL); /* no report_dir */
  c.report_dir = "";
  CHECK_EQ(snap_lag_start(&c), SNAP_EINVAL);
#define BAD(field, value)                                                      \
  do {                                                                         \
    snap_lag_config_default(&c);                                               \
    c.report_dir = g_dir;                                                      \
    c.field = value;                                                           \
    CHECK_EQ(snap_lag_start(&c), SNAP_EINVAL);                                 \
  } while (0)
  BAD(threshold_ms, 0);
  BAD(threshold_ms, 9);
  BAD(threshold_ms, 60001);
  BAD(threshold_ms, 4000000000u);
  BAD(sample_interval_ms, 251); /* above the threshold */
  BAD(ring_size, 0);            /* sampling on, nowhere to keep it */
  BAD(ring_size, 1001);
  BAD(hang_ms, 0);
  BAD(hang_ms, 249); /* below the threshold */
  BAD(hang_ms, 3600001);
  BAD(cpu_percent, 101);
  BAD(retention_days, 0);
  BAD(retention_days, 3651);
  BAD(max_reports_per_day, 0);
  BAD(max_reports_per_day, 100001);
  BAD(cpu_window_ms, 0);
  BAD(max_threads, 0);
  BAD(max_threads, 1025);
  BAD(dump_budget_ms, 0);
  BAD(dump_budget_ms, 10001);
  BAD(file_mode, 0); /* owner read and write always */
  BAD(file_mode, 0400);
  BAD(file_mode, 0700);  /* no execute */
  BAD(file_mode, 02640); /* no set-id */
#undef BAD
  /* A directory that cannot be created: its parent is a file. */
  touch("a_file", "x");
  char under_file[512];
  snprintf(under_file, sizeof under_file, "%s/a_file/reports", g_dir);
  snap_lag_config_default(&c);
  c.report_dir = under_file;
  CHECK_EQ(snap_lag_start(&c), SNAP_EIO);
  /* None of these left a watchdog running. */
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  /* Sampling off: ring_size 0 is fine. */
  snap_lag_config_default(&c);
  c.report_dir = g_dir;
  c.sample_interval_ms = 0;
  c.ring_size = 0;
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
}

static void test_start_stop(void) {
  snap_lag_config_t c;
  snap_lag_config_default(&c);
  char dir[512];
  snprintf(dir, sizeof dir, "%s/made/by/start", g_dir); /* with parents */
  c.report_dir = dir;
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  struct stat st;
  CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode), "report_dir not made");
  CHECK_EQ(snap_lag_start(&c), SNAP_EBUSY);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  /* Busy/idle without a watchdog: no-ops. */
  snap_lag_loop_busy();
  snap_lag_loop_idle();
  /* Restart works, and stop from on_report is refused, not a deadlock. */
  snap_lag_config_default(&c);
  c.report_dir = dir;
  c.threshold_ms = 50;
  c.sample_interval_ms = 10;
  c.on_report = on_report;
  c.ctx = &c; /* ask the callback to try snap_lag_stop */
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  snap_lag_loop_busy();
  spin_ms(200);
  snap_lag_loop_idle();
  for (int i = 0; i < 200 && atomic_load(&g_reports) == 0; i++)
    sleep_ms(10);
  CHECK(atomic_load(&g_reports) > 0, "no report for a 200 ms lag");
  CHECK_EQ(atomic_load(&g_stop_rc), SNAP_EBUSY);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
}

static void test_store(void) {
  /* A directory with: a report past retention, one inside it, a temporary
     file of ours left by a kill, and files that are not ours. */
  char dir[512];
  snprintf(dir, sizeof dir, "%s/store", g_dir);
  mkdir(dir, 0755);
  char saved[256];
  strcpy(saved, g_dir);
  strcpy(g_dir, dir);
  int64_t now = unix_ms();
  char old[64], kept[64], tmp[80];
  snprintf(old, sizeof old, "%" PRId64 "-lag.json",
           now - 8 * INT64_C(86400000));
  snprintf(kept, sizeof kept, "%" PRId64 "-hang.json",
           now - 6 * INT64_C(86400000));
  snprintf(tmp, sizeof tmp, ".%" PRId64 "-lag.json.tmp", now - 1000);
  touch(old,
        "{\"schema\":\"stacksnap.lag/1\",\"kind\":\"lag\",\"ongoing\":false}");
  touch(kept,
        "{\"schema\":\"stacksnap.lag/1\",\"kind\":\"hang\",\"ongoing\":false}");
  touch(tmp, "{\"schema\":\"stack");
  /* Killed while a lag turned into a hang: both files, both ongoing. */
  char klag[64], khang[64], kkilled[64];
  snprintf(klag, sizeof klag, "%" PRId64 "-lag.json", now - 5000);
  snprintf(khang, sizeof khang, "%" PRId64 "-hang.json", now - 5000);
  snprintf(kkilled, sizeof kkilled, "%" PRId64 "-hang_killed.json", now - 5000);
  touch(klag, "{\"schema\":\"stacksnap.lag/1\",\"kind\":\"lag\","
              "\"ongoing\":true,\"duration_ms\":750}");
  /* The lag in schema 1 (written before an update), the hang in 2: both
     are recovered, each keeping its version. */
  touch(khang, "{\"schema\":\"stacksnap.lag/2\",\"kind\":\"hang\","
               "\"ongoing\":true,\"duration_ms\":1000}");
  touch("notes.txt", "not ours");
  touch("123-lag.json.bak", "not ours");
  touch("0-mine.json", "not ours");
  /* Today's cap is 2, and 2 reports of today are there already. */
  char t1[64], t2[64];
  snprintf(t1, sizeof t1, "%" PRId64 "-cpu.json", now - 2000);
  snprintf(t2, sizeof t2, "%" PRId64 "-cpu.json", now - 1000);
  int64_t day = now - now % INT64_C(86400000);
  if (now - 2000 >= day) { /* both still today (not just after midnight) */
    touch(
        t1,
        "{\"schema\":\"stacksnap.lag/1\",\"kind\":\"cpu\",\"ongoing\":false}");
    touch(
        t2,
        "{\"schema\":\"stacksnap.lag/1\",\"kind\":\"cpu\",\"ongoing\":false}");
  }
  snap_lag_config_t c;
  snap_lag_config_default(&c);
  c.report_dir = dir;
  c.threshold_ms = 50;
  c.sample_interval_ms = 10;
  c.max_reports_per_day = 2;
  c.cpu_percent = 0;
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  CHECK(!exists(old), "a report past retention was kept");
  CHECK(exists(kept), "a report inside retention was deleted");
  CHECK(!exists(tmp), "a temporary file of a cut write was kept");
  CHECK(!exists(klag) && !exists(khang) && exists(kkilled),
        "lag+hang of one killed stretch: not one hang_killed report");
  char kpath[600], ktext[256] = "";
  snprintf(kpath, sizeof kpath, "%s/%s", dir, kkilled);
  FILE *kf = fopen(kpath, "r");
  if (kf) {
    ktext[fread(ktext, 1, sizeof ktext - 1, kf)] = '\0';
    fclose(kf);
  }
  CHECK(strcmp(ktext, "{\"schema\":\"stacksnap.lag/2\",\"kind\":"
                      "\"hang_killed\",\"ongoing\":false,"
                      "\"duration_ms\":1000}") == 0,
        "hang_killed from the wrong file: %s", ktext);
  CHECK(exists("notes.txt") && exists("123-lag.json.bak") &&
            exists("0-mine.json"),
        "a file that is not a report was touched");
  /* A lag now: over the cap, so no new file. */
  int before = count_suffix("-lag.json");
  snap_lag_loop_busy();
  spin_ms(150);
  snap_lag_loop_idle();
  sleep_ms(100);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  if (now - 2000 >= day)
    CHECK_EQ(count_suffix("-lag.json"), before);
  /* Raise the cap by one: the next lag is written. */
  c.max_reports_per_day = 4; /* 2 cpu + the hang_killed + 1 */
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  snap_lag_loop_busy();
  spin_ms(150);
  snap_lag_loop_idle();
  sleep_ms(100);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  CHECK_EQ(count_suffix("-lag.json"), before + 1);
  CHECK_EQ(count_suffix(".tmp"), 0);
  strcpy(g_dir, saved);
}

/* A quick watchdog (lag at 50 ms, points every 10 ms) reporting into
   g_dir/sub, which dir receives. */
static void quick_config(snap_lag_config_t *c, char *dir, size_t size,
                         const char *sub) {
  snprintf(dir, size, "%s/%s", g_dir, sub);
  snap_lag_config_default(c);
  c->report_dir = dir;
  c->threshold_ms = 50;
  c->sample_interval_ms = 10;
}

/* The watchdog parks (no deadline: CPU trigger off) while the loop is
   idle; the next busy call must wake it, even after a second idle call
   and after a busy stretch below the threshold. */
static void test_park_wakeups(void) {
  char dir[512];
  snap_lag_config_t c;
  quick_config(&c, dir, sizeof dir, "park");
  c.cpu_percent = 0;
  c.on_report = on_report;
  atomic_store(&g_reports, 0);
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  for (int round = 0; round < 3; round++) {
    int before = atomic_load(&g_reports);
    sleep_ms(60);         /* a whole tick idle: parked */
    snap_lag_loop_idle(); /* idle twice */
    sleep_ms(30);
    snap_lag_loop_busy(); /* short: no lag */
    spin_ms(5);
    snap_lag_loop_idle();
    sleep_ms(60);
    snap_lag_loop_busy(); /* a lag: must wake the parked watchdog */
    spin_ms(120);
    snap_lag_loop_idle();
    /* Rounds 2 and 3 repeat round 1's stack: annealed, so on_report comes
       from the rewrite of round 1's report (its repeats count). */
    /* Up to 10 s: a qemu run under load names and writes slowly. */
    for (int i = 0; i < 1000 && atomic_load(&g_reports) == before; i++)
      sleep_ms(10);
    CHECK(atomic_load(&g_reports) > before, "round %d: lag not seen", round);
  }
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
}

#ifdef __linux__
/* A main thread that cannot be sampled (its sampling signal blocked, as
   TSan effectively does while it blocks) still gets its lag reported,
   with the reason instead of a stack. */
static void test_unsampleable_main(void) {
  char dir[512];
  snap_lag_config_t c;
  quick_config(&c, dir, sizeof dir, "unsampled");
  CHECK_EQ(snap_set_sample_timeout_ms(20), SNAP_OK);
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGRTMIN + 5); /* the default sample signal */
  pthread_sigmask(SIG_BLOCK, &block, &old);
  snap_lag_loop_busy();
  spin_ms(200);
  snap_lag_loop_idle();
  /* Asleep until the watchdog stops: sampled quietly, without the
     signal (SNAP_CAPTURE_QUIET), so a re-check landing just after the
     idle call finds the sleep's stack; the watchdog must not take it for
     the lag's (it did, 3 of 4 runs). */
  sleep_ms(100);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  CHECK_EQ(snap_set_sample_timeout_ms(100), SNAP_OK);
  DIR *d = opendir(dir);
  int reports = 0, with_reason = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (!strstr(e->d_name, "-lag.json"))
      continue;
    reports++;
    char p[1024], text[4096] = "";
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    FILE *f = fopen(p, "r");
    if (f) {
      size_t n = fread(text, 1, sizeof text - 1, f);
      text[n] = '\0';
      fclose(f);
    }
    with_reason += strstr(text, "\"main_stack_error\":\"the target thread "
                                "did not stop in time\"") != NULL &&
                   strstr(text, "\"main_stack\":[]") != NULL;
  }
  if (d)
    closedir(d);
  CHECK_EQ(reports, 1);
  CHECK_EQ(with_reason, 1);
}
#endif

/* fork() while the watchdog runs: the child has no watchdog thread, and
   stop must not wait for it. (Starting a new watchdog there is plain
   thread creation after fork, which TSan and qemu-user do not support.) */
static void test_fork(void) {
  snap_lag_config_t c;
  snap_lag_config_default(&c);
  c.report_dir = g_dir;
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(20); /* a hang in the child fails the test, not the suite */
    int ok = snap_lag_stop() == SNAP_OK && snap_lag_stop() == SNAP_OK;
    snap_lag_loop_busy(); /* no-ops: nothing watches */
    snap_lag_loop_idle();
    _exit(ok ? 0 : 1);
  }
  int status = -1;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait");
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d",
        status);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
}

static void test_adapters_absent(void) {
  /* This test program does not load GLib, and Linux has no CFRunLoop. */
  CHECK_EQ(snap_lag_attach_glib(NULL), SNAP_EUNSUPPORTED);
#ifdef __APPLE__
  int rc = snap_lag_attach_cfrunloop(NULL); /* CF may be loaded by libs */
  CHECK(rc == SNAP_OK || rc == SNAP_EUNSUPPORTED, "%d", rc);
#else
  CHECK_EQ(snap_lag_attach_cfrunloop(NULL), SNAP_EUNSUPPORTED);
#endif
}

/* The first "<start>-lag.json" in dir, read whole into buf; false if none. */
static bool read_lag_report(const char *dir, char *buf, size_t size) {
  DIR *d = opendir(dir);
  struct dirent *e;
  bool got = false;
  while (d && !got && (e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l > 9 && strcmp(e->d_name + l - 9, "-lag.json") == 0) {
      char p[1024];
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      FILE *f = fopen(p, "r");
      size_t n = f ? fread(buf, 1, size - 1, f) : 0;
      if (f)
        fclose(f);
      buf[n] = '\0';
      got = n > 0;
    }
  }
  if (d)
    closedir(d);
  return got;
}

/* Issue 12 (found by the watchdog split: a lag's end was computed by two
   rules): snap_lag_stop while the loop is busy in a stretch after the
   lag's took "now" as the lag's end, so the final duration counted the
   idle gap and the next stretch too. The lag ended when the next stretch
   began at the latest. Threshold 2 s: the watchdog's next wake after the
   detection is ~2 s later, well after the stop. */
static void test_stop_after_lag_ended(void) {
  char dir[512];
  snap_lag_config_t c;
  quick_config(&c, dir, sizeof dir, "stop_end");
  c.threshold_ms = 2000;
  c.sample_interval_ms = 2000;
  c.hang_ms = 60000;
  c.cpu_percent = 0;
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  sleep_ms(100); /* the watchdog parks */
  int64_t t0 = mono_ms();
  snap_lag_loop_busy();
  static char json[1 << 20];
  while (!read_lag_report(dir, json, sizeof json) && mono_ms() - t0 < 20000)
    sleep_ms(5);
  snap_lag_loop_idle(); /* the lag ends */
  sleep_ms(200);
  int64_t t1 = mono_ms();
  snap_lag_loop_busy(); /* the next stretch */
  sleep_ms(500);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  snap_lag_loop_idle();
  CHECK(read_lag_report(dir, json, sizeof json), "no lag report in %s", dir);
  const char *d = strstr(json, "\"duration_ms\":");
  long long ms = d ? atoll(d + 14) : -1;
  CHECK(strstr(json, "\"ongoing\":false") != NULL, "report left ongoing");
  CHECK(ms >= 2000 && ms <= t1 - t0 + 20,
        "final duration %lld ms; the next stretch began %lld ms after the "
        "lag's",
        ms, (long long)(t1 - t0));
}

/* Issue 13 (API v2): on_report_write is told which write completes a
   report, once per report, and nothing of it comes after; a caller built
   with the v1 struct (its size ends before on_report_write) is still
   accepted, and what lies past its size is never called. */
static atomic_int g_writes, g_finals, g_after_final;
static char g_final_path[1200]; /* written and read on the watchdog thread */
static void on_write(const char *path, bool final, void *ctx) {
  (void)ctx;
  if (atomic_load(&g_finals) && strcmp(path, g_final_path) == 0)
    atomic_fetch_add(&g_after_final, 1);
  atomic_fetch_add(&g_writes, 1);
  if (final) {
    snprintf(g_final_path, sizeof g_final_path, "%s", path);
    atomic_fetch_add(&g_finals, 1);
  }
}

static void test_on_report_write(void) {
  char dir[512];
  snap_lag_config_t c;
  quick_config(&c, dir, sizeof dir, "final");
  c.cpu_percent = 0;
  c.on_report_write = on_write;
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  sleep_ms(100);
  snap_lag_loop_busy(); /* 400 ms at a 50 ms threshold: rewritten a few times */
  spin_ms(400);
  snap_lag_loop_idle();
  for (int i = 0; i < 200 && atomic_load(&g_finals) == 0; i++)
    sleep_ms(10);
  sleep_ms(100);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  CHECK_EQ(atomic_load(&g_finals), 1);
  CHECK(atomic_load(&g_writes) >= 2, "%d writes of a 400 ms lag",
        atomic_load(&g_writes));
  CHECK_EQ(atomic_load(&g_after_final), 0);

  /* A v1 caller: the size ends where on_report_write begins. */
  char dir1[512];
  snap_lag_config_t v1;
  quick_config(&v1, dir1, sizeof dir1, "final_v1");
  v1.cpu_percent = 0;
  v1.size = offsetof(snap_lag_config_t, on_report_write);
  v1.on_report_write = on_write; /* past its size: not the library's */
  atomic_store(&g_writes, 0);
  CHECK_EQ(snap_lag_start(&v1), SNAP_OK);
  sleep_ms(100);
  snap_lag_loop_busy();
  spin_ms(200);
  snap_lag_loop_idle();
  static char json[1 << 20];
  for (int i = 0; i < 200 && !read_lag_report(dir1, json, sizeof json); i++)
    sleep_ms(10);
  sleep_ms(100);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  CHECK(read_lag_report(dir1, json, sizeof json), "v1 caller: no lag report");
  CHECK_EQ(atomic_load(&g_writes), 0);
}

#ifdef __linux__
/* Issue 13 (item 3): threads that block the sampling signal are listed
   with that reason at once, not waited for: 16 of them cost 16 sample
   timeouts (1.6 s) before the first report was written. */
#define BLOCKERS 16
static pthread_mutex_t g_block_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_block_cv = PTHREAD_COND_INITIALIZER;
static bool g_block_done;
static atomic_int g_block_ready;
static atomic_llong g_first_write_ms;

static void *blocker(void *arg) {
  (void)arg;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  atomic_fetch_add(&g_block_ready, 1);
  pthread_mutex_lock(&g_block_mu);
  while (!g_block_done)
    pthread_cond_wait(&g_block_cv, &g_block_mu);
  pthread_mutex_unlock(&g_block_mu);
  return NULL;
}

static void on_first_write(const char *path, bool final, void *ctx) {
  (void)path, (void) final, (void)ctx;
  long long none = 0;
  atomic_compare_exchange_strong(&g_first_write_ms, &none, mono_ms());
}

static void test_dump_blocked_threads(void) {
  pthread_t t[BLOCKERS];
  for (int i = 0; i < BLOCKERS; i++)
    CHECK_EQ(pthread_create(&t[i], NULL, blocker, NULL), 0);
  while (atomic_load(&g_block_ready) < BLOCKERS)
    sleep_ms(1);
  char dir[512];
  snap_lag_config_t c;
  quick_config(&c, dir, sizeof dir, "blocked");
  c.cpu_percent = 0;
  c.on_report_write = on_first_write;
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  sleep_ms(100);
  int64_t t0 = mono_ms();
  snap_lag_loop_busy();
  spin_ms(300);
  snap_lag_loop_idle();
  for (int i = 0; i < 500 && !atomic_load(&g_first_write_ms); i++)
    sleep_ms(10);
  sleep_ms(100);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  pthread_mutex_lock(&g_block_mu);
  g_block_done = true;
  pthread_cond_broadcast(&g_block_cv);
  pthread_mutex_unlock(&g_block_mu);
  for (int i = 0; i < BLOCKERS; i++)
    pthread_join(t[i], NULL);
  long long first = atomic_load(&g_first_write_ms);
  CHECK(first && first - t0 < 1000,
        "the first report came %lld ms after the lag began (threshold 50 "
        "ms): the dump waited for threads that block the signal",
        first ? first - t0 : -1);
  static char json[1 << 20];
  CHECK(read_lag_report(dir, json, sizeof json), "no lag report in %s", dir);
  int listed = 0;
  for (const char *p = json;
       (p = strstr(p, snap_strerror(SNAP_EBLOCKED))) != NULL; p++)
    listed++;
  CHECK(listed >= BLOCKERS, "%d of %d blocking threads listed with the reason",
        listed, BLOCKERS);
}
#endif

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/snap_lag_config.XXXXXX");
  CHECK(mkdtemp(g_dir) != NULL, "mkdtemp");
  test_defaults();
  test_config_size();
  test_on_report_write();
  test_bad_configs();
  test_start_stop();
  test_stop_after_lag_ended();
  test_store();
  test_park_wakeups();
#ifdef __linux__
  test_unsampleable_main();
  test_dump_blocked_threads();
#endif
  test_fork();
  test_adapters_absent();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", g_dir);
  return check_result("test_lag_config");
}
