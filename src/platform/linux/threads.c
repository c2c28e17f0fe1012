/*
 * threads.c — Linux threads: who am I, who is main, who exists, who runs,
 * when each began, and where a thread's stack ends.
 *
 * Thread ids are kernel TIDs. The thread list comes from /proc/self/task,
 * read with getdents64 into a stack buffer (no opendir: it allocates); a
 * caller that lists every few ms keeps the directory open (its lister).
 *
 * Stack bounds: a walk only moves up the stack from the sp it starts at, so
 * the top must be exact: every byte in [sp, top) must be readable, or a
 * corrupt frame pointer could lead a direct read into a hole. The bottom
 * tells the sampling handler how much room is left below it.
 *  - Main thread: pthread_getattr_np at load time (it reads /proc/self/maps,
 *    ~50 us, so never again): [top - RLIMIT_STACK, top).
 *  - Any other stack (a thread's, an alternate signal stack, a coroutine's):
 *    the memory mapping that holds sp, found in /proc/self/maps with open and
 *    read and a parser of our own (learn_stack). A thread's own stack is then
 *    kept in initial-exec TLS (no allocation, no lock): a thread pays the
 *    parse once (tens of microseconds to milliseconds with many mappings),
 *    then nothing. Other stacks are looked up each time: their memory may be
 *    freed and reused. Only anonymous read-write mappings get direct reads
 *    (every byte of one reads without a fault); a thread's stack mapping
 *    holds its whole stack (glibc's guard page is a mapping of its own).
 *  - Never inside the stopped window: the parse costs up to milliseconds
 *    with many mappings, and the window parses no file (design.md rule 1).
 *    The sampler learns the bounds on its own thread, before it stops the
 *    target, and hands them in through its request (sample.c): the target's
 *    own stack goes into the target's TLS, any other into t_window for that
 *    one window. A stack known by neither is unknown there.
 * When /proc is unavailable the bounds are unknown and the walker falls back
 * to checked reads (and the sampler refuses: it cannot check the room).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "platform/linux/linux.h"

static pid_t g_main_tid;
static uintptr_t g_main_lo, g_main_hi;

/* The per-thread cache: this thread's own stack mapping, once found. */
static _Thread_local __attribute__((tls_model("initial-exec")))
uintptr_t t_stack_lo,
    t_stack_hi;
/* A stack that is not the thread's own, handed in by the sampler for the
   window in progress (end 0: none). */
static _Thread_local __attribute__((tls_model("initial-exec")))
snap__linux_stack_t t_window;

int snap__linux_gettid(void) { return (int)syscall(SYS_gettid); }

bool snap__linux_thread_alive(int tid) {
  return tid > 0 && syscall(SYS_tgkill, getpid(), tid, 0) == 0;
}

snap_thread_t snap__plat_thread_self(void) {
  return (snap_thread_t)snap__linux_gettid();
}

snap_thread_t snap__plat_thread_main(void) { return (snap_thread_t)g_main_tid; }

/* Parses "start-end perms offset dev inode [path]" (hex addresses). A
   stack is anonymous read-write memory (inode 0): anything else — a file
   mapping, which raises SIGBUS past the file's end, or [vvar], parts of
   which fault when read — is never taken as stack bounds. */
static bool parse_map_line(const char *line, uintptr_t *start, uintptr_t *end,
                           bool *stack_like) {
  uintptr_t v[2] = {0, 0};
  const char *p = line;
  for (int k = 0; k < 2; k++) {
    int digits = 0;
    for (;; p++, digits++) {
      char c = *p;
      unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                   : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                                          : 16;
      if (d == 16)
        break;
      v[k] = v[k] << 4 | d;
    }
    if (!digits || *p != (k == 0 ? '-' : ' '))
      return false;
    p++;
  }
  *start = v[0];
  *end = v[1];
  bool rw = p[0] == 'r' && p[1] == 'w';
  /* Skip perms, offset and dev; then the inode. */
  for (int field = 0; field < 3; field++) {
    while (*p && *p != ' ')
      p++;
    while (*p == ' ')
      p++;
  }
  *stack_like = rw && p[0] == '0' && (p[1] == ' ' || p[1] == '\0');
  return true;
}

/* The mapping holding addr, or the [stack] mapping if want_stack, from
   /proc/self/maps read without stdio; *stack_like as above. Never in the
   stopped window: the file can take milliseconds to read. */
