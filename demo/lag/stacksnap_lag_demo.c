/*
 * stacksnap_lag_demo.c — the lag watchdog at work: a main event loop whose
 * handlers lag on purpose, one scripted scenario after another, each
 * leaving (or, by design, not leaving) a report in --dir.
 *
 * Owns: the demo's command line, its scenarios and two tiny event loops.
 * Must not: call the watchdog's internals (only include/stacksnap.h), or
 * make busy/idle calls around a GLib loop (the adapter does that).
 *
 * The loop: with GLib (DEMO_HAVE_GLIB, native builds that found GLib's
 * headers) a GMainLoop on the default context, attached with
 * snap_lag_attach_glib(NULL): the app makes no calls of its own. Without
 * GLib (cross builds run under qemu) a poll() loop with one-shot timers
 * that calls snap_lag_loop_idle() before poll and snap_lag_loop_busy()
 * after it, what an app with its own loop does. Both offer the same three
 * calls (loop_after, loop_run, loop_quit), so every scenario runs on both.
 *
 * Each scenario's work sits in its own global noinline function (names
 * below): tests look for those names in the reports. Every busy stretch is
 * a timer handler, i.e. one real loop iteration. Work is timed with
 * CLOCK_MONOTONIC, so a process stopped by SIGSTOP ends its current piece
 * of work as soon as it continues (the watchdog does not count the stop).
 *
 * Output: "report: <path>" each time the watchdog writes or updates a
 * report (on_report; also for each hang_killed report snap_lag_start made
 * from a run that died during a lag), narration unless --quiet, and at the
 * end the distinct reports of this run. Exit status:
 * 0 when the scenarios ran, 2 on bad usage, 1 when the watchdog could not
 * start.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setname_np */
#endif
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef DEMO_HAVE_GLIB
#include <glib.h>
#endif

#include "stacksnap.h"

#define NOINLINE __attribute__((noinline))
/* After a call: keeps the caller's frame alive (no tail call, no folding
   of two identical functions into one). */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

/* The functions whose names the reports should show. */
uint64_t demo_heavy_inner(uint64_t x);
void demo_heavy_compute(unsigned ms);
void *demo_lock_holder(void *arg);
void demo_hold_lock_while_working(unsigned ms);
void demo_wait_for_lock(void);
void *demo_usleep_holder(void *arg);
void demo_wait_for_usleep_lock(void);
void *demo_deadlock_worker(void *arg);
void demo_deadlock_main(void);
void demo_slow_io(int fd);
void demo_hang(unsigned seconds);
void demo_repeat_compute(unsigned ms);
void demo_steady_work(unsigned ms);
void demo_cpu_burner(unsigned ms);

/* ---- Options and output ---------------------------------------------------
 */

typedef struct options {
  const char *dir;
  const char *scenario;
  unsigned threshold_ms, hang_ms, hang_seconds, cpu_window_ms, cpu_percent,
      seconds;
  bool quiet;
  bool trace; /* --trace: a sampling trace of the whole run */
} options_t;

static options_t g_opt = {NULL, "all", 250, 8000,  10,
                          2000, 80,    5,   false, false};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  if (g_opt.quiet)
    return;
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
  fflush(stdout);
}

static void die(const char *what, int err) {
  fprintf(stderr, "stacksnap_lag_demo: %s: %s\n", what, strerror(err));
  exit(1);
}

/* The distinct reports written by this run (on_report runs on the
   watchdog thread, again at each update of a report). */
#define MAX_SEEN 256
static pthread_mutex_t g_seen_lock = PTHREAD_MUTEX_INITIALIZER;
static char *g_seen[MAX_SEEN];
static int g_nseen;

/* Adds path to g_seen; false if it was there. */
static bool remember(const char *path) {
  pthread_mutex_lock(&g_seen_lock);
  bool known = false;
  for (int i = 0; i < g_nseen && !known; i++)
    known = strcmp(g_seen[i], path) == 0;
  if (!known && g_nseen < MAX_SEEN) {
    char *copy = strdup(path);
    if (copy)
      g_seen[g_nseen++] = copy;
  }
  pthread_mutex_unlock(&g_seen_lock);
  return !known;
}

