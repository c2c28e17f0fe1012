/*
 * writer.c — getting the records out of the process, whatever way it ends.
 *
 * Owns:
 * - the output: STACKSNAP_AUDIT_OUT, or STACKSNAP_AUDIT_OUT-<pid> when a
 *   live process holds the name (an flock taken by its first writer), in
 *   a child, or when the name is refused; the start-up copy of stderr when
 *   unset. Opened on the first write without following a symlink
 *   (O_NOFOLLOW), created 0600, and kept only if it is ours (owner, one
 *   link) and a regular file (the named output may also be a FIFO someone
 *   reads); moved above the descriptors a program uses, and checked
 *   (device, inode) before each write: a program that closes all its
 *   descriptors must not get our lines in a file of its own.
 * - the helper thread (`stacksnap-audit`): woken (a futex) by each new
 *   slot, it names what is new (naming.c) and writes the new records'
 *   lines, and once a second an update for each record whose count moved.
 *   It is started by the first new slot whose hook is provably outside a
 *   signal handler (pthread_create allocates: outside_handlers says how
 *   that is proved); until then slots wait.
 * - the flushes: at exit (a destructor), at _exit/_Exit (interposed), on
 *   fatal signals (fatal.c) and before an exec (hooks_exec.c). A flush
 *   asks the helper to name and write everything (and waits for it, at
 *   most FLUSH_WAIT_MS: it may be stuck on a lock the interrupted code
 *   holds), writes raw records of what is still unnamed, the updates,
 *   then an end line, with async-signal-safe calls only.
 * - children: a forked child (fork handlers ran) and a child cloned
 *   without them (the marker page was wiped) forget the parent's records
 *   and start their own file; the latter never names (the parent's locks
 *   were copied as they stood), and writes raw records.
 * Must not: block a hooked call on I/O or a lock, or allocate in one
 *   (only the helper allocates); raise SIGPIPE in the host (SIGPIPE is
 *   held back around each write and a SIGPIPE it caused is taken back).
 */
#include "audit.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
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

#include "platform/platform.h"

#define BUF_BYTES (64 * 1024)
#define HIGH_FD 400        /* where the output descriptor is moved */
#define FLUSH_WAIT_MS 1000 /* a flush waits this long for the helper */
/* ---- The output descriptor ---------------------------------------------- */

enum { OUT_CLOSED, OUT_OPENING, OUT_OPEN, OUT_FAILED };
static atomic_int g_out_state;
static _Atomic int g_out_fd = -1;
/* The output's identity: atomics, read by a flush in a signal handler. */
static _Atomic uint64_t g_out_dev, g_out_ino;
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

/* Opens path to append, never through a symlink (O_NOFOLLOW: a link
   planted at a predictable name would get the audit written through it),
   creating it 0600; keeps it only if it is ours: this user's, a regular
   file with one link, or (fifo_ok: the name the user gave) a FIFO.
   O_NONBLOCK while opening: a FIFO nobody reads must fail the open, not
   hang the process; writes to our own descriptor then block again
   [signal-safe]. */
static int open_append(const char *path, bool fifo_ok) {
  int fd = (int)syscall(SYS_openat, AT_FDCWD, path,
                        O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK |
                            O_NOFOLLOW | O_NOCTTY,
                        0600);
  if (fd < 0)
    return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_uid != geteuid() ||
      !((S_ISREG(st.st_mode) && st.st_nlink == 1) ||
        (fifo_ok && S_ISFIFO(st.st_mode)))) {
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, O_APPEND);
  return fd;
}

/* path + "-" + pid into out (sized for it: config.c keeps room). */
static void with_pid(char *out, const char *path, int pid) {
  size_t n = strlen(path);
  memcpy(out, path, n);
  out[n++] = '-';
  snap__dec_u64(out + n, (uint64_t)pid);
}

/* Opens the output [signal-safe]. */
static int open_output(void) {
  if (!audit_cfg.out[0])
    return audit_cfg.stderr_fd;
  char path[sizeof audit_cfg.out];
  int pid = atomic_load(&audit_pid);
  int fd = -1;
  if (!atomic_load(&audit_forked_from)) {
    fd = open_append(audit_cfg.out, true);
    /* Held by another live process (a parent that exec'd us, a sibling):
       ours is beside it. So is it when the name was refused. */
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
      close(fd);
      fd = -1;
    } else if (fd >= 0) {
      return move_high(fd);
    }
  }
  with_pid(path, audit_cfg.out, pid);
  fd = open_append(path, false);
  if (fd >= 0)
    (void)flock(fd, LOCK_EX | LOCK_NB);
  return fd >= 0 ? move_high(fd) : -1;
}

/* Whether the last write waits for a pipe that nobody drains: at most
   this long, then its lines are lost rather than the process kept alive. */
