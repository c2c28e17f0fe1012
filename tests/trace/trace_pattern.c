/*
 * trace_pattern.c — a program that does known things in a known order
 * while the sampling trace runs at 1 kHz, then writes the trace in the
 * three formats, for test_trace_pattern.py to read with readers nobody
 * here wrote (the Perfetto protos of the `perfetto` package, Python's
 * json).
 *
 * The pattern, on the main thread, under pattern_run():
 *   phase_a   200 ms computing (wall time: a loaded box stretches CPU work)
 *   phase_b   100 ms blocked on a mutex another thread holds
 *   phase_a   200 ms computing again
 *   phase_c   100 ms computing, with a snap_trace_mark("phase_c mark")
 * Each phase's real begin and end (unix ns, read here around it) go to
 * <dir>/phases.json, the oracle the trace's slices are held to; the
 * trace's own statistics go there too.
 *
 * Under ThreadSanitizer (phases.json says "tsan": true) the test reads
 * the files but holds the slices to nothing: TSan defers the sampling
 * signal and the target's samples come back late or not at all
 * (tests/check.h).
 *
 * Usage: trace_pattern DIR  -> DIR/trace.pftrace, trace.json,
 * trace.folded, phases.json. Exit 0, or 1 with a message.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "stacksnap.h"
#include "test_clock.h"

/* Each phase's begin and end, read inside its function: the time its
   frame is on the stack (a preemption between the caller's clock read and
   the call would not be the phase's). */
typedef struct phase {
  const char *name;
  uint64_t begin, end;
  uint64_t first_cpu; /* when its first FIRST_CPU_NS of CPU were used (a
                         computing phase; 0: blocked) */
} phase_t;
static phase_t g_ph[4];
static int g_at;
#define PHASE_BEGIN(n) (g_ph[g_at].name = (n), g_ph[g_at].begin = unix_ns())
#define PHASE_END() (g_ph[g_at++].end = unix_ns())

/* A sampler of running code sees a phase once its thread ran in it: a
   CPU-time timer of 1 ms fires at the first scheduler tick after that
   millisecond (HZ 250 here: within 4 ms of CPU time). How much longer
   than FIRST_CPU_NS a phase took to use that much CPU is how long a busy
   machine kept its thread off a CPU at its start, which no sampler of
   running code can see through (the test allows it). */
#define FIRST_CPU_NS 5000000u

/* spin_ms, noting when the phase had used its first FIRST_CPU_NS. Inlined:
   no frame of its own between the phase and pattern_run's slices. */
__attribute__((always_inline)) static inline void phase_spin(unsigned ms) {
  int64_t end = unix_ns() + (int64_t)ms * 1000000, cpu0 = thread_cpu_ns();
  phase_t *p = &g_ph[g_at];
  for (int64_t now; (now = unix_ns()) < end;) {
    if (!p->first_cpu && thread_cpu_ns() - cpu0 >= (int64_t)FIRST_CPU_NS)
      p->first_cpu = (uint64_t)now;
  }
  if (!p->first_cpu)
    p->first_cpu = (uint64_t)unix_ns();
}

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int g_held, g_go;

/* Takes the lock before the trace starts, and holds it for 100 ms from
   phase_b's begin, told to go by a flag it polls (not a wake-up, which could
   hand it main's CPU), so that phase_b blocks as it begins: a phase_b that
   started the holder and spun until it held the lock computed first, for as
   long as a loaded machine took to run the new thread (5-12 ms seen beside two
   busy loops), and where the trace dates the sleep was not where the phase
   began. */
static void *holder(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_lock);
  atomic_store(&g_held, 1);
  while (!atomic_load(&g_go))
    usleep(1000);
  usleep(100000);
  pthread_mutex_unlock(&g_lock);
  return NULL;
}

__attribute__((noinline)) static void phase_a(void) {
  PHASE_BEGIN("phase_a");
  phase_spin(200);
  PHASE_END();
  __asm__ volatile("" ::: "memory"); /* not a tail call */
}

static pthread_t g_holder;