static void on_report(const char *path, void *ctx) {
  (void)ctx;
  printf("report: %s\n", path);
  fflush(stdout);
  remember(path);
}

/* ---- Time and work ------------------------------------------------------- */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

static volatile uint64_t g_sink; /* keeps the arithmetic alive */

/* A few thousand rounds of an integer hash (splitmix64): real work. */
static inline __attribute__((always_inline)) uint64_t mix_rounds(uint64_t x) {
  for (int i = 0; i < 4096; i++) {
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    x ^= x >> 31;
  }
  return x;
}

/* Computes in the calling function's own frame until `ms` have passed:
   that function is the innermost app frame of every sample. */
#define COMPUTE_FOR_MS(ms)                                                     \
  do {                                                                         \
    uint64_t end_ = now_ns() + (uint64_t)(ms)*1000000u, x_ = g_sink;           \
    while (now_ns() < end_)                                                    \
      x_ = mix_rounds(x_);                                                     \
    g_sink = x_;                                                               \
  } while (0)

static void start_thread(pthread_t *t, const char *name, void *(*fn)(void *),
                         void *arg) {
  int err = pthread_create(t, NULL, fn, arg);
  if (err)
    die("pthread_create", err);
  pthread_setname_np(*t, name); /* shows in the reports' thread list */
}

/* ---- The two loops ------------------------------------------------------- */

typedef void (*handler_fn)(void *arg);

#ifdef DEMO_HAVE_GLIB

#define LOOP_HANDLER "a GLib timeout handler"
static GMainLoop *g_loop;

typedef struct timeout {
  handler_fn fn;
  void *arg;
} timeout_t;

static gboolean glib_dispatch(gpointer data) {
  timeout_t t = *(timeout_t *)data;
  g_free(data);
  t.fn(t.arg);
  return G_SOURCE_REMOVE;
}

static void loop_after(unsigned ms, handler_fn fn, void *arg) {
  timeout_t *t = g_new(timeout_t, 1);
  t->fn = fn;
  t->arg = arg;
  g_timeout_add(ms, glib_dispatch, t);
}

static int loop_attach(void) {
  g_loop = g_main_loop_new(NULL, FALSE);
  return snap_lag_attach_glib(NULL);
}
NOINLINE static void loop_run(void) {
  g_main_loop_run(g_loop);
  KEEP_FRAME();
}
static void loop_quit(void) { g_main_loop_quit(g_loop); }

#else /* the built-in loop */

#define LOOP_HANDLER "a poll-loop timer handler"
#define MAX_TIMERS 8

static struct timer {
  bool used;
  uint64_t due_ns;
  handler_fn fn;
  void *arg;
} g_timers[MAX_TIMERS];
static bool g_quit;

static void loop_after(unsigned ms, handler_fn fn, void *arg) {
  for (int i = 0; i < MAX_TIMERS; i++)
    if (!g_timers[i].used) {
      g_timers[i] =
          (struct timer){true, now_ns() + (uint64_t)ms * 1000000u, fn, arg};
      return;
    }
  fprintf(stderr, "stacksnap_lag_demo: more than %d timers\n", MAX_TIMERS);
  exit(1);
}

static int loop_attach(void) { return SNAP_OK; }
static void loop_quit(void) { g_quit = true; }

/* Sleeps in poll until the next timer is due, then runs every timer due
   by then (timers they add wait for the next iteration). */
