/*
 * bench_audit.c — what the audit preload (demo/audit/libstacksnap_audit.so,
 * docs/audit.md) costs a program per hooked call, against the bare call and
 * against the capture and naming peers it is built from, in one run.
 *
 * The preload is an LD_PRELOAD library, so every row is a child process:
 * the bench runs itself (/proc/self/exe, hidden flag --child) under the
 * row's environment. The child makes the row's call from ONE call site (a
 * noinline function) W warm-up times, then N times (default 200 000) with
 * CLOCK_MONOTONIC read around that loop only (not the process start-up, not
 * the preload's exit flush; --cpu-time: the thread's CPU time, for a
 * machine shared with other work), and writes ns per call to its fd 3, a
 * pipe to the parent. Its stdout and stderr go to a log file, shown only when
 * the child fails, so nothing of the child mixes with the table.
 *
 * Rows (each 3 children, interleaved with the other rows; median, spread):
 *   open+close of /etc/hostname: no preload; preload with a prefix that
 *   never matches (the hooks' own cost when nothing is recorded); preload
 *   with STACKSNAP_AUDIT_PREFIX=/etc/ (every call counted into one record:
 *   a capture plus a cache hit per call); both again from the bottom of a
 *   64-level noinline recursion (capture cost grows with depth);
 *   fopen+fclose and stat, without and with the preload recording.
 * Peers, in the parent, from the same depths: glibc's backtrace() (looked
 * up in libc.so.6 with dlsym, as bench_capture does) and
 * snap_callstack_symbols + snap_stack_release on a repeated site (the
 * least a hook that names its caller does).
 *
 * Checked, not assumed: after each recording child exits, its
 * STACKSNAP_AUDIT_OUT (JSON lines, docs/audit.md) must hold exactly one
 * record for /etc/hostname whose greatest count (record or update lines of
 * its (pid, id)) is W + N: one record per (call site, function, resource,
 * result). A wrong count is printed as a failure. The hooks-only row must
 * hold no record for it.
 *
 * Must not: print a figure it did not measure (a missing preload or a
 * failed child is "n/a"), leave files behind (its temporary directory is
 * removed), or leave a child running (a child silent for 120 s is killed).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"
#include "stacksnap.h"

extern char **environ;

#define TARGET "/etc/hostname"
#define DEFAULT_CALLS 200000L
#define WARMUP 1000L /* through the same call site, before the timed loop */
#define RUNS 3
#define DEFAULT_DEPTH 64
#define RESULT_FD 3 /* the child's end of the result pipe */
#define CHILD_TIMEOUT_MS 120000
#define PEER_REPEAT_NS 20e6 /* aim for ~20 ms per timed peer repeat */
#define GOAL_NS 1000.0      /* issue 17: <= 1 us added per recorded open */
#define HOOK_PREFIX "/nonexistent-prefix/"
#define RECORD_PREFIX "/etc/"

/* (max - min) / median of sorted values: a noise gauge. */
static double spread(const double *sorted, int n, double med) {
  return med > 0 ? (sorted[n - 1] - sorted[0]) / med : 0;
}

/* ======================================================================
 * The child: one call site, timed loop, result to fd 3
 * ====================================================================== */

enum { OP_OPEN, OP_FOPEN, OP_STAT, OP_COUNT };
static const char *const k_op_names[OP_COUNT] = {"open", "fopen", "stat"};
static const char *const k_op_labels[OP_COUNT] = {"open+close", "fopen+fclose",
                                                  "stat"};

/* Each hooked call has exactly one call instruction in the program: these
   are noinline and called from a loop, so however a compiler unrolls the
   loop, the preload sees one call site (the innermost app frame is this
   function's) and must keep one record. */
__attribute__((noinline)) static int one_open(void) {
  int fd = open(TARGET, O_RDONLY);
  if (fd < 0)
    return -1;
  close(fd);
  return 0;
}

__attribute__((noinline)) static int one_fopen(void) {
  FILE *f = fopen(TARGET, "r");
  if (!f)
    return -1;
  fclose(f);
  return 0;
}

__attribute__((noinline)) static int one_stat(void) {
  struct stat st;
  int rc = stat(TARGET, &st);
  __asm__ volatile("" ::"r"(&st) : "memory");
  return rc;
}

