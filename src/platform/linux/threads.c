/*
 * threads.c — Linux threads: who am I, who is main, who exists, who runs,
 * and where a thread's stack ends.
 *
 * Thread ids are kernel TIDs. The thread list comes from /proc/self/task,
 * read with getdents64 into a stack buffer (no opendir: it allocates).
 *
 * Stack bounds: a walk only moves up the stack from the sp it starts at, so
 * the low bound is that sp and only the top matters.
 *  - Main thread: pthread_getattr_np at load time (it reads /proc/self/maps,
 *    ~50 us, so never again), or the [stack] line of /proc/self/maps when the
 *    library is loaded from another thread.
 *  - Other threads: glibc puts the thread descriptor (what pthread_self()
 *    returns) at the top of the block that holds the thread's stack, on
 *    x86_64 and arm64 alike, for stacks it allocates and for stacks the app
 *    supplies. So [sp, pthread_self()) is mapped and is that thread's stack.
 *    pthread_self() reads the thread pointer register: async-signal-safe,
 *    unlike pthread_getattr_np, which allocates its cpuset.
 * Anything else (an alternate signal stack, a coroutine stack) gets "unknown"
 * and the walker falls back to checked reads.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "platform/linux/linux.h"

/* Largest distance between sp and the thread descriptor we believe. glibc's
   default stack is 8 MiB; apps ask for up to a few hundred. */
#define MAX_THREAD_STACK ((uintptr_t)1 << 30)
/* Room below the main stack's mapping start recorded at load: the mapping
   grows down as the program recurses (up to RLIMIT_STACK). */
#define MAIN_STACK_GROWTH ((uintptr_t)1 << 30)

static pid_t g_main_tid;
static uintptr_t g_main_lo, g_main_hi;

int snap__linux_gettid(void) { return (int)syscall(SYS_gettid); }

snap_thread_t snap__plat_thread_self(void) {
  return (snap_thread_t)snap__linux_gettid();
}

snap_thread_t snap__plat_thread_main(void) { return (snap_thread_t)g_main_tid; }

/* Reads /proc/self/maps line by line without stdio, looking for [stack]. */
static bool main_stack_from_maps(uintptr_t *lo, uintptr_t *hi) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  char buf[8192], line[512];
  size_t len = 0;
  bool found = false;
  ssize_t n;
  while (!found && (n = read(fd, buf, sizeof buf)) != 0) {
    if (n < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    for (ssize_t i = 0; i < n && !found; i++) {
      if (buf[i] != '\n') {
        if (len < sizeof line - 1)
          line[len++] = buf[i];
        continue;
      }
      line[len] = '\0';
      len = 0;
      unsigned long a, b;
      if (strstr(line, "[stack]") && sscanf(line, "%lx-%lx", &a, &b) == 2) {
        *lo = a;
        *hi = b;
        found = true;
      }
    }
  }
  close(fd);
  return found;
}

static void record_main(void) {
  g_main_tid = getpid();
  uintptr_t lo = 0, hi = 0;
  pthread_attr_t attr;
  if (snap__linux_gettid() == g_main_tid &&
      pthread_getattr_np(pthread_self(), &attr) == 0) {
    void *addr;
    size_t size;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
      lo = (uintptr_t)addr;
      hi = lo + size;
    }
    pthread_attr_destroy(&attr);
  }
  if (!hi)
    (void)main_stack_from_maps(&lo, &hi);
  g_main_lo = lo;
  g_main_hi = hi;
}

/* A forked child's only thread is its new main thread. */
static void after_fork_child(void) { g_main_tid = getpid(); }

__attribute__((constructor)) static void threads_init(void) {
  record_main();
  pthread_atfork(NULL, NULL, after_fork_child);
}

bool snap__plat_stack_bounds(uintptr_t sp, uintptr_t *lo, uintptr_t *hi) {
  *lo = sp;
  uintptr_t main_floor =
      g_main_lo > MAIN_STACK_GROWTH ? g_main_lo - MAIN_STACK_GROWTH : 0;
  if (g_main_hi && sp >= main_floor && sp < g_main_hi) {
    *hi = g_main_hi;
    return true;
  }
  uintptr_t self = (uintptr_t)pthread_self();
  if (self > sp && self - sp < MAX_THREAD_STACK) {
    *hi = self;
    return true;
  }
  *hi = 0;
  return false;
}

struct linux_dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

int snap__plat_thread_list(snap_thread_t *out, int max) {
  int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return SNAP_EIO;
  _Alignas(8) char buf[4096];
  int total = 0;
  for (;;) {
    long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    for (long off = 0; off < n;) {
      struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
      off += d->d_reclen;
      char *end;
      long tid = strtol(d->d_name, &end, 10);
      if (d->d_name[0] < '0' || d->d_name[0] > '9' || *end || tid <= 0)
        continue;
      if (out && total < max)
        out[total] = (snap_thread_t)tid;
      total++;
    }
  }
  close(fd);
  return total;
}

/* Field 3 of /proc/self/task/<tid>/stat is the state letter; the command
   name before it is in parentheses and may itself hold spaces and ')', so
   look from the last ')'. */
int snap__plat_thread_is_running(snap_thread_t thread) {
  if (thread == 0 || thread > (snap_thread_t)0x7fffffff)
    return SNAP_ENOTHREAD;
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/self/task/%llu/stat",
           (unsigned long long)thread);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? SNAP_ENOTHREAD : SNAP_EIO;
  ssize_t n;
  do
    n = read(fd, buf, sizeof buf - 1);
  while (n < 0 && errno == EINTR);
  close(fd);
  if (n <= 0)
    return SNAP_ENOTHREAD; /* the thread exited between open and read */
  buf[n] = '\0';
  char *paren = strrchr(buf, ')');
  if (!paren || paren[1] != ' ' || !paren[2])
    return SNAP_EIO;
  return paren[2] == 'R';
}