NOINLINE static void loop_run(void) {
  g_quit = false;
  while (!g_quit) {
    uint64_t next = UINT64_MAX, now = now_ns();
    for (int i = 0; i < MAX_TIMERS; i++)
      if (g_timers[i].used && g_timers[i].due_ns < next)
        next = g_timers[i].due_ns;
    if (next == UINT64_MAX)
      break; /* nothing left to wait for */
    int timeout = next <= now ? 0 : (int)((next - now + 999999u) / 1000000u);
    snap_lag_loop_idle();
    poll(NULL, 0, timeout);
    snap_lag_loop_busy();
    now = now_ns();
    struct timer due[MAX_TIMERS];
    int n = 0;
    for (int i = 0; i < MAX_TIMERS; i++)
      if (g_timers[i].used && g_timers[i].due_ns <= now) {
        due[n++] = g_timers[i];
        g_timers[i].used = false;
      }
    for (int i = 0; i < n; i++)
      due[i].fn(due[i].arg);
  }
  snap_lag_loop_idle(); /* the loop is done: not a lag */
}

#endif

/* ---- Scenarios ------------------------------------------------------------
 */

#define GAP_MS 400 /* idle loop between scenarios */

typedef struct scenario {
  const char *name;
  void (*start)(void *arg); /* a handler; ends by calling scenario_done */
} scenario_t;

static const scenario_t *g_plan[8];
static int g_plan_len, g_plan_pos;

static void next_scenario(void *arg) {
  (void)arg;
  if (g_plan_pos == g_plan_len) {
    loop_quit();
    return;
  }
  g_plan[g_plan_pos++]->start(NULL);
}

/* Called by the last handler of a scenario: the next one after a gap. */
static void scenario_done(void) { loop_after(GAP_MS, next_scenario, NULL); }

/* heavy: 600 ms of computation in one handler. */

NOINLINE uint64_t demo_heavy_inner(uint64_t x) {
  x = mix_rounds(x);
  __asm__ volatile("" : "+r"(x));
  return x;
}

NOINLINE void demo_heavy_compute(unsigned ms) {
  uint64_t end = now_ns() + (uint64_t)ms * 1000000u, x = g_sink;
  while (now_ns() < end)
    x = demo_heavy_inner(x);
  g_sink = x;
  KEEP_FRAME();
}

static void heavy_start(void *arg) {
  (void)arg;
  say("scenario heavy: 600 ms of computation in %s "
      "(demo_heavy_compute -> demo_heavy_inner)",
      LOOP_HANDLER);
  demo_heavy_compute(600);
  scenario_done();
}

/* lock: the handler waits ~800 ms for a mutex a worker holds. */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static sem_t g_lock_held;

NOINLINE void demo_hold_lock_while_working(unsigned ms) {
  uint64_t end = now_ns() + (uint64_t)ms * 1000000u;
  while (now_ns() < end)
    sleep_ms(5);
  KEEP_FRAME();
}

/* "holder: NAME tid=N": the tests find a thread in the reports by it. */
static void say_tid(const char *name) {
  printf("holder: %s tid=%llu\n", name, (unsigned long long)snap_thread_self());
  fflush(stdout);
}

NOINLINE void *demo_lock_holder(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_lock);
  say_tid("lock-holder"); /* the report names it as the owner */
  sem_post(&g_lock_held);
  demo_hold_lock_while_working(800);
  pthread_mutex_unlock(&g_lock);
  KEEP_FRAME();
  return NULL;
}

NOINLINE void demo_wait_for_lock(void) {
  pthread_mutex_lock(&g_lock); /* sleeps until the worker lets go */
  pthread_mutex_unlock(&g_lock);
  KEEP_FRAME();
}

static void lock_start(void *arg) {
  (void)arg;
  say("scenario lock: %s waits ~800 ms for a mutex that thread lock-holder "
      "holds (demo_wait_for_lock; demo_hold_lock_while_working)",
      LOOP_HANDLER);
  pthread_t t;
  start_thread(&t, "lock-holder", demo_lock_holder, NULL);
  while (sem_wait(&g_lock_held) != 0 && errno == EINTR)
    ;
  demo_wait_for_lock();
  int err = pthread_join(t, NULL);
  if (err)
    die("pthread_join", err);
  scenario_done();
}

/* usleep-lock: the handler waits for a mutex a worker holds across ONE
   usleep(900 ms), with no EINTR retry, as most code sleeps. A sampling
   signal at the dump would end that sleep early and the lag with it (it
   was once reported as 250 ms): the watchdog samples quietly. */

