/*
 * test_lag_final_write.c — issue 13 item 5: a lag whose last write fails
 * (a full disk) is not left "ongoing" by a process that lives on.
 *
 * Seen: a lag ended while a 1 MiB tmpfs was full; its final write
 * (ongoing false) failed, the file kept "ongoing": true after
 * snap_lag_stop, and the next snap_lag_start called it hang_killed.
 *
 * Writes fail for real, two ways:
 *  - a full file system: a 1 MiB tmpfs of this process's own (a private
 *    mount namespace: unshare + mount, which needs root and a
 *    single-threaded process; skipped where refused — CI containers,
 *    qemu-user and TSan, whose helper threads share the process's fs),
 *    filled by a filler file until ENOSPC, space returned by removing it;
 *  - RLIMIT_FSIZE (always): any write past 256 bytes of a file fails with
 *    EFBIG. The kernel also sends SIGXFSZ, whose default action kills:
 *    this test ignores it (main); the library changes no disposition.
 * The kernel is the witness that a write was tried and failed: inotify
 * sees the temporary file removed (a write that lands renames it).
 *
 * Scenarios, each with either fault:
 *  1. the final write fails, space returns while the watchdog runs: the
 *     write is tried again (a second failure is seen), then lands: the
 *     report ends "ongoing": false, one final callback;
 *  2. space returns only after snap_lag_stop; snap_lag_start again in the
 *     same process: the report is finished (ongoing false, kind "lag"),
 *     not turned into hang_killed, one final callback;
 *  3. the previous lag's "repeats" rewrite (an annealed lag ended) fails:
 *     retried once space returns, the count not lost;
 *  4. writes on the app's own thread past RLIMIT_FSIZE with SIGXFSZ at
 *     its default (a child process): errors, never the app's death.
 * Busy work is CPU work or waiting for an event, never wall time.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "stacksnap.h"
#include "test_clock.h"

static char g_root[256]; /* scenario directories go below */

/* ---- Callbacks ----------------------------------------------------------- */

static atomic_int g_writes, g_finals, g_after_final;
static char g_first_path[1200], g_final_path[1200]; /* watchdog thread */
static atomic_int g_first_set;

static void on_write(const char *path, bool final, void *ctx) {
  (void)ctx;
  if (atomic_load(&g_finals) && strcmp(path, g_final_path) == 0 && !final)
    atomic_fetch_add(&g_after_final, 1);
  if (!atomic_load(&g_first_set)) {
    snprintf(g_first_path, sizeof g_first_path, "%s", path);
    atomic_store(&g_first_set, 1);
  }
  if (final) {
    snprintf(g_final_path, sizeof g_final_path, "%s", path);
    atomic_fetch_add(&g_finals, 1);
  }
  atomic_fetch_add(&g_writes, 1);
}

static void reset_callbacks(void) {
  atomic_store(&g_writes, 0);
  atomic_store(&g_finals, 0);
  atomic_store(&g_after_final, 0);
  atomic_store(&g_first_set, 0);
}

/* ---- Faults -------------------------------------------------------------- */

typedef struct fault {
  const char *name;
  bool (*on)(void);
  void (*off)(void);
} fault_t;

static struct rlimit g_fsize;
static bool fsize_on(void) {
  if (getrlimit(RLIMIT_FSIZE, &g_fsize) != 0)
    return false;
  struct rlimit r = {256, g_fsize.rlim_max};
  return setrlimit(RLIMIT_FSIZE, &r) == 0;
}
static void fsize_off(void) {
  CHECK(setrlimit(RLIMIT_FSIZE, &g_fsize) == 0, "RLIMIT_FSIZE not restored");
}

