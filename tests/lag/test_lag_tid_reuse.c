/*
 * test_lag_tid_reuse.c — a lag report never names an innocent thread as a
 * lock's owner (issue 24, item 13): the owner exited holding a normal
 * mutex, and its TID went to a new thread that began after the main
 * thread began to wait. The mutex's __owner still holds that TID, which is
 * a live thread of the process again; the report must say owner
 * "unknown", with owner_unknown "began_after_wait", never the new thread.
 *
 * TID reuse made deterministic: in a PID namespace of its own (a child
 * unshares as root, then forks: the grandchild is the namespace's process
 * 1, with its own /proc mounted in a mount namespace of its own), the test
 * writes /proc/sys/kernel/ns_last_pid (the TID before the dead owner's, as CRIU
 * does to restore a process's ids) and creates the thread, which then
 * gets the dead owner's TID (retried until it does: the TID is free only
 * once the kernel has released the exited thread). Where that cannot be
 * done (not root, no namespaces, TSan: which reports the abuse of a mutex
 * unlocked by another thread itself), the test reports skipped (77).
 *
 * Events, not sleeps: the impostor is created once the main thread is
 * seen blocked in the futex (this test's own read of
 * /proc/self/task/1/stat and syscall), 300 ms later, and the main thread
 * is let in once the report holds main's wait chain. Why 300 ms: the
 * library bounds the wait's start by the first of the watchdog's readings
 * (a point every 50 ms) after which main did not run, a bound it began
 * before; the impostor must begin after that reading, on a busy machine
 * too. The oracles: the dead owner's TID and the impostor's, as each
 * thread's gettid() gave them, and the mutex's address.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "stacksnap.h"
#include "test_clock.h"

#define SKIP 77

static pthread_mutex_t g_mu; /* normal: no owner check, no robust list */
static atomic_int g_owner_tid, g_impostor_tid;
static atomic_bool g_impostor_go; /* the impostor may exit */
static char g_dir[64];
static char g_error[200]; /* why the setup failed, "" if it did not */

static int gettid_(void) { return (int)syscall(SYS_gettid); }

static bool read_text(const char *path, char *buf, size_t size) {
  FILE *f = fopen(path, "r");
  if (!f)
    return false;
  size_t n = fread(buf, 1, size - 1, f);
  buf[n] = '\0';
  fclose(f);
  return n > 0;
}

/* Whether thread tid is asleep in a futex wait (proc(5): state S, and the
   syscall file's first number is SYS_futex). */
static bool in_futex_wait(int tid) {
  char path[64], text[512];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  if (!read_text(path, text, sizeof text))
    return false;
  const char *p = strrchr(text, ')');
  if (!p || p[1] != ' ' || p[2] != 'S')
    return false;
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
  return read_text(path, text, sizeof text) && atol(text) == SYS_futex;
}

/* The owner: takes the mutex and exits holding it. */
static void *owner_main(void *arg) {
  (void)arg;
  atomic_store(&g_owner_tid, gettid_());
  CHECK_EQ(pthread_mutex_lock(&g_mu), 0);
  return NULL;
}

/* The impostor: only lives, with the dead owner's TID (once it has it). */
static void *impostor_main(void *arg) {
  (void)arg;
  atomic_store(&g_impostor_tid, gettid_());
  pthread_setname_np(pthread_self(), "impostor");
  while (!atomic_load(&g_impostor_go))
    sleep_ms(5);
  return NULL;
}

/* Whether the report in g_dir holds main's wait chain yet. */
static bool report_has_chain(void) {
  DIR *d = opendir(g_dir);
  bool found = false;
  struct dirent *e;
  static char text[1 << 20];
  while (d && !found && (e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 9 || strcmp(e->d_name + len - 9, "-lag.json") != 0)
      continue;
    char path[600];
    snprintf(path, sizeof path, "%s/%s", g_dir, e->d_name);
    found = read_text(path, text, sizeof text) &&
            strstr(text, "\"main_blocked_on\"") != NULL;
  }
  if (d)
    closedir(d);
  return found;
}

