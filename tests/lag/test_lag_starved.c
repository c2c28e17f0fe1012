/*
 * test_lag_starved.c — a watchdog thread starved of CPU still reports a lag,
 * with its true duration (issue 13: a late wake was taken for a stopped
 * process, and the lag's time was discounted).
 *
 * The loop goes busy: its handler waits on a condition that a worker
 * signals after two phases. Phase 1: the worker computes for 400 ms of its
 * own CPU time on the CPU the watchdog is pinned to, while the watchdog
 * thread is SCHED_IDLE there: it is runnable (the busy call woke it) but
 * gets no CPU. Phase 2: the worker gives the watchdog its normal policy
 * back and sleeps 400 ms. The lag lasts both phases; the watchdog first
 * runs about 400 ms late, and must count that time as lag (its run-queue
 * wait says it was starved), so the report's duration is the stretch's
 * (measured here around it), and the lag is seen while it lasts.
 *
 * Then the same with a lag that begins and ends while the watchdog is
 * starved (the worker gives the CPU back only after the loop went idle):
 * it used to be lost, no report at all. It is reported, with its true
 * duration and, its stack being gone, the reason (SNAP_EENDED).
 *
 * The main thread is kept off the worker's CPU where the machine has
 * another: preempted there by the real-time worker mid-sleep, it would
 * sit on a run queue for the whole phase, and the watchdog, reading its
 * /proc syscall file, would wait (uninterruptibly, not on a run queue)
 * until it left: a different scenario, whose accounting syscall_file.c
 * covers. In the missed case the worker also keeps the CPU until the
 * loop went idle, so the watchdog cannot run while the stretch lasts.
 *
 * Oracles: the worker's starvation of the watchdog is measured from
 * outside, in /proc/self/task/<tid>/schedstat (the run-queue wait grew by
 * at least the slack, or the test proves nothing and says so); the
 * stretch's duration by this test's clock; the report's duration by
 * reading its file. SIGSTOP (no lag) is the lag scenarios' "steady +
 * SIGSTOP".
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "stacksnap.h"
#include "test_clock.h"

static char g_dir[256];
static pid_t g_dog; /* the watchdog thread */
static int g_cpu;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_phase;   /* 1 go, 2 done, 3 the loop went idle */
static bool g_missed; /* the lag ends while the watchdog is starved */
static int64_t g_starved_ns = -1;
static bool g_realtime;
static _Atomic int g_idle; /* the loop went idle (missed case) */
static bool g_spin;        /* the worker may spin until then: main runs
                              on another CPU */

static pid_t find_thread(const char *name) {
  DIR *d = opendir("/proc/self/task");
  pid_t found = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) && !found) {
    char path[300], comm[64] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (f) {
      if (fgets(comm, sizeof comm, f) && strncmp(comm, name, strlen(name)) == 0)
        found = (pid_t)atoi(e->d_name);
      fclose(f);
    }
  }
  if (d)
    closedir(d);
  return found;
}

static void pin(pid_t tid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  CHECK(sched_setaffinity(tid, sizeof set, &set) == 0, "pin thread %d",
        (int)tid);
}

static void set_policy(pid_t tid, int policy) {
  struct sched_param p = {0};
  CHECK(sched_setscheduler(tid, policy, &p) == 0, "policy %d for thread %d",
        policy, (int)tid);
}

static void *worker(void *arg) {
  (void)arg;
  pin(0, g_cpu);
  pthread_mutex_lock(&g_mu);
  while (g_phase < 1)
    pthread_cond_wait(&g_cv, &g_mu);
  pthread_mutex_unlock(&g_mu);
  /* Phase 1: the watchdog's CPU is ours; it is runnable, and starved. A
     real-time worker starves it outright (root or CAP_SYS_NICE); without
     that, SCHED_IDLE alone still gives it a slice now and then. */
  struct sched_param rt = {.sched_priority = 1};
  g_realtime = sched_setscheduler(0, SCHED_FIFO, &rt) == 0;
  int64_t before = runq_wait_ns(g_dog);
  compute_ms(400);
  volatile uint64_t x = 1;
  if (g_missed) { /* the lag ends before the watchdog gets a CPU: keep
                      the CPU (spinning, not blocking) until it did */
    pthread_mutex_lock(&g_mu);
    g_phase = 2;
    pthread_cond_broadcast(&g_cv);
    while (!g_spin && g_phase < 3) /* one CPU: main needs it */
      pthread_cond_wait(&g_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
    int64_t t = mono_ns();
    while (g_spin && !atomic_load(&g_idle) &&
           mono_ns() - t < 5000000000) /* a bound, no hang */
      x = x * 6364136223846793005u + 1;
  }
  set_policy(g_dog, SCHED_OTHER);
  if (g_realtime)
    set_policy(0, SCHED_OTHER);
  if (g_missed) { /* the kernel counts the wait once the watchdog runs */
    usleep(50000);
    int64_t after = runq_wait_ns(g_dog);
    g_starved_ns = before >= 0 && after >= before ? after - before : -1;
    return NULL;
  }
  /* Phase 2: the watchdog runs again; the lag goes on. The report's thread
     dump signals this thread: sleep out the rest after an EINTR. */
  struct timespec left = {0, 400000000};
  while (nanosleep(&left, &left) != 0)
    ;
  int64_t after = runq_wait_ns(g_dog);
  g_starved_ns = before >= 0 && after >= before ? after - before : -1;
  pthread_mutex_lock(&g_mu);
  g_phase = 2;
  pthread_cond_signal(&g_cv);
  pthread_mutex_unlock(&g_mu);
  return NULL;
}

/* The final report's duration_ms, or -1; *reason: its main stack's error
   text is the one SNAP_EENDED has. */
static long report_duration(int *count, bool *reason) {
  DIR *d = opendir(g_dir);
  long ms = -1;
  *count = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 9 || strcmp(e->d_name + len - 9, "-lag.json") != 0)
      continue;
    (*count)++;
    char path[600], text[8192] = "";
    snprintf(path, sizeof path, "%s/%s", g_dir, e->d_name);
    FILE *f = fopen(path, "r");
    if (f) {
      text[fread(text, 1, sizeof text - 1, f)] = '\0';
      fclose(f);
    }
    const char *at = strstr(text, "\"duration_ms\":");
    if (at)
      ms = strtol(at + strlen("\"duration_ms\":"), NULL, 10);
    *reason = strstr(text, snap_strerror(SNAP_EENDED)) != NULL;
  }
  if (d)
    closedir(d);
  return ms;
}

