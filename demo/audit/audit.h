/*
 * audit.h — the parts of libstacksnap_audit.so (an LD_PRELOAD library that
 * records which code in a program reaches sensitive files, hosts and
 * peers; docs/audit.md is its contract) and what each part owns:
 *
 *   config.c       the settings, read once at start-up and copied; the
 *                  process's identity (pid, this library's code range)
 *   paths.c        making a path absolute; matching it to the prefixes
 *   records.c      the table of records, one per (call site, function,
 *                  resource, result): the hooks' hot path
 *   lines.c        the JSON lines, formatted with async-signal-safe code
 *   writer.c       the output file, the bounded queue and the helper
 *                  thread that writes, the last write (exit, _exit), fork
 *   fatal.c        the last write on fatal signals, and keeping its
 *                  handlers out of the program's sight
 *   hooks_file.c   the interposed file functions
 *   hooks_net.c    the interposed network and name-resolution functions
 *
 * Rules every part keeps: a hook never changes what the host sees (the
 * real function's result and errno come back unchanged); nothing this
 * library does while recording is recorded (the per-thread guard); the
 * hooked call never waits for I/O (the helper thread writes).
 */
#ifndef STACKSNAP_AUDIT_H
#define STACKSNAP_AUDIT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stacksnap.h"

#define AUDIT_EXPORT __attribute__((visibility("default")))
/* For hooks a sanitizer's runtime calls while it starts (it installs its
   own signal handlers through sigaction, which finds ours): no
   instrumentation, which would run before the runtime is ready. */
#if defined(__has_attribute) &&                                                \
    __has_attribute(disable_sanitizer_instrumentation)
#define AUDIT_UNSANITIZED __attribute__((disable_sanitizer_instrumentation))
#else
#define AUDIT_UNSANITIZED                                                      \
  __attribute__((no_sanitize("address", "thread", "undefined")))
#endif
#define AUDIT_MAX_FRAMES 128 /* of a record's stack */
#define AUDIT_MAX_RECORDS 4096
#define AUDIT_MAX_THREADS 8   /* distinct threads named per record */
#define AUDIT_MAX_PREFIXES 16 /* STACKSNAP_AUDIT_PREFIX entries */

/* ---- The hooked functions ---------------------------------------------- */

enum { KIND_FILE, KIND_NETWORK, KIND_DNS };
enum { RESULT_ERRNO, RESULT_EAI, RESULT_HERRNO }; /* how a result is named */

/* X(name, kind, result naming): one entry per interposed function. */
#define AUDIT_FUNCTIONS(X)                                                     \
  X(open, KIND_FILE, RESULT_ERRNO)                                             \
  X(open64, KIND_FILE, RESULT_ERRNO)                                           \
  X(openat, KIND_FILE, RESULT_ERRNO)                                           \
  X(openat64, KIND_FILE, RESULT_ERRNO)                                         \
  X(__open_2, KIND_FILE, RESULT_ERRNO)                                         \
  X(__open64_2, KIND_FILE, RESULT_ERRNO)                                       \
  X(__openat_2, KIND_FILE, RESULT_ERRNO)                                       \
  X(__openat64_2, KIND_FILE, RESULT_ERRNO)                                     \
  X(openat2, KIND_FILE, RESULT_ERRNO)                                          \
  X(creat, KIND_FILE, RESULT_ERRNO)                                            \
  X(creat64, KIND_FILE, RESULT_ERRNO)                                          \
  X(fopen, KIND_FILE, RESULT_ERRNO)                                            \
  X(fopen64, KIND_FILE, RESULT_ERRNO)                                          \
  X(freopen, KIND_FILE, RESULT_ERRNO)                                          \
  X(freopen64, KIND_FILE, RESULT_ERRNO)                                        \
  X(stat, KIND_FILE, RESULT_ERRNO)                                             \
  X(stat64, KIND_FILE, RESULT_ERRNO)                                           \
  X(lstat, KIND_FILE, RESULT_ERRNO)                                            \
  X(lstat64, KIND_FILE, RESULT_ERRNO)                                          \
  X(fstatat, KIND_FILE, RESULT_ERRNO)                                          \
  X(fstatat64, KIND_FILE, RESULT_ERRNO)                                        \
  X(__xstat, KIND_FILE, RESULT_ERRNO)                                          \
  X(__xstat64, KIND_FILE, RESULT_ERRNO)                                        \
  X(__lxstat, KIND_FILE, RESULT_ERRNO)                                         \
  X(__lxstat64, KIND_FILE, RESULT_ERRNO)                                       \
  X(__fxstatat, KIND_FILE, RESULT_ERRNO)                                       \
  X(__fxstatat64, KIND_FILE, RESULT_ERRNO)                                     \
  X(statx, KIND_FILE, RESULT_ERRNO)                                            \
  X(access, KIND_FILE, RESULT_ERRNO)                                           \
  X(faccessat, KIND_FILE, RESULT_ERRNO)                                        \
  X(euidaccess, KIND_FILE, RESULT_ERRNO)                                       \
  X(eaccess, KIND_FILE, RESULT_ERRNO)                                          \
  X(connect, KIND_NETWORK, RESULT_ERRNO)                                       \
  X(sendto, KIND_NETWORK, RESULT_ERRNO)                                        \
  X(sendmsg, KIND_NETWORK, RESULT_ERRNO)                                       \
  X(getaddrinfo, KIND_DNS, RESULT_EAI)                                         \
  X(gethostbyname, KIND_DNS, RESULT_HERRNO)                                    \
  X(gethostbyname2, KIND_DNS, RESULT_HERRNO)                                   \
  X(gethostbyname_r, KIND_DNS, RESULT_HERRNO)                                  \
  X(gethostbyname2_r, KIND_DNS, RESULT_HERRNO)