static pthread_mutex_t g_ulock = PTHREAD_MUTEX_INITIALIZER;
static sem_t g_ulock_held;

NOINLINE void *demo_usleep_holder(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_ulock);
  /* Always printed: the test finds the holder in the report by its id
     (under qemu-user the sampling signal ends this sleep and the holder
     may be sampled while it exits, with no frame of its own left). */
  say_tid("usleep-holder");
  sem_post(&g_ulock_held);
  usleep(900 * 1000); /* once: an EINTR here lets go of the lock early */
  pthread_mutex_unlock(&g_ulock);
  KEEP_FRAME();
  return NULL;
}

NOINLINE void demo_wait_for_usleep_lock(void) {
  pthread_mutex_lock(&g_ulock); /* until the holder's usleep ends */
  pthread_mutex_unlock(&g_ulock);
  KEEP_FRAME();
}

static void usleep_lock_start(void *arg) {
  (void)arg;
  say("scenario usleep-lock: %s waits for a mutex that thread usleep-holder "
      "holds across one usleep(900 ms) (demo_wait_for_usleep_lock; "
      "demo_usleep_holder)",
      LOOP_HANDLER);
  pthread_t t;
  start_thread(&t, "usleep-holder", demo_usleep_holder, NULL);
  while (sem_wait(&g_ulock_held) != 0 && errno == EINTR)
    ;
  demo_wait_for_usleep_lock();
  int err = pthread_join(t, NULL);
  if (err)
    die("pthread_join", err);
  scenario_done();
}

/* deadlock, deadlock3: a lock-order cycle that never resolves. deadlock:
   the handler holds A and wants B, thread deadlock-b holds B and wants A.
   deadlock3: the handler holds A and wants B, deadlock-b holds B and wants
   C, deadlock-c holds C and wants A. The process stays stuck (the test
   reads the report written meanwhile and kills it). */

static pthread_mutex_t g_dl[3] = {PTHREAD_MUTEX_INITIALIZER,
                                  PTHREAD_MUTEX_INITIALIZER,
                                  PTHREAD_MUTEX_INITIALIZER};
static sem_t g_dl_held, g_dl_go; /* held: a worker holds its lock; go:
                                     every lock is held, reach for the next */
static int g_dl_n;               /* locks in the cycle: 2 or 3 */

/* Worker i (1..n-1): holds lock i, then wants lock (i + 1) % n. */
NOINLINE void *demo_deadlock_worker(void *arg) {
  int i = (int)(intptr_t)arg;
  pthread_mutex_lock(&g_dl[i]);
  say_tid(i == 1 ? "deadlock-b" : "deadlock-c");
  sem_post(&g_dl_held);
  while (sem_wait(&g_dl_go) != 0 && errno == EINTR)
    ;
  pthread_mutex_lock(&g_dl[(i + 1) % g_dl_n]); /* never returns */
  pthread_mutex_unlock(&g_dl[(i + 1) % g_dl_n]);
  pthread_mutex_unlock(&g_dl[i]);
  KEEP_FRAME();
  return NULL;
}

NOINLINE void demo_deadlock_main(void) {
  pthread_mutex_lock(&g_dl[1]); /* never returns */
  pthread_mutex_unlock(&g_dl[1]);
  KEEP_FRAME();
}

static void deadlock_with(int n) {
  g_dl_n = n;
  say("scenario deadlock%s: %s holds lock A and wants B; %s "
      "(demo_deadlock_main; demo_deadlock_worker): stuck for good",
      n == 3 ? "3" : "", LOOP_HANDLER,
      n == 3 ? "deadlock-b holds B, wants C; deadlock-c holds C, wants A"
             : "deadlock-b holds B, wants A");
  pthread_mutex_lock(&g_dl[0]);
  for (int i = 1; i < n; i++) {
    pthread_t t;
    start_thread(&t, i == 1 ? "deadlock-b" : "deadlock-c", demo_deadlock_worker,
                 (void *)(intptr_t)i);
    while (sem_wait(&g_dl_held) != 0 && errno == EINTR)
      ;
  }
  for (int i = 1; i < n; i++)
    sem_post(&g_dl_go);
  demo_deadlock_main();
  scenario_done(); /* not reached */
}

