/*
 * trace_lag_phases.c — the sampling trace and the lag watchdog on together
 * (issue 25, "one sampler"): a main loop whose iterations are phases of
 * known length, traced at 1 kHz while the watchdog (threshold 250 ms,
 * point samples every 50 ms) reports every iteration as a lag, optionally
 * beside busy loops (child processes spinning). test_trace_lag_edges.py
 * holds the trace's phase slices to the phases this program measured.
 *
 * Each iteration, under iteration(), on the main thread:
 *   ph_spin_a   200 ms computing
 *   ph_mutex_b  100 ms blocked on a mutex another thread holds
 *   ph_spin_c   150 ms computing
 *   ph_sleep_d  100 ms asleep (nanosleep)
 *   ph_spin_e   250 ms computing
 * 3 iterations: 15 phases, 14 edges between them inside iterations.
 *
 * The oracle, from this program's own clocks: each phase's begin and end
 * (CLOCK_REALTIME, read inside its function), and for a phase that
 * computes first the instant its thread had used its first 5 ms of CPU
 * time in it (or blocked, for the mutex phase, which computes until its
 * holder runs)
 * (CLOCK_THREAD_CPUTIME_ID): a sampler that samples running code can see
 * the phase no earlier than its thread ran in it, and on a busy machine
 * that is later than its begin. <dir>/phases.json gets them, the trace's
 * statistics, and how many lag reports the watchdog wrote (it must have
 * sampled the main thread meanwhile for the test to mean anything).
 *
 * Usage: trace_lag_phases DIR [BUSY_LOOPS [nolag]]  -> DIR/trace.json,
 * phases.json ("nolag": the trace alone, for comparison)
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
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

static uint64_t clock_ns(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
static uint64_t unix_ns(void) { return clock_ns(CLOCK_REALTIME); }

typedef struct phase {
  const char *name;
  uint64_t begin, end, first_cpu_ms; /* unix ns; first_cpu_ms 0: blocked */
} phase_t;
#define PHASES 15
static phase_t g_ph[PHASES];
static int g_at;
static volatile uint64_t g_sink;

#define PHASE_BEGIN(n) (g_ph[g_at].name = (n), g_ph[g_at].begin = unix_ns())
#define PHASE_END() (g_ph[g_at++].end = unix_ns())

/* A sampler of running code sees a phase once its thread ran in it: a
   CPU-time timer of 1 ms fires at the first scheduler tick after that
   millisecond (posix CPU timers are checked at the tick: HZ 250 here, so
   within 4 ms of CPU time). */
#define FIRST_CPU_NS 5000000u

/* Computes until `ms` of wall time have passed; notes when the thread had
   used its first FIRST_CPU_NS of CPU time here. */
__attribute__((noinline)) static void spin_ms(unsigned ms) {
  uint64_t end = unix_ns() + (uint64_t)ms * 1000000u, x = g_sink | 1;
  uint64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  phase_t *p = &g_ph[g_at];
  for (uint64_t now; (now = unix_ns()) < end;) {
    if (!p->first_cpu_ms &&
        clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0 >= FIRST_CPU_NS)
      p->first_cpu_ms = now;
    for (int i = 0; i < 1000; i++)
      x = x * 6364136223846793005u + 1442695040888963407u;
  }
  if (!p->first_cpu_ms)
    p->first_cpu_ms = unix_ns();
  g_sink = x;
}

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int g_held;

static void *holder(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_lock);
  atomic_store(&g_held, 1);
  usleep(100000);
  pthread_mutex_unlock(&g_lock);
  return NULL;
}