#define AUDIT_FN_ENUM(name, kind, naming) FN_##name,
enum { AUDIT_FUNCTIONS(AUDIT_FN_ENUM) FN_COUNT };
#undef AUDIT_FN_ENUM

typedef struct audit_fn {
  const char *name;
  unsigned char kind, naming;
} audit_fn_t;
extern const audit_fn_t audit_fns[FN_COUNT];

/* ---- config.c ------------------------------------------------------------ */

typedef struct audit_config {
  char out[PATH_MAX]; /* STACKSNAP_AUDIT_OUT; "" = the stderr copy */
  int stderr_fd;      /* a copy of fd 2 taken at start-up, or -1 */
  const char *prefix[AUDIT_MAX_PREFIXES];
  size_t prefix_len[AUDIT_MAX_PREFIXES];
  int nprefixes;
  uintptr_t self_base, self_start, self_end; /* this library's code */
  uint64_t start_ns;                         /* CLOCK_REALTIME at start-up */
  char exe[PATH_MAX];
} audit_config_t;

extern audit_config_t audit_cfg;
/* The process's pid; a forked child changes it (writer.c). */
extern _Atomic int audit_pid;
/* The parent's pid in a forked child (no exec); 0 otherwise. */
extern _Atomic int audit_forked_from;
/* True once the configuration was read (the constructor ran). */
extern atomic_bool audit_ready;

/* The per-thread guard: set while this thread is inside the library's own
   work, so calls made meanwhile (stacksnap reading ELF files, dlsym, the
   writer) go straight to the real functions. initial-exec: a preloaded
   library gets static TLS, and the first access must not allocate. */
extern __thread int audit_busy __attribute__((tls_model("initial-exec")));
/* This thread's id, cached (0: not known yet). */
extern __thread int audit_tid __attribute__((tls_model("initial-exec")));

static inline bool audit_enter(void) {
  if (audit_busy)
    return false;
  audit_busy = 1;
  return true;
}
static inline void audit_leave(void) { audit_busy = 0; }

/* CLOCK_REALTIME in ns [signal-safe]. */
uint64_t audit_now_ns(void);
/* The calling thread's id [signal-safe]. */
int audit_gettid(void);

/* ---- paths.c ---------------------------------------------------------------
 */

/* The absolute form of path as seen from dirfd (AT_FDCWD: the working
   directory) into out (size bytes), "." and ".." resolved by name. False
   when it cannot be made (no working directory, dirfd not a directory,
   too long). */
bool audit_absolute(int dirfd, const char *path, char *out, size_t size);
/* True when path starts with one of the configured prefixes. */
bool audit_watched(const char *path);