__attribute__((noinline)) static int call_loop(int op, long n) {
  for (long i = 0; i < n; i++) {
    int rc = op == OP_OPEN    ? one_open()
             : op == OP_FOPEN ? one_fopen()
                              : one_stat();
    if (rc != 0)
      return -1;
  }
  return 0;
}

typedef struct child_job {
  int op;
  long calls, warmup;
  double ns; /* out: per call; < 0: a call failed */
} child_job_t;

/* Two passes through one loop, the warm-up and the timed one, so that both
   make their calls through the very same stack (a preload that keys on the
   whole stack, as the one before docs/audit.md did, also sees one site).
   The pass count is volatile so that no compiler unrolls the two passes
   into two call instructions. */
static volatile int g_passes = 2;

/* The child's clock: CLOCK_MONOTONIC, or with --cpu-time (the parent sets
   BENCH_AUDIT_CPU for its children) the thread's CPU time, which on a
   machine shared with other work leaves out the time the child waited
   for a core (the system calls' own time is the thread's, and counts). */
static uint64_t child_now_ns(void) {
  static int cpu = -1;
  if (cpu < 0) {
    const char *v = getenv("BENCH_AUDIT_CPU");
    cpu = v && v[0] == '1';
  }
  if (!cpu)
    return now_ns();
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static void child_site(void *arg) {
  child_job_t *job = arg;
  job->ns = -1;
  for (int pass = 0; pass < g_passes; pass++) {
    long n = pass == 0 ? job->warmup : job->calls;
    uint64_t t0 = child_now_ns();
    int rc = call_loop(job->op, n);
    uint64_t t1 = child_now_ns();
    if (rc != 0) {
      job->ns = -1;
      return;
    }
    job->ns = (double)(t1 - t0) / (double)(n > 0 ? n : 1);
  }
}

/* Runs fn from the bottom of `levels` noinline frames (0: directly). */
__attribute__((noinline)) static void descend(int levels, void (*fn)(void *),
                                              void *arg) {
  if (levels > 0)
    descend(levels - 1, fn, arg);
  else
    fn(arg);
  __asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays */
}

static int child_main(int op, long calls, long warmup, int depth) {
  child_job_t job = {.op = op, .calls = calls, .warmup = warmup, .ns = -1};
  descend(depth, child_site, &job);
  if (job.ns < 0) {
    fprintf(stderr, "bench_audit child: %s(\"%s\") failed: %s\n",
            k_op_names[op], TARGET, strerror(errno));
    return 1;
  }
  /* Whether the preload is really in this process: a loader that refused
     it (wrong architecture, a typo) would make a preload row a bare one. */
  const char *pre = getenv("LD_PRELOAD");
  void *h = pre && pre[0] ? dlopen(pre, RTLD_NOW | RTLD_NOLOAD) : NULL;
  if (dprintf(RESULT_FD, "%.3f %d\n", job.ns, h != NULL) < 0)
    return 1;
  return 0;
}

/* ======================================================================
 * The parent: rows, each a child under its environment
 * ====================================================================== */

enum { MODE_BARE, MODE_HOOK, MODE_RECORD };

typedef struct row {
  const char *id;
  int op, mode;
  bool deep;
  double ns[RUNS]; /* per run; < 0: failed or n/a */
  double med, spr; /* < 0: n/a */
  char why[200];   /* first failure, for the n/a line */
  /* the record check, MODE_RECORD and MODE_HOOK rows */
  int checks_ok, checks_run;
  char check_msg[320]; /* the first failing run's, else the last run's */
  bool check_failed;
} row_t;

enum {
  R_OPEN,
  R_OPEN_HOOK,
  R_OPEN_REC,
  R_OPEN_DEEP,
  R_OPEN_DEEP_REC,
  R_FOPEN,
  R_FOPEN_REC,
  R_STAT,
  R_STAT_REC,
  R_COUNT
};

static row_t g_rows[R_COUNT] = {
    [R_OPEN] = {.id = "1", .op = OP_OPEN, .mode = MODE_BARE},
    [R_OPEN_HOOK] = {.id = "2", .op = OP_OPEN, .mode = MODE_HOOK},
    [R_OPEN_REC] = {.id = "3", .op = OP_OPEN, .mode = MODE_RECORD},
    [R_OPEN_DEEP] = {.id = "1d",
                     .op = OP_OPEN,
                     .mode = MODE_BARE,
                     .deep = true},
    [R_OPEN_DEEP_REC] = {.id = "3d",
                         .op = OP_OPEN,
                         .mode = MODE_RECORD,
                         .deep = true},
    [R_FOPEN] = {.id = "4.1", .op = OP_FOPEN, .mode = MODE_BARE},
    [R_FOPEN_REC] = {.id = "4.3", .op = OP_FOPEN, .mode = MODE_RECORD},
    [R_STAT] = {.id = "5.1", .op = OP_STAT, .mode = MODE_BARE},
    [R_STAT_REC] = {.id = "5.3", .op = OP_STAT, .mode = MODE_RECORD},
};

typedef struct config {
  long calls;
  int depth;
  char preload[PATH_MAX]; /* "" when not found */
  char preload_tried[PATH_MAX];
  char tmpdir[PATH_MAX];
  bool cpu_time; /* --cpu-time */
} config_t;

/* <build>/bench/bench_audit -> <build>/demo/audit/libstacksnap_audit.so */
static void default_preload(config_t *cfg) {
  char exe[PATH_MAX - 64]; /* room for the suffix below */
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    snprintf(cfg->preload_tried, sizeof cfg->preload_tried,
             "(no /proc/self/exe)");
    return;
  }
  exe[n] = 0;
  for (int up = 0; up < 2; up++) { /* strip "bench_audit", then "bench" */
    char *slash = strrchr(exe, '/');
    if (!slash)
      return;
    *slash = 0;
  }
  snprintf(cfg->preload_tried, sizeof cfg->preload_tried,
           "%s/demo/audit/libstacksnap_audit.so", exe);
}

