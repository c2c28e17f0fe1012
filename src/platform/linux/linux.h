/*
 * linux.h — what the Linux backend's files share with each other, and
 * nothing else: never included from outside src/platform/linux/.
 */
#ifndef SNAP_PLATFORM_LINUX_H
#define SNAP_PLATFORM_LINUX_H

#include <sys/stat.h>
#include <sys/types.h>

#include "platform/platform.h"
#include "platform/thread_facts.h"

/* Fills regs from a ucontext_t the kernel handed to a signal handler.
   [signal-safe] */
/* snap__plat_read without its 4 KiB bound, for bulk reads outside the
   stopped window (the trampoline search): one process_vm_readv, or 4 KiB
   pipe reads where that is missing. [setup] */
bool snap__linux_read_bulk(uintptr_t addr, void *dst, size_t n);
void snap__linux_regs_from_ucontext(const void *uc, snap__regs_t *regs);
/* Copies the registers a wait is decoded from (SNAP__WAIT_REGS_THREAD: the
   pc, the system call number's register and the six argument registers)
   out of a signal handler's ucontext_t. [signal-safe] */
void snap__linux_wait_regs_from_ucontext(const void *uc,
                                         snap__plat_wait_regs_t *w);

/* The kernel thread id of the caller, by system call. [signal-safe] */
int snap__linux_gettid(void);
/* Whether thread tid of this process exists now (tgkill with signal 0:
   nothing is sent). [signal-safe] */
bool snap__linux_thread_alive(int tid);

/* ---- The sampling signal's handler, shared by both of its uses ---------- */

/* Installs the sampling signal's handler (sample.c) once: SNAP_OK, or
   SNAP_EUNSUPPORTED. The signal it uses, once installed. [setup] */
int snap__linux_sample_install(void);
int snap__linux_sample_signo(void);
/* The calling thread enters / leaves a stopped window (tests prove the
   window allocates nothing: snap__plat_in_stopped_window). [signal-safe] */
void snap__linux_window_mark(bool in);
/* A CPU-time timer's signal (cpu_timer.c): whether its value is one of
   ours, and the handler's work for it. [signal-safe] */
bool snap__linux_cpu_timer_token(uint64_t token);
void snap__linux_cpu_timer_fire(uint64_t token, void *uc);

/* ---- Files read for names (elf_file_copy.c) ------------------------------ */

/* path opened for reading if it is a regular file: symlinks followed (a
   library's path often is one, and so are /usr/lib/debug/.build-id's),
   never blocking (O_NONBLOCK: a FIFO put at a library's or a debug file's
   path would hang the open), anything else refused (a FIFO, a device such
   as /dev/zero, which would be read forever). The fd, with *st, or -1. */
int snap__linux_open_regular(const char *path, struct stat *st);

/* ---- Small /proc files (proc_files.c) ----------------------------------- */

/* Reads up to size - 1 bytes of path into buf, NUL-terminated; the count,
   or -1 (with errno) when it cannot be opened or read. [setup] */
ssize_t snap__linux_read_small(const char *path, char *buf, size_t size);
/* In a status file's text, the value of the line "key" ("TracerPid:"),
   blanks skipped; NULL if there is no such line. */
const char *snap__linux_status_field(const char *text, const char *key);
/* A stat line of /proc (proc(5), fields numbered as there), as
   proc_stat.c parses it: the fields the backend uses. */
typedef struct snap__linux_stat {
  int64_t pid;     /* 1 */
  char comm[64];   /* 2, NUL-terminated (cut to fit): any bytes, ')' too */
  char state;      /* 3: R S D T t Z X I ... */
  int64_t ppid;    /* 4 */
  uint64_t majflt; /* 12: major faults */
  uint64_t utime, stime; /* 14, 15: CPU time, clock ticks */
  int64_t num_threads;   /* 20 */
  uint64_t starttime;    /* 22: clock ticks since boot */
} snap__linux_stat_t;
/* Parses text, a stat file's NUL-terminated contents: SNAP_OK, or
   SNAP_EIO when it is not a whole stat line up to field 22 (out is then
   zeroed). Safe against any comm. [signal-safe] */
int snap__linux_stat_parse(const char *text, snap__linux_stat_t *out);
/* A TID the kernel could have handed out (pid_max is at most 2^22). */
static inline bool snap__linux_tid_ok(snap_thread_t thread) {
  return thread > 0 && thread <= 0x7fffffff;
}
/* A schedstat text's three numbers (ns on a CPU, ns waiting on a run
   queue, timeslices) into v: SNAP_OK or SNAP_EIO. */
int snap__linux_schedstat(const char *text, uint64_t v[3]);
/* "/proc/self/task/<tid>/<leaf>" into path[64] (leaf cut to fit). */
void snap__linux_task_path(char *path, int tid, const char *leaf);
/* A descriptor kept open, with the identity of its file: an app that
   closes descriptors it did not open may reuse the number. [setup] */