/* One lag with the watchdog starved: for its first 400 ms (missed:
   false), or for all of it (true). */
static void run_case(bool missed) {
  g_missed = missed;
  g_phase = 0;
  g_starved_ns = -1;
  snprintf(g_dir, sizeof g_dir, "/tmp/snap_lag_starved.XXXXXX");
  CHECK(mkdtemp(g_dir) != NULL, "mkdtemp");
  snap_lag_config_t c;
  snap_lag_config_default(&c);
  c.report_dir = g_dir;
  c.threshold_ms = 200; /* slack: max(threshold, 100 ms) = 200 ms */
  c.sample_interval_ms = 50;
  c.cpu_percent = 0;
  CHECK_EQ(snap_lag_start(&c), SNAP_OK);
  /* The thread names itself once it runs. */
  g_dog = 0;
  for (int i = 0; i < 500 && !(g_dog = find_thread("stacksnap-lag")); i++)
    usleep(2000);
  CHECK(g_dog > 0, "the watchdog thread (stacksnap-lag) not found");
  if (g_dog <= 0)
    return;
  cpu_set_t allowed;
  CHECK(sched_getaffinity(0, sizeof allowed, &allowed) == 0, "affinity");
  for (g_cpu = 0; g_cpu < CPU_SETSIZE && !CPU_ISSET(g_cpu, &allowed); g_cpu++)
    ;
  pin(g_dog, g_cpu);
  /* The main thread elsewhere, where there is an elsewhere (head
     comment). */
  cpu_set_t main_cpus = allowed;
  CPU_CLR(g_cpu, &main_cpus);
  bool main_moved = CPU_COUNT(&main_cpus) > 0 &&
                    sched_setaffinity(0, sizeof main_cpus, &main_cpus) == 0;
  atomic_store(&g_idle, 0);
  g_spin = main_moved;
  pthread_t t;
  CHECK(pthread_create(&t, NULL, worker, NULL) == 0, "pthread_create");
  usleep(100000); /* the watchdog parks: the loop is idle */

  set_policy(g_dog, SCHED_IDLE);
  snap_lag_loop_busy();
  int64_t t0 = mono_ns();
  pthread_mutex_lock(&g_mu);
  g_phase = 1;
  pthread_cond_broadcast(&g_cv);
  while (g_phase < 2)
    pthread_cond_wait(&g_cv, &g_mu);
  pthread_mutex_unlock(&g_mu);
  int64_t t1 = mono_ns();
  snap_lag_loop_idle();
  atomic_store(&g_idle, 1);
  pthread_mutex_lock(&g_mu);
  g_phase = 3;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mu);
  pthread_join(t, NULL);
  if (main_moved)
    sched_setaffinity(0, sizeof allowed, &allowed);
  usleep(300000); /* the lag's end is seen and its report written */
  CHECK_EQ(snap_lag_stop(), SNAP_OK);

  long stretch_ms = (long)((t1 - t0) / 1000000u);
  int reports;
  bool reason = false;
  long ms = report_duration(&reports, &reason);
  const char *what = missed ? "all of the lag" : "the lag's first 400 ms";
  printf("%s: stretch %ld ms; watchdog starved %lld ms (%s); %d lag "
         "report(s), duration %ld ms\n",
         what, stretch_ms, (long long)(g_starved_ns / 1000000),
         g_realtime ? "behind a real-time worker" : "SCHED_IDLE only", reports,
         ms);
  CHECK(g_starved_ns >= 200000000,
        "%s: the watchdog was starved only %lld ms (not past the 200 ms "
        "slack): this run proves nothing",
        what, (long long)(g_starved_ns / 1000000));
  CHECK(reports == 1, "%s: %d lag reports", what, reports);
  /* The whole stretch, within the loop's own granularity (a report's
     duration is busy time as the watchdog computes it). */
  CHECK(ms >= stretch_ms - 30 && ms <= stretch_ms + 30,
        "%s: reported %ld ms for a %ld ms lag", what, ms, stretch_ms);
  if (missed)
    CHECK(reason, "the report of a lag over before the watchdog ran does "
                  "not say why it has no stack");
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", g_dir);
}

int main(void) {
  run_case(false);
  /* A real-time worker is what starves the watchdog for a whole lag. */
  if (g_realtime)
    run_case(true);
  else
    printf("no real-time worker allowed: the missed-lag case needs one\n");
  return check_result("test_lag_starved");
}