static char g_filler[300];
static bool fill_on(void) {
  int fd = open(g_filler, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return false;
  static char chunk[65536];
  size_t sizes[] = {sizeof chunk, 4096, 1};
  int err = 0;
  for (int i = 0; i < 3; i++) {
    ssize_t w;
    while ((w = write(fd, chunk, sizes[i])) > 0 || (w < 0 && errno == EINTR))
      ;
    err = errno;
  }
  close(fd);
  return err == ENOSPC;
}
static void fill_off(void) {
  CHECK(unlink(g_filler) == 0, "filler not removed: %s", strerror(errno));
}

/* ---- Observing the directory --------------------------------------------- */

/* Removals of our temporary files ("." name "." 16 hex ".tmp",
   src/report/files.c): writes that failed. */
static int watch(const char *dir) {
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  CHECK(fd >= 0, "inotify_init1: %s", strerror(errno));
  if (fd >= 0)
    CHECK(inotify_add_watch(fd, dir, IN_DELETE) >= 0, "inotify_add_watch");
  return fd;
}

/* Failed writes seen since the last call: all, or (others != NULL) those
   of report `name` (a file name), the rest counted into *others. */
static int failed_seen(int fd, const char *name, int *others) {
  int n = 0;
  _Alignas(struct inotify_event) char buf[4096];
  ssize_t r;
  while ((r = read(fd, buf, sizeof buf)) > 0) {
    for (char *p = buf; p < buf + r;) {
      struct inotify_event *e = (struct inotify_event *)p;
      size_t l = e->len ? strlen(e->name) : 0;
      if ((e->mask & IN_DELETE) && l > 5 && e->name[0] == '.' &&
          strcmp(e->name + l - 4, ".tmp") == 0) {
        /* The name between the dot and the random part. */
        size_t nl = l >= 5 + 17 ? l - 5 - 17 : 0;
        bool ours = !name || (nl == strlen(name) && e->name[1 + nl] == '.' &&
                              strncmp(e->name + 1, name, nl) == 0);
        if (ours)
          n++;
        else if (others)
          ++*others;
      }
      p += sizeof *e + e->len;
    }
  }
  return n;
}

/* Waits until n failed writes (of `name`, when not NULL) were seen in all,
   or one of another report (*others). timeout_ms: a "no hang" bound for a
   loaded box. Returns how many were. */
static int wait_failed(int fd, int n, const char *name, int *others,
                       int timeout_ms) {
  int seen = 0, other = 0;
  int64_t end = mono_ms() + timeout_ms;
  while ((seen += failed_seen(fd, name, &other)) < n && !other &&
         mono_ms() < end) {
    struct pollfd p = {fd, POLLIN, 0};
    poll(&p, 1, 50);
  }
  if (others)
    *others = other;
  return seen;
}

static bool wait_atomic(atomic_int *v, int at_least, int timeout_ms) {
  int64_t end = mono_ms() + timeout_ms;
  while (atomic_load(v) < at_least && mono_ms() < end)
    sleep_ms(2);
  return atomic_load(v) >= at_least;
}

static bool read_file(const char *path, char *buf, size_t size) {
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(buf, 1, size - 1, f) : 0;
  if (f)
    fclose(f);
  buf[n] = '\0';
  return n > 0;
}

static int count_suffix(const char *dir, const char *suffix) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    size_t l = strlen(e->d_name), s = strlen(suffix);
    n +=
        e->d_name[0] != '.' && l >= s && strcmp(e->d_name + l - s, suffix) == 0;
  }
  if (d)
    closedir(d);
  return n;
}

static const char ongoing_lag[] =
    "{\"schema\":\"stacksnap.lag/2\",\"kind\":\"lag\",\"ongoing\":true";
static const char ended_lag[] =
    "{\"schema\":\"stacksnap.lag/2\",\"kind\":\"lag\",\"ongoing\":false";

/* ---- The lags ------------------------------------------------------------ */

/* One function for every lag, so the second lag of scenario 3 is the
   first one again (annealing): CPU work until *until reaches at_least (a
   lag that lasts until the watchdog wrote its file) and for cpu_ms of
   this thread's CPU time. It calls no other function of the app (only
   libc's syscall, rarely), so nearly every sample of it is one path. */
