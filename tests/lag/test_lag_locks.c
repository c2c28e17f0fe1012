/*
 * test_lag_locks.c — a lag report names what the main thread waits on and
 * who holds it (issue 14), with real threads and real locks.
 *
 * Each case starts the watchdog on a manual loop (snap_lag_loop_busy /
 * snap_lag_loop_idle around one blocking call of the main thread, as an
 * app with its own loop does), lets a worker named with
 * pthread_setname_np hold a resource, and has the main thread wait for it
 * (~800 ms for the locks): a pthread mutex of each type (normal,
 * recursive, error-checking, adaptive, robust, priority-inheritance), a
 * rwlock held for writing (the main thread reads, then writes). Then the
 * kinds with no owner: a condition variable, a semaphore, a read() on an
 * empty pipe, a nanosleep. Then the owners that must not be believed: a
 * worker that exited holding a (non-robust) mutex, a mutex whose __owner
 * was overwritten with garbage or with the waiter's own id, a robust
 * mutex whose lock word and __owner are garbage: no crash, "unknown".
 * And an owner begun inside the stall, 60 ms after its start (after the
 * watchdog's first look, with no point samples after it): named, as one
 * begun before the wait (a three-thread deadlock begun inside a stall in
 * CI lost its owner to a bound taken from the wrong side of the wait).
 * And the dump's order: with max_threads 2 and four threads listed before
 * the owner, the report still holds the owner, sampled, right after main.
 * And an owner that lets go and exits after main's sample but before the
 * thread dump (issue 25: a TSan run on a busy box, the dump ~700 ms after
 * main's sample, named a timed lock's owner ""): the report still names
 * the holder main's sample found, by the name it had. Made to happen by
 * an event, not by timing: the report's first write (made before the
 * dump) calls on_report on the watchdog's thread, which lets the owner go
 * and waits until its thread is gone.
 * With GLib (TEST_HAVE_GLIB) the mutex case also runs inside a GMainLoop
 * attached with snap_lag_attach_glib. TSan builds skip the abused mutexes
 * (TSan reports the abuse itself).
 *
 * The report is read from its file (the first link of main_blocked_on:
 * the main thread's wait). Oracles from outside the library: the
 * worker's gettid(), the name it gave itself, the resource's address and
 * the pipe's descriptor as this test knows them.
 *
 * qemu-user: the kernel's syscall file describes the emulator's host
 * thread, so samples fall back to the signal (decided as
 * test_quiet_sample.c does: is the pc the kernel publishes for a blocked
 * thread in one of our images). A futex wait restarts after the handler
 * (SA_RESTART) and the handler's registers are the restarted call's, so
 * the locks are checked as natively. A nanosleep, a read and a semaphore
 * wait interrupted by the signal return EINTR (a semaphore's futex wait
 * and a read on a pipe restart; glibc's nanosleep does not): there the
 * truthful answers are the kind, or no wait at all (the handler saw the
 * instruction after the call), and either is accepted for the sleep. A
 * timed mutex wait is cut the same way (a futex with a timeout returns
 * EINTR under a handler): aarch64 keeps only the call's number, so there
 * it reads "futex" with no address and no owner.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifdef TEST_HAVE_GLIB
#include <glib.h>
#endif

#include "check.h"
#include "oracle.h"
#include "stacksnap.h"
#include "test_clock.h"

#define LOCK_MS 800  /* the lock cases' wait */
#define OTHER_MS 500 /* the others' */

static bool g_emulated;

static int gettid_(void) { return (int)syscall(SYS_gettid); }

/* ---- The resources and what the worker and the main thread do --------- */

static pthread_mutex_t g_mu;
static pthread_rwlock_t g_rw;
static pthread_mutex_t g_cv_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static bool g_cv_flag;
static sem_t g_sem;
static int g_pipe[2];