static void deadlock_start(void *arg) {
  (void)arg;
  deadlock_with(2);
}

static void deadlock3_start(void *arg) {
  (void)arg;
  deadlock_with(3);
}

/* io: a blocking read on a pipe that a worker writes to after 600 ms. */

static void *io_writer_main(void *arg) {
  int fd = *(int *)arg;
  sleep_ms(600);
  while (write(fd, "x", 1) < 0 && errno == EINTR)
    ;
  return NULL;
}

NOINLINE void demo_slow_io(int fd) {
  char c;
  while (read(fd, &c, 1) < 0 && errno == EINTR)
    ;
  KEEP_FRAME();
}

static void io_start(void *arg) {
  (void)arg;
  say("scenario io: %s blocks ~600 ms in read() on a pipe that thread "
      "io-writer fills late (demo_slow_io)",
      LOOP_HANDLER);
  int fds[2];
  if (pipe(fds) != 0)
    die("pipe", errno);
  pthread_t t;
  start_thread(&t, "io-writer", io_writer_main, &fds[1]);
  demo_slow_io(fds[0]);
  int err = pthread_join(t, NULL);
  if (err)
    die("pthread_join", err);
  close(fds[0]);
  close(fds[1]);
  scenario_done();
}

/* hang: busy for --hang-seconds, sleeping 10 ms at a time with a little
   computation between: a hang whether or not it uses the CPU. */

NOINLINE void demo_hang(unsigned seconds) {
  uint64_t end = now_ns() + (uint64_t)seconds * 1000000000u, x = g_sink;
  while (now_ns() < end) {
    sleep_ms(10);
    x = mix_rounds(x);
  }
  g_sink = x;
  KEEP_FRAME();
}

static void hang_start(void *arg) {
  (void)arg;
  say("scenario hang: %s does not return for %u s (demo_hang: sleeps "
      "10 ms at a time, computes a little between)",
      LOOP_HANDLER, g_opt.hang_seconds);
  demo_hang(g_opt.hang_seconds);
  scenario_done();
}

/* repeat: the same 400 ms stack in two separate loop iterations. */

NOINLINE void demo_repeat_compute(unsigned ms) {
  COMPUTE_FOR_MS(ms);
  KEEP_FRAME();
}

static void repeat_step(void *arg) {
  int round = (int)(intptr_t)arg;
  demo_repeat_compute(400);
  if (round == 1)
    loop_after(100, repeat_step, (void *)(intptr_t)2);
  else
    scenario_done();
}

static void repeat_start(void *arg) {
  (void)arg;
  say("scenario repeat: 400 ms of computation in %s, twice, 100 ms of idle "
      "loop between (demo_repeat_compute; the same stack: one report)",
      LOOP_HANDLER);
  loop_after(0, repeat_step, (void *)(intptr_t)1);
}

/* steady and cpu: for --seconds, short pieces of work with short idle
   gaps. steady: 100 ms work + 50 ms idle (below the threshold). cpu: 40 ms
   + 5 ms (no lag, but ~90% of a core). */

NOINLINE void demo_steady_work(unsigned ms) {
  COMPUTE_FOR_MS(ms);
  KEEP_FRAME();
}

NOINLINE void demo_cpu_burner(unsigned ms) {
  COMPUTE_FOR_MS(ms);
  KEEP_FRAME();
}

typedef struct pulse {
  void (*work)(unsigned ms);
  unsigned work_ms, idle_ms;
  uint64_t end_ns;
  uint64_t t0_ns, cpu0_ns; /* wall and main-thread CPU time at the start */
} pulse_t;

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static pulse_t g_pulse;