/* ---- records.c -------------------------------------------------------------
 */

typedef struct audit_record {
  /* Set before the record is published (audit_nrecords), then fixed. */
  const snap_stack_t *stack; /* the first call's whole stack (a reference) */
  int call_site;             /* index of the call site frame in it */
  bool app;                  /* that frame is the app's */
  bool truncated;            /* the stack was deeper than kept */
  unsigned char fn;          /* FN_* */
  int result;                /* 0 ok; else errno / EAI_* / h_errno value */
  int result_errno;          /* errno beside EAI_SYSTEM */
  uintptr_t site_pc;
  uint32_t hash; /* of the resource */
  char *resource;
  char *argument; /* the first call's path as passed, when it differs */
  /* Moved under the table's lock; read without it by the writers (a
     final write cannot take a lock), so each is atomic. */
  _Atomic uint64_t count, first_ns, last_ns;
  _Atomic int nthreads; /* entries of tids/names published */
  atomic_bool threads_more;
  _Atomic int tids[AUDIT_MAX_THREADS];
  char names[AUDIT_MAX_THREADS][16];
  /* The writers': the count its last line carried (0: no line yet). */
  _Atomic uint64_t written;
} audit_record_t;

extern audit_record_t audit_records[AUDIT_MAX_RECORDS];
extern _Atomic int audit_nrecords; /* published records */
extern _Atomic uint64_t audit_calls, audit_calls_not_kept;

/* Records one call of fn that ended in result on resource (an absolute
   path, a peer, a host); argument is the path as passed when it differs,
   else NULL. Captures the caller's stack. Call under the guard; keeps
   errno. */
void audit_record_call(int fn, const char *resource, const char *argument,
                       int result, int result_errno);
/* In a forked child: forget the parent's records (their memory is left:
   the child owns no lock that could guard a release). */
void audit_records_forget(void);
/* fork: hold the table's lock across it. */
void audit_records_lock(void);
void audit_records_unlock(void);

/* ---- lines.c ---------------------------------------------------------------
 */

typedef struct audit_buf {
  char *p;
  size_t cap, len;
  bool full; /* something did not fit */
} audit_buf_t;

/* v in decimal at out, NUL-terminated (out has room for 21 bytes);
   returns the digits written [signal-safe]. */
size_t audit_decimal(char *out, uint64_t v);

/* Each appends one whole line ending in '\n', or nothing (false) when it
   does not fit in what is left of b. [signal-safe] */
bool audit_line_process(audit_buf_t *b);
bool audit_line_record(audit_buf_t *b, int id);
bool audit_line_update(audit_buf_t *b, int id);
bool audit_line_end(audit_buf_t *b, const char *reason, int sig,
                    uint64_t lines_lost);

/* ---- writer.c --------------------------------------------------------------
 */

/* A new record: queue it for the helper thread (started on the first
   one). Called under the guard, outside the table's lock. */
void audit_writer_announce(int id);
/* The last write: every record line and update not yet written, then the
   end line. reason: "exit", "_exit", "signal". Takes no lock and does not
   allocate [signal-safe]; only one runs (a second returns at once). */
void audit_writer_final(const char *reason, int sig);

/* At start-up (config.c): the queue, the fork handlers, fatal.c's. */
void audit_writer_init(void);

/* ---- fatal.c ---------------------------------------------------------------
 */

/* Installs the last write's handler for each fatal signal whose
   disposition is the default. */
void audit_fatal_init(void);

/* ---- Real functions --------------------------------------------------------
 */

/* The next definition of a function (libc's), looked up on first use.
   Two threads may both look up: they store the same pointer. Look up under
   the guard: dlsym may open files and allocate. */
#define AUDIT_REAL(type, name)                                                 \
  static type real_##name(void) {                                              \
    static _Atomic(type) fn;                                                   \
    type f = atomic_load_explicit(&fn, memory_order_acquire);                  \
    if (!f) {                                                                  \
      f = (type)dlsym(RTLD_NEXT, #name);                                       \
      atomic_store_explicit(&fn, f, memory_order_release);                     \
    }                                                                          \
    return f;                                                                  \
  }

#endif