typedef enum {
  C_MUTEX,        /* main locks g_mu, the worker holds it */
  C_RW_READ,      /* main read-locks g_rw, the worker holds it for writing */
  C_RW_WRITE,     /* main write-locks it */
  C_CONDVAR,      /* main waits on g_cv, the worker signals */
  C_SEM,          /* main waits on g_sem, the worker posts */
  C_PIPE,         /* main reads g_pipe[0], the worker writes */
  C_SLEEP,        /* main sleeps; no worker */
  C_TIMED,        /* main waits with pthread_mutex_timedlock */
  C_EXITED,       /* the worker exits holding g_mu; a rescuer unlocks it */
  C_GARBAGE,      /* the worker holds g_mu, its __owner is garbage */
  C_SELF_OWNER,   /* ... is the waiter's own id */
  C_GARBAGE_WORD, /* a robust g_mu: its lock word and __owner are garbage */
  C_LEFT,         /* main waits with pthread_mutex_timedlock; the worker
                     lets go and exits before the dump */
  C_LATE,         /* main locks g_mu, held by a worker begun in the stall */
} case_kind_t;

typedef struct lock_case {
  const char *name;
  case_kind_t kind;
  int mutex_type; /* C_MUTEX...: PTHREAD_MUTEX_* */
  int protocol;   /* PTHREAD_PRIO_NONE / _INHERIT */
  bool robust;
  const char *want_kind;  /* in the report */
  const char *want_owner; /* "known" (the worker), "unknown", "none" */
  bool glib;              /* inside a GMainLoop */
  /* > 0: max_threads 2, and this many sleeping threads started before the
     worker (listed before it): the dump must still take the owner right
     after main. */
  int decoys;
} lock_case_t;

static const lock_case_t *g_case;
static sem_t g_ready;       /* the worker holds the resource */
static sem_t g_let_go;      /* C_LEFT: the worker may let go */
static atomic_bool g_armed; /* C_LEFT: the next report write lets it go */
static atomic_int g_worker_tid;
static unsigned g_hold_ms;

static void *worker_main(void *arg) {
  (void)arg;
  const lock_case_t *c = g_case;
  atomic_store(&g_worker_tid, gettid_());
  pthread_setname_np(pthread_self(), "lock-owner");
  switch (c->kind) {
  case C_MUTEX:
  case C_LATE:
  case C_TIMED:
  case C_LEFT:
  case C_EXITED:
  case C_GARBAGE:
  case C_SELF_OWNER:
  case C_GARBAGE_WORD: CHECK_EQ(pthread_mutex_lock(&g_mu), 0); break;
  case C_RW_READ:
  case C_RW_WRITE: CHECK_EQ(pthread_rwlock_wrlock(&g_rw), 0); break;
  default: break;
  }
  if (c->kind == C_GARBAGE)
    g_mu.__data.__owner = 0x12345678; /* past any pid_max: no thread */
  if (c->kind == C_SELF_OWNER)
    g_mu.__data.__owner = getpid(); /* the main thread: the waiter */
  if (c->kind == C_GARBAGE_WORD) {
    /* The waiters bit kept (so the unlock still wakes the main thread),
       the TID bits garbage. */
    g_mu.__data.__lock = (int)(0x80000000u | 0x2345678u);
    g_mu.__data.__owner = 0x2345678;
  }
  sem_post(&g_ready);
  if (c->kind == C_EXITED)
    return NULL; /* exits holding g_mu */
  if (c->kind == C_LEFT) {
    while (sem_wait(&g_let_go) != 0 && errno == EINTR)
      ;
    CHECK_EQ(pthread_mutex_unlock(&g_mu), 0);
    return NULL;
  }
  sleep_ms(g_hold_ms);
  switch (c->kind) {
  case C_GARBAGE:
  case C_SELF_OWNER:
  case C_GARBAGE_WORD:
    /* What a normal or robust unlock expects of the fields (a robust
       unlock checks __owner). */
    g_mu.__data.__owner = gettid_();
    if (c->kind == C_GARBAGE_WORD)
      g_mu.__data.__lock = (int)(0x80000000u | (unsigned)gettid_());
    CHECK_EQ(pthread_mutex_unlock(&g_mu), 0);
    break;
  case C_MUTEX:
  case C_LATE:
  case C_TIMED: CHECK_EQ(pthread_mutex_unlock(&g_mu), 0); break;
  case C_RW_READ:
  case C_RW_WRITE: CHECK_EQ(pthread_rwlock_unlock(&g_rw), 0); break;
  case C_CONDVAR:
    pthread_mutex_lock(&g_cv_mu);
    g_cv_flag = true;
    pthread_cond_signal(&g_cv);
    pthread_mutex_unlock(&g_cv_mu);
    break;
  case C_SEM: sem_post(&g_sem); break;
  case C_PIPE:
    while (write(g_pipe[1], "x", 1) < 0 && errno == EINTR)
      ;
    break;
  default: break;
  }
  return NULL;
}

