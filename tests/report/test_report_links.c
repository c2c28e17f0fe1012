/*
 * test_report_links.c — a symlink planted at a temp name of the library's
 * files is never written through (issue 24, item 1).
 *
 * The attacker can write the report directory (docs/security.md). It
 * plants links to a victim file outside it: before the start at the write
 * probe's name, and, as a racer would, at every temp name it has seen the
 * library use, the moment after that write ended (inotify tells it the
 * names; the watchdog's on_report_write callback runs right after each
 * write, before the next), so the next write of the same report, of the
 * trace beside it, and of snap_trace_write's file finds it there.
 *
 * Oracle: the victim's bytes and inode (read by the test with plain libc)
 * are what they were; the reports and traces are in place, regular files.
 * Before issue 24 the temp names were fixed (".NAME.tmp", opened O_TRUNC
 * and without O_NOFOLLOW): the victim was truncated and overwritten.
 */
#include <stdatomic.h>
#include <sys/inotify.h>

#include "check.h"
#include "report/files_test.h"

static char g_dir[512], g_victim[600];
static int g_watch = -1;
static _Atomic int g_planted, g_writes, g_finals;
static char g_report[1200];
static const char VICTIM_TEXT[] = "the victim's own bytes\n";

/* Plants a link to the victim at every temp file ("." ... ".tmp") created
   in the directory since the last call. */
static void plant_at_seen_temps(void) {
  _Alignas(struct inotify_event) char buf[8192];
  ssize_t r;
  while ((r = read(g_watch, buf, sizeof buf)) > 0) {
    for (char *p = buf; p < buf + r;) {
      struct inotify_event *e = (struct inotify_event *)p;
      size_t l = e->len ? strlen(e->name) : 0;
      if ((e->mask & IN_CREATE) && l > 5 && e->name[0] == '.' &&
          strcmp(e->name + l - 4, ".tmp") == 0) {
        char path[1200];
        ft_path(path, sizeof path, g_dir, e->name);
        if (symlink(g_victim, path) == 0)
          atomic_fetch_add(&g_planted, 1);
      }
      p += sizeof *e + e->len;
    }
  }
}

static void on_write(const char *path, bool final, void *ctx) {
  (void)ctx;
  snprintf(g_report, sizeof g_report, "%s", path);
  atomic_fetch_add(&g_writes, 1);
  plant_at_seen_temps(); /* before the watchdog's next write */
  if (final)
    atomic_fetch_add(&g_finals, 1);
}

/* One lag, `depth` calls deep: each round its own call path, so none is
   annealed into an earlier one (a repeat only rewrites its count). */
__attribute__((noinline)) static void lag_at(int depth) {
  if (depth > 0) {
    lag_at(depth - 1);
    __asm__ volatile("" ::: "memory");
    return;
  }
  ft_lag(500);
}

static void check_victim(const char *when, ino_t ino) {
  char text[256];
  struct stat st;
  CHECK(lstat(g_victim, &st) == 0 && S_ISREG(st.st_mode) && st.st_ino == ino,
        "%s: the victim was replaced", when);
  CHECK(ft_read(g_victim, text, sizeof text) && strcmp(text, VICTIM_TEXT) == 0,
        "%s: written through a planted link: the victim now holds \"%.40s\"",
        when, text);
}

int main(void) {
  char base[] = "/tmp/snap_links.XXXXXX";
  if (!mkdtemp(base))
    return 1;
  snprintf(g_dir, sizeof g_dir, "%s/reports", base);
  snprintf(g_victim, sizeof g_victim, "%s/victim", base);
  CHECK(mkdir(g_dir, 0700) == 0, "mkdir");
  CHECK(ft_write(g_victim, VICTIM_TEXT), "victim");
  struct stat vst;
  CHECK(stat(g_victim, &vst) == 0, "stat victim");
  g_watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  CHECK(g_watch >= 0 && inotify_add_watch(g_watch, g_dir, IN_CREATE) >= 0,
        "inotify: %s", strerror(errno));

  /* The one temp name knowable before any write: the probe's was fixed. */
  char path[1200];
  CHECK(symlink(g_victim,
                ft_path(path, sizeof path, g_dir, "..probe.tmp.tmp")) == 0,
        "plant");

  /* A trace runs, so each lag report has a trace beside it. */
  snap_trace_config_t tc;
  snap_trace_config_default(&tc);
  CHECK_EQ(snap_trace_start(&tc), SNAP_OK);

  snap_lag_config_t c;
  snap_lag_config_default(&c);
  c.report_dir = g_dir;
  c.threshold_ms = 200;
  c.sample_interval_ms = 0;
  c.cpu_percent = 0;
  c.on_report_write = on_write;
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  check_victim("the write probe", vst.st_ino);
  plant_at_seen_temps();

  /* Lags: each is written at detection and again when it ends; links are
     planted between the two at the names the first used. */
  for (int round = 0; round < 3; round++) {
    int before = atomic_load(&g_finals);
    lag_at(round * 3);
    for (int i = 0; i < 60; i++) { /* idle stretches: the lag has ended */
      snap_lag_loop_busy();
      snap_lag_loop_idle();
      sleep_ms(10);
    }
    for (int i = 0; i < 1000 && atomic_load(&g_finals) == before; i++)
      sleep_ms(10);
    CHECK(atomic_load(&g_finals) > before, "round %d: no final write", round);
  }
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  check_victim("lag reports and the traces beside them", vst.st_ino);

  /* snap_trace_write, twice to one path, links planted in between. */
  char trace[1200];
  ft_path(trace, sizeof trace, g_dir, "app.pftrace");
  CHECK_EQ(snap_trace_write(trace, SNAP_TRACE_PERFETTO, 0, 0), SNAP_OK);
  plant_at_seen_temps();
  CHECK_EQ(snap_trace_write(trace, SNAP_TRACE_PERFETTO, 0, 0), SNAP_OK);
  plant_at_seen_temps();
  CHECK_EQ(snap_trace_write(trace, SNAP_TRACE_FOLDED, 0, 0), SNAP_OK);
  CHECK_EQ(snap_trace_stop(), SNAP_OK);
  check_victim("snap_trace_write", vst.st_ino);

  /* The attack was made (links at the names seen), and the files are in
     place: regular files, not links. */
  printf("%d links planted, %d report writes\n", atomic_load(&g_planted),
         atomic_load(&g_writes));
  CHECK(atomic_load(&g_planted) >= 4, "only %d links planted",
        atomic_load(&g_planted));
  CHECK(ft_type(g_report) == S_IFREG, "the report %s is not a regular file",
        g_report);
  CHECK(ft_type(trace) == S_IFREG, "the trace is not a regular file");

  /* The next start clears the links left at old-style temp names (they
     are ours to remove: a link itself, never its target). */
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  check_victim("a restart", vst.st_ino);
  close(g_watch);
  ft_rm_rf(base);
  return check_result("test_report_links");
}