typedef struct snap__linux_kept {
  int fd; /* -1: none */
  uint64_t dev, ino;
} snap__linux_kept_t;
bool snap__linux_kept_open(snap__linux_kept_t *k, const char *path);
/* Whether k's descriptor still refers to the file it was opened on. */
bool snap__linux_kept_ours(const snap__linux_kept_t *k);
/* Closes it if it is still ours; forgets it either way. */
void snap__linux_kept_close(snap__linux_kept_t *k);
/* pread from offset 0, NUL-terminated; -1 (EBADF) if no longer ours. */
ssize_t snap__linux_kept_read(const snap__linux_kept_t *k, char *buf,
                              size_t size);
/* snap__linux_read_small of that file; the stat, schedstat, status and
   syscall files of the thread asked about last are kept open and read
   with pread (a read costs a fifth of an open). [setup] */
ssize_t snap__linux_read_task(int tid, const char *leaf, char *buf,
                              size_t size);
/* In a forked child: the kept files are the parent's thread's, and the
   parent thread that may have held them busy does not exist here. Closed
   (those still ours) and the cache freed. [async-signal-safe] */
void snap__linux_task_files_forget(void);

/* ---- The sampling handler's stack (sample.c) -------------------------- */

/* The room the stopped window needs on the target's stack below the
   handler's frame (the signal frame the kernel pushed is above it): the
   walk, whose state lives in the request, not on the stack (capture.c),
   the unwind-table evaluator, a checked read. The handler answers
   SNAP_ENOMEM with less. tests/capture/test_low_stack.c measures what the
   window really uses and holds it under this; sanitizers add their own
   frames and redzones. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SNAP__LINUX_WINDOW_STACK (16u * 1024)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SNAP__LINUX_WINDOW_STACK (16u * 1024)
#endif
#endif
#ifndef SNAP__LINUX_WINDOW_STACK
#define SNAP__LINUX_WINDOW_STACK (2u * 1024)
#endif

/* ---- Stack bounds, learned outside the stopped window (threads.c) ---- */

/* A stack as the sampler learned it for the thread it is about to stop. */
typedef struct snap__linux_stack {
  uintptr_t lo;   /* lowest usable byte: the room below sp is sp - lo */
  uintptr_t end;  /* [lo, end) holds the stack; 0: nothing learned */
  uintptr_t self; /* pthread_self() of the thread it was learned for */
  bool direct;    /* every byte of [lo, end) reads without a fault */
  bool own;       /* the thread's own stack (lives as long as the thread) */
} snap__linux_stack_t;

/* The stack holding sp, for the thread tid whose pthread_self() is self:
   from the main thread's bounds known at load, or /proc/self/maps (open and
   read, tens of microseconds to milliseconds). False when sp is in no
   mapping or /proc cannot be read. [setup] Never in the stopped window. */
bool snap__linux_learn_stack(uintptr_t sp, uintptr_t self, int tid,
                             snap__linux_stack_t *out);

/* On the target, in the stopped window: adopts what the sampler learned (its
   own stack is remembered in TLS for good; any other stack only until
   snap__linux_window_stack_clear). [signal-safe] */
void snap__linux_window_stack(const snap__linux_stack_t *s);
void snap__linux_window_stack_clear(void);

/* The low bound of a stack the calling thread knows without reading a file
   (the main thread's, its own, the window's). [signal-safe] */
bool snap__linux_stack_low(uintptr_t addr, uintptr_t *lo);

/* ---- A blocked thread's registers (syscall_file.c) ---------------------- */

typedef enum snap__linux_sc_state {
  SNAP__LINUX_SC_RUNNING,    /* on a CPU or runnable: nothing published */
  SNAP__LINUX_SC_BLOCKED,    /* blocked, not in a system call: sp, pc */
  SNAP__LINUX_SC_IN_SYSCALL, /* blocked in system call nr: all fields */
} snap__linux_sc_state_t;

/* What /proc/self/task/<tid>/syscall says now. Under qemu-user it speaks
   of the emulator's host thread: check pc before trusting sp and pc. */
typedef struct snap__linux_syscall {
  snap__linux_sc_state_t state;
  long nr; /* the system call (this architecture's numbers); -1 if none */
  uintptr_t args[6];
  uintptr_t sp, pc; /* user registers at the kernel entry */
} snap__linux_syscall_t;

/* SNAP_OK, SNAP_ENOTHREAD (no such thread of ours), SNAP_EIO (unreadable
   or unknown format). [setup] */
int snap__linux_syscall_read(int tid, snap__linux_syscall_t *out);
/* The SNAP_WAIT_* kind system call nr (this architecture's numbers) waits
   in, before its arguments say more: futex, io, sleep, poll or other
   (thread_sched.c). */
unsigned snap__linux_wait_of_syscall(long nr);
/* Whether an I/O call nr's first argument is the descriptor it waits on
   (read, write, recv...; not open's directory or an AIO context). */
bool snap__linux_syscall_has_fd(long nr);

#endif /* SNAP_PLATFORM_LINUX_H */