static bool find_mapping(uintptr_t addr, bool want_stack, uintptr_t *lo,
                         uintptr_t *hi, bool *stack_like) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  char buf[4096], line[256];
  size_t len = 0;
  bool found = false, done = false;
  while (!done) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    for (ssize_t i = 0; i < n && !done; i++) {
      if (buf[i] != '\n') {
        if (len < sizeof line - 1) /* long paths: only the start matters */
          line[len++] = buf[i];
        continue;
      }
      line[len] = '\0';
      len = 0;
      uintptr_t start, end;
      if (!parse_map_line(line, &start, &end, stack_like))
        continue;
      bool match = want_stack ? strstr(line, "[stack]") != NULL
                              : addr >= start && addr < end;
      if (match) {
        found = true;
        *lo = start;
        *hi = end;
        done = true;
      } else if (!want_stack && start > addr) {
        done = true; /* the file is sorted: addr is in no mapping */
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
  /* On the main thread, glibc reports [top - RLIMIT_STACK, top): all the
     room the stack may grow into. */
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
  /* Loaded from another thread: the mapping as it is now (the cache below
     picks up the rest if it grows). */
  bool stack_like = false;
  if (!hi && (!find_mapping(0, true, &lo, &hi, &stack_like) || !stack_like))
    lo = hi = 0;
  g_main_lo = lo;
  g_main_hi = hi;
}

/* A forked child's only thread is its new main thread; the thread files
   kept open (proc_files.c) were a parent thread's. */
static void after_fork_child(void) {
  g_main_tid = getpid();
  snap__linux_task_files_forget();
}

__attribute__((constructor)) static void threads_init(void) {
  record_main();
  (void)snap__plat_on_fork(SNAP__FORK_THREADS, NULL, NULL, after_fork_child);
}

/* A stack this thread knows without reading a file: the main thread's, its
   own (TLS), or (unless own_only) the one handed in for the window in
   progress: [*lo, *end), and whether it takes direct reads. Word by word,
   no struct copies: the sampling handler calls this before it has checked
   the room left on its stack. [signal-safe] */
static bool known_stack(uintptr_t sp, bool own_only, uintptr_t *lo,
                        uintptr_t *end, bool *direct) {
  if (g_main_hi && sp >= g_main_lo && sp < g_main_hi) {
    *lo = g_main_lo, *end = g_main_hi, *direct = true;
    return true;
  }
  if (sp >= t_stack_lo && sp < t_stack_hi) {
    *lo = t_stack_lo, *end = t_stack_hi, *direct = true;
    return true;
  }
  if (!own_only && t_window.end && sp >= t_window.lo && sp < t_window.end) {
    *lo = t_window.lo, *end = t_window.end, *direct = t_window.direct;
    return true;
  }
  return false;
}

bool snap__linux_learn_stack(uintptr_t sp, uintptr_t self, int tid,
                             snap__linux_stack_t *out) {
  if (g_main_hi && sp >= g_main_lo && sp < g_main_hi) { /* known at load */
    *out = (snap__linux_stack_t){g_main_lo, g_main_hi, self, true, false};
    return true;
  }
  uintptr_t lo, hi;
  bool stack_like;
  if (!find_mapping(sp, false, &lo, &hi, &stack_like))
    return false;
  /* The thread's own stack, which lives exactly as long as the thread:
     glibc keeps the thread descriptor at the top of the block holding the
     stack, so the descriptor is in the mapping and the stack lies below it.
     The top is clipped to the descriptor, because the kernel may have merged
     the block with memory above it that can be unmapped later. Not on the
     main thread: its descriptor lives in memory of the loader's, which the
     kernel may merge with an anonymous mapping holding a coroutine's stack
     (its own stack is known above). And not an alternate signal stack or a
     coroutine's: their memory may be freed and reused, so they are looked
     up each time. */
  if (stack_like && self > sp && self >= lo && self < hi && tid != g_main_tid) {
    *out = (snap__linux_stack_t){lo, self, self, true, true};
    return true;
  }
  *out = (snap__linux_stack_t){lo, hi, self, stack_like, false};
  return true;
}

void snap__linux_window_stack(const snap__linux_stack_t *s) {
  t_window.end = 0;
  if (!s->end)
    return;
  if (!s->own)
    t_window.lo = s->lo, t_window.direct = s->direct, t_window.end = s->end;
  else if (s->self == (uintptr_t)pthread_self()) /* it is about this thread */
    t_stack_lo = s->lo, t_stack_hi = s->end;
}

void snap__linux_window_stack_clear(void) { t_window.end = 0; }

bool snap__linux_stack_low(uintptr_t addr, uintptr_t *lo) {
  uintptr_t end;
  bool direct;
  return known_stack(addr, false, lo, &end, &direct);
}

static bool stack_bounds(uintptr_t sp, bool own_only, uintptr_t *lo,
                         uintptr_t *hi) {
  *lo = sp;
  *hi = 0;
  uintptr_t low, end;
  bool direct;
  if (!known_stack(sp, own_only, &low, &end, &direct)) {
    /* In the window only what the sampler handed in counts. */
    snap__linux_stack_t s;
    if (snap__plat_in_stopped_window() ||
        !snap__linux_learn_stack(sp, (uintptr_t)pthread_self(),
                                 snap__linux_gettid(), &s))
      return false;
    if (s.own)
      t_stack_lo = s.lo, t_stack_hi = s.end;
    else if (own_only)
      return false;
    end = s.end, direct = s.direct;
  }
  if (!direct)
    return false;
  *hi = end;
  return true;
}

bool snap__plat_stack_bounds(uintptr_t sp, uintptr_t *lo, uintptr_t *hi) {
  return stack_bounds(sp, false, lo, hi);
}

bool snap__plat_own_stack_bounds(uintptr_t sp, uintptr_t *lo, uintptr_t *hi) {
  return stack_bounds(sp, true, lo, hi);
}

struct linux_dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

/* The TIDs in the directory fd, read from its start. */
static int list_dir(int fd, snap_thread_t *out, int max) {
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
  return total;
}

int snap__plat_thread_list(snap_thread_t *out, int max) {
  int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return SNAP_EIO;
  int total = list_dir(fd, out, max);
  close(fd);
  return total;
}

/* The lister's descriptor as a kept file (proc_files.c: whether it is
   still the directory it opened). */
static snap__linux_kept_t kept_of(const snap__plat_thread_lister_t *l) {
  return (snap__linux_kept_t){.fd = l->fd, .dev = l->dev, .ino = l->ino};
}

int snap__plat_thread_list_kept(snap__plat_thread_lister_t *l,
                                snap_thread_t *out, int max) {
  snap__linux_kept_t k = kept_of(l);
  if (l->fd >= 0 && l->pid == (int)getpid() && snap__linux_kept_ours(&k) &&
      lseek(l->fd, 0, SEEK_SET) == 0)
    return list_dir(l->fd, out, max);
  snap__plat_thread_lister_close(l);
  if (!snap__linux_kept_open(&k, "/proc/self/task"))
    return SNAP_EIO;
  *l = (snap__plat_thread_lister_t){
      .fd = k.fd, .pid = (int)getpid(), .dev = k.dev, .ino = k.ino};
  return list_dir(l->fd, out, max);
}

void snap__plat_thread_lister_close(snap__plat_thread_lister_t *l) {
  /* In a forked child it is the child's copy (of the parent's directory):
     closed like the parent's, if the number is still ours. */
  snap__linux_kept_t k = kept_of(l);
  snap__linux_kept_close(&k);
  l->fd = -1;
}

/* Both from one read of /proc/self/task/<tid>/stat (proc(5)): field 3,
   the state letter; field 22, the thread's start in clock ticks since boot
   (the kernel's start_boottime, cut down to a tick: CLOCK_BOOTTIME, which
   counts suspend). Its earliest instant on our clock (CLOCK_MONOTONIC,
   which does not) is that tick's start less the time spent suspended so
   far, the two clocks' difference now; a thread that began before the
   monotonic clock's zero reads 1 (earlier than anything it is compared
   with), never 0 (unknown). */
static uint64_t began_mono_ns(uint64_t ticks) {
  long hz = sysconf(_SC_CLK_TCK);
  struct timespec boot;
  if (hz <= 0 || hz > 1000000000L || ticks > UINT64_MAX / 1000000000u ||
      clock_gettime(CLOCK_BOOTTIME, &boot) != 0)
    return 0;
  uint64_t mono = snap__plat_now_ns();
  uint64_t boot_ns =
      (uint64_t)boot.tv_sec * 1000000000u + (uint64_t)boot.tv_nsec;
  uint64_t suspended = boot_ns > mono ? boot_ns - mono : 0;
  uint64_t began = ticks * 1000000000u / (uint64_t)hz;
  return began > suspended ? began - suspended : 1;
}

int snap__plat_thread_look(snap_thread_t thread,
                           snap__plat_thread_look_t *out) {
  *out = (snap__plat_thread_look_t){0};
  if (!snap__linux_tid_ok(thread))
    return SNAP_ENOTHREAD;
  char buf[1024];
  ssize_t n = snap__linux_read_task((int)thread, "stat", buf, sizeof buf);
  if (n < 0)
    return errno == ENOENT || errno == ESRCH ? SNAP_ENOTHREAD : SNAP_EIO;
  if (n == 0)
    return SNAP_ENOTHREAD; /* the thread exited between open and read */
  snap__linux_stat_t st;
  if (snap__linux_stat_parse(buf, &st) != SNAP_OK)
    return SNAP_EIO;
  out->running = st.state == 'R';
  out->began_ns = began_mono_ns(st.starttime);
  return SNAP_OK;
}

int snap__plat_thread_is_running(snap_thread_t thread) {
  snap__plat_thread_look_t look;
  int rc = snap__plat_thread_look(thread, &look);
  return rc == SNAP_OK ? look.running : rc;
}