#define LAST_WRITE_WAIT_MS 2000
static atomic_bool g_final; /* the last write began: the helper stops */
/* This thread is flushing: into a pipe, its writes wait with a deadline. */
static __thread bool t_flushing __attribute__((tls_model("initial-exec")));
static atomic_bool g_gave_up; /* the last write's wait ran out once */

/* Writes all of p, or false. A write into a closed pipe must not kill
   the host: SIGPIPE is held back meanwhile, and one the write raised is
   taken back. Into a pipe or socket, the last write waits for room with a
   deadline, once, and writes what fits (PIPE_BUF at a time: whole lines
   cannot be promised there); a regular file takes the whole buffer in one
   write [signal-safe]. */
static bool write_all(int fd, const char *p, size_t len) {
  bool bounded = atomic_load(&g_out_stream) && t_flushing;
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
      if (fstat(fd, &st) == 0 && st.st_dev == atomic_load(&g_out_dev) &&
          st.st_ino == atomic_load(&g_out_ino))
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
        atomic_store(&g_out_dev, st.st_dev);
        atomic_store(&g_out_ino, st.st_ino);
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

/* Adds the record's line, or (updates) its update when its count moved
   since its last line [signal-safe]. */
static void batch_record(batch_t *t, int id, bool updates) {
  audit_record_t *r = &audit_records[id];
  if (!atomic_load_explicit(&r->ready, memory_order_acquire))
    return;
  audit_sum_t sum;
  audit_record_sum(id, &sum);
  uint64_t written = atomic_load(&r->written);
  if (sum.count == 0 || (written != 0 && (!updates || sum.count <= written)))
    return;
  bool (*add)(audit_buf_t *, int, const audit_sum_t *) =
      written == 0 ? audit_line_record : audit_line_update;
  if (t->n == BATCH || !add(&t->buf, id, &sum)) {
    batch_flush(t);
    if (!add(&t->buf, id, &sum)) { /* bigger than the buffer: cannot happen */
      atomic_fetch_add(&g_lines_lost, 1);
      return;
    }
  }
  t->ids[t->n] = id;
  t->counts[t->n++] = sum.count;
}

/* Every record's line not written yet, and (updates) every update due
   [signal-safe]. */
static void write_pending(batch_t *t, bool updates) {
  int records = audit_records_claimed();
  for (int i = 0; i < records; i++)
    batch_record(t, i, updates);
  batch_flush(t);
}

/* ---- The helper thread -----------------------------------------------------
 * Woken through futexes (system calls: a hook or a signal handler may
 * wake it, and a flush wait for it, without a lock). */

enum { HELPER_NONE, HELPER_STARTING, HELPER_RUNNING };
static atomic_int g_helper;
static atomic_bool g_no_naming; /* a child cloned without fork handlers */
static _Atomic uint32_t g_wake; /* moves on each new slot and request */
static _Atomic uint32_t g_drain_req, g_drain_done;
static atomic_int g_final_run; /* the last write runs (0 / 1) */

static void futex_wake(_Atomic uint32_t *w) {
  syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void futex_wait(_Atomic uint32_t *w, uint32_t seen, long ms) {
  struct timespec rel = {ms / 1000, (ms % 1000) * 1000000};
  syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, seen, &rel, NULL, 0);
}

static long mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *helper(void *arg) {
  (void)arg;
  audit_busy = AUDIT_OWN; /* for good: nothing this thread does is recorded */
  prctl(PR_SET_NAME, "stacksnap-audit", 0, 0, 0);
  static char mem[BUF_BYTES];
  static batch_t t;
  t.buf = (audit_buf_t){.p = mem, .cap = sizeof mem};
  t.n = 0;
  long next = mono_ms() + 1000;
  for (;;) {
    uint32_t seen = atomic_load(&g_wake);
    uint32_t req = atomic_load(&g_drain_req);
    if (atomic_load(&g_final))
      return NULL;
    audit_name_pending();
    long now = mono_ms();
    bool tick = now >= next;
    bool drain = req != atomic_load(&g_drain_done);
    if (atomic_load(&g_final))
      return NULL;
    write_pending(&t, tick || drain);
    if (tick)
      next = now + 1000;
    if (drain) {
      atomic_store(&g_drain_done, req);
      futex_wake(&g_drain_done);
    }
    long left = next - mono_ms();
    if (left > 0)
      futex_wait(&g_wake, seen, left);
  }
}

static bool start_helper(void) {
  /* Every signal blocked in the helper: the program's signals go to its
     own threads, as they did before it was audited. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pthread_t t;
  bool ok = pthread_create(&t, NULL, helper, NULL) == 0;
  if (ok)
    pthread_detach(t);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return ok;
}

/* Whether this hooked call is provably not in a signal handler. A
   function that is not async-signal-safe (fopen, getaddrinfo, ...) proves
   it: a program may not call one there. Else the whole stack must be seen
   and hold no signal-return trampoline (a handler the kernel called), and
   no signal may be blocked (a handler runs with its signal blocked, and a
   runtime that dispatches handlers itself, as ThreadSanitizer does,
   blocks them all meanwhile; a thread that blocks signals for good starts
   no helper, and another call will). [signal-safe] */
static bool outside_handlers(int fn, const uintptr_t *pcs, int n,
                             bool complete) {
  if (audit_busy != 1) /* nested in a recording: a handler's call */
    return false;
  if (fn == FN_fopen || fn == FN_fopen64 || fn == FN_freopen ||
      fn == FN_freopen64 || audit_fns[fn].kind == KIND_DNS)
    return true;
  if (!complete)
    return false;
  for (int i = 0; i < n; i++)
    if (snap__plat_is_sigreturn(pcs[i]))
      return false;
  uint64_t mask = 0; /* the kernel's sigset: 64 signals on Linux */
  return syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &mask, sizeof mask) ==
             0 &&
         mask == 0;
}

void audit_writer_announce(int fn, const uintptr_t *pcs, int n, bool complete) {
  atomic_fetch_add(&g_wake, 1);
  int state = atomic_load(&g_helper);
  if (state == HELPER_RUNNING) {
    futex_wake(&g_wake);
    return;
  }
  /* Starting a thread allocates: only where this call is provably not in
     a signal handler, nor in a vfork child or a child cloned without fork
     handlers. */
  if (state != HELPER_NONE || atomic_load(&g_no_naming) ||
      !outside_handlers(fn, pcs, n, complete) || !audit_own_process())
    return;
  int none = HELPER_NONE;
  if (!atomic_compare_exchange_strong(&g_helper, &none, HELPER_STARTING))
    return;
  int busy = audit_busy;
  audit_busy = AUDIT_OWN;
  atomic_store(&g_helper, start_helper() ? HELPER_RUNNING : HELPER_NONE);
  audit_busy = busy;
}

/* Asks the helper to name and write everything, and waits for it at most
   FLUSH_WAIT_MS [signal-safe]. */
static void drain(void) {
  if (atomic_load(&g_helper) != HELPER_RUNNING)
    return;
  uint32_t req = atomic_fetch_add(&g_drain_req, 1) + 1;
  atomic_fetch_add(&g_wake, 1);
  futex_wake(&g_wake);
  long deadline = mono_ms() + FLUSH_WAIT_MS;
  for (;;) {
    uint32_t done = atomic_load(&g_drain_done);
    if ((int32_t)(done - req) >= 0)
      return;
    long left = deadline - mono_ms();
    if (left <= 0)
      return;
    futex_wait(&g_drain_done, done, left);
  }
}

/* ---- The flushes ------------------------------------------------------------
 */

/* Everything out, then the end line. may_name: the caller is in a context
   where naming is safe (the exit destructor), so records the helper never
   got to (it was never started) are named here rather than raw
   [signal-safe unless may_name]. */
static void flush(const char *reason, int sig, bool last, bool may_name) {
  int busy = audit_busy;
  audit_busy = AUDIT_OWN;
  t_flushing = true;
  drain();
  if (last)
    atomic_store(&g_final, true); /* the helper stops */
  /* Named here only if no helper ever will: the state is taken, so none
     starts meanwhile (naming has one writer). */
  int none = HELPER_NONE;
  if (may_name && !atomic_load(&g_no_naming) &&
      atomic_compare_exchange_strong(&g_helper, &none, HELPER_STARTING))
    audit_name_pending();
  audit_raw_pending();
  /* A process that recorded nothing says nothing (a shell or a launcher
     would otherwise leave a file for each process). */
  if (audit_records_claimed() > 0 || atomic_load(&g_header)) {
    static char mem[BUF_BYTES];
    static batch_t t;
    t.buf = (audit_buf_t){.p = mem, .cap = sizeof mem};
    t.n = 0;
    write_pending(&t, true);
    audit_line_end(&t.buf, reason, sig, atomic_load(&g_lines_lost));
    int fd = out_fd();
    if (fd >= 0)
      write_all(fd, t.buf.p, t.buf.len);
    t.buf.len = 0;
  }
  t_flushing = false;
  audit_busy = busy;
}

/* One flush at a time (they share a buffer): an exec on two threads, an
   exec and a fatal signal. The second waits for the first (an exec must
   not replace the process while another thread still writes), at most
   as long as a flush can take; one nested on the same thread (a fatal
   signal in the middle of an exec's flush) gives up: the buffer is the
   interrupted flush's. [signal-safe] */
#define FLUSH_TURN_MS (FLUSH_WAIT_MS + LAST_WRITE_WAIT_MS + 1000)
static _Atomic int g_flush_owner; /* the flushing thread's id, or 0 */

static bool flush_begin(void) {
  int me = audit_gettid();
  long deadline = mono_ms() + FLUSH_TURN_MS;
  for (;;) {
    int none = 0;
    if (atomic_compare_exchange_strong(&g_flush_owner, &none, me))
      return true;
    if (none == me || mono_ms() >= deadline)
      return false;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
}

static void flush_end(void) { atomic_store(&g_flush_owner, 0); }

/* The last write, once. Its turn is taken first: a second last write (a
   fatal signal on another thread) then waits until the first is done,
   rather than let the process end under it. */
static void final(const char *reason, int sig, bool may_name) {
  if (!flush_begin())
    return;
  int idle = 0;
  if (atomic_compare_exchange_strong(&g_final_run, &idle, 1))
    flush(reason, sig, true, may_name);
  flush_end();
}

void audit_writer_final(const char *reason, int sig) {
  final(reason, sig, false);
}

void audit_writer_exec(void) {
  if (atomic_load(&g_final_run) || !flush_begin())
    return;
  flush("exec", 0, false, false);
  flush_end();
}

__attribute__((destructor)) static void audit_at_exit(void) {
  if (!atomic_load(&audit_ready))
    return;
  audit_check_process();
  if (audit_own_process())
    final("exit", 0, true);
}

/* _exit and _Exit skip the destructors: the last write is made here.
   Not in a vfork child (its pid is not the one the records belong to: it
   shares the parent's memory, and runs no fork handlers). */
typedef void (*exit_fn)(int);
static exit_fn g_real_exit, g_real_Exit; /* looked up at start-up */

static _Noreturn void leave_now(exit_fn real, int status) {
  if (atomic_load(&audit_ready)) {
    audit_check_process();
    if (audit_own_process())
      audit_writer_final("_exit", 0);
  }
  if (real)
    real(status);
  for (;;)
    syscall(SYS_exit_group, status);
}

AUDIT_EXPORT void _exit(int status) { leave_now(g_real_exit, status); }
AUDIT_EXPORT void _Exit(int status) { leave_now(g_real_Exit, status); }

/* ---- Children
 * -----------------------------------------------------------------
 */

/* The parent's output descriptor, in a child that noticed itself before
   its fork handler ran (another library's handler made a hooked call):
   closed when ours runs. */
static int g_inherited_fd = -1;

void audit_writer_child(bool handlers) {
  int parent = atomic_load(&audit_pid);
  int pid = audit_getpid();
  if (pid != parent) {
    atomic_store(&audit_pid, pid);
    atomic_store(&audit_forked_from, parent);
    audit_tid = 0;
    audit_slots_forget();
    audit_records_forget();
    /* The parent's file, and its lock: closed in a forked child. A child
       cloned without fork handlers may share the parent's descriptor
       table (CLONE_FILES): its copy is left alone. */
    if (atomic_load(&g_out_state) == OUT_OPEN &&
        atomic_load(&g_out_fd) != audit_cfg.stderr_fd)
      g_inherited_fd = atomic_load(&g_out_fd);
    atomic_store(&g_out_state, OUT_CLOSED);
    atomic_store(&g_out_fd, -1);
    atomic_store(&g_lines_lost, 0);
    atomic_store(&g_header, false);
    atomic_store(&g_final, false);
    atomic_store(&g_gave_up, false);
    atomic_store(&g_final_run, 0);
    atomic_store(&g_flush_owner, 0);
    atomic_store(&g_helper, HELPER_NONE);
    atomic_store(&g_wake, 0);
    atomic_store(&g_drain_req, 0);
    atomic_store(&g_drain_done, 0);
    atomic_store(&g_no_naming, !handlers);
  }
  /* Fork handlers ran: this is fork()'s child, whose locks glibc and
     stacksnap reset, whichever call noticed it first. */
  if (handlers)
    atomic_store(&g_no_naming, false);
  if (handlers && g_inherited_fd >= 0) {
    close(g_inherited_fd);
    g_inherited_fd = -1;
  }
  if (audit_marker)
    atomic_store(audit_marker, pid);
}

static void after_fork_child(void) { audit_writer_child(true); }

void audit_writer_init(void) {
  g_real_exit = (exit_fn)dlsym(RTLD_NEXT, "_exit");
  g_real_Exit = (exit_fn)dlsym(RTLD_NEXT, "_Exit");
  (void)snap__plat_on_fork(SNAP__FORK_EMBEDDER, NULL, NULL, after_fork_child);
}
