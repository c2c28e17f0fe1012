/*
 * test_proc_stat.c — the one /proc stat parser (platform/linux/proc_stat.c)
 * against hostile task names.
 *
 * 1. Lines built here, field by field, around comm names a task may give
 *    itself (any bytes but NUL, up to 15): ") R 1 2 3", "a\nb) S 9",
 *    "()", "", a name of ')' only, digits and spaces; each must come back
 *    with every field as written. Lines cut short, with a field that is not
 *    a number, empty, or above UINT64_MAX, or without the "(comm)" shape,
 *    must be refused (SNAP_EIO), never read as zeros.
 * 2. Live: threads name themselves with hostile names (prctl PR_SET_NAME)
 *    and the kernel's own stat lines of them are parsed. Oracles from the
 *    kernel's other answers: pid is the thread's gettid, comm the
 *    thread's /proc comm file (the name as the kernel kept it), ppid
 *    getppid(), num_threads the status file's "Threads:", state 'S' for a
 *    thread asleep in a futex wait, starttime not before the main
 *    thread's.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "platform/linux/linux.h"

/* A stat line as the kernel writes it (fs/proc/array.c), 52 fields. */
static void make_line(char *out, size_t size, const char *comm, char state,
                      int64_t ppid, uint64_t majflt, uint64_t utime,
                      uint64_t stime, int64_t threads, uint64_t start) {
  snprintf(out, size,
           "4242 (%s) %c %" PRId64 " 4242 4242 -1 -1 4194560 120 0 %" PRIu64
           " 0 %" PRIu64 " %" PRIu64 " 0 0 20 0 %" PRId64 " 0 %" PRIu64
           " 1000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 0 17 1 0"
           " 0 0 0 0 0 0 0 0 0 0 0 0\n",
           comm, state, ppid, majflt, utime, stime, threads, start);
}

static const char *const hostile[] = {
    ") R 1 2 3", "a\nb) S 9",       "()",       "",          ")))))))))))))))",
    "(",         "1 2 3 4 5 6 7 8", "x) Z 0 0", " ) ",       "\n\n\n",
    "stacksnap", "))( R (",         ") 9999 ",  "a)\n(b) c", "\xff\xfe) R"};

static void test_lines(void) {
  for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
    char line[1024];
    uint64_t start = 1234567 + i, utime = 11 + i, stime = 22 + i;
    make_line(line, sizeof line, hostile[i], "RSDTZ"[i % 5], 77 + (int64_t)i,
              5 + i, utime, stime, 3 + (int64_t)i, start);
    snap__linux_stat_t st;
    int rc = snap__linux_stat_parse(line, &st);
    CHECK_EQ(rc, SNAP_OK);
    CHECK(st.pid == 4242 && strcmp(st.comm, hostile[i]) == 0 &&
              st.state == "RSDTZ"[i % 5] && st.ppid == 77 + (int64_t)i &&
              st.majflt == 5 + i && st.utime == utime && st.stime == stime &&
              st.num_threads == 3 + (int64_t)i && st.starttime == start,
          "comm %zu \"%s\": pid %" PRId64 " comm \"%s\" state %c ppid %" PRId64
          " majflt %" PRIu64 " utime %" PRIu64 " stime %" PRIu64
          " threads %" PRId64 " start %" PRIu64,
          i, hostile[i], st.pid, st.comm, st.state, st.ppid, st.majflt,
          st.utime, st.stime, st.num_threads, st.starttime);
    /* Every cut of the line before field 22 has a digit is refused
       (a cut inside it leaves a shorter number: still a line). */
    const char *close = strrchr(line, ')');
    size_t begin22 = 0;
    int fieldno = 2;
    for (const char *s = close + 1; *s && !begin22; s++)
      if (*s == ' ' && ++fieldno == 22)
        begin22 = (size_t)(s + 1 - line);
    CHECK(begin22 > 0, "field 22 in \"%s\"", line);
    for (size_t cut = 0; cut <= begin22; cut++) {
      char copy[1024];
      memcpy(copy, line, cut);
      copy[cut] = '\0';
      snap__linux_stat_t cst;
      CHECK(snap__linux_stat_parse(copy, &cst) == SNAP_EIO && cst.pid == 0,
            "comm %zu cut at %zu: \"%s\" accepted", i, cut, copy);
    }
  }
}