/* The main thread's wait: the one blocking call of the busy stretch. */
static void main_wait(const lock_case_t *c) {
  switch (c->kind) {
  case C_MUTEX:
  case C_LATE:
  case C_EXITED:
  case C_GARBAGE:
  case C_SELF_OWNER:
  case C_GARBAGE_WORD: {
    int rc = pthread_mutex_lock(&g_mu);
    CHECK(rc == 0, "%s: lock: %d", c->name, rc);
    pthread_mutex_unlock(&g_mu);
    break;
  }
  case C_TIMED:
  case C_LEFT: {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 30; /* the worker lets go long before */
    int rc = pthread_mutex_timedlock(&g_mu, &dl);
    CHECK(rc == 0, "%s: timedlock: %d", c->name, rc);
    pthread_mutex_unlock(&g_mu);
    break;
  }
  case C_RW_READ:
    CHECK_EQ(pthread_rwlock_rdlock(&g_rw), 0);
    pthread_rwlock_unlock(&g_rw);
    break;
  case C_RW_WRITE:
    CHECK_EQ(pthread_rwlock_wrlock(&g_rw), 0);
    pthread_rwlock_unlock(&g_rw);
    break;
  case C_CONDVAR:
    pthread_mutex_lock(&g_cv_mu);
    while (!g_cv_flag)
      pthread_cond_wait(&g_cv, &g_cv_mu);
    pthread_mutex_unlock(&g_cv_mu);
    break;
  case C_SEM:
    while (sem_wait(&g_sem) != 0 && errno == EINTR)
      ;
    break;
  case C_PIPE: {
    char ch;
    while (read(g_pipe[0], &ch, 1) < 0 && errno == EINTR)
      ;
    break;
  }
  case C_SLEEP: sleep_ms(g_hold_ms); break;
  }
}

/* Sleeps until told to stop: a thread listed before the worker. */
static atomic_bool g_decoys_stop;
static void *decoy_main(void *arg) {
  (void)arg;
  while (!atomic_load(&g_decoys_stop))
    sleep_ms(20);
  return NULL;
}

/* C_EXITED: the owner is gone; after the wait a rescuer lets the main
   thread in (glibc's normal mutex unlocks for any thread: no owner
   check). */
static void *rescuer_main(void *arg) {
  (void)arg;
  sleep_ms(g_hold_ms);
  CHECK_EQ(pthread_mutex_unlock(&g_mu), 0);
  return NULL;
}

/* C_LEFT: the report's first write, made before the thread dump (on the
   watchdog's thread): the worker lets go, and the dump waits until its
   thread is gone. */
static void on_report(const char *path, void *ctx) {
  (void)path;
  (void)ctx;
  if (!atomic_exchange(&g_armed, false))
    return;
  int tid = atomic_load(&g_worker_tid);
  char task[64];
  snprintf(task, sizeof task, "/proc/self/task/%d", tid);
  sem_post(&g_let_go);
  for (int i = 0; i < 30000 && access(task, F_OK) == 0; i++)
    sleep_ms(1);
  CHECK(access(task, F_OK) != 0, "the owner %d did not exit", tid);
}

/* Sets up the resource of case c (fresh: a previous case may have left a
   mutex held by a dead thread). */
static void setup(const lock_case_t *c) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, c->mutex_type);
  pthread_mutexattr_setprotocol(&a, c->protocol);
  if (c->robust)
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
  memset(&g_mu, 0, sizeof g_mu);
  CHECK_EQ(pthread_mutex_init(&g_mu, &a), 0);
  pthread_mutexattr_destroy(&a);
  pthread_rwlockattr_t ra;
  pthread_rwlockattr_init(&ra);
  /* Writers first: the main thread's read lock waits for the writer. */
  pthread_rwlockattr_setkind_np(&ra,
                                PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  CHECK_EQ(pthread_rwlock_init(&g_rw, &ra), 0);
  pthread_rwlockattr_destroy(&ra);
  g_cv_flag = false;
  CHECK_EQ(sem_init(&g_sem, 0, 0), 0);
  CHECK_EQ(pipe(g_pipe), 0);
}

