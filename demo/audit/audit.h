/*
 * audit.h — the parts of libstacksnap_audit.so (an LD_PRELOAD library that
 * records which code in a program reaches sensitive files, hosts and
 * peers; docs/audit.md is its contract) and what each part owns:
 *
 *   config.c       the settings, read once at start-up and copied; the
 *                  process's identity (pid, this library's code range, the
 *                  marker page that tells a copied child it is one)
 *   paths.c        making a path absolute; matching it to the prefixes
 *   records.c      the table of calls, one slot per (stack, function,
 *                  resource, result): lock-free
 *   calls.c        one hooked call recorded: the hooks' hot path (capture,
 *                  count in the table, wake the writer on a new slot)
 *   naming.c       the records, one per (call site, function, resource,
 *                  result): slots named and grouped on the helper thread,
 *                  or written raw (pcs and images) where naming is unsafe
 *   lines.c        the JSON lines, formatted with async-signal-safe code
 *   writer.c       the output file, the helper thread that names and
 *                  writes, the flushes (exit, _exit, exec, signals), fork
 *                  and children made without fork handlers
 *   fatal.c        the last write on fatal signals, and keeping its
 *                  handlers out of the program's sight
 *   hooks_file.c   the interposed file functions
 *   hooks_net.c    the interposed network and name-resolution functions
 *   hooks_exec.c   the interposed exec functions (a flush first)
 *   start.c        the constructor: config, writer, fatal, in that order
 *
 * The parts' order: each calls only parts above it in this list, so
 * their dependencies are a DAG (a part never calls back up into one that
 * calls it, and each can be read, and tested, with only what it names):
 *
 *   config.c                                (nothing)
 *   records.c      config
 *   naming.c       config, records
 *   lines.c        config, records, naming
 *   paths.c        config, lines (audit_decimal)
 *   writer.c       config, records, naming, lines
 *   calls.c        config, records, writer
 *   fatal.c        config, writer
 *   hooks_*.c      config, paths, lines, calls, writer
 *   start.c        config, writer, fatal
 *
 * Rules every part keeps: a hook never changes what the host sees (the
 * real function's result and errno come back unchanged); nothing this
 * library does for itself is recorded (the per-thread guard); the hooked
 * call never waits for I/O (the helper thread writes); and what a hook
 * runs is async-signal-safe (a program may call open, access, stat,
 * connect or exec from a signal handler that interrupted malloc, or in a
 * vfork child): it captures pcs and counts them in a preallocated table,
 * never allocating, locking or naming.
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

#include "decimal.h" /* stacksnap's: numbers in signal handlers */
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
#define AUDIT_MAX_SLOTS 8192  /* distinct stacks: a table at most 7/8 full */
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
/* The process's pid; a child (forked, or cloned without fork handlers)
   changes it (writer.c). */
extern _Atomic int audit_pid;
/* The parent's pid in a child that did not exec; 0 otherwise. */
extern _Atomic int audit_forked_from;
/* True once the configuration was read (the constructor ran). */
extern atomic_bool audit_ready;

/* The per-thread guard. 0: free. 1 and up: inside a hook's recording (1
   + how many signal handlers interrupted one on this thread): recording
   calls no hooked function, so a hooked call seen then comes from a
   signal handler, and is the program's (the table is reentrant).
   AUDIT_OWN: inside the library's own work, which may call hooked
   functions itself (dlsym, stacksnap reading ELF files, the helper, a
   flush): those calls go straight to the real functions, unrecorded.
   initial-exec: a preloaded library gets static TLS, and the first access
   must not allocate. */
#define AUDIT_OWN 1000
extern __thread int audit_busy __attribute__((tls_model("initial-exec")));
/* This thread's id, cached (0: not known yet). */
extern __thread int audit_tid __attribute__((tls_model("initial-exec")));

/* Whether a hooked call on this thread is the program's (to record). */
static inline bool audit_mine(void) { return audit_busy < AUDIT_OWN; }
/* Around a recording (when audit_mine()): returns what to restore. */
static inline int audit_enter(void) {
  int prev = audit_busy;
  audit_busy = prev + 1;
  return prev;
}
static inline void audit_leave(int prev) { audit_busy = prev; }

/* Reads the settings and the process's identity (start.c, first, under the
   guard). */
void audit_config_init(void);

/* CLOCK_REALTIME in ns [signal-safe]. */
uint64_t audit_now_ns(void);
/* The calling thread's id [signal-safe]. */
int audit_gettid(void);
/* getpid(), as the kernel answers it [signal-safe]. */
int audit_getpid(void);

/* A page whose contents the kernel zeroes in a child that does not share
   this process's memory (MADV_WIPEONFORK): fork, _Fork, clone without
   CLONE_VM. It holds the pid; zero means "a copied child that no fork
   handler told". NULL where the kernel has no such pages: then each check
   asks the kernel for the pid. */
extern _Atomic int *audit_marker;

/* True when this process is the one the table belongs to: false in a
   vfork child (it shares the parent's memory: its calls count in the
   parent's table, and it must not write or reset it) [signal-safe]. */