__attribute__((noinline)) void lag_work(atomic_int *until, int at_least,
                                        int64_t cpu_ms);
__attribute__((noinline)) void lag_work(atomic_int *until, int at_least,
                                        int64_t cpu_ms) {
  unsigned x = 1;
  struct timespec t0, t, m0, m;
  /* The clocks by syscall(2): a sanitizer intercepts clock_gettime, and
     its interceptor is this executable's ("app") frame. */
  syscall(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &t0);
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &m0);
  for (;;) {
    /* In registers: no memory access a sanitizer would wrap in calls of
       its runtime (linked into this executable: "app" frames). */
    for (int i = 0; i < 200000; i++) {
      x = x * 1103515245u + 12345u;
      __asm__ volatile("" : "+r"(x));
    }
    syscall(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &t);
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &m);
    int64_t cpu =
        (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
    if ((!until || atomic_load(until) >= at_least) && cpu >= cpu_ms)
      break;
    if (m.tv_sec - m0.tv_sec > 30)
      break; /* the checks after it say what went wrong */
  }
}

/* A quick watchdog (lag at 50 ms) reporting into g_root/<what>-<fault>. */
static void config(snap_lag_config_t *c, char *dir, size_t size,
                   const char *what, const fault_t *f) {
  snprintf(dir, size, "%s/%s-%s", g_root, what, f->name);
  for (char *p = dir + strlen(g_root); *p; p++)
    if (*p == ' ')
      *p = '_';
  snap_lag_config_default(c);
  c->report_dir = dir;
  c->threshold_ms = 50;
  c->sample_interval_ms = 10;
  c->hang_ms = 60000;
  c->cpu_percent = 0;
  c->on_report_write = on_write;
}

/* Starts a watchdog and a lag, returns once its file is written (ongoing),
   the lag still going on. */
static bool lag_written(const snap_lag_config_t *c) {
  reset_callbacks();
  CHECK_EQ(snap_lag_start(c), SNAP_OK);
  snap_lag_loop_busy();
  lag_work(&g_first_set, 1, 0);
  CHECK(atomic_load(&g_first_set), "no report written for a lag");
  return atomic_load(&g_first_set) != 0;
}

/* 1: space returns while the watchdog runs. */
static void final_retried(const fault_t *f) {
  char dir[512];
  snap_lag_config_t c;
  config(&c, dir, sizeof dir, "retried", f);
  if (!lag_written(&c)) {
    snap_lag_loop_idle();
    snap_lag_stop();
    return;
  }
  int ino = watch(dir);
  CHECK(f->on(), "%s: could not make writes fail", f->name);
  failed_seen(ino, NULL, NULL); /* from here: the lag ends, its final
                                   write fails */
  snap_lag_loop_idle();
  int failed = wait_failed(ino, 2, NULL, NULL, 15000);
  CHECK(failed >= 2,
        "%s: the final write failed and was not tried again (%d failed "
        "writes after the lag ended)",
        f->name, failed);
  static char json[1 << 20];
  CHECK(read_file(g_first_path, json, sizeof json) &&
            strncmp(json, ongoing_lag, sizeof ongoing_lag - 1) == 0,
        "%s: the report is not the ongoing lag it was", f->name);
  CHECK_EQ(atomic_load(&g_finals), 0);
  f->off(); /* space returns */
  CHECK(wait_atomic(&g_finals, 1, 15000),
        "%s: space returned, the final write never landed", f->name);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  CHECK_EQ(atomic_load(&g_finals), 1);
  CHECK_EQ(atomic_load(&g_after_final), 0);
  CHECK(strcmp(g_final_path, g_first_path) == 0, "%s: final write of %s",
        f->name, g_final_path);
  CHECK(read_file(g_first_path, json, sizeof json) &&
            strncmp(json, ended_lag, sizeof ended_lag - 1) == 0,
        "%s: the report was left: %.80s", f->name, json);
  CHECK_EQ(count_suffix(dir, ".json"), 1);
  close(ino);
}