/* What the resource's address is, as the report should give it. */
static uintptr_t want_address(const lock_case_t *c) {
  switch (c->kind) {
  case C_RW_READ:
  case C_RW_WRITE: return 0; /* the futex word inside it: checked apart */
  case C_CONDVAR: return 0;  /* likewise */
  case C_SEM: return (uintptr_t)&g_sem;
  case C_PIPE:
  case C_SLEEP: return 0;
  default: return (uintptr_t)&g_mu;
  }
}

/* ---- The report ---------------------------------------------------------- */

/* The single *-lag.json of dir, read into buf; false when none or more. */
static bool read_report(const char *dir, char *buf, size_t size) {
  DIR *d = opendir(dir);
  int found = 0;
  struct dirent *e;
  buf[0] = '\0';
  while (d && (e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 9 || strcmp(e->d_name + len - 9, "-lag.json") != 0)
      continue;
    if (found++)
      continue;
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    if (f) {
      buf[fread(buf, 1, size - 1, f)] = '\0';
      fclose(f);
    }
  }
  if (d)
    closedir(d);
  return found == 1;
}

/* The raw value of "key" in the text from `from` up to `end` (a string
   without its quotes, a number, null): "" when absent. */
static void field(const char *from, const char *end, const char *key, char *out,
                  size_t size) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  out[0] = '\0';
  const char *at = strstr(from, pat);
  if (!at || (end && at >= end))
    return;
  at += strlen(pat);
  if (*at == '"')
    at++;
  size_t n = 0;
  while (at[n] && at[n] != '"' && at[n] != ',' && at[n] != '}' && n + 1 < size)
    n++;
  memcpy(out, at, n);
  out[n] = '\0';
}

typedef struct seen {
  char kind[32], owner[32], owner_tid[32], owner_name[80], address[32], fd[16];
  bool main_sampled;
} seen_t;

/* Main's wait as the report gives it: the first link of main_blocked_on
   (kind "none" when there is no chain). */
static void main_wait_in(const char *json, seen_t *s) {
  memset(s, 0, sizeof *s);
  strcpy(s->kind, "none");
  s->main_sampled = strstr(json, "\"main_stack_error\"") == NULL;
  const char *chain = strstr(json, "\"main_blocked_on\":[");
  if (!chain)
    return;
  char tid[32];
  const char *end = strstr(chain, "\"frames\"");
  field(chain, end, "tid", tid, sizeof tid);
  CHECK(atoi(tid) == getpid(), "main_blocked_on starts at %s, not main", tid);
  field(chain, end, "kind", s->kind, sizeof s->kind);
  field(chain, end, "owner", s->owner, sizeof s->owner);
  field(chain, end, "owner_tid", s->owner_tid, sizeof s->owner_tid);
  field(chain, end, "owner_name", s->owner_name, sizeof s->owner_name);
  field(chain, end, "address", s->address, sizeof s->address);
  field(chain, end, "fd", s->fd, sizeof s->fd);
}

/* ---- One case ------------------------------------------------------------ */

#ifdef TEST_HAVE_GLIB
static gboolean glib_handler(gpointer loop) {
  main_wait(g_case);
  g_main_loop_quit(loop);
  return G_SOURCE_REMOVE;
}
#endif