__attribute__((noinline)) static void phase_b(void) {
  PHASE_BEGIN("phase_b");
  atomic_store(&g_go, 1);
  pthread_mutex_lock(&g_lock); /* ~100 ms: the holder sleeps with it */
  pthread_mutex_unlock(&g_lock);
  PHASE_END();
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void phase_c(void) {
  PHASE_BEGIN("phase_c");
  phase_spin(50);
  snap_trace_mark("phase_c mark");
  spin_ms(50);
  PHASE_END();
  __asm__ volatile("" ::: "memory");
}

/* Direct calls: a blocked thread is walked from the sp and pc the kernel
   publishes, and a frame-pointer function's record is recovered only
   where a direct call put it (src/capture/fp_recover.c). */
__attribute__((noinline)) static void pattern_run(void) {
  phase_a();
  phase_b();
  phase_a();
  phase_c();
  __asm__ volatile("" ::: "memory");
}

/* The transitions case: 150 times, compute 2 ms (burn_2ms) then sleep
   5 ms (nap_5ms). A sample that lands in burn_2ms just before the sleep
   must not make the sleep's samples repeat burn_2ms's stack (the sampler
   once read the thread's CPU time after the capture, and a thread that
   had already gone to sleep then seemed not to have run since). */
__attribute__((noinline)) static void burn_2ms(void) {
  spin_ms(2);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void nap_5ms(void) {
  usleep(5000);
  __asm__ volatile("" ::: "memory");
}

static int transitions(const char *dir) {
  snap_trace_config_t cfg;
  snap_trace_config_default(&cfg);
  if (snap_trace_start(&cfg) != SNAP_OK)
    return 1;
  for (int i = 0; i < 150; i++) {
    burn_2ms();
    nap_5ms();
  }
  snap_trace_stop();
  char path[4096];
  snprintf(path, sizeof path, "%s/transitions.json", dir);
  return snap_trace_write(path, SNAP_TRACE_CHROME_JSON, 0, 0) == SNAP_OK ? 0
                                                                         : 1;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[2], "transitions") == 0)
    return transitions(argv[1]);
  if (argc != 2) {
    fprintf(stderr, "usage: trace_pattern DIR [transitions]\n");
    return 2;
  }
  snap_trace_config_t cfg;
  snap_trace_config_default(&cfg);
  /* The lock's holder, holding it before the trace starts: its start
     would be sampled in pattern_run (seen under qemu: a pthread_create
     slice there). Joined after the trace stops. */
  if (pthread_create(&g_holder, NULL, holder, NULL) != 0)
    return 1;
  while (!atomic_load(&g_held))
    usleep(1000);
  int rc = snap_trace_start(&cfg);
  if (rc != SNAP_OK) {
    fprintf(stderr, "snap_trace_start: %s\n", snap_strerror(rc));
    return 1;
  }
  usleep(50000);
  uint64_t t0 = unix_ns();
  pattern_run();
  phase_t *ph = g_ph;
  usleep(50000);
  uint64_t t1 = unix_ns();
  snap_trace_stop();
  pthread_join(g_holder, NULL); /* long gone: a join in phase_b would wait
                                   for its exit there */
  snap_trace_stats_t st = {.size = sizeof st};
  snap_trace_stats(&st);
  static const struct {
    const char *file;
    unsigned format;
  } out[] = {{"trace.pftrace", SNAP_TRACE_PERFETTO},
             {"trace.json", SNAP_TRACE_CHROME_JSON},
             {"trace.folded", SNAP_TRACE_FOLDED}};
  char path[4096];
  for (size_t i = 0; i < sizeof out / sizeof out[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", argv[1], out[i].file);
    if ((rc = snap_trace_write(path, out[i].format, t0, t1)) != SNAP_OK) {
      fprintf(stderr, "snap_trace_write %s: %s\n", path, snap_strerror(rc));
      return 1;
    }
  }
  snprintf(path, sizeof path, "%s/phases.json", argv[1]);
  FILE *f = fopen(path, "w");
  if (!f)
    return 1;
  fprintf(f, "{\"tsan\": %s, \"since\": %llu, \"until\": %llu, \"phases\": [",
          SNAP_TEST_TSAN ? "true" : "false", (unsigned long long)t0,
          (unsigned long long)t1);
  for (int i = 0; i < 4; i++)
    fprintf(f,
            "%s{\"name\": \"%s\", \"begin\": %llu, \"end\": %llu, "
            "\"first_cpu\": %llu}",
            i ? ", " : "", ph[i].name, (unsigned long long)ph[i].begin,
            (unsigned long long)ph[i].end, (unsigned long long)ph[i].first_cpu);
  fprintf(f,
          "], \"stats\": {\"samples\": %llu, \"failed\": %llu, \"spans\": "
          "%llu, \"marks\": %llu, \"missed_ticks\": %llu, \"nodes\": %llu, "
          "\"bytes_used\": %llu, \"sampler_cpu_ns\": %lld}}\n",
          (unsigned long long)st.samples, (unsigned long long)st.failed,
          (unsigned long long)st.spans, (unsigned long long)st.marks,
          (unsigned long long)st.missed_ticks,
          (unsigned long long)st.stack_nodes, (unsigned long long)st.bytes_used,
          (long long)st.sampler_cpu_ns);
  fclose(f);
  return 0;
}
