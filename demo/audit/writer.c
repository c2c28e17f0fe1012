/*
 * writer.c — getting the records out of the process, whatever way it ends.
 *
 * Owns:
 * - the output: STACKSNAP_AUDIT_OUT, or STACKSNAP_AUDIT_OUT-<pid> when a
 *   live process holds the name (an flock taken by its first writer) or
 *   in a forked child; the start-up copy of stderr when unset. Opened on
 *   the first write, moved above the descriptors a program uses, and
 *   checked (device, inode) before each write: a program that closes all
 *   its descriptors must not get our lines in a file of its own.
 * - the bounded queue of new records and the helper thread
 *   (`stacksnap-audit`) that writes their lines, and once a second an
 *   update for each record whose count moved. A full queue loses nothing:
 *   the next scan of the table finds the records no line was written for.
 * - the last write, at exit (a destructor), at _exit/_Exit (interposed)
 *   and on fatal signals (fatal.c): what is left, then an end line, with
 *   async-signal-safe calls only (system calls, and lines.c).
 * - fork: the child forgets the parent's records and starts its own file.
 * Must not: block a hooked call on I/O (only the helper and the last
 *   write do I/O); raise SIGPIPE in the host (SIGPIPE is held back around
 *   each write and a SIGPIPE it caused is taken back); take a lock or
 *   allocate in the last write.
 */
#include "audit.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define QUEUE 1024
#define BUF_BYTES (64 * 1024)
#define HIGH_FD 400 /* where the output descriptor is moved */

/* ---- The output descriptor ---------------------------------------------- */

enum { OUT_CLOSED, OUT_OPENING, OUT_OPEN, OUT_FAILED };
static atomic_int g_out_state;
static _Atomic int g_out_fd = -1;
static dev_t g_out_dev;
static ino_t g_out_ino;
static atomic_bool g_out_stream; /* a pipe or socket, not a regular file */
static _Atomic uint64_t g_lines_lost;

/* Above the descriptors a program counts on; closes fd. */
static int move_high(int fd) {
  int high = fcntl(fd, F_DUPFD_CLOEXEC, HIGH_FD);
  if (high < 0)
    high = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  if (high < 0)
    return fd;
  close(fd);
  return high;
}

/* O_NONBLOCK while opening: a FIFO nobody reads must fail the open, not
   hang the process; writes to our own descriptor then block again. */
static int open_append(const char *path) {
  int fd = (int)syscall(SYS_openat, AT_FDCWD, path,
                        O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK,
                        0644);
  if (fd >= 0)
    fcntl(fd, F_SETFL, O_WRONLY | O_APPEND);
  return fd;
}

/* path + "-" + pid into out (sized for it: config.c keeps room). */
static void with_pid(char *out, const char *path, int pid) {
  size_t n = strlen(path);
  memcpy(out, path, n);
  out[n++] = '-';
  audit_decimal(out + n, (uint64_t)pid);
}

/* Opens the output [signal-safe]. */
static int open_output(void) {
  if (!audit_cfg.out[0])
    return audit_cfg.stderr_fd;
  char path[sizeof audit_cfg.out];
  int pid = atomic_load(&audit_pid);
  int fd = -1;
  if (!atomic_load(&audit_forked_from)) {
    fd = open_append(audit_cfg.out);
    /* Held by another live process (a parent that exec'd us, a sibling):
       ours is beside it. */
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
      close(fd);
      fd = -1;
    } else if (fd >= 0) {
      return move_high(fd);
    }
  }
  with_pid(path, audit_cfg.out, pid);
  fd = open_append(path);
  if (fd >= 0)
    (void)flock(fd, LOCK_EX | LOCK_NB);
  return fd >= 0 ? move_high(fd) : -1;
}

/* Whether the last write waits for a pipe that nobody drains: at most
   this long, then its lines are lost rather than the process kept alive. */
#define LAST_WRITE_WAIT_MS 2000
static atomic_bool g_final;   /* the last write began: the helper stops */
static atomic_bool g_gave_up; /* the last write's wait ran out once */