static void test_refused(void) {
  static const char *const bad[] = {
      "",
      "4242",
      "4242 bash) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19",
      "-1 (bash) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19",
      "4242 (bash S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19",
      "4242 (bash)S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19",
      "4242 (bash) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18",
      "4242 (bash) S 1 2 3 4 5 6 7 8 x 10 11 12 13 14 15 16 17 18 19",
      "4242 (bash) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 -",
      "4242 (bash) S 1  3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19",
      ("4242 (bash) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 "
       "18446744073709551616"), /* UINT64_MAX + 1 */
      "4242 (bash) SS 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snap__linux_stat_t st;
    CHECK(snap__linux_stat_parse(bad[i], &st) == SNAP_EIO, "accepted \"%s\"",
          bad[i]);
  }
  snap__linux_stat_t st;
  CHECK_EQ(snap__linux_stat_parse(
               "1 (a) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 "
               "18446744073709551615",
               &st),
           SNAP_OK);
  CHECK(st.starttime == UINT64_MAX, "UINT64_MAX start");
}

/* ---- Live threads with hostile names ----------------------------------- */

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static bool g_go;

typedef struct named {
  const char *name;
  atomic_int tid;
  pthread_t th;
} named_t;

static void *sleeper(void *arg) {
  named_t *n = arg;
  prctl(PR_SET_NAME, n->name);
  atomic_store(&n->tid, (int)syscall(SYS_gettid));
  pthread_mutex_lock(&g_mu);
  while (!g_go)
    pthread_cond_wait(&g_cv, &g_mu);
  pthread_mutex_unlock(&g_mu);
  return NULL;
}

static bool asleep(int tid) {
  char buf[1024];
  snap__linux_stat_t st;
  return snap__linux_read_task(tid, "stat", buf, sizeof buf) > 0 &&
         snap__linux_stat_parse(buf, &st) == SNAP_OK && st.state == 'S';
}

static void test_live(void) {
  static const char *const names[] = {") R 1 2 3 4 5", "a\nb) S 9 9", "()", ")",
                                      "x) Z 0 0\n)"};
  enum { N = sizeof names / sizeof names[0] };
  named_t t[N];
  for (int i = 0; i < N; i++) {
    t[i].name = names[i];
    atomic_store(&t[i].tid, 0);
    CHECK(pthread_create(&t[i].th, NULL, sleeper, &t[i]) == 0, "thread");
  }
  for (int i = 0; i < N; i++)
    while (!atomic_load(&t[i].tid) || !asleep(atomic_load(&t[i].tid)))
      usleep(1000);

  char buf[4096];
  snap__linux_stat_t main_st;
  CHECK(snap__linux_read_task(getpid(), "stat", buf, sizeof buf) > 0 &&
            snap__linux_stat_parse(buf, &main_st) == SNAP_OK,
        "main thread's stat: %s", buf);
  CHECK(snap__linux_read_small("/proc/self/status", buf, sizeof buf) > 0,
        "status");
  const char *threads = snap__linux_status_field(buf, "Threads:");
  long nthreads = threads ? atol(threads) : -1;
  CHECK_EQ(main_st.num_threads, nthreads);
  CHECK_EQ(main_st.pid, getpid());
  CHECK_EQ(main_st.ppid, getppid());

  for (int i = 0; i < N; i++) {
    int tid = atomic_load(&t[i].tid);
    char comm[64] = "";
    char path[64];
    snap__linux_task_path(path, tid, "comm");
    ssize_t cn = snap__linux_read_small(path, comm, sizeof comm);
    if (cn > 0 && comm[cn - 1] == '\n')
      comm[cn - 1] = '\0'; /* the comm file ends the name with one */
    snap__linux_stat_t st;
    CHECK(snap__linux_read_task(tid, "stat", buf, sizeof buf) > 0 &&
              snap__linux_stat_parse(buf, &st) == SNAP_OK,
          "thread %d's stat: %s", tid, buf);
    CHECK(st.pid == tid && strcmp(st.comm, names[i]) == 0 &&
              strcmp(st.comm, comm) == 0 && st.state == 'S' &&
              st.ppid == getppid() && st.num_threads == nthreads &&
              st.starttime >= main_st.starttime,
          "thread %d \"%s\" (comm file \"%s\"): pid %" PRId64
          " comm \"%s\" state %c ppid %" PRId64 " threads %" PRId64
          " start %" PRIu64 " (main %" PRIu64 ")",
          tid, names[i], comm, st.pid, st.comm, st.state, st.ppid,
          st.num_threads, st.starttime, main_st.starttime);
  }
  pthread_mutex_lock(&g_mu);
  g_go = true;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mu);
  for (int i = 0; i < N; i++)
    pthread_join(t[i].th, NULL);
}

int main(void) {
  test_lines();
  test_refused();
  test_live();
  return check_result("test_proc_stat");
}