/* Once main waits: a thread with the dead owner's TID, then, once the
   report holds main's wait, lets main in (a normal mutex unlocks for any
   thread). */
static void *helper_main(void *arg) {
  pthread_t *impostor = arg;
  int owner = atomic_load(&g_owner_tid);
  for (int i = 0; i < 30000 && !in_futex_wait(1); i++)
    sleep_ms(1);
  sleep_ms(300);
  bool made = false;
  for (int tries = 0; tries < 500 && !made; tries++) {
    int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
    char num[16];
    int len = snprintf(num, sizeof num, "%d", owner - 1);
    bool set = fd >= 0 && write(fd, num, (size_t)len) == len;
    if (fd >= 0)
      close(fd);
    if (!set) {
      snprintf(g_error, sizeof g_error, "ns_last_pid: %s", strerror(errno));
      break;
    }
    atomic_store(&g_impostor_tid, 0);
    atomic_store(&g_impostor_go, false);
    if (pthread_create(impostor, NULL, impostor_main, NULL) != 0) {
      snprintf(g_error, sizeof g_error, "pthread_create failed");
      break;
    }
    while (!atomic_load(&g_impostor_tid))
      sleep_ms(1);
    made = atomic_load(&g_impostor_tid) == owner;
    if (!made) { /* the TID is not free yet: again */
      atomic_store(&g_impostor_go, true);
      pthread_join(*impostor, NULL);
      sleep_ms(2);
    }
  }
  if (!made && !g_error[0])
    snprintf(g_error, sizeof g_error, "no thread got TID %d", owner);
  for (int i = 0; i < 60000 && made && !report_has_chain(); i++)
    sleep_ms(1);
  CHECK_EQ(pthread_mutex_unlock(&g_mu), 0);
  return (void *)(intptr_t)made;
}

/* The raw value of "key" in text from `from` up to `end`. */
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