/* 2: space returns only after snap_lag_stop; started again. */
static void finished_at_restart(const fault_t *f) {
  char dir[512];
  snap_lag_config_t c;
  config(&c, dir, sizeof dir, "restart", f);
  if (!lag_written(&c)) {
    snap_lag_loop_idle();
    snap_lag_stop();
    return;
  }
  CHECK(f->on(), "%s: could not make writes fail", f->name);
  CHECK_EQ(snap_lag_stop(), SNAP_OK); /* during the lag: its final write */
  snap_lag_loop_idle();
  static char json[1 << 20];
  CHECK(read_file(g_first_path, json, sizeof json) &&
            strncmp(json, ongoing_lag, sizeof ongoing_lag - 1) == 0,
        "%s: the final write did not fail: %.80s", f->name, json);
  CHECK_EQ(atomic_load(&g_finals), 0);
  f->off();
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  CHECK_EQ(count_suffix(dir, "-hang_killed.json"), 0);
  CHECK(read_file(g_first_path, json, sizeof json) &&
            strncmp(json, ended_lag, sizeof ended_lag - 1) == 0,
        "%s: this process's own report after a restart: %.80s", f->name, json);
  CHECK_EQ(atomic_load(&g_finals), 1);
  CHECK(strcmp(g_final_path, g_first_path) == 0, "%s: final write of %s",
        f->name, g_final_path);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  CHECK_EQ(atomic_load(&g_finals), 1);
  CHECK_EQ(count_suffix(dir, ".json"), 1);
}

/* 3: the previous lag's repeats rewrite fails; space returns. Every lag
   comes through one call site, so their stacks are one path (annealing
   compares every app frame). A later lag that is not annealed after all
   (its one sample landed elsewhere: in a sanitizer's interceptor, say)
   tries a file of its own: seen, and that lag is run again. */
static void repeats_kept(const fault_t *f) {
  char dir[512];
  snap_lag_config_t c;
  config(&c, dir, sizeof dir, "repeats", f);
  reset_callbacks();
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  int ino = -1, failed = 0, others = 0;
  const char *name = "";
  for (int lag = 0; lag < 6; lag++) {
    if (lag == 1) { /* the same lag again: annealed, no file of its own */
      name = strrchr(g_first_path, '/') ? strrchr(g_first_path, '/') + 1 : "";
      ino = watch(dir);
      CHECK(f->on(), "%s: could not make writes fail", f->name);
    }
    snap_lag_loop_busy();
    /* The first until its file is written, the rest for 400 ms of CPU. */
    lag_work(lag == 0 ? &g_first_set : NULL, 1, lag == 0 ? 0 : 400);
    snap_lag_loop_idle();
    if (lag == 0) {
      CHECK(wait_atomic(&g_finals, 1, 15000), "%s: the first lag: no report",
            f->name);
      continue;
    }
    failed = wait_failed(ino, 1, name, &others, 15000);
    if (failed || !others)
      break;
  }
  if (SNAP_TEST_TSAN && !failed && others) {
    /* TSan defers the sampling signal to its next interceptor, whose
       frames are this executable's ("app") frames: the stacks of two
       samples rarely match. The retry itself is checked above. */
    printf("test_lag_final_write: %s: repeats skipped under TSan (no lag "
           "was annealed)\n",
           f->name);
    f->off();
    CHECK_EQ(snap_lag_stop(), SNAP_OK);
    close(ino);
    return;
  }
  CHECK(failed >= 1,
        "%s: no annealed lag's end tried to write %s (%d "
        "writes of other reports failed)",
        f->name, name, others);
  f->off();
  static char json[1 << 20];
  int64_t end = mono_ms() + 15000;
  bool counted = false;
  while (!counted && mono_ms() < end) {
    counted = read_file(g_first_path, json, sizeof json) &&
              strstr(json, "\n\"repeats\":1,") != NULL;
    if (!counted)
      sleep_ms(10);
  }
  CHECK(counted, "%s: space returned, the repeat count was never written",
        f->name);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  CHECK_EQ(atomic_load(&g_finals), 1);
  CHECK_EQ(count_suffix(dir, ".json"), 1);
  close(ino);
}