static void pulse_step(void *arg) {
  (void)arg;
  g_pulse.work(g_pulse.work_ms);
  if (now_ns() < g_pulse.end_ns) {
    loop_after(g_pulse.idle_ms, pulse_step, NULL);
    return;
  }
  /* What the main thread really got (always printed: a loaded machine
     decides it, and the test compares the watchdog's verdict with it). */
  printf("measured: main thread cpu_ms=%llu wall_ms=%llu\n",
         (unsigned long long)((thread_cpu_ns() - g_pulse.cpu0_ns) / 1000000u),
         (unsigned long long)((now_ns() - g_pulse.t0_ns) / 1000000u));
  fflush(stdout);
  scenario_done();
}

static void pulse_start(void (*work)(unsigned), unsigned work_ms,
                        unsigned idle_ms) {
  g_pulse =
      (pulse_t){work,     work_ms,
                idle_ms,  now_ns() + (uint64_t)g_opt.seconds * 1000000000u,
                now_ns(), thread_cpu_ns()};
  loop_after(0, pulse_step, NULL);
}

static void steady_start(void *arg) {
  (void)arg;
  say("scenario steady: for %u s, 100 ms of computation in %s, then 50 ms "
      "idle (demo_steady_work; below the threshold: no report)",
      g_opt.seconds, LOOP_HANDLER);
  pulse_start(demo_steady_work, 100, 50);
}

static void cpu_start(void *arg) {
  (void)arg;
  say("scenario cpu: for %u s, 40 ms of computation in %s, then 5 ms idle "
      "(demo_cpu_burner; no lag, ~90%% of a core: a cpu report after "
      "%u ms)",
      g_opt.seconds, LOOP_HANDLER, g_opt.cpu_window_ms);
  pulse_start(demo_cpu_burner, 40, 5);
}

/* killme: a hang that a helper thread ends with SIGKILL after 2.5 s; the
   next run's snap_lag_start turns the report left behind into a
   hang_killed report. */

static void *killer_main(void *arg) {
  (void)arg;
  sleep_ms(2500);
  kill(getpid(), SIGKILL);
  return NULL;
}

static void killme_start(void *arg) {
  (void)arg;
  /* At least 5 s: the kill must come while demo_hang runs. */
  unsigned seconds = g_opt.hang_seconds < 5 ? 5 : g_opt.hang_seconds;
  say("scenario killme: %s hangs in demo_hang; thread killer sends SIGKILL "
      "to this process after 2.5 s (the next run reports hang_killed)",
      LOOP_HANDLER);
  pthread_t t;
  start_thread(&t, "killer", killer_main, NULL);
  demo_hang(seconds);
  scenario_done(); /* not reached */
}

/* none: the loop idles ~300 ms. */

static void none_start(void *arg) {
  (void)arg;
  say("scenario none: the loop stays idle ~300 ms");
  loop_after(300, next_scenario, NULL);
}

static const scenario_t k_scenarios[] = {
    {"heavy", heavy_start},
    {"lock", lock_start},
    {"io", io_start},
    {"hang", hang_start},
    {"repeat", repeat_start},
    {"steady", steady_start},
    {"cpu", cpu_start},
    {"killme", killme_start},
    {"none", none_start},
    {"usleep-lock", usleep_lock_start},
    {"deadlock", deadlock_start},
    {"deadlock3", deadlock3_start},
};
static const char *const k_all[] = {"heavy", "lock", "io", "repeat", "hang"};

static const scenario_t *find_scenario(const char *name) {
  for (size_t i = 0; i < sizeof k_scenarios / sizeof k_scenarios[0]; i++)
    if (strcmp(k_scenarios[i].name, name) == 0)
      return &k_scenarios[i];
  return NULL;
}

/* ---- The sampling trace (--trace) ------------------------------------------

   The whole run is traced (the main thread at 1 kHz, the others while they
   run); at the end DIR/trace.pftrace (open it at ui.perfetto.dev),
   DIR/trace.json (chrome://tracing) and DIR/trace.folded are written, and,
   where the source tree's scripts/flamegraph.py and python3 are found,
   DIR/trace.svg, a flame graph of the folded stacks. */