/* Writes all of p, or false. A write into a closed pipe must not kill
   the host: SIGPIPE is held back meanwhile, and one the write raised is
   taken back. Into a pipe or socket, the last write waits for room with a
   deadline, once, and writes what fits (PIPE_BUF at a time: whole lines
   cannot be promised there); a regular file takes the whole buffer in one
   write [signal-safe]. */
static bool write_all(int fd, const char *p, size_t len) {
  bool bounded = atomic_load(&g_out_stream) && atomic_load(&g_final);
  if (bounded && atomic_load(&g_gave_up))
    return false;
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  sigset_t pipe, old, pending;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, &old);
  sigpending(&pending);
  bool was_pending = sigismember(&pending, SIGPIPE);
  bool ok = true;
  for (size_t off = 0; ok && off < len;) {
    size_t chunk = len - off;
    if (bounded) {
      struct timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      long waited = (now.tv_sec - start.tv_sec) * 1000 +
                    (now.tv_nsec - start.tv_nsec) / 1000000;
      struct pollfd pfd = {.fd = fd, .events = POLLOUT};
      int ready = waited < LAST_WRITE_WAIT_MS
                      ? poll(&pfd, 1, (int)(LAST_WRITE_WAIT_MS - waited))
                      : 0;
      if (ready < 0 && errno == EINTR)
        continue;
      if (ready <= 0) { /* the next write would wait as long: none */
        atomic_store(&g_gave_up, true);
        ok = false;
        break;
      }
      if (chunk > PIPE_BUF)
        chunk = PIPE_BUF;
    }
    ssize_t w = write(fd, p + off, chunk);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      ok = false;
      if (errno == EPIPE && !was_pending) {
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe, NULL, &zero);
      }
      break;
    }
    off += (size_t)w;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return ok;
}

static atomic_bool g_header; /* the process line was written */

/* The output, opened on first use, its process line first (whoever opens
   it writes that line before anyone else may write); -1 when there is
   none [signal-safe]. */