static void run_case(const lock_case_t *c) {
  if (SNAP_TEST_TSAN &&
      (c->kind == C_EXITED || c->kind == C_GARBAGE || c->kind == C_SELF_OWNER ||
       c->kind == C_GARBAGE_WORD)) {
    /* Another thread's unlock and writes into a mutex are what TSan
       rightly reports; these cases check decoding, in the other builds. */
    printf("%-28s skipped under TSan (a deliberately abused mutex)\n", c->name);
    return;
  }
  g_case = c;
  bool no_owner = c->kind == C_CONDVAR || c->kind == C_SEM ||
                  c->kind == C_PIPE || c->kind == C_SLEEP;
  g_hold_ms = no_owner ? OTHER_MS : LOCK_MS;
  setup(c);
  char dir[64] = "/tmp/snap_lag_locks.XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  snap_lag_config_t cfg;
  snap_lag_config_default(&cfg);
  cfg.report_dir = dir;
  cfg.threshold_ms = 150;
  cfg.sample_interval_ms = 50;
  cfg.cpu_percent = 0;
  if (c->decoys)
    cfg.max_threads = 2;
  if (c->kind == C_LATE) {
    /* The stretch's first look is then the only reading before main's
       sample: one taken before the owner began. */
    cfg.threshold_ms = 400;
    cfg.sample_interval_ms = 0;
  }
  cfg.on_report = on_report;
  atomic_store(&g_armed, c->kind == C_LEFT);
  CHECK_EQ(snap_lag_start(&cfg), SNAP_OK);
  atomic_store(&g_worker_tid, 0);
  pthread_t t;
  pthread_t decoy[8];
  atomic_store(&g_decoys_stop, false);
  for (int i = 0; i < c->decoys && i < 8; i++)
    CHECK_EQ(pthread_create(&decoy[i], NULL, decoy_main, NULL), 0);
  if (c->kind != C_SLEEP && c->kind != C_LATE) {
    CHECK_EQ(pthread_create(&t, NULL, worker_main, NULL), 0);
    while (sem_wait(&g_ready) != 0 && errno == EINTR)
      ;
  }
  pthread_t rescuer;
  if (c->kind == C_EXITED) {
    pthread_join(t, NULL); /* gone, g_mu still held by it */
    CHECK_EQ(pthread_create(&rescuer, NULL, rescuer_main, NULL), 0);
  }
  uint64_t t0 = mono_ns();
#ifdef TEST_HAVE_GLIB
  if (c->glib) {
    GMainLoop *loop = g_main_loop_new(NULL, FALSE);
    CHECK_EQ(snap_lag_attach_glib(NULL), SNAP_OK);
    g_idle_add(glib_handler, loop);
    g_main_loop_run(loop);
    g_main_loop_unref(loop);
  } else
#endif
  {
    snap_lag_loop_busy();
    if (c->kind == C_LATE) {
      /* Begun 60 ms into the stall: six clock ticks of a thread's start
         time after the watchdog's first look, however it is read. */
      sleep_ms(60);
      CHECK_EQ(pthread_create(&t, NULL, worker_main, NULL), 0);
      while (sem_wait(&g_ready) != 0 && errno == EINTR)
        ;
    }
    main_wait(c);
    snap_lag_loop_idle();
  }
  uint64_t waited_ms = (mono_ns() - t0) / 1000000u;
  if (c->kind != C_SLEEP)
    pthread_join(c->kind == C_EXITED ? rescuer : t, NULL);
  CHECK(!atomic_load(&g_armed), "%s: no report written", c->name);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  atomic_store(&g_decoys_stop, true);
  for (int i = 0; i < c->decoys && i < 8; i++)
    pthread_join(decoy[i], NULL);

  static char json[1 << 20];
  seen_t s;
  bool one = read_report(dir, json, sizeof json);
  CHECK(one, "%s: not exactly one lag report in %s (waited %llu ms)", c->name,
        dir, (unsigned long long)waited_ms);
  main_wait_in(json, &s);
  int owner_tid = atomic_load(&g_worker_tid);
  printf("%-28s waited %4llu ms: kind %s, owner %s %s %s, address %s%s%s\n",
         c->name, (unsigned long long)waited_ms, s.kind, s.owner, s.owner_tid,
         s.owner_name, s.address, s.fd[0] ? ", fd " : "", s.fd);
  if (SNAP_TEST_TSAN && !s.main_sampled) {
    printf("  (TSan: the main thread's sample was held back: not checked)\n");
  } else if (one && g_emulated && (c->kind == C_TIMED || c->kind == C_LEFT) &&
             strcmp(s.kind, "futex") == 0) {
    /* The signal ended the timed futex wait (EINTR; glibc waits again):
       aarch64 keeps the call's number in x8, its arguments are gone, so a
       futex of unknown purpose is the whole truth (docs/lag.md). */
    CHECK(strcmp(s.owner, "none") == 0 && strcmp(s.address, "null") == 0,
          "%s: a cut timed wait with owner %s, address %s", c->name, s.owner,
          s.address);
    printf("  (qemu-user: the signal cut the timed wait; only its number "
           "is left: futex, truthfully)\n");
  } else if (one) {
    bool sleep_cut = g_emulated && c->kind == C_SLEEP;
    if (sleep_cut && strcmp(s.kind, "none") == 0)
      printf("  (qemu-user: the signal cut the sleep short; the handler saw "
             "the instruction after the call: no wait, truthfully)\n");
    else
      CHECK(strcmp(s.kind, c->want_kind) == 0, "%s: kind %s, want %s", c->name,
            s.kind, c->want_kind);
    if (strcmp(s.kind, "none") != 0)
      CHECK(strcmp(s.owner, c->want_owner) == 0, "%s: owner %s, want %s",
            c->name, s.owner, c->want_owner);
    if (strcmp(c->want_owner, "known") == 0) {
      CHECK(atoi(s.owner_tid) == owner_tid, "%s: owner_tid %s, want %d",
            c->name, s.owner_tid, owner_tid);
      CHECK(strcmp(s.owner_name, "lock-owner") == 0,
            "%s: owner_name %s, want lock-owner", c->name, s.owner_name);
    } else {
      CHECK(strcmp(s.owner_tid, "null") == 0 || !s.owner_tid[0],
            "%s: owner_tid %s for owner %s", c->name, s.owner_tid, s.owner);
    }
    uintptr_t want = want_address(c);
    if (want)
      CHECK(strtoull(s.address, NULL, 16) == want, "%s: address %s, want %#llx",
            c->name, s.address, (unsigned long long)want);
    if (c->kind == C_RW_READ || c->kind == C_RW_WRITE) {
      /* A futex word inside the rwlock. */
      uintptr_t a = (uintptr_t)strtoull(s.address, NULL, 16);
      CHECK(a >= (uintptr_t)&g_rw && a < (uintptr_t)(&g_rw + 1),
            "%s: address %s not inside the rwlock at %p", c->name, s.address,
            (void *)&g_rw);
    }
    if (c->kind == C_CONDVAR) {
      uintptr_t a = (uintptr_t)strtoull(s.address, NULL, 16);
      CHECK(a >= (uintptr_t)&g_cv && a < (uintptr_t)(&g_cv + 1),
            "%s: address %s not inside the condvar at %p", c->name, s.address,
            (void *)&g_cv);
    }
    if (c->kind == C_PIPE)
      CHECK(atoi(s.fd) == g_pipe[0] && s.fd[0], "%s: fd %s, want %d", c->name,
            s.fd, g_pipe[0]);
    CHECK(!strstr(json, "\"deadlock\""), "%s: a deadlock reported", c->name);
    if (c->decoys) {
      /* Cut to 2 threads: main and its lock's owner, with its stack. */
      const char *chain = strstr(json, "\"main_blocked_on\":[");
      const char *second = chain ? strstr(chain, "\"frames\"") : NULL;
      second = second ? strstr(second, "\n  {\"tid\":") : NULL;
      char tid[32] = "", pc[32] = "";
      if (second) {
        field(second, NULL, "tid", tid, sizeof tid);
        field(second, NULL, "pc", pc, sizeof pc);
      }
      CHECK(atoi(tid) == owner_tid && pc[0],
            "%s: main_blocked_on's second link is %s (frame pc %s), want the "
            "owner %d sampled",
            c->name, tid, pc, owner_tid);
      char n[16];
      field(json, NULL, "threads_total", n, sizeof n);
      CHECK(atoi(n) >= 2 + c->decoys, "%s: threads_total %s", c->name, n);
    }
  }
  close(g_pipe[0]);
  close(g_pipe[1]);
  sem_destroy(&g_sem);
  pthread_rwlock_destroy(&g_rw);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (check_failures == 0 && system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
}

/* Whether the pc the kernel publishes for a blocked thread is in one of
   our images: false under qemu-user (test_quiet_sample.c's rule). */
static void *blocked_main(void *arg) {
  atomic_store((atomic_int *)arg, gettid_());
  sleep_ms(300);
  return NULL;
}

static bool kernel_pc_is_ours(void) {
  atomic_int tid = 0;
  pthread_t t;
  if (pthread_create(&t, NULL, blocked_main, &tid) != 0)
    return true;
  while (!atomic_load(&tid))
    usleep(1000);
  bool ours = oracle_kernel_pc_is_ours(atomic_load(&tid));
  pthread_join(t, NULL);
  return ours;
}

int main(void) {
  CHECK_EQ(sem_init(&g_ready, 0, 0), 0);
  CHECK_EQ(sem_init(&g_let_go, 0, 0), 0);
  g_emulated = !kernel_pc_is_ours();
  if (g_emulated)
    printf("qemu-user: samples use the signal (the syscall file describes "
           "the host thread)\n");
  const int N = PTHREAD_PRIO_NONE, PI = PTHREAD_PRIO_INHERIT;
  const lock_case_t cases[] = {
      {"mutex normal", C_MUTEX, PTHREAD_MUTEX_NORMAL, N, false, "mutex",
       "known", false, 0},
      {"mutex recursive", C_MUTEX, PTHREAD_MUTEX_RECURSIVE, N, false, "mutex",
       "known", false, 0},
      {"mutex errorcheck", C_MUTEX, PTHREAD_MUTEX_ERRORCHECK, N, false, "mutex",
       "known", false, 0},
      {"mutex adaptive", C_MUTEX, PTHREAD_MUTEX_ADAPTIVE_NP, N, false, "mutex",
       "known", false, 0},
      {"mutex robust", C_MUTEX, PTHREAD_MUTEX_NORMAL, N, true, "mutex", "known",
       false, 0},
      {"mutex PI", C_MUTEX, PTHREAD_MUTEX_NORMAL, PI, false, "mutex", "known",
       false, 0},
      {"rwlock write-held, rdlock", C_RW_READ, 0, N, false, "rwlock", "known",
       false, 0},
      {"rwlock write-held, wrlock", C_RW_WRITE, 0, N, false, "rwlock", "known",
       false, 0},
      {"condvar", C_CONDVAR, 0, N, false, "condvar", "none", false, 0},
      {"semaphore", C_SEM, 0, N, false, "semaphore", "none", false, 0},
      {"read on an empty pipe", C_PIPE, 0, N, false, "io", "none", false, 0},
      {"nanosleep", C_SLEEP, 0, N, false, "sleep", "none", false, 0},
      {"mutex normal, timedlock", C_TIMED, PTHREAD_MUTEX_NORMAL, N, false,
       "mutex", "known", false, 0},
      {"timedlock, owner gone by the dump", C_LEFT, PTHREAD_MUTEX_NORMAL, N,
       false, "mutex", "known", false, 0},
      {"mutex, owner begun in the stall", C_LATE, PTHREAD_MUTEX_NORMAL, N,
       false, "mutex", "known", false, 0},
      {"owner exited", C_EXITED, PTHREAD_MUTEX_NORMAL, N, false, "mutex",
       "unknown", false, 0},
      {"__owner garbage", C_GARBAGE, PTHREAD_MUTEX_NORMAL, N, false, "mutex",
       "unknown", false, 0},
      {"__owner = the waiter", C_SELF_OWNER, PTHREAD_MUTEX_NORMAL, N, false,
       "mutex", "unknown", false, 0},
      {"robust, lock word garbage", C_GARBAGE_WORD, PTHREAD_MUTEX_NORMAL, N,
       true, "mutex", "unknown", false, 0},
#ifdef TEST_HAVE_GLIB
      {"owner past max_threads", C_MUTEX, PTHREAD_MUTEX_NORMAL, N, false,
       "mutex", "known", false, 4},
      {"mutex normal, GLib loop", C_MUTEX, PTHREAD_MUTEX_NORMAL, N, false,
       "mutex", "known", true, 0},
#endif
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    run_case(&cases[i]);
  return check_result("test_lag_locks");
}