/* 4: the library's writes on the app's own thread (snap_lag_start's
   hang_killed conversion and its probe) past RLIMIT_FSIZE, with SIGXFSZ at
   its default action (terminate): SNAP_EIO, and the app lives. In a child,
   so a failure is its death, not this test's. A 1-byte limit fails even
   the probe, so the start creates no thread in the child (TSan does not
   follow the library's locks across a fork). */
static void app_thread_writes(void) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/xfsz", g_root);
  CHECK(mkdir(dir, 0755) == 0, "mkdir %s", dir);
  /* A report of an older version left ongoing: converted at start. */
  char path[600];
  snprintf(path, sizeof path, "%s/1000-lag.json", dir);
  FILE *fp = fopen(path, "w");
  CHECK(fp != NULL, "cannot create %s", path);
  if (fp) {
    fprintf(fp, "{\"schema\":\"stacksnap.lag/1\",\"kind\":\"lag\","
                "\"ongoing\":true,\n\"pid\":1\n}\n");
    fclose(fp);
  }
  pid_t pid = fork();
  if (pid == 0) {
    alarm(60); /* a hang fails the test, not the suite */
    signal(SIGXFSZ, SIG_DFL);
    struct rlimit r;
    if (getrlimit(RLIMIT_FSIZE, &r) != 0)
      _exit(10);
    r.rlim_cur = 1;
    if (setrlimit(RLIMIT_FSIZE, &r) != 0)
      _exit(11);
    snap_lag_config_t c;
    snap_lag_config_default(&c);
    c.report_dir = dir;
    int rc = snap_lag_start(&c); /* conversion and probe: EFBIG */
    _exit(rc == SNAP_EIO ? 0 : 12);
  }
  int status = -1;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait");
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "writes past RLIMIT_FSIZE on the app's thread: the child %s %d",
        WIFSIGNALED(status) ? "was killed by signal" : "exited with",
        WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

/* A 1 MiB tmpfs at g_root, in a mount namespace of this process's own
   (it goes with the process). Before any thread exists. */
static bool own_tmpfs(void) {
  if (unshare(CLONE_NEWNS) != 0)
    return false;
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
    return false; /* nothing may propagate to the host's namespace */
  return mount("tmpfs", g_root, "tmpfs", 0, "size=1m") == 0;
}

int main(void) {
  /* Writes past RLIMIT_FSIZE raise SIGXFSZ, whose default kills: the app
     (this test) decides, never the library. */
  signal(SIGXFSZ, SIG_IGN);
  snprintf(g_root, sizeof g_root, "/tmp/snap_lag_final.XXXXXX");
  CHECK(mkdtemp(g_root) != NULL, "mkdtemp");
  bool tmpfs = own_tmpfs();
  snprintf(g_filler, sizeof g_filler, "%s/filler", g_root);
  const fault_t fsize = {"RLIMIT_FSIZE", fsize_on, fsize_off};
  const fault_t full = {"full tmpfs", fill_on, fill_off};
  const fault_t *faults[2] = {&fsize, tmpfs ? &full : NULL};
  if (tmpfs)
    printf("test_lag_final_write: RLIMIT_FSIZE and a full 1 MiB tmpfs\n");
  else
    printf("test_lag_final_write: no tmpfs of our own (%s): RLIMIT_FSIZE "
           "only\n",
           strerror(errno));
  app_thread_writes();
  for (int i = 0; i < 2; i++) {
    if (!faults[i])
      continue;
    final_retried(faults[i]);
    finished_at_restart(faults[i]);
    repeats_kept(faults[i]);
  }
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'/*", g_root);
  if (system(cmd) != 0)
    fprintf(stderr, "could not empty %s\n", g_root);
  if (tmpfs)
    umount(g_root);
  rmdir(g_root);
  return check_result("test_lag_final_write");
}