/* The child's environment: ours without LD_PRELOAD and STACKSNAP_AUDIT_*
   (a user's setting must not leak into a row), plus the row's. */
static char **child_env(const config_t *cfg, const row_t *row,
                        const char *out_path, char *storage[3]) {
  size_t n = 0;
  while (environ[n])
    n++;
  char **env = calloc(n + 4, sizeof *env);
  if (!env)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0 &&
        strncmp(environ[i], "STACKSNAP_AUDIT_", 16) != 0)
      env[k++] = environ[i];
  storage[0] = storage[1] = storage[2] = NULL;
  if (row->mode != MODE_BARE) {
    if (asprintf(&storage[0], "LD_PRELOAD=%s", cfg->preload) < 0 ||
        asprintf(&storage[1], "STACKSNAP_AUDIT_PREFIX=%s",
                 row->mode == MODE_HOOK ? HOOK_PREFIX : RECORD_PREFIX) < 0 ||
        asprintf(&storage[2], "STACKSNAP_AUDIT_OUT=%s", out_path) < 0) {
      free(storage[0]);
      free(storage[1]);
      free(env);
      storage[0] = storage[1] = NULL;
      return NULL;
    }
    for (int i = 0; i < 3; i++)
      env[k++] = storage[i];
  }
  env[k] = NULL;
  return env;
}

/* The first line of a child's log, for the n/a line. */
static void log_head(const char *path, char *buf, size_t size) {
  buf[0] = 0;
  FILE *f = fopen(path, "r");
  if (!f)
    return;
  if (fgets(buf, (int)size, f))
    buf[strcspn(buf, "\n")] = 0;
  fclose(f);
}

/* Runs one child for the row; returns ns per call, or -1 with row->why
   set (the first failure only). */