/* The test, as process 1 of its own PID namespace. */
static int in_namespace(void) {
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
      mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) !=
          0) {
    printf("test_lag_tid_reuse: skipped: cannot mount /proc: %s\n",
           strerror(errno));
    return SKIP;
  }
  if (access("/proc/sys/kernel/ns_last_pid", W_OK) != 0) {
    printf("test_lag_tid_reuse: skipped: ns_last_pid: %s\n", strerror(errno));
    return SKIP;
  }
  CHECK_EQ(pthread_mutex_init(&g_mu, NULL), 0);
  snprintf(g_dir, sizeof g_dir, "/tmp/snap_tid_reuse.XXXXXX");
  CHECK(mkdtemp(g_dir) != NULL, "mkdtemp");
  snap_lag_config_t cfg;
  snap_lag_config_default(&cfg);
  cfg.report_dir = g_dir;
  cfg.threshold_ms = 1000; /* the impostor is made ~300 ms into it */
  cfg.sample_interval_ms = 50;
  cfg.hang_ms = 600000; /* a lag, however long the box makes it */
  cfg.cpu_percent = 0;
  CHECK_EQ(snap_lag_start(&cfg), SNAP_OK);

  pthread_t owner, helper, impostor;
  CHECK_EQ(pthread_create(&owner, NULL, owner_main, NULL), 0);
  pthread_join(owner, NULL); /* gone, g_mu still held by it */
  CHECK_EQ(pthread_create(&helper, NULL, helper_main, &impostor), 0);
  snap_lag_loop_busy();
  CHECK_EQ(pthread_mutex_lock(&g_mu), 0); /* until the helper lets it in */
  pthread_mutex_unlock(&g_mu);
  snap_lag_loop_idle();
  void *made;
  pthread_join(helper, &made);
  CHECK_EQ(snap_lag_stop(), SNAP_OK);
  if (!made) {
    printf("test_lag_tid_reuse: skipped: %s\n", g_error);
    return SKIP;
  }
  atomic_store(&g_impostor_go, true);
  pthread_join(impostor, NULL);

  int owner_tid = atomic_load(&g_owner_tid);
  static char json[1 << 20];
  DIR *d = opendir(g_dir);
  int reports = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 9 || strcmp(e->d_name + len - 9, "-lag.json") != 0)
      continue;
    char path[600];
    snprintf(path, sizeof path, "%s/%s", g_dir, e->d_name);
    reports += read_text(path, json, sizeof json);
  }
  if (d)
    closedir(d);
  CHECK(reports == 1, "%d lag reports in %s", reports, g_dir);
  const char *chain = strstr(json, "\"main_blocked_on\":[");
  CHECK(chain != NULL, "no main_blocked_on in the report");
  if (chain) {
    const char *end = strstr(chain, "\"frames\"");
    char tid[32], kind[32], addr[32], own[32], own_tid[32], why[48];
    field(chain, end, "tid", tid, sizeof tid);
    field(chain, end, "kind", kind, sizeof kind);
    field(chain, end, "address", addr, sizeof addr);
    field(chain, end, "owner", own, sizeof own);
    field(chain, end, "owner_tid", own_tid, sizeof own_tid);
    field(chain, end, "owner_unknown", why, sizeof why);
    printf("main (tid %s) waits on %s %s: owner %s %s (%s); the dead owner "
           "was %d, the impostor is %d\n",
           tid, kind, addr, own, own_tid, why, owner_tid,
           atomic_load(&g_impostor_tid));
    CHECK(atoi(tid) == 1, "main_blocked_on starts at %s", tid);
    CHECK(strcmp(kind, "mutex") == 0, "kind %s", kind);
    CHECK(strtoull(addr, NULL, 16) == (uintptr_t)&g_mu, "address %s, want %p",
          addr, (void *)&g_mu);
    CHECK(strcmp(own, "unknown") == 0 && strcmp(own_tid, "null") == 0,
          "the impostor (TID %d, begun after the wait) named as the owner: "
          "owner %s, owner_tid %s",
          owner_tid, own, own_tid);
    CHECK(strcmp(why, "began_after_wait") == 0, "owner_unknown %s", why);
    /* Not followed either: main's chain is main alone. */
    const char *next = end ? strstr(end, "\n  {\"tid\":") : NULL;
    const char *last = strstr(chain, "]");
    CHECK(!next || (last && next > last), "main_blocked_on goes on past main");
  }
  if (check_failures == 0) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0)
      fprintf(stderr, "could not remove %s\n", g_dir);
  }
  return check_result("test_lag_tid_reuse");
}

int main(void) {
  if (getenv("SNAP_TEST_EMULATED")) {
    /* qemu-user: the threads /proc shows in the new namespace are the
       emulator's, and the owner's look does not see the impostor. */
    printf("test_lag_tid_reuse: skipped under an emulator\n");
    return SKIP;
  }
  if (SNAP_TEST_TSAN) {
    printf("test_lag_tid_reuse: skipped under TSan (a mutex unlocked by "
           "another thread, which TSan reports itself)\n");
    return SKIP;
  }
  /* The namespaces are made by a child, which then forks the test: this
     process stays where it was (LeakSanitizer's tracer, forked at exit,
     could not enter a namespace whose first process has exited). */
  fflush(stdout);
  pid_t child = fork();
  if (child < 0)
    return 1;
  if (child == 0) {
    if (unshare(CLONE_NEWPID | CLONE_NEWNS) != 0) {
      printf("test_lag_tid_reuse: skipped: unshare: %s (needs root)\n",
             strerror(errno));
      fflush(stdout);
      _exit(SKIP);
    }
    pid_t test = fork();
    if (test < 0)
      _exit(1);
    if (test == 0) {
      int rc = in_namespace();
      fflush(stdout);
      _exit(rc);
    }
    int st;
    while (waitpid(test, &st, 0) < 0 && errno == EINTR)
      ;
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  }
  int status;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR)
    ;
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  fprintf(stderr, "test_lag_tid_reuse: the child died of signal %d\n",
          WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return 1;
}