static int out_fd(void) {
  for (int tries = 0; tries < 2000; tries++) {
    int state = atomic_load(&g_out_state);
    if (state == OUT_OPEN) {
      int fd = atomic_load(&g_out_fd);
      struct stat st;
      if (fstat(fd, &st) == 0 && st.st_dev == g_out_dev &&
          st.st_ino == g_out_ino)
        return fd;
      /* Closed or replaced under us: a file is opened again by its name;
         a copy of stderr is gone. */
      atomic_store(&g_out_state, audit_cfg.out[0] ? OUT_CLOSED : OUT_FAILED);
      continue;
    }
    if (state == OUT_FAILED)
      return -1;
    int closed = OUT_CLOSED;
    if (state == OUT_CLOSED &&
        atomic_compare_exchange_strong(&g_out_state, &closed, OUT_OPENING)) {
      int fd = open_output();
      struct stat st;
      if (fd >= 0 && fstat(fd, &st) == 0) {
        g_out_dev = st.st_dev;
        g_out_ino = st.st_ino;
        atomic_store(&g_out_stream, !S_ISREG(st.st_mode));
        atomic_store(&g_out_fd, fd);
        if (!atomic_load(&g_header)) {
          static char mem[BUF_BYTES]; /* one opener at a time */
          audit_buf_t head = {.p = mem, .cap = sizeof mem};
          if (audit_line_process(&head) && write_all(fd, head.p, head.len))
            atomic_store(&g_header, true);
        }
        atomic_store(&g_out_state, OUT_OPEN);
        return fd;
      }
      atomic_store(&g_out_state, OUT_FAILED);
      return -1;
    }
    /* Another thread is opening it. */
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  return -1;
}

/* ---- Lines of the table, in batches ---------------------------------------
 * A record's `written` is raised only once its line is in the output: a
 * writer stopped between formatting and writing (the helper, when the last
 * write begins) leaves the record for the other to write. Two writers may
 * then write one line each for a record; readers keep the greatest count. */

#define BATCH 256

typedef struct batch {
  audit_buf_t buf;
  int ids[BATCH];
  uint64_t counts[BATCH];
  int n;
} batch_t;

/* Writes the batch's lines and marks their records written [signal-safe]. */
static void batch_flush(batch_t *t) {
  if (t->buf.len > 0) {
    int fd = out_fd();
    if (fd >= 0 && write_all(fd, t->buf.p, t->buf.len)) {
      for (int i = 0; i < t->n; i++) {
        audit_record_t *r = &audit_records[t->ids[i]];
        uint64_t w = atomic_load(&r->written);
        /* Only ever raised: another writer may have written later. */
        while (w < t->counts[i] &&
               !atomic_compare_exchange_weak(&r->written, &w, t->counts[i])) {
        }
      }
    } else {
      atomic_fetch_add(&g_lines_lost, (uint64_t)t->n);
    }
  }
  t->buf.len = 0;
  t->n = 0;
}

/* Adds the record's line, or its update when its count moved since its
   last line [signal-safe]. */
static void batch_record(batch_t *t, int id) {
  audit_record_t *r = &audit_records[id];
  uint64_t count = atomic_load_explicit(&r->count, memory_order_acquire);
  uint64_t written = atomic_load(&r->written);
  if (written != 0 && count <= written)
    return;
  bool (*add)(audit_buf_t *, int) =
      written == 0 ? audit_line_record : audit_line_update;
  if (t->n == BATCH || !add(&t->buf, id)) {
    batch_flush(t);
    if (!add(&t->buf, id)) { /* bigger than the buffer: cannot happen */
      atomic_fetch_add(&g_lines_lost, 1);
      return;
    }
  }
  t->ids[t->n] = id;
  t->counts[t->n++] = count;
}

/* ---- The helper thread and its queue ------------------------------------- */

static atomic_int g_final_run; /* the last write runs (0 / 1) */
static pthread_mutex_t g_qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_qcond;
static int g_queue[QUEUE];
static int g_qhead, g_qlen;
static bool g_qoverflow, g_helper_started;

static void *helper(void *arg) {
  (void)arg;
  audit_busy = 1; /* for good: nothing this thread does is recorded */
  prctl(PR_SET_NAME, "stacksnap-audit", 0, 0, 0);
  static char mem[BUF_BYTES];
  static batch_t t;
  t.buf = (audit_buf_t){.p = mem, .cap = sizeof mem};
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  for (;;) {
    int ids[QUEUE];
    int n = 0;
    bool scan = false;
    pthread_mutex_lock(&g_qlock);
    while (g_qlen == 0 && !g_qoverflow && !atomic_load(&g_final)) {
      if (pthread_cond_timedwait(&g_qcond, &g_qlock, &next) == ETIMEDOUT) {
        scan = true;
        break;
      }
    }
    for (; g_qlen > 0; g_qlen--, g_qhead = (g_qhead + 1) % QUEUE)
      ids[n++] = g_queue[g_qhead];
    scan |= g_qoverflow;
    g_qoverflow = false;
    pthread_mutex_unlock(&g_qlock);
    if (atomic_load(&g_final))
      return NULL;
    for (int i = 0; i < n; i++)
      batch_record(&t, ids[i]);
    batch_flush(&t);
    if (scan) {
      int records = atomic_load_explicit(&audit_nrecords, memory_order_acquire);
      for (int i = 0; i < records && !atomic_load(&g_final); i++)
        batch_record(&t, i);
      batch_flush(&t);
      clock_gettime(CLOCK_MONOTONIC, &next);
      next.tv_sec += 1;
    }
  }
}

static void start_helper(void) {
  /* Every signal blocked in the helper: the program's signals go to its
     own threads, as they did before it was audited. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pthread_t t;
  if (pthread_create(&t, NULL, helper, NULL) == 0)
    pthread_detach(t);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void audit_writer_announce(int id) {
  bool start = false;
  pthread_mutex_lock(&g_qlock);
  if (g_qlen < QUEUE)
    g_queue[(g_qhead + g_qlen++) % QUEUE] = id;
  else
    g_qoverflow = true;
  if (!g_helper_started)
    start = g_helper_started = true;
  pthread_cond_signal(&g_qcond);
  pthread_mutex_unlock(&g_qlock);
  if (start)
    start_helper();
}

/* ---- The last write --------------------------------------------------------
 */

void audit_writer_final(const char *reason, int sig) {
  int idle = 0;
  if (!atomic_compare_exchange_strong(&g_final_run, &idle, 1))
    return;
  atomic_store(&g_final, true);
  int busy = audit_busy;
  audit_busy = 1;
  int records = atomic_load_explicit(&audit_nrecords, memory_order_acquire);
  /* A process that recorded nothing says nothing (a shell or a launcher
     would otherwise leave a file for each process). */
  if (records > 0 || atomic_load(&g_header)) {
    static char mem[BUF_BYTES];
    static batch_t t;
    t.buf = (audit_buf_t){.p = mem, .cap = sizeof mem};
    t.n = 0;
    for (int i = 0; i < records; i++)
      batch_record(&t, i);
    batch_flush(&t);
    audit_line_end(&t.buf, reason, sig, atomic_load(&g_lines_lost));
    int fd = out_fd();
    if (fd >= 0)
      write_all(fd, t.buf.p, t.buf.len);
  }
  audit_busy = busy;
}

__attribute__((destructor)) static void audit_at_exit(void) {
  if (atomic_load(&audit_ready) &&
      atomic_load(&audit_pid) == (int)syscall(SYS_getpid))
    audit_writer_final("exit", 0);
}

/* _exit and _Exit skip the destructors: the last write is made here.
   Not in a vfork child (its pid is not the one the records belong to: it
   shares the parent's memory, and runs no fork handlers). */
typedef void (*exit_fn)(int);
static exit_fn g_real_exit, g_real_Exit; /* looked up at start-up */

static _Noreturn void leave_now(exit_fn real, int status) {
  if (atomic_load(&audit_ready) &&
      atomic_load(&audit_pid) == (int)syscall(SYS_getpid))
    audit_writer_final("_exit", 0);
  if (real)
    real(status);
  for (;;)
    syscall(SYS_exit_group, status);
}

AUDIT_EXPORT void _exit(int status) { leave_now(g_real_exit, status); }
AUDIT_EXPORT void _Exit(int status) { leave_now(g_real_Exit, status); }

/* ---- Fork -----------------------------------------------------------------
 */

static void before_fork(void) {
  audit_records_lock();
  pthread_mutex_lock(&g_qlock);
}

static void after_fork_parent(void) {
  pthread_mutex_unlock(&g_qlock);
  audit_records_unlock();
}

static void init_queue(void) {
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&g_qcond, &attr);
  pthread_condattr_destroy(&attr);
  pthread_mutex_init(&g_qlock, NULL);
  g_qhead = g_qlen = 0;
  g_qoverflow = g_helper_started = false;
}

/* The child: its own records, its own file, no helper yet. */
static void after_fork_child(void) {
  int parent = atomic_load(&audit_pid);
  atomic_store(&audit_pid, (int)syscall(SYS_getpid));
  atomic_store(&audit_forked_from, parent);
  audit_tid = 0;
  init_queue();
  audit_records_forget();
  if (atomic_load(&g_out_state) == OUT_OPEN &&
      atomic_load(&g_out_fd) != audit_cfg.stderr_fd)
    close(atomic_load(&g_out_fd)); /* the parent's file, and its lock */
  atomic_store(&g_out_state, OUT_CLOSED);
  atomic_store(&g_out_fd, -1);
  atomic_store(&g_lines_lost, 0);
  atomic_store(&g_header, false);
  atomic_store(&g_final, false);
  atomic_store(&g_gave_up, false);
  atomic_store(&g_final_run, 0);
}

void audit_writer_init(void) {
  init_queue();
  g_real_exit = (exit_fn)dlsym(RTLD_NEXT, "_exit");
  g_real_Exit = (exit_fn)dlsym(RTLD_NEXT, "_Exit");
  pthread_atfork(before_fork, after_fork_parent, after_fork_child);
  audit_fatal_init();
}