static double run_child(const config_t *cfg, row_t *row, const char *out_path,
                        const char *log_path) {
  char calls[32], warm[32], depth[16];
  snprintf(calls, sizeof calls, "%ld", cfg->calls);
  snprintf(warm, sizeof warm, "%ld", WARMUP);
  snprintf(depth, sizeof depth, "%d", row->deep ? cfg->depth : 0);
  char *argv[] = {"bench_audit", "--child", (char *)k_op_names[row->op],
                  "--calls",     calls,     "--warmup",
                  warm,          "--depth", depth,
                  NULL};
  char *storage[3];
  char **env = child_env(cfg, row, out_path, storage);
  int p[2] = {-1, -1}, w = -1;
  double result = -1;
  char why[160] = "";
  if (!env || pipe2(p, O_CLOEXEC) != 0) {
    snprintf(why, sizeof why, "no memory or no pipe");
    goto done;
  }
  /* Above the child's RESULT_FD, so that dup2 moves it (and clears its
     close-on-exec) rather than finding it already there. */
  w = fcntl(p[1], F_DUPFD_CLOEXEC, 10);
  close(p[1]);
  if (w < 0) {
    snprintf(why, sizeof why, "fcntl: %s", strerror(errno));
    goto done;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, w, RESULT_FD);
  posix_spawn_file_actions_addopen(&fa, 1, log_path,
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  close(w);
  if (rc != 0) {
    snprintf(why, sizeof why, "posix_spawn: %s", strerror(rc));
    goto done;
  }
  char buf[64] = {0};
  size_t got = 0;
  bool timed_out = false;
  for (;;) {
    struct pollfd pfd = {.fd = p[0], .events = POLLIN};
    int pr = poll(&pfd, 1, CHILD_TIMEOUT_MS);
    if (pr < 0 && errno == EINTR)
      continue;
    if (pr <= 0) {
      timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    ssize_t r = read(p[0], buf + got, sizeof buf - 1 - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    got += (size_t)r;
    if (got == sizeof buf - 1)
      break;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  char head[120];
  log_head(log_path, head, sizeof head);
  if (timed_out)
    snprintf(why, sizeof why, "child silent for %d s, killed",
             CHILD_TIMEOUT_MS / 1000);
  else if (WIFSIGNALED(status))
    snprintf(why, sizeof why, "child killed by signal %d%s%s", WTERMSIG(status),
             head[0] ? ": " : "", head);
  else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    snprintf(why, sizeof why, "child exit status %d%s%s", WEXITSTATUS(status),
             head[0] ? ": " : "", head);
  else {
    char *end;
    result = got ? strtod(buf, &end) : -1;
    long loaded = got && result > 0 ? strtol(end, NULL, 10) : 0;
    if (result <= 0) {
      result = -1;
      snprintf(why, sizeof why, "child reported no time%s%s",
               head[0] ? ": " : "", head);
    } else if (row->mode != MODE_BARE && loaded != 1) {
      result = -1;
      snprintf(why, sizeof why, "the preload was not loaded in the child%s%s",
               head[0] ? ": " : "", head);
    }
  }
done:
  if (p[0] >= 0)
    close(p[0]);
  for (int i = 0; i < 3; i++)
    free(storage[i]);
  free(env);
  if (result < 0 && !row->why[0])
    snprintf(row->why, sizeof row->why, "%s", why);
  return result;
}

/* ---- The record check: docs/audit.md's JSON lines, minimally parsed ---- */

/* The value after the top-level key `key` in one JSON line, or NULL. A key
   is found by its quoted name followed by ':'; inside a JSON string a
   quote is written \" so the text cannot occur there. "id" does not match
   "pid" or "tid" (the quote comes first). */
static const char *json_value(const char *line, const char *key) {
  size_t klen = strlen(key);
  for (const char *p = strchr(line, '"'); p; p = strchr(p + 1, '"')) {
    if (strncmp(p + 1, key, klen) != 0 || p[1 + klen] != '"')
      continue;
    const char *v = p + 2 + klen;
    while (*v == ' ')
      v++;
    if (*v != ':')
      continue;
    v++;
    while (*v == ' ')
      v++;
    return v;
  }
  return NULL;
}

static bool json_is(const char *line, const char *key, const char *str) {
  const char *v = json_value(line, key);
  size_t n = strlen(str);
  return v && v[0] == '"' && strncmp(v + 1, str, n) == 0 && v[1 + n] == '"';
}

static bool json_long(const char *line, const char *key, long *out) {
  const char *v = json_value(line, key);
  if (!v)
    return false;
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (end == v || errno)
    return false;
  *out = x;
  return true;
}

/* Copies a string value (no escapes expected: names and error names). */
static void json_copy(const char *line, const char *key, char *buf,
                      size_t size) {
  const char *v = json_value(line, key);
  snprintf(buf, size, "?");
  if (v && *v == '"') {
    size_t n = strcspn(v + 1, "\"");
    snprintf(buf, size, "%.*s", (int)(n < size ? n : size - 1), v + 1);
  } else if (v && strncmp(v, "null", 4) == 0) {
    snprintf(buf, size, "null");
  }
}

typedef struct rec_key {
  long pid, id;
  long count; /* greatest count seen on its record or update lines */
} rec_key_t;

/* Checks one child's JSON lines: `expect` < 0 means "no record for
   TARGET", else exactly one record for TARGET with count == expect.
   Writes a one-line verdict; returns whether it holds. */
static bool check_records(const char *path, long expect, char *msg,
                          size_t size) {
  FILE *f = fopen(path, "r");
  if (!f) {
    if (expect < 0) { /* nothing recorded may mean no file at all */
      snprintf(msg, size, "no record for %s (no file): ok", TARGET);
      return true;
    }
    snprintf(msg, size, "FAILED: no file (%s)", strerror(errno));
    return false;
  }
  enum { MAX_KEYS = 16 };
  rec_key_t keys[MAX_KEYS];
  int nkeys = 0, lines = 0, records = 0, ends = 0, bad = 0;
  char func[32] = "?", result[32] = "?";
  char *line = NULL;
  size_t cap = 0;
  /* Pass 1: the (pid, id) of every record line for TARGET. */
  while (getline(&line, &cap, f) > 0) {
    lines++;
    if (line[0] != '{') {
      bad++;
      continue;
    }
    if (json_is(line, "type", "end"))
      ends++;
    if (!json_is(line, "type", "record"))
      continue;
    records++;
    if (!json_is(line, "resource", TARGET))
      continue;
    long pid, id;
    if (!json_long(line, "pid", &pid) || !json_long(line, "id", &id)) {
      bad++;
      continue;
    }
    bool seen = false; /* a line may be written twice */
    for (int i = 0; i < nkeys; i++)
      seen = seen || (keys[i].pid == pid && keys[i].id == id);
    if (!seen && nkeys < MAX_KEYS) {
      keys[nkeys++] = (rec_key_t){pid, id, -1};
      json_copy(line, "function", func, sizeof func);
      json_copy(line, "result", result, sizeof result);
    }
  }
  /* Pass 2: per such record, the greatest count on its lines. */
  rewind(f);
  while (getline(&line, &cap, f) > 0) {
    if (!json_is(line, "type", "record") && !json_is(line, "type", "update"))
      continue;
    long pid, id, count;
    if (!json_long(line, "pid", &pid) || !json_long(line, "id", &id) ||
        !json_long(line, "count", &count))
      continue;
    for (int i = 0; i < nkeys; i++)
      if (keys[i].pid == pid && keys[i].id == id && count > keys[i].count)
        keys[i].count = count;
  }
  free(line);
  fclose(f);

  if (expect < 0) {
    bool ok = nkeys == 0;
    snprintf(msg, size, "%d record(s) for %s (expected 0): %s", nkeys, TARGET,
             ok ? "ok" : "FAILED");
    return ok;
  }
  if (nkeys != 1) {
    snprintf(msg, size,
             "FAILED: %d record(s) for %s, expected 1 (%d lines, %d records "
             "in all, %d not JSON objects, %d end lines)%s",
             nkeys, TARGET, lines, records, bad, ends,
             bad == lines && lines ? ": not JSON lines (a preload older than "
                                     "docs/audit.md?)"
                                   : "");
    return false;
  }
  bool ok = keys[0].count == expect && strcmp(result, "ok") == 0;
  snprintf(msg, size,
           "%s: 1 record for %s (\"function\":\"%s\", \"result\":\"%s\"), "
           "count %ld, expected %ld%s",
           ok ? "ok" : "FAILED", TARGET, func, result, keys[0].count, expect,
           ends ? "" : "; no end line");
  return ok;
}

/* ======================================================================
 * Peers, in this process: capture (and name) from a repeated site
 * ====================================================================== */

typedef int (*backtrace_fn)(void **, int);
static backtrace_fn g_backtrace;

enum { P_BT, P_SNAP, P_BT_DEEP, P_SNAP_DEEP, P_COUNT };

typedef struct peer {
  bool snap, deep;
  int max; /* frames asked for */
  long iters;
  double ns[RUNS];
  double med, spr;
  int frames;
} peer_t;

/* The hook keeps up to 128 frames (docs/audit.md): at depth 64 the stack
   is about 70 deep, so the deep peers ask for 128, the shallow ones for
   64 (the same stack either way). */
static peer_t g_peers[P_COUNT] = {
    [P_BT] = {.snap = false, .deep = false, .max = 64},
    [P_SNAP] = {.snap = true, .deep = false, .max = 64},
    [P_BT_DEEP] = {.snap = false, .deep = true, .max = 128},
    [P_SNAP_DEEP] = {.snap = true, .deep = true, .max = 128},
};

__attribute__((noinline)) static int one_backtrace(int max) {
  void *pcs[128];
  int n = g_backtrace(pcs, max);
  __asm__ volatile("" ::"r"(pcs) : "memory");
  return n;
}

__attribute__((noinline)) static int one_snap(int max) {
  const snap_stack_t *s = snap_callstack_symbols(max, 0);
  int n = snap_stack_count(s);
  snap_stack_release(s);
  return n;
}

typedef struct peer_job {
  peer_t *peer;
  long iters;
  double ns; /* out */
} peer_job_t;

/* The peers' loop has the shape of call_loop: site -> loop -> one call. */
__attribute__((noinline)) static int peer_loop(const peer_t *p, long n) {
  int frames = 0;
  for (long i = 0; i < n; i++)
    frames = p->snap ? one_snap(p->max) : one_backtrace(p->max);
  return frames;
}

__attribute__((noinline)) static void peer_site(void *arg) {
  peer_job_t *job = arg;
  uint64_t t0 = now_ns();
  job->peer->frames = peer_loop(job->peer, job->iters);
  uint64_t t1 = now_ns();
  job->ns = (double)(t1 - t0) / (double)job->iters;
}

static double run_peer(peer_t *p, const config_t *cfg, long iters) {
  peer_job_t job = {p, iters, -1};
  descend(p->deep ? cfg->depth : 0, peer_site, &job);
  return job.ns;
}

static void calibrate_peer(peer_t *p, const config_t *cfg) {
  run_peer(p, cfg, 20); /* warm: the first snap call names (a miss) */
  double each = run_peer(p, cfg, 50);
  long n = (long)(PEER_REPEAT_NS / (each > 1 ? each : 1));
  p->iters = n < 100 ? 100 : n > cfg->calls ? cfg->calls : n;
}

/* ======================================================================
 * Printing
 * ====================================================================== */

static void row_label(const row_t *r, const config_t *cfg, char *buf,
                      size_t size) {
  const char *how = r->mode == MODE_BARE   ? "no preload"
                    : r->mode == MODE_HOOK ? "preload, path not under prefix"
                                           : "preload, recorded";
  char depth[24] = "";
  if (r->deep)
    snprintf(depth, sizeof depth, ", depth %d", cfg->depth);
  snprintf(buf, size, "%-4s %-13s %s%s", r->id, k_op_labels[r->op], how, depth);
}

static void print_added(const char *label, const row_t *with,
                        const row_t *without) {
  if (with->med < 0 || without->med < 0)
    printf("  %-52s %9s\n", label, "n/a");
  else
    printf("  %-52s %9.1f ns\n", label, with->med - without->med);
}

static void usage(FILE *to) {
  fprintf(to,
          "usage: bench_audit [--calls N] [--depth D] [--preload PATH] "
          "[--cpu-time]\n"
          "  --calls N      calls a child times (default %ld)\n"
          "  --depth D      recursion depth of the deep rows (default %d)\n"
          "  --preload PATH libstacksnap_audit.so (default: "
          "<build>/demo/audit/, found from this program's path)\n"
          "  --cpu-time     children time their loop in thread CPU time, "
          "not CLOCK_MONOTONIC\n"
          "                 (a machine busy with other work)\n",
          DEFAULT_CALLS, DEFAULT_DEPTH);
}

static void remove_tmpdir(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    char path[PATH_MAX + 256];
    while ((e = readdir(d)))
      if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
      }
    closedir(d);
  }
  rmdir(dir);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--child") == 0) {
    int op = -1, depth = 0;
    long calls = DEFAULT_CALLS, warmup = WARMUP;
    for (int k = 0; k < OP_COUNT; k++)
      if (argc > 2 && strcmp(argv[2], k_op_names[k]) == 0)
        op = k;
    for (int i = 3; i + 1 < argc; i += 2) {
      if (strcmp(argv[i], "--calls") == 0)
        calls = atol(argv[i + 1]);
      else if (strcmp(argv[i], "--warmup") == 0)
        warmup = atol(argv[i + 1]);
      else if (strcmp(argv[i], "--depth") == 0)
        depth = atoi(argv[i + 1]);
    }
    if (op < 0 || calls <= 0 || warmup < 0 || depth < 0)
      return 2;
    return child_main(op, calls, warmup, depth);
  }

  static config_t cfg = {.calls = DEFAULT_CALLS, .depth = DEFAULT_DEPTH};
  const char *preload_arg = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
      cfg.calls = atol(argv[++i]);
    else if (strcmp(argv[i], "--depth") == 0 && i + 1 < argc)
      cfg.depth = atoi(argv[++i]);
    else if (strcmp(argv[i], "--preload") == 0 && i + 1 < argc)
      preload_arg = argv[++i];
    else if (strcmp(argv[i], "--cpu-time") == 0)
      cfg.cpu_time = true;
    else if (strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (cfg.calls <= 0 || cfg.depth < 1 || cfg.depth > 1000) {
    usage(stderr);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (cfg.cpu_time)
    setenv("BENCH_AUDIT_CPU", "1", 1);
  else
    unsetenv("BENCH_AUDIT_CPU");

  if (preload_arg)
    snprintf(cfg.preload_tried, sizeof cfg.preload_tried, "%s", preload_arg);
  else
    default_preload(&cfg);
  /* Made absolute: the child's loader resolves LD_PRELOAD itself, and a
     name without a slash would be searched for in the library path. */
  if (!cfg.preload_tried[0] || access(cfg.preload_tried, R_OK) != 0 ||
      !realpath(cfg.preload_tried, cfg.preload))
    cfg.preload[0] = 0;

  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  g_backtrace = libc ? (backtrace_fn)dlsym(libc, "backtrace") : NULL;

  const char *tmp = getenv("TMPDIR");
  snprintf(cfg.tmpdir, sizeof cfg.tmpdir, "%s/bench_audit.XXXXXX",
           tmp && tmp[0] ? tmp : "/tmp");
  if (!mkdtemp(cfg.tmpdir)) {
    fprintf(stderr, "bench_audit: mkdtemp %s: %s\n", cfg.tmpdir,
            strerror(errno));
    return 1;
  }

  printf("stacksnap bench_audit: the audit preload's cost per hooked call\n");
  if (cfg.preload[0])
    printf("  preload: %s\n", cfg.preload);
  else
    printf("  preload NOT FOUND at %s (build with -DSNAP_BUILD_DEMO=ON, or "
           "pass --preload PATH): its rows are n/a\n",
           cfg.preload_tried[0] ? cfg.preload_tried : "(unknown)");
  printf("  each row: a child process making the call from one call site, "
         "%ld warm-up calls, then\n  %ld timed (%s around the "
         "loop only); %d children per row, interleaved;\n  median ns per "
         "call, spread = (max - min) / median. Path %s; prefix for row 2: "
         "%s\n\n",
         WARMUP, cfg.calls,
         cfg.cpu_time ? "thread CPU time" : "CLOCK_MONOTONIC", RUNS, TARGET,
         HOOK_PREFIX);

  uint64_t t_start = now_ns();
  for (int p = 0; p < P_COUNT; p++)
    if (g_backtrace || g_peers[p].snap)
      calibrate_peer(&g_peers[p], &cfg);

  for (int run = 0; run < RUNS; run++) {
    for (int r = 0; r < R_COUNT; r++) {
      row_t *row = &g_rows[r];
      row->ns[run] = -1;
      if (row->mode != MODE_BARE && !cfg.preload[0])
        continue;
      char out[PATH_MAX + 64], log[PATH_MAX + 64];
      snprintf(out, sizeof out, "%s/row%s-run%d.jsonl", cfg.tmpdir, row->id,
               run);
      snprintf(log, sizeof log, "%s/row%s-run%d.log", cfg.tmpdir, row->id, run);
      row->ns[run] = run_child(&cfg, row, out, log);
      if (row->mode != MODE_BARE && row->ns[run] > 0) {
        char msg[sizeof row->check_msg];
        bool ok =
            check_records(out, row->mode == MODE_HOOK ? -1 : WARMUP + cfg.calls,
                          msg, sizeof msg);
        row->checks_run++;
        row->checks_ok += ok;
        if (!row->check_failed)
          snprintf(row->check_msg, sizeof row->check_msg, "%s", msg);
        row->check_failed = row->check_failed || !ok;
      }
      unlink(out);
      unlink(log);
    }
    for (int p = 0; p < P_COUNT; p++)
      g_peers[p].ns[run] =
          g_peers[p].iters ? run_peer(&g_peers[p], &cfg, g_peers[p].iters) : -1;
  }
  remove_tmpdir(cfg.tmpdir);
  double elapsed = (double)(now_ns() - t_start) / 1e9;

  for (int r = 0; r < R_COUNT; r++) {
    row_t *row = &g_rows[r];
    bool all = true;
    for (int k = 0; k < RUNS; k++)
      all = all && row->ns[k] > 0;
    row->med = all ? median(row->ns, RUNS) : -1;
    row->spr = all ? spread(row->ns, RUNS, row->med) : -1;
  }
  for (int p = 0; p < P_COUNT; p++) {
    peer_t *pe = &g_peers[p];
    pe->med = pe->iters ? median(pe->ns, RUNS) : -1;
    pe->spr = pe->iters ? spread(pe->ns, RUNS, pe->med) : -1;
  }

  printf("  %-52s %9s %7s\n", "row  call          environment", "ns/call",
         "spread");
  for (int r = 0; r < R_COUNT; r++) {
    const row_t *row = &g_rows[r];
    char label[96];
    row_label(row, &cfg, label, sizeof label);
    if (row->med >= 0)
      printf("  %-52s %9.1f %6.0f%%\n", label, row->med, 100.0 * row->spr);
    else if (row->mode != MODE_BARE && !cfg.preload[0])
      printf("  %-52s %9s   (no preload)\n", label, "n/a");
    else
      printf("  %-52s %9s   (%s)\n", label, "n/a", row->why);
  }

  printf("\n  peers, in this process, from the same depths (one call site; "
         "median of %d repeats):\n",
         RUNS);
  for (int p = 0; p < P_COUNT; p++) {
    const peer_t *pe = &g_peers[p];
    char label[96];
    if (pe->snap)
      snprintf(label, sizeof label,
               "snap_callstack_symbols(%d, 0) + release, depth %d", pe->max,
               pe->deep ? cfg.depth : 0);
    else
      snprintf(label, sizeof label, "glibc backtrace(pcs, %d), depth %d",
               pe->max, pe->deep ? cfg.depth : 0);
    if (pe->med >= 0)
      printf("  %-52s %9.1f %6.0f%%   %d frames\n", label, pe->med,
             100.0 * pe->spr, pe->frames);
    else
      printf("  %-52s %9s   (glibc backtrace() not found)\n", label, "n/a");
  }

  printf("\n  added by the audit, per call:\n");
  print_added("open: the hooks alone, nothing recorded (2 - 1)",
              &g_rows[R_OPEN_HOOK], &g_rows[R_OPEN]);
  print_added("open: recorded (3 - 1)", &g_rows[R_OPEN_REC], &g_rows[R_OPEN]);
  char deep_label[64];
  snprintf(deep_label, sizeof deep_label,
           "open: recorded at depth %d (3d - 1d)", cfg.depth);
  print_added(deep_label, &g_rows[R_OPEN_DEEP_REC], &g_rows[R_OPEN_DEEP]);
  print_added("fopen: recorded (4.3 - 4.1)", &g_rows[R_FOPEN_REC],
              &g_rows[R_FOPEN]);
  print_added("stat: recorded (5.3 - 5.1)", &g_rows[R_STAT_REC],
              &g_rows[R_STAT]);

  printf("\n  record check (docs/audit.md JSON lines in STACKSNAP_AUDIT_OUT; "
         "expected count %ld = %ld warm-up + %ld timed):\n",
         WARMUP + cfg.calls, WARMUP, cfg.calls);
  bool checks_ok = true;
  for (int r = 0; r < R_COUNT; r++) {
    const row_t *row = &g_rows[r];
    if (row->mode == MODE_BARE)
      continue;
    if (!row->checks_run) {
      printf("  %-4s n/a\n", row->id);
      checks_ok = false;
      continue;
    }
    printf("  %-4s %d of %d runs ok; %s\n", row->id, row->checks_ok,
           row->checks_run, row->check_msg);
    checks_ok = checks_ok && row->checks_ok == row->checks_run;
  }
  printf("  record check: %s\n", !cfg.preload[0] ? "n/a"
                                 : checks_ok     ? "all ok"
                                                 : "FAILED (see above)");

  const row_t *with = &g_rows[R_OPEN_REC], *without = &g_rows[R_OPEN];
  bool have = with->med >= 0 && without->med >= 0;
  printf("\n  goal: <= %.0f ns added per recorded open: %s", GOAL_NS,
         !have                                 ? "n/a"
         : with->med - without->med <= GOAL_NS ? "met"
                                               : "NOT met");
  if (have)
    printf(" (%.1f ns)", with->med - without->med);
  printf("\n  (%.1f s)\n", elapsed);
  return 0;
}
