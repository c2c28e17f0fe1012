/*
 * test_kept_files.c — the /proc files the Linux backend keeps open are
 * never the app's: an app that closes a descriptor it did not open, and
 * gets the number back for a file of its own, must find its file intact
 * (not read, not closed by us), and our next read must still be right.
 *
 * A forked child does not keep its parent thread's files open.
 *
 * The same for the trace's thread lister, which keeps /proc/self/task
 * open: its lists equal a fresh listing's (a thread started or ended
 * between two lists shows), the app's file at its number is left intact,
 * and a forked child lists its own one thread, not its parent's.
 *
 * Oracle: the kernel's own /proc/self/fd links name our kept files; the
 * app's file is a temporary file whose content and descriptor the test
 * checks after each of our reads; thread ids from gettid.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "oracle.h"
#include "platform/linux/linux.h"
#include "platform/platform.h"

/* Whether tid is among the n listed. */
static bool listed(const snap_thread_t *tids, int n, int tid) {
  for (int i = 0; i < n; i++)
    if (tids[i] == (snap_thread_t)tid)
      return true;
  return false;
}

static pthread_mutex_t g_park = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int g_parked_tid;

static void *parked(void *arg) {
  (void)arg;
  atomic_store(&g_parked_tid, (int)syscall(SYS_gettid));
  pthread_mutex_lock(&g_park); /* until the test lets it end */
  pthread_mutex_unlock(&g_park);
  return NULL;
}

/* The app closes `kept` and gets the number back for a file of its own
   (content "app data", offset 8). */
static int take_number(int kept) {
  close(kept);
  char name[] = "/tmp/snap_kept.XXXXXX";
  int app = mkstemp(name);
  if (app != kept) {
    CHECK(dup2(app, kept) == kept, "dup2");
    close(app);
    app = kept;
  }
  unlink(name);
  CHECK(write(app, "app data", 8) == 8, "write");
  return app;
}

static void lister(void) {
  snap__plat_thread_lister_t l = SNAP__PLAT_THREAD_LISTER_INIT;
  snap_thread_t a[64], b[64];
  int self = (int)syscall(SYS_gettid);
  int n = snap__plat_thread_list_kept(&l, a, 64);
  CHECK(n == snap__plat_thread_list(b, 64), "kept list %d long", n);
  CHECK(n >= 1 && listed(a, n, self), "this thread is not in the list");
  int kept = oracle_fd_ending_in("/task");
  CHECK(kept >= 0 && kept == l.fd, "the task directory is kept open");

  /* Read again from its start: a thread started since shows, and goes. */
  pthread_mutex_lock(&g_park);
  pthread_t t;
  pthread_create(&t, NULL, parked, NULL);
  int parked_tid;
  while (!(parked_tid = atomic_load(&g_parked_tid)))
    usleep(1000);
  /* Threads are told by id, not counted: a sanitizer's runtime or
     qemu-user may run threads of its own (TSan starts one at the first
     pthread_create). */
  int m = snap__plat_thread_list_kept(&l, a, 64);
  CHECK(listed(a, m, parked_tid) && listed(a, m, self),
        "a new thread is not listed (%d then %d)", n, m);
  pthread_mutex_unlock(&g_park);
  pthread_join(t, NULL);
  /* join returns once the kernel cleared the thread's tid word, a moment
     before /proc stops listing it: wait for a fresh listing to agree. */
  for (int i = 0; i < 2000; i++) {
    m = snap__plat_thread_list(b, 64);
    if (!listed(b, m, parked_tid))
      break;
    usleep(1000);
  }
  m = snap__plat_thread_list_kept(&l, a, 64);
  CHECK(listed(a, m, self) && !listed(a, m, parked_tid),
        "an ended thread is listed");

  /* A forked child lists itself, not its parent (whose main thread is
     this one: it does not exist in the child). */
  pid_t pid = fork();
  if (pid == 0) {
    int c = snap__plat_thread_list_kept(&l, a, 64);
    snap__plat_thread_lister_close(&l);
    _exit(listed(a, c, (int)getpid()) && !listed(a, c, self) ? 0 : 1);
  }
  int st = -1;
  CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
            WEXITSTATUS(st) == 0,
        "the child listed its parent's threads, or not itself");
  m = snap__plat_thread_list_kept(&l, a, 64);
  CHECK(listed(a, m, self), "the parent's list after the child's");

  /* The app takes the number: its file is left alone, our list right. */
  int app = take_number(l.fd);
  m = snap__plat_thread_list_kept(&l, a, 64);
  CHECK(listed(a, m, self), "the list after the app took it");
  CHECK(l.fd != app, "the lister reads the app's descriptor");
  CHECK(fcntl(app, F_GETFD) >= 0, "the app's descriptor was closed");
  CHECK(lseek(app, 0, SEEK_CUR) == 8, "the app's file offset moved");
  snap__plat_thread_lister_close(&l);
  CHECK(fcntl(app, F_GETFD) >= 0, "the app's descriptor was closed");
  close(app);
  CHECK(oracle_fd_ending_in("/task") < 0, "the lister left its directory open");
}

int main(void) {
  lister();
  int tid = (int)syscall(SYS_gettid);
  char buf[1024], suffix[64];
  CHECK(snap__linux_read_task(tid, "stat", buf, sizeof buf) > 0, "stat");
  snprintf(suffix, sizeof suffix, "/task/%d/stat", tid);
  int kept = oracle_fd_ending_in(suffix);
  CHECK(kept >= 0, "the stat file is kept open");
  if (kept < 0)
    return check_result("test_kept_files");

  /* A forked child does not keep its parent thread's files. */
  pid_t pid = fork();
  if (pid == 0)
    _exit(oracle_fd_ending_in(suffix) < 0 ? 0 : 1);
  int st = -1;
  CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
            WEXITSTATUS(st) == 0,
        "a forked child kept its parent thread's stat file open");
  CHECK(oracle_fd_ending_in(suffix) == kept, "the parent's kept file went");

  /* The app closes it and gets the number back for its own file. */
  int app = take_number(kept);

  /* Our next read of the same file: right, and the app's file untouched. */
  ssize_t n = snap__linux_read_task(tid, "stat", buf, sizeof buf);
  char want[32];
  snprintf(want, sizeof want, "%d (", tid);
  CHECK(n > 0 && strncmp(buf, want, strlen(want)) == 0,
        "our read after the app took the number: %.40s", buf);
  CHECK(fcntl(app, F_GETFD) >= 0, "the app's descriptor was closed");
  CHECK(lseek(app, 0, SEEK_CUR) == 8, "the app's file offset moved");

  /* Another thread's files: ours are closed, the app's is not. */
  (void)snap__linux_read_task(1, "stat", buf, sizeof buf); /* not ours */
  CHECK(fcntl(app, F_GETFD) >= 0,
        "the app's descriptor was closed when we moved on");
  char back[16] = "";
  CHECK(pread(app, back, 8, 0) == 8 && memcmp(back, "app data", 8) == 0,
        "the app's file changed: %.8s", back);
  close(app);
  return check_result("test_kept_files");
}