static inline bool audit_own_process(void) {
  return audit_getpid() == atomic_load(&audit_pid);
}

/* ---- paths.c ---------------------------------------------------------------
 */

/* The absolute form of path as seen from dirfd (AT_FDCWD: the working
   directory) into out (size bytes), "." and ".." resolved by name. False
   when it cannot be made (no working directory, dirfd not a directory,
   too long). [signal-safe] */
bool audit_absolute(int dirfd, const char *path, char *out, size_t size);
/* True when path starts with one of the configured prefixes. */
bool audit_watched(const char *path);

/* ---- records.c: the table of calls (the hot path) --------------------------
 */

/* A slot's record: not named yet, being named (the helper), taken to be
   written raw (a flush), or the record's id (>= 0). */
enum { SLOT_UNNAMED = -1, SLOT_NAMING = -2, SLOT_RAW = -3 };

typedef struct audit_slot {
  /* Set by the thread that claimed the slot before it is published
     (audit_slot_ready, release), then fixed. */
  uint64_t hash;     /* of the key: pcs, function, resource, result */
  uint32_t pcs;      /* offset of its pcs in audit_pcs_pool */
  uint32_t resource; /* offset of its text in audit_text_pool */
  uint32_t argument; /* the first call's path as passed, or UINT32_MAX */
  uint16_t npcs;     /* pcs kept (<= AUDIT_MAX_FRAMES) */
  unsigned char fn;  /* FN_* */
  bool truncated;    /* the stack was deeper than kept */
  int result;        /* 0 ok; else errno / EAI_* / h_errno value */
  int result_errno;  /* errno beside EAI_SYSTEM */
  /* Moving: counted by any thread, read by the writers. */
  _Atomic uint64_t count, first_ns, last_ns;
  _Atomic int thread_claims; /* entries of tids claimed (may pass 8) */
  _Atomic int tids[AUDIT_MAX_THREADS]; /* 0: claimed, not yet written */
  char names[AUDIT_MAX_THREADS][16];   /* written before its tid */
  /* The record it counts in (SLOT_* or an id), and the next slot of that
     record (-1: the last). */
  _Atomic int record, next;
} audit_slot_t;

extern audit_slot_t audit_slots[AUDIT_MAX_SLOTS];
extern uintptr_t audit_pcs_pool[]; /* written by records.c only */
extern char audit_text_pool[];
extern _Atomic uint64_t audit_calls, audit_calls_not_kept;

/* True once slot i is published (its fixed fields may be read). */
bool audit_slot_ready(int i);
/* Slot i's pcs, resource and argument (NULL when none). */
static inline const uintptr_t *audit_slot_pcs(const audit_slot_t *s) {
  return audit_pcs_pool + s->pcs;
}
static inline const char *audit_slot_resource(const audit_slot_t *s) {
  return audit_text_pool + s->resource;
}
static inline const char *audit_slot_argument(const audit_slot_t *s) {
  return s->argument == UINT32_MAX ? NULL : audit_text_pool + s->argument;
}

/* The parts of a call calls.c puts together [signal-safe]: the key of
   (pcs, fn, result, resource); the slot of that key, found or claimed and
   filled (-1: none could be had; *fresh: it is new); and one call counted
   on slot s by thread tid at now. */
uint64_t audit_slot_key(const uintptr_t *pcs, int n, int fn, int result,
                        const char *resource);
int audit_slot_find_or_add(uint64_t h, const uintptr_t *pcs, int n,
                           bool truncated, int fn, int result, int result_errno,
                           const char *resource, const char *argument,
                           bool *fresh);
void audit_slot_count(audit_slot_t *s, uint64_t now, int tid);
/* In a child: forget the parent's slots (their memory is reused). */
void audit_slots_forget(void);

/* ---- naming.c: records ------------------------------------------------------
 */

typedef struct audit_record {
  /* Set before the record is published (ready, release), then fixed. */
  atomic_bool ready;
  bool named;                /* false: raw (pcs and images only) */
  int slot;                  /* its first slot: the key; raw: the frames */
  const snap_stack_t *stack; /* named: the first slot's stack, named */
  int call_site;             /* index of the call site frame */
  bool app;                  /* that frame is the app's */
  uintptr_t site_pc;
  int last; /* the helper's: the chain's last slot */
  /* The writers': the count its last line carried (0: no line yet). */
  _Atomic uint64_t written;
} audit_record_t;

extern audit_record_t audit_records[AUDIT_MAX_RECORDS];
extern _Atomic int audit_nrecords; /* ids claimed (a record may not be
                                      ready yet) */

/* Names every slot not named yet and files it under its record (a new
   one, or the record of its call site). Allocates and locks: the helper
   thread's, or the exit's when no helper was ever started. */
void audit_name_pending(void);
/* Makes a raw record of each slot still not named (a flush where naming
   is unsafe) [signal-safe]. */
void audit_raw_pending(void);

