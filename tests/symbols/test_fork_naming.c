/*
 * test_fork_naming.c — a forked child never waits on a lock that a thread
 * of the parent held at fork() (design.md rule 8; issue 12, defect 3).
 *
 * Three threads name fresh stacks without pause: each stack is the
 * thread's own, with frame 0 replaced by an address nobody named before
 * (a random function of a library of 50 000), so every call misses the
 * cache; two of the threads name each such stack twice, since the cache
 * admits a stack on its second sighting only (cache_admit.c: the first
 * takes neither the stripe's nor the shared names' lock), so that between
 * them the calls go through everything naming takes a lock in: a cache
 * stripe, the shared names, the ELF provider, the image table's writer (one
 * thread also dlopens and dlcloses a library, so the table is rebuilt and the
 * loader walked), libdw's session for source lines (another thread asks for
 * them). Meanwhile the main thread forks FORKS times. Each child names its
 * own stack (its own function must be in it, named), names one fresh
 * address of the big library (nm's name for it: the library's own symbol,
 * dlsym'ed by the parent) and exits.
 *
 * A child that waits on a lock a thread of the parent held (a thread that
 * does not exist in the child) waits forever. The parent gives each child
 * CHILD_SECONDS; a child still alive then, that has used no CPU time over
 * the last STALL_SECONDS, is hung: killed and counted. (One still
 * burning CPU is only slow — a loaded 2-core box — and gets up to
 * SLOW_SECONDS.) The test fails on any hung child. SNAP_TEST_FORK_GDB=1
 * prints a hung child's stack (gdb): which lock it waits on.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "stacksnap.h"
#include "test_clock.h"
#include "xorshift.h"

#define FORKS 150
#define NAMERS 3
#define FUNCS 50000
#define PICKS 16384
#define CHILD_SECONDS 1.0
#define STALL_SECONDS 1.0
#define SLOW_SECONDS 20.0

static atomic_bool g_stop;
static bool g_dlopen; /* SNAP_TEST_FORK_DLOPEN: see namer() */
static atomic_long g_named;
static uintptr_t g_pick[PICKS]; /* function starts in the big library */
static int g_pick_index[PICKS];

/* Names this thread's stack (base[0..n), captured once by the caller)
   with frames 0 and 1 at random functions of the big library, `times`
   times (the second is cached: a stripe's and the shared names' locks). The
   namer threads capture once, not every time: capturing while another thread
   rebuilds the image table is a race of the walker's own (issue 12,
   defect 2), which ThreadSanitizer would report here. */
__attribute__((noinline)) static bool name_fresh(uint64_t *rng, unsigned flags,
                                                 const uintptr_t *base, int n,
                                                 int times) {
  uintptr_t pcs[32];
  if (n <= 0 || n > 32)
    return false;
  memcpy(pcs, base, (size_t)n * sizeof *pcs);
  /* Frames 0 and 1 random: the stack as a whole is new to the cache. A
     function i holds i % 7 nops and a ret, so any offset up to i % 7 is
     inside it; frame 1 is a return address (named at pc - 1). */
  int k = (int)(snap_xorshift(rng) % PICKS);
  int k1 = (int)(snap_xorshift(rng) % PICKS);
  pcs[0] =
      g_pick[k] + (uintptr_t)(snap_xorshift(rng) % (g_pick_index[k] % 7 + 1));
  if (n > 1)
    pcs[1] = g_pick[k1] + 1;
  bool ok = true;
  for (int t = 0; t < times; t++) {
    const snap_stack_t *s =
        snap_symbolicate(pcs, n, flags | SNAP_SYMBOLICATE_EXACT_PC0);
    bool named = false;
    if (s && snap_stack_count(s) > 0 && snap_stack_frame(s, 0)->symbol) {
      char expect[32];
      snprintf(expect, sizeof expect, "snapbig_%d", g_pick_index[k]);
      named = strcmp(snap_stack_frame(s, 0)->symbol, expect) == 0;
    }
    snap_stack_release(s);
    ok = ok && named;
  }
  return ok;
}

typedef struct namer {
  int index;
  long bad;
} namer_t;

static void *namer(void *arg) {
  namer_t *me = arg;
  uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)(me->index + 1);
  uintptr_t base[32];
  int n = snap_capture_self(base, 32, 0, 0);
  unsigned flags = me->index == 2 ? SNAP_SYMBOLICATE_SOURCE_LINES : 0;
  for (long i = 0; !atomic_load(&g_stop); i++) {
    if (!name_fresh(&rng, flags, base, n, me->index == 0 ? 1 : 2))
      me->bad++;
    atomic_fetch_add(&g_named, 1);
    if (me->index == 0 && i % 8 == 0) {
      /* The image table rebuilt (the loader walked, under the table's
         writer lock). With SNAP_TEST_FORK_DLOPEN set, also a dlopen and a
         dlclose of the app's own: glibc 2.36 does not make the loader's
         list lock new in a child, so a fork while they edit the list
         leaves the child's loader stuck (docs/guarantees.md, "After fork()").
       */
      if (g_dlopen) {
        void *h = dlopen(ELF_SMALL_LIB, RTLD_NOW | RTLD_LOCAL);
        if (h)
          dlclose(h);
      }
      (void)snap_set_app_image_prefixes(NULL, 0);
    }
  }
  return NULL;
}

/* The child: its own stack, named, must hold this function; and one fresh
   address of the big library must get its own name. */
