/*
 * test_lock.c — the platform lock (snap__lock_t) on Linux: a lock that
 * records its owner, and no lock of ours inherited held by a forked child
 * (docs/apple.md, "Contract: locks and the stopped window"; design.md
 * rule 8).
 *
 * 1. Owner recorded. Apple's os_unfair_lock keeps the owner's thread port
 *    in the lock word, which is what lets a waiter donate its priority; a
 *    semaphore keeps a count. Linux's counterpart is the priority-
 *    inheritance futex, whose word holds the owner's thread id (futex(2),
 *    "Priority-inheritance futexes": the kernel ABI, not our code, is the
 *    oracle; glibc keeps the futex word first in pthread_mutex_t). So a
 *    held snap__lock_t must read gettid(), and 0 once released.
 * 2. Fork. Two threads hammer the symbol cache's stripe locks
 *    (snap_symbol_cache_stats takes all sixteen in turn, so one is held
 *    most of the time) while the main thread forks again and again; each
 *    child takes every stripe lock itself and must finish within its alarm.
 *    A child that inherited a stripe held by a thread that does not exist
 *    there would wait forever (killed by SIGALRM: the test fails).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "platform/platform.h"
#include "stacksnap.h"
#include "test_clock.h"

#define FORK_SECONDS 3
#define MAX_FORKS 300
#define CHILD_ALARM_SECONDS 20

static atomic_bool g_stop;

static int lock_word(snap__lock_t *l) {
  int word;
  memcpy(&word, l->opaque, sizeof word);
  return word;
}

static void test_owner_recorded(void) {
  snap__lock_t l;
  CHECK_EQ(snap__plat_lock_init(&l), SNAP_OK);
  CHECK_EQ(lock_word(&l), 0);
  snap__plat_lock_lock(&l);
  int tid = (int)syscall(SYS_gettid);
  CHECK(lock_word(&l) == tid,
        "a held lock's word is %d, not the owner's thread id %d: not a "
        "priority-inheritance lock",
        lock_word(&l), tid);
  snap__plat_lock_unlock(&l);
  CHECK_EQ(lock_word(&l), 0);
  snap__plat_lock_destroy(&l);
}

static void *hammer(void *arg) {
  (void)arg;
  while (!atomic_load(&g_stop)) {
    snap_symbol_cache_stats_t st = {.size = sizeof st};
    snap_symbol_cache_stats(&st);
  }
  return NULL;
}

static void test_fork_child_unlocked(void) {
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    pthread_create(&t[i], NULL, hammer, NULL);
  int forks = 0, hung = 0, failed = 0;
  double end = mono_s() + FORK_SECONDS;
  while (forks < MAX_FORKS && mono_s() < end) {
    pid_t pid = fork();
    if (pid == 0) {
      alarm(CHILD_ALARM_SECONDS); /* default action: killed by SIGALRM */
      snap_symbol_cache_stats_t st = {.size = sizeof st};
      _exit(snap_symbol_cache_stats(&st) == SNAP_OK ? 0 : 3);
    }
    if (pid < 0)
      break;
    forks++;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
      ;
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
      hung++;
      break; /* one is proof enough; each costs the whole alarm */
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      failed++;
  }
  atomic_store(&g_stop, true);
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  printf("%d forks, %d children hung on a lock, %d failed otherwise\n", forks,
         hung, failed);
  CHECK(hung || forks >= 10, "only %d forks", forks);
  CHECK(hung == 0,
        "%d of %d forked children hung on a cache lock held in the parent",
        hung, forks);
  CHECK_EQ(failed, 0);
}

int main(void) {
  test_owner_recorded();
  test_fork_child_unlocked();
  return check_result("test_lock");
}