/* A record's moving fields summed over its slots [signal-safe]. */
typedef struct audit_sum {
  uint64_t count, first_ns, last_ns;
  int nthreads;
  bool threads_more;
  int tids[AUDIT_MAX_THREADS];
  const char *names[AUDIT_MAX_THREADS]; /* 16 bytes each, maybe unended */
} audit_sum_t;
void audit_record_sum(int id, audit_sum_t *out);
/* Calls counted in slots no record could be made for (4096 records)
   [signal-safe]. */
uint64_t audit_calls_dropped(void);
/* Ids claimed, at most AUDIT_MAX_RECORDS [signal-safe]. */
static inline int audit_records_claimed(void) {
  int n = atomic_load_explicit(&audit_nrecords, memory_order_acquire);
  return n < AUDIT_MAX_RECORDS ? n : AUDIT_MAX_RECORDS;
}

/* In a child: forget the parent's records (named stacks are left: the
   child owns no lock that could guard a release). */
void audit_records_forget(void);

/* ---- lines.c ---------------------------------------------------------------
 */

typedef struct audit_buf {
  char *p;
  size_t cap, len;
  bool full; /* something did not fit */
} audit_buf_t;

/* Each appends one whole line ending in '\n', or nothing (false) when it
   does not fit in what is left of b. [signal-safe] */
bool audit_line_process(audit_buf_t *b);
bool audit_line_record(audit_buf_t *b, int id, const audit_sum_t *sum);
bool audit_line_update(audit_buf_t *b, int id, const audit_sum_t *sum);
bool audit_line_end(audit_buf_t *b, const char *reason, int sig,
                    uint64_t lines_lost);

/* ---- writer.c ---------------------------------------------------------------
 */

/* A new slot, of a call of fn whose stack is pcs (n of them; complete:
   the whole stack): wakes the helper thread, starting it when this call
   is provably not inside a signal handler nor in a child that must not
   start one [signal-safe]. */
void audit_writer_announce(int fn, const uintptr_t *pcs, int n, bool complete);
/* The last write: every record line and update not yet written, then the
   end line. reason: "exit", "_exit", "signal". Takes no lock and does not
   allocate [signal-safe]; only one runs (a second returns at once). */
void audit_writer_final(const char *reason, int sig);
/* Before an exec: the same, with reason "exec", and not the last: if the
   exec fails the process goes on [signal-safe]. */
void audit_writer_exec(void);
/* A child: handlers says whether fork handlers ran (the EMBEDDER stage of
   stacksnap's fork seam, after the library's own: platform.h) or not (the
   marker page was wiped: a raw clone, _Fork). Its own pid, table and file;
   without fork handlers, no naming ever (the parent's locks were copied as they
   stood). [signal-safe] */
void audit_writer_child(bool handlers);

/* At start-up (start.c): the fork handler, the real exit functions. */
void audit_writer_init(void);

/* Called first by every hook and flush: in a copied child that no fork
   handler saw, makes it a child with its own table and file
   (audit_writer_child) [signal-safe]. */
static inline void audit_check_process(void) {
  if (audit_marker
          ? atomic_load_explicit(audit_marker, memory_order_relaxed) == 0
          : audit_getpid() != atomic_load(&audit_pid))
    audit_writer_child(false);
}

/* ---- calls.c ---------------------------------------------------------------
 */

/* Records one call of fn that ended in result on resource (an absolute
   path, a peer, a host); argument is the path as passed when it differs,
   else NULL. Captures the caller's stack and counts it in its slot;
   calls that cannot be kept (the table or its pools full) are counted in
   audit_calls_not_kept. Call under the guard (audit_enter); keeps
   errno. [signal-safe] */
void audit_record_call(int fn, const char *resource, const char *argument,
                       int result, int result_errno);
/* ---- fatal.c ----------------------------------------------------------------
 */

/* Installs the last write's handler for each fatal signal whose
   disposition is the default. */
void audit_fatal_init(void);

/* ---- Real functions ---------------------------------------------------------
 */

/* The next definition of a function (libc's), looked up when this library
   is loaded (a constructor each, before the first hooked call can come
   from a signal handler or a vfork child, where dlsym must not run), or
   on first use by a call made before that (another library's
   constructor). Two threads may both look up: they store the same
   pointer. Looked up under the guard: dlsym may open files and
   allocate. */
#define AUDIT_REAL(type, name)                                                 \
  static type real_##name(void) {                                              \
    static _Atomic(type) fn;                                                   \
    type f = atomic_load_explicit(&fn, memory_order_acquire);                  \
    if (!f) {                                                                  \
      int busy = audit_busy;                                                   \
      audit_busy = AUDIT_OWN;                                                  \
      f = (type)dlsym(RTLD_NEXT, #name);                                       \
      audit_busy = busy;                                                       \
      atomic_store_explicit(&fn, f, memory_order_release);                     \
    }                                                                          \
    return f;                                                                  \
  }                                                                            \
  __attribute__((constructor(150))) static void resolve_##name(void) {         \
    (void)real_##name();                                                       \
  }

#endif