__attribute__((noinline)) static int child_body(void) {
  const snap_stack_t *s = snap_callstack_symbols(64, 0);
  bool mine = false;
  for (int i = 0; s && i < snap_stack_count(s); i++) {
    const char *sym = snap_stack_frame(s, i)->symbol;
    if (sym && strcmp(sym, "child_body") == 0)
      mine = true;
  }
  snap_stack_release(s);
  uint64_t rng = (uint64_t)getpid() * 0x2545f4914f6cdd1dull + 1;
  uintptr_t base[32];
  int n = snap_capture_self(base, 32, 0, 0);
  bool fresh = name_fresh(&rng, 0, base, n, 1);
  __asm__ volatile("" ::: "memory"); /* not a tail call */
  return mine && fresh ? 0 : 2;
}

/* The child's user + system time in clock ticks, or -1 once it is gone. */
static long cpu_ticks(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  char *p = strrchr(buf, ')'); /* the name may hold spaces */
  if (!p)
    return -1;
  /* After ")": state ppid pgrp session tty tpgid flags minflt cminflt
     majflt cmajflt utime stime: utime is the 12th field. */
  long utime = 0, stime = 0;
  if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld",
             &utime, &stime) != 2)
    return -1;
  return utime + stime;
}

/* 0 exited well, 1 hung (killed), 2 failed otherwise; *secs: its time. */
static int wait_child(pid_t pid, double *secs) {
  double start = mono_s(), last_progress = start;
  long last_ticks = -1;
  int status = 0;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid)
      break;
    if (w < 0 && errno != EINTR)
      return 2;
    double t = mono_s();
    long ticks = cpu_ticks(pid);
    if (ticks != last_ticks) {
      last_ticks = ticks;
      last_progress = t;
    }
    bool stalled = t - last_progress >= STALL_SECONDS;
    if ((t - start >= CHILD_SECONDS && stalled) || t - start >= SLOW_SECONDS) {
      if (getenv("SNAP_TEST_FORK_GDB")) { /* which lock: gdb's answer */
        char cmd[128];
        snprintf(cmd, sizeof cmd,
                 "gdb -p %d -batch -ex bt 2>/dev/null | grep '^#'", (int)pid);
        if (system(cmd) != 0)
          printf("(no backtrace: gdb missing or refused)\n");
      }
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
      *secs = t - start;
      return 1;
    }
    usleep(2000);
  }
  *secs = mono_s() - start;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 2;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  g_dlopen = getenv("SNAP_TEST_FORK_DLOPEN") != NULL;
  void *big = dlopen(ELF_BIG_LIB, RTLD_NOW | RTLD_LOCAL);
  CHECK(big != NULL, "dlopen %s: %s", ELF_BIG_LIB, dlerror());
  if (!big)
    return check_result("test_fork_naming");
  uint64_t rng = 12345;
  for (int k = 0; k < PICKS; k++) {
    int i;
    do /* every third function is local: dlsym cannot see it */
      i = (int)(snap_xorshift(&rng) % FUNCS);
    while (i % 3 == 0);
    char name[32];
    snprintf(name, sizeof name, "snapbig_%d", i);
    g_pick[k] = (uintptr_t)dlsym(big, name);
    g_pick_index[k] = i;
    CHECK(g_pick[k] != 0, "dlsym %s", name);
  }
  /* Warm: the big library parsed before the threads start (the children
     then only look up). */
  uint64_t warm = 1;
  uintptr_t base[32];
  int n = snap_capture_self(base, 32, 0, 0);
  CHECK(name_fresh(&warm, 0, base, n, 1), "the big library's names");

  pthread_t t[NAMERS];
  namer_t st[NAMERS];
  for (int i = 0; i < NAMERS; i++) {
    st[i] = (namer_t){i, 0};
    pthread_create(&t[i], NULL, namer, &st[i]);
  }
  while (atomic_load(&g_named) < 100)
    usleep(1000);

  int hung = 0, failed = 0, forks = 0;
  double slowest = 0;
  for (; forks < FORKS; forks++) {
    usleep(1000 + (useconds_t)(snap_xorshift(&rng) % 4000));
    pid_t pid = fork();
    if (pid == 0)
      _exit(child_body());
    CHECK(pid > 0, "fork: %s", strerror(errno));
    if (pid < 0)
      break;
    double secs = 0;
    int r = wait_child(pid, &secs);
    if (secs > slowest)
      slowest = secs;
    if (r == 1) {
      hung++;
      printf("child %d of %d hung (no CPU time for %.1f s): killed\n",
             forks + 1, FORKS, STALL_SECONDS);
    } else if (r == 2) {
      failed++;
    }
  }
  atomic_store(&g_stop, true);
  long bad = 0;
  for (int i = 0; i < NAMERS; i++) {
    pthread_join(t[i], NULL);
    bad += st[i].bad;
  }
  printf("%d forks while %d threads named %ld fresh stacks: %d children "
         "hung, %d failed, slowest child %.3f s\n",
         forks, NAMERS, atomic_load(&g_named), hung, failed, slowest);
  CHECK(hung == 0, "%d of %d forked children hung on a lock", hung, forks);
  CHECK(failed == 0, "%d of %d children did not name their own stack", failed,
        forks);
  CHECK(bad == 0, "%ld stacks named wrong in the parent", bad);
  dlclose(big);
  return check_result("test_fork_naming");
}
