/*
 * lag_split.c — a child process for test_lag_split: four lags of known
 * kinds, each in a function of its own, with the main thread's own
 * figures measured around each one (the oracle the reports are held to).
 *
 *   lag_split DIR
 *
 * Lags (busy call, work, idle call, then 400 ms idle so the report is
 * finished):
 *   split_compute   computes for 400 ms of its own CPU time;
 *   split_lock      waits ~500 ms for a mutex a worker holds;
 *   split_sleep     sleeps 500 ms in nanosleep;
 *   split_starved   computes for 150 ms of its own CPU time while pinned to
 *                   one CPU with two busy child processes pinned there too
 *                   (the main thread alone: the watchdog keeps every CPU),
 *                   so it waits on the run queue about twice as long as it
 *                   runs.
 * Work is defined in CPU time or in blocking, never in wall time taken for
 * CPU time, so the lags keep their kind on a loaded machine.
 *
 * Output, one line per lag:
 *   {"lag":"compute","start_unix_ms":S,"wall_ms":W,"cpu_ms":C,"runq_ms":R,"nvcsw":V,
 *    "nivcsw":I,"majflt":F}
 * from getrusage(RUSAGE_THREAD) and /proc/thread-self/schedstat read by
 * this program itself (not stacksnap's code). Exit status 0, or 1 when the
 * watchdog could not start.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../busy_child.h"
#include "../test_clock.h"
#include "stacksnap.h"

#define NOINLINE __attribute__((noinline))

/* Global, so the reports name them (the test looks for these names). */
void split_compute(void);
void split_lock(void);
void split_sleep(void);
void split_starved(void);
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

NOINLINE void split_compute(void) {
  compute_ms(400);
  KEEP_FRAME();
}

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_go_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_go = PTHREAD_COND_INITIALIZER;
static int g_held;

static void *holder(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_mu);
  pthread_mutex_lock(&g_go_mu);
  g_held = 1;
  pthread_cond_signal(&g_go);
  pthread_mutex_unlock(&g_go_mu);
  sleep_ns(500 * 1000000LL);
  pthread_mutex_unlock(&g_mu);
  return NULL;
}

NOINLINE void split_lock(void) {
  pthread_mutex_lock(&g_mu);
  pthread_mutex_unlock(&g_mu);
  KEEP_FRAME();
}

NOINLINE void split_sleep(void) {
  sleep_ns(500 * 1000000LL);
  KEEP_FRAME();
}

NOINLINE void split_starved(void) {
  compute_ms(150);
  KEEP_FRAME();
}

typedef struct figures {
  int64_t wall, runq, unix_ms;
  struct rusage ru;
} figures_t;

static void take(figures_t *f) {
  getrusage(RUSAGE_THREAD, &f->ru);
  f->runq = runq_wait_ns(0);
  f->unix_ms = unix_ms();
  f->wall = mono_ns();
}

static int64_t tv_ns(struct timeval a) {
  return (int64_t)a.tv_sec * 1000000000 + (int64_t)a.tv_usec * 1000;
}

static void print(const char *lag, const figures_t *a, const figures_t *b) {
  int64_t cpu = tv_ns(b->ru.ru_utime) + tv_ns(b->ru.ru_stime) -
                tv_ns(a->ru.ru_utime) - tv_ns(a->ru.ru_stime);
  printf("{\"lag\":\"%s\",\"start_unix_ms\":%lld,\"wall_ms\":%lld,\"cpu_ms\":%"
         "lld,\"runq_ms\":%lld,"
         "\"nvcsw\":%ld,\"nivcsw\":%ld,\"majflt\":%ld}\n",
         lag, (long long)a->unix_ms, (long long)((b->wall - a->wall) / 1000000),
         (long long)(cpu / 1000000),
         (long long)(a->runq >= 0 && b->runq >= 0
                         ? (b->runq - a->runq) / 1000000
                         : -1),
         b->ru.ru_nvcsw - a->ru.ru_nvcsw, b->ru.ru_nivcsw - a->ru.ru_nivcsw,
         b->ru.ru_majflt - a->ru.ru_majflt);
  fflush(stdout);
}

static void lag(const char *name, void (*fn)(void)) {
  figures_t a, b;
  take(&a);
  snap_lag_loop_busy();
  fn();
  snap_lag_loop_idle();
  take(&b);
  print(name, &a, &b);
  sleep_ns(400 * 1000000LL); /* the lag's end is seen, its file final */
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: lag_split DIR\n");
    return 2;
  }
  snap_lag_config_t c;
  snap_lag_config_default(&c);
  c.report_dir = argv[1];
  c.threshold_ms = 200;
  c.sample_interval_ms = 50;
  c.cpu_percent = 0;
  c.max_reports_per_day = 1000;
  if (snap_lag_start(&c) != SNAP_OK)
    return 1;
  sleep_ns(100 * 1000000LL);

  lag("compute", split_compute);

  pthread_t t;
  pthread_create(&t, NULL, holder, NULL);
  pthread_mutex_lock(&g_go_mu);
  while (!g_held)
    pthread_cond_wait(&g_go, &g_go_mu);
  pthread_mutex_unlock(&g_go_mu);
  lag("lock", split_lock);
  pthread_join(t, NULL);

  lag("sleep", split_sleep);

  /* The main thread alone shares one CPU with two busy processes. */
  cpu_set_t all, one;
  sched_getaffinity(0, sizeof all, &all);
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &all))
    cpu++;
  pid_t kids[2] = {busy_child(cpu), busy_child(cpu)};
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  sched_setaffinity(0, sizeof one, &one); /* this thread only */
  sleep_ns(50 * 1000000LL);               /* the children are spinning */
  lag("starved", split_starved);
  sched_setaffinity(0, sizeof all, &all);
  for (int i = 0; i < 2; i++) {
    if (kids[i] > 0) {
      kill(kids[i], SIGKILL);
      waitpid(kids[i], NULL, 0);
    }
  }
  snap_lag_stop();
  return 0;
}