static void trace_start(void) {
  snap_trace_config_t tc;
  snap_trace_config_default(&tc);
  tc.window_seconds = 120; /* the whole run */
  tc.max_bytes = 16u << 20;
  int rc = snap_trace_start(&tc);
  if (rc != SNAP_OK) {
    fprintf(stderr, "stacksnap_lag_demo: snap_trace_start: %s\n",
            snap_strerror(rc));
    g_opt.trace = false;
  }
}

static void trace_finish(void) {
  snap_trace_stop();
  static const struct {
    const char *name;
    unsigned format;
  } out[] = {{"trace.pftrace", SNAP_TRACE_PERFETTO},
             {"trace.json", SNAP_TRACE_CHROME_JSON},
             {"trace.folded", SNAP_TRACE_FOLDED}};
  char path[4096];
  for (size_t i = 0; i < sizeof out / sizeof out[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", g_opt.dir, out[i].name);
    int rc = snap_trace_write(path, out[i].format, 0, 0);
    if (rc == SNAP_OK)
      printf("trace: %s\n", path);
    else
      fprintf(stderr, "stacksnap_lag_demo: snap_trace_write %s: %s\n", path,
              snap_strerror(rc));
  }
  snap_trace_stats_t st = {.size = sizeof st};
  if (snap_trace_stats(&st) == SNAP_OK)
    printf("trace: %llu samples, %llu spans, %llu bytes of %llu, sampler "
           "cpu %.1f ms\n",
           (unsigned long long)st.samples, (unsigned long long)st.spans,
           (unsigned long long)st.bytes_used,
           (unsigned long long)st.bytes_reserved,
           st.sampler_cpu_ns >= 0 ? (double)st.sampler_cpu_ns / 1e6 : -1.0);
#ifdef DEMO_FLAMEGRAPH
  char cmd[8192];
  snprintf(cmd, sizeof cmd,
           "python3 '%s' --title 'stacksnap_lag_demo' --countname us "
           "-o '%s/trace.svg' '%s/trace.folded'",
           DEMO_FLAMEGRAPH, g_opt.dir, g_opt.dir);
  if (access(DEMO_FLAMEGRAPH, R_OK) == 0 && system(cmd) == 0)
    printf("flame graph: %s/trace.svg\n", g_opt.dir);
#endif
}

/* ---- main ---------------------------------------------------------------- */

static void usage(void) {
  fprintf(stderr,
          "usage: stacksnap_lag_demo --dir DIR [--scenario NAME] "
          "[--threshold MS] [--hang-ms MS]\n"
          "         [--hang-seconds S] [--cpu-window MS] [--cpu-percent P] "
          "[--seconds S] [--quiet] [--trace]\n"
          "scenarios: all (default: heavy lock io repeat hang), heavy, lock, "
          "io, hang, repeat,\n"
          "           steady, cpu, killme, none, usleep-lock, deadlock,\n"
          "           deadlock3 (these two never end: kill them)\n");
  exit(2);
}

static unsigned parse_uint(const char *opt, const char *s) {
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (errno || end == s || *end || *s == '-' || v > UINT_MAX) {
    fprintf(stderr, "stacksnap_lag_demo: %s: not a number: %s\n", opt, s);
    usage();
  }
  return (unsigned)v;
}

static void parse_args(int argc, char **argv) {
  static const struct option longs[] = {
      {"dir", required_argument, NULL, 'd'},
      {"scenario", required_argument, NULL, 's'},
      {"threshold", required_argument, NULL, 't'},
      {"hang-ms", required_argument, NULL, 'H'},
      {"hang-seconds", required_argument, NULL, 'S'},
      {"cpu-window", required_argument, NULL, 'w'},
      {"cpu-percent", required_argument, NULL, 'p'},
      {"seconds", required_argument, NULL, 'n'},
      {"quiet", no_argument, NULL, 'q'},
      {"trace", no_argument, NULL, 'T'},
      {NULL, 0, NULL, 0},
  };
  int c;
  while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
    switch (c) {
    case 'd': g_opt.dir = optarg; break;
    case 's': g_opt.scenario = optarg; break;
    case 't': g_opt.threshold_ms = parse_uint("--threshold", optarg); break;
    case 'H': g_opt.hang_ms = parse_uint("--hang-ms", optarg); break;
    case 'S': g_opt.hang_seconds = parse_uint("--hang-seconds", optarg); break;
    case 'w': g_opt.cpu_window_ms = parse_uint("--cpu-window", optarg); break;
    case 'p': g_opt.cpu_percent = parse_uint("--cpu-percent", optarg); break;
    case 'n': g_opt.seconds = parse_uint("--seconds", optarg); break;
    case 'q': g_opt.quiet = true; break;
    case 'T': g_opt.trace = true; break;
    default: usage();
    }
  }
  if (optind != argc || !g_opt.dir || !*g_opt.dir)
    usage();
  if (strcmp(g_opt.scenario, "all") == 0) {
    for (size_t i = 0; i < sizeof k_all / sizeof k_all[0]; i++)
      g_plan[g_plan_len++] = find_scenario(k_all[i]);
  } else {
    g_plan[0] = find_scenario(g_opt.scenario);
    if (!g_plan[0]) {
      fprintf(stderr, "stacksnap_lag_demo: unknown scenario: %s\n",
              g_opt.scenario);
      usage();
    }
    g_plan_len = 1;
  }
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  parse_args(argc, argv);
  if (sem_init(&g_lock_held, 0, 0) != 0 || sem_init(&g_ulock_held, 0, 0) != 0 ||
      sem_init(&g_dl_held, 0, 0) != 0 || sem_init(&g_dl_go, 0, 0) != 0)
    die("sem_init", errno);

  snap_lag_config_t cfg;
  snap_lag_config_default(&cfg);
  cfg.report_dir = g_opt.dir;
  cfg.threshold_ms = g_opt.threshold_ms;
  cfg.hang_ms = g_opt.hang_ms;
  cfg.cpu_window_ms = g_opt.cpu_window_ms;
  cfg.cpu_percent = g_opt.cpu_percent;
  cfg.max_reports_per_day = 1000; /* the demo makes many */
  cfg.on_report = on_report;
  /* A run killed during a lag left its report "ongoing": this start turns
     it into a hang_killed report, announced through on_report. */
  int rc = snap_lag_start(&cfg);
  if (rc != SNAP_OK) {
    fprintf(stderr, "stacksnap_lag_demo: snap_lag_start: %s (%d)\n",
            snap_strerror(rc), rc);
    return 1;
  }
  rc = loop_attach();
  if (rc != SNAP_OK) {
    fprintf(stderr, "stacksnap_lag_demo: snap_lag_attach_glib: %s (%d)\n",
            snap_strerror(rc), rc);
    snap_lag_stop();
    return 1;
  }
  say("stacksnap lag demo: pid %d, watchdog on (threshold %u ms, hang %u ms, "
      "cpu window %u ms), reports in %s",
      (int)getpid(), cfg.threshold_ms, cfg.hang_ms, cfg.cpu_window_ms,
      cfg.report_dir);

  if (g_opt.trace)
    trace_start();
  loop_after(GAP_MS, next_scenario, NULL); /* starts with an idle loop */
  loop_run();
  if (g_opt.trace)
    trace_finish();

  rc = snap_lag_stop();
  if (rc != SNAP_OK)
    fprintf(stderr, "stacksnap_lag_demo: snap_lag_stop: %s (%d)\n",
            snap_strerror(rc), rc);
  /* A lag that became a hang was renamed: list the files still there. */
  pthread_mutex_lock(&g_seen_lock);
  int kept = 0;
  for (int i = 0; i < g_nseen; i++)
    kept += access(g_seen[i], F_OK) == 0;
  printf("reports written: %d\n", kept);
  for (int i = 0; i < g_nseen; i++)
    if (access(g_seen[i], F_OK) == 0)
      printf("  %s\n", g_seen[i]);
  pthread_mutex_unlock(&g_seen_lock);
  return 0;
}