__attribute__((noinline)) static void ph_spin_a(void) {
  PHASE_BEGIN("ph_spin_a");
  spin_ms(200);
  PHASE_END();
  __asm__ volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline)) static void ph_mutex_b(void) {
  PHASE_BEGIN("ph_mutex_b");
  pthread_t t;
  atomic_store(&g_held, 0);
  pthread_create(&t, NULL, holder, NULL);
  /* It computes until the holder has the lock (on a busy machine, until
     the new thread got a CPU: tens of ms), then blocks: a sampler sees the
     phase from when it blocks, or once it computed FIRST_CPU_NS here. */
  phase_t *p = &g_ph[g_at];
  uint64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  while (!atomic_load(&g_held))
    if (!p->first_cpu_ms &&
        clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0 >= FIRST_CPU_NS)
      p->first_cpu_ms = unix_ns();
  if (!p->first_cpu_ms)
    p->first_cpu_ms = unix_ns();
  pthread_mutex_lock(&g_lock); /* ~100 ms: the holder sleeps with it */
  pthread_mutex_unlock(&g_lock);
  PHASE_END();
  pthread_join(t, NULL);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void ph_spin_c(void) {
  PHASE_BEGIN("ph_spin_c");
  spin_ms(150);
  PHASE_END();
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void ph_sleep_d(void) {
  PHASE_BEGIN("ph_sleep_d");
  struct timespec d = {0, 100000000};
  while (nanosleep(&d, &d) != 0)
    ; /* a signal must not end it early: the trace never sends one */
  PHASE_END();
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void ph_spin_e(void) {
  PHASE_BEGIN("ph_spin_e");
  spin_ms(250);
  PHASE_END();
  __asm__ volatile("" ::: "memory");
}

/* Direct calls (a blocked thread's frame record is recovered only behind
   a direct call: src/capture/fp_recover.c). */
__attribute__((noinline)) static void iteration(void) {
  ph_spin_a();
  ph_mutex_b();
  ph_spin_c();
  ph_sleep_d();
  ph_spin_e();
  __asm__ volatile("" ::: "memory");
}

static int count_reports(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  if (!d)
    return 0;
  for (struct dirent *e; (e = readdir(d));)
    n += strstr(e->d_name, ".json") != NULL;
  closedir(d);
  return n;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: trace_lag_phases DIR [BUSY_LOOPS]\n");
    return 2;
  }
  int busy = argc >= 3 ? atoi(argv[2]) : 0;
  bool lag = !(argc == 4 && strcmp(argv[3], "nolag") == 0);
  pid_t kids[8];
  if (busy > 8)
    busy = 8;
  for (int i = 0; i < busy; i++) {
    kids[i] = busy_child(-1);
  }
  char reports[4096];
  snprintf(reports, sizeof reports, "%s/reports", argv[1]);
  snap_lag_config_t lc;
  snap_lag_config_default(&lc);
  lc.report_dir = reports;
  lc.threshold_ms = 250;
  lc.sample_interval_ms = 50;
  int rc = lag ? snap_lag_start(&lc) : SNAP_OK;
  if (rc != SNAP_OK) {
    fprintf(stderr, "snap_lag_start: %s\n", snap_strerror(rc));
    return 1;
  }
  snap_trace_config_t tc;
  snap_trace_config_default(&tc);
  if ((rc = snap_trace_start(&tc)) != SNAP_OK) {
    fprintf(stderr, "snap_trace_start: %s\n", snap_strerror(rc));
    return 1;
  }
  usleep(50000);
  uint64_t t0 = unix_ns();
  for (int i = 0; i < 3; i++) {
    snap_lag_loop_busy();
    iteration();
    snap_lag_loop_idle();
    usleep(50000);
  }
  uint64_t t1 = unix_ns();
  snap_trace_stop();
  snap_lag_stop();
  for (int i = 0; i < busy; i++) {
    kill(kids[i], SIGKILL);
    waitpid(kids[i], NULL, 0);
  }
  snap_trace_stats_t st = {.size = sizeof st};
  snap_trace_stats(&st);
  char path[4096];
  snprintf(path, sizeof path, "%s/trace.json", argv[1]);
  if ((rc = snap_trace_write(path, SNAP_TRACE_CHROME_JSON, t0, t1)) !=
      SNAP_OK) {
    fprintf(stderr, "snap_trace_write: %s\n", snap_strerror(rc));
    return 1;
  }
  snprintf(path, sizeof path, "%s/phases.json", argv[1]);
  FILE *f = fopen(path, "w");
  if (!f)
    return 1;
  fprintf(f, "{\"tsan\": %s, \"busy\": %d, \"reports\": %d, \"phases\": [",
          SNAP_TEST_TSAN ? "true" : "false", busy, count_reports(reports));
  for (int i = 0; i < g_at; i++)
    fprintf(f,
            "%s{\"name\": \"%s\", \"begin\": %llu, \"end\": %llu, "
            "\"first_cpu_ms\": %llu}",
            i ? ", " : "", g_ph[i].name, (unsigned long long)g_ph[i].begin,
            (unsigned long long)g_ph[i].end,
            (unsigned long long)g_ph[i].first_cpu_ms);
  fprintf(f,
          "], \"stats\": {\"samples\": %llu, \"failed\": %llu, "
          "\"missed_ticks\": %llu, \"sampler_cpu_ns\": %lld}}\n",
          (unsigned long long)st.samples, (unsigned long long)st.failed,
          (unsigned long long)st.missed_ticks, (long long)st.sampler_cpu_ns);
  fclose(f);
  return 0;
}
