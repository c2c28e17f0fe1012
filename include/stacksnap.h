/*
 * stacksnap.h — the whole public API of stacksnap.
 *
 * stacksnap captures call stacks in-process (the calling thread or any other
 * thread of the process), tells app code from system code, and names frames
 * through a cache and watches the main thread's event loop for lag.
 *
 * Conventions:
 *  - Integers returned are a count (>= 0) or a negative SNAP_E* code
 *    (snap_strerror says it in words, snap_err_name as its name).
 *  - Nothing here aborts the host app or prints unless asked to.
 *  - Every function is tagged with where it may run. Each tag line lists:
 *      [async-signal-safe]  may be called from a signal handler (one that
 *                           interrupted malloc, a lock, anything): it takes
 *                           no lock, allocates nothing, blocks on nothing;
 *      [thread-safe]        may be called from any thread, concurrently
 *                           with any other function here (every function
 *                           is, but where a tag says otherwise);
 *      [allocates]          may call malloc (so: not in a signal handler,
 *                           not in a child forked from a threaded parent
 *                           before exec);
 *      [locks]              may take a lock of the library's, held briefly
 *                           (never across a call out of it);
 *      [blocks: ...]        may wait, and on what and for how long.
 *    A function with neither [allocates] nor [locks] does neither.
 *  - Structs the caller hands in to be filled start with `uint32_t size`
 *    (sizeof as the caller was built): later versions add fields only at
 *    the end and fill only what that size covers.
 */
#ifndef STACKSNAP_H
#define STACKSNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SNAP_EXPORT __attribute__((visibility("default")))
#else
#define SNAP_EXPORT
#endif

/* ---- Version ----------------------------------------------------------- */

/* The API version this header declares (semantic versioning: a new major
   breaks callers, a new minor only adds). The shared library's SONAME
   follows the major (libstacksnap.so.1); CMakeLists.txt, the pkg-config
   file and the CMake package take their version from these three lines
   (keep each exactly `#define SNAP_VERSION_<PART> <number>`). */
#define SNAP_VERSION_MAJOR 1
#define SNAP_VERSION_MINOR 3
#define SNAP_VERSION_PATCH 0
#define SNAP__STR2(x) #x
#define SNAP__STR(x) SNAP__STR2(x)
/* "MAJOR.MINOR.PATCH", e.g. "1.3.0" */
#define SNAP_VERSION_STRING                                                    \
  SNAP__STR(SNAP_VERSION_MAJOR)                                                \
  "." SNAP__STR(SNAP_VERSION_MINOR) "." SNAP__STR(SNAP_VERSION_PATCH)

/* The version the library was built as, "MAJOR.MINOR.PATCH": compare it
   with SNAP_VERSION_STRING to see whether the library loaded at run time
   is the one this header describes. A static string. [async-signal-safe] */
SNAP_EXPORT const char *snap_version(void);

/* ---- Errors ------------------------------------------------------------ */

/* One table makes both the enum and snap_strerror(): X(name, value, text). */
#define SNAP_ERRNO_MAP(X)                                                      \
  X(OK, 0, "success")                                                          \
  X(EINVAL, -1, "invalid argument")                                            \
  X(ENOTHREAD, -2, "no such thread, or it exited")                             \
  X(ETIMEDOUT, -3, "the target thread did not stop in time")                   \
  X(ENOMEM, -4, "out of memory")                                               \
  X(EUNSUPPORTED, -5, "not supported on this platform, architecture or build") \
  X(EIO, -6, "a file could not be read or written")                            \
  X(EBUSY, -7, "already started or in use")                                    \
  X(EBLOCKED, -8, "the thread blocks the sampling signal")                     \
  X(EENDED, -9, "it was over before the watchdog could sample it")             \
  X(ENOTREG, -10, "not a regular file: a link, FIFO or device left alone")     \
  X(ENOSTACK, -11, "the thread has too little stack left to be sampled")

enum {
#define SNAP__ERRNO_ENUM(name, value, text) SNAP_##name = value,
  SNAP_ERRNO_MAP(SNAP__ERRNO_ENUM)
#undef SNAP__ERRNO_ENUM
};

/* A static string for any int; never NULL ("unknown error" for non-codes).
   [async-signal-safe] */
SNAP_EXPORT const char *snap_strerror(int code);
/* Since 1.3. The code's name, a static string that never changes between
   versions (for logs and reports): "SNAP_OK", "SNAP_EINVAL", ...;
   "SNAP_EUNKNOWN" for an int that is no code. [async-signal-safe] */
SNAP_EXPORT const char *snap_err_name(int code);

/* ---- Threads ----------------------------------------------------------- */

typedef uint64_t
    snap_thread_t; /* Linux: kernel TID. Apple: mach thread port. */

/* The calling thread. [async-signal-safe] */
SNAP_EXPORT snap_thread_t snap_thread_self(void);
/* The process's main thread, recorded when the library loads.
   [async-signal-safe] */
SNAP_EXPORT snap_thread_t snap_thread_main(void);
/* Fills up to max thread ids; returns the total number of threads (which may
   exceed max), or a negative error.
   [thread-safe] [blocks: a /proc directory read on Linux; task_threads on
   Apple] No allocation on Linux; Apple's task_threads allocates. */
SNAP_EXPORT int snap_thread_list(snap_thread_t *out, int max);

/* 1 if the thread is running or runnable right now, 0 if it sleeps or
   waits (blocked in a lock, in poll(), ...), or a negative error. A lag
   monitor uses it to sample busy threads first and skip idle ones.
   [thread-safe] [blocks: one /proc read on Linux, thread_info on Apple]
   Allocates nothing, takes no lock. */
SNAP_EXPORT int snap_thread_is_running(snap_thread_t thread);

/* ---- Capture ----------------------------------------------------------- */

/* At a Swift async frame, follow the async context chain instead of the OS
   stack (as Apple's thread_stack_async_pcs does). */
#define SNAP_CAPTURE_ASYNC 0x1u
/* Keep only pcs inside app images (see snap_set_app_image_prefixes). */
#define SNAP_CAPTURE_APP_ONLY 0x2u
/* Walk frame records only; never consult call-frame information
   (.eh_frame). Faster through code without unwind tables, but loses the
   frames of code built without frame pointers (Debian's libc). Linux only;
   frame records are the whole story on Apple platforms anyway. */
#define SNAP_CAPTURE_FP_ONLY 0x4u
/* For snap_capture_thread: do not interrupt a thread blocked in
   a system call; walk it from the registers the kernel publishes (Linux:
   /proc/self/task/<tid>/syscall, its stack read with checked reads), and
   send the sampling signal only to threads that are running. A signal
   ends usleep, nanosleep, poll, epoll_wait... early with EINTR; this
   flag keeps them whole. Costs a few /proc reads and a checked read per
   stack word (tens of microseconds, ~130 for 38 frames), hence opt-in. Falls
   back to the signal when the thread runs, wakes during the walk, is blocked
   outside a system call, or the kernel's answer cannot be verified (qemu-user
   describes its own host thread). A quiet walk gives the OS stack, never a
   Swift async chain. Apple: no effect (thread_suspend interrupts nothing). */
#define SNAP_CAPTURE_QUIET 0x8u
#define SNAP_CAPTURE_ALL_FLAGS 0xfu

/* snap_capture_thread returns at most this many pcs, and no walk takes more
   than twice this many steps (a bound on skip and on app-only filtering). */
#define SNAP_MAX_FRAMES 512

/* The calling thread. Frame 0 is the return address into the caller of
   snap_capture_self (as with backtrace()); `skip` drops that many more.
   Called in a signal handler, the walk crosses the signal frame: the frame
   after it is the exact pc where the signal landed, not a return address.
   Returns the number of pcs written (<= max), or SNAP_EINVAL.
   [async-signal-safe] [thread-safe] Allocates nothing, takes no lock,
   blocks on nothing. */
SNAP_EXPORT int snap_capture_self(uintptr_t *pcs, int max, int skip,
                                  unsigned flags);

/* Another thread (or the caller: then it behaves as snap_capture_self with
   skip 0). Frame 0 is the pc where the thread was stopped, the rest are
   return addresses (but for the pc after a crossed signal frame, which is
   exact too). Returns the number written, or SNAP_EINVAL,
   SNAP_ENOTHREAD (no such thread / it exited), SNAP_ETIMEDOUT (it did not
   answer in time; the caller never waits longer than the sample timeout).
   Linux: a real-time signal makes the target walk its own stack inside the
   signal handler; see snap_set_sample_signal. The handler runs on the
   target's stack under the kernel's signal frame (3 KiB on x86_64 with
   AVX-512, 4.6 KiB on arm64, more with SVE: AT_MINSIGSTKSZ) and needs 2 KiB
   more (16 KiB in ASan/TSan builds); with less room left the sample is
   SNAP_ENOSTACK (SNAP_ENOMEM before 1.3) and the thread runs on unharmed. 8 KiB
   left is enough on x86_64 and on arm64 without SVE; below the kernel's frame
   no signal handler can run at all. Also SNAP_EIO when the target's stack
   cannot be located (/proc/self/maps unreadable), SNAP_EBUSY when it ran on a
   different stack at each of three signals (coroutines switching fast).
   [thread-safe] [locks: the process's one sampler lock, so samples never
   overlap] [blocks: up to the sample timeout, waiting for the target]
   Allocates only the first time a thread is sampled (its stack bounds).
   Not async-signal-safe. */
SNAP_EXPORT int snap_capture_thread(snap_thread_t thread, uintptr_t *pcs,
                                    int max, unsigned flags);

/* ---- What a blocked thread waits for ------------------------------------ */

/* The kind of wait a sampled thread was in. */
enum {
  SNAP_WAIT_NONE = 0,    /* not in a system call as far as the sample shows
                            (running, or between calls), or not known */
  SNAP_WAIT_MUTEX,       /* a mutex (pthread_mutex_t of any type) */
  SNAP_WAIT_RWLOCK,      /* a reader-writer lock */
  SNAP_WAIT_UNFAIR_LOCK, /* Apple: os_unfair_lock */
  SNAP_WAIT_CONDVAR,     /* a condition variable */
  SNAP_WAIT_SEMAPHORE,   /* a semaphore (sem_t, dispatch/Mach semaphores) */
  SNAP_WAIT_FUTEX,       /* a futex or ulock word of no known kind */
  SNAP_WAIT_IO,          /* read, write, send, receive ... on a descriptor */
  SNAP_WAIT_SLEEP,       /* a timed sleep */
  SNAP_WAIT_POLL,        /* poll, epoll, select, kevent: any of several */
  SNAP_WAIT_OTHER,       /* another system call */
  SNAP_WAIT_KIND_COUNT
};
/* Whether snap_wait_t.owner names the holder. */
enum {
  SNAP_OWNER_NONE = 0, /* the kind has no owner (a condition variable, a
                          semaphore, a futex, I/O, a sleep ...) */
  SNAP_OWNER_UNKNOWN,  /* it has one, but the lock's memory did not name a
                          live thread of this process other than the waiter
                          (never a guess) */
  SNAP_OWNER_KNOWN
};
/* What a thread was waiting for when it was sampled. API v1: the caller
   sets size = sizeof(snap_wait_t); the library fills the fields that size
   covers. */
typedef struct snap_wait {
  uint32_t size;        /* set by the caller */
  uint32_t kind;        /* SNAP_WAIT_* */
  uint32_t owner_state; /* SNAP_OWNER_* */
  int32_t fd;           /* SNAP_WAIT_IO: the descriptor; -1 otherwise */
  uintptr_t address;    /* the lock, condition variable, semaphore or
                           futex word waited on; 0 for other kinds */
  snap_thread_t owner;  /* SNAP_OWNER_KNOWN: the holder; 0 otherwise */
  int64_t syscall;      /* the system call as the OS numbers it (Linux:
                           this architecture's numbers; Apple: x16 / rax
                           without its class bits for BSD calls, negative
                           for Mach traps), SNAP_WAIT_NO_SYSCALL when the
                           thread was not (known to be) in one */
  uint64_t args[6];     /* its arguments, when syscall is known */
  char owner_name[64];  /* SNAP_OWNER_KNOWN: the holder's thread name, ""
                           when it has none or it could not be read */
} snap_wait_t;
#define SNAP_WAIT_NO_SYSCALL INT64_MIN

/* snap_capture_thread, and what the thread was waiting for.
   wait may be NULL (then this is snap_capture_thread). The wait is taken
   with the stack at no cost to the sample: with SNAP_CAPTURE_QUIET from
   what the kernel publishes (Linux), otherwise from the registers the
   stopped thread had; it is decoded afterwards, on the calling thread,
   reading the lock's memory only through checked reads: Linux/glibc
   mutexes (every type, priority-inheritance included) and write-held
   rwlocks name their owner; Apple os_unfair_lock, pthread mutexes and
   write-held rwlocks do.
   On failure (a negative return) *wait is kind SNAP_WAIT_NONE. The
   caller's own thread: kind SNAP_WAIT_NONE. Returns as
   snap_capture_thread, or SNAP_EINVAL for a wait whose size is not one
   this library knows. Tags as snap_capture_thread; the decode also
   reads /proc (the owner's name: ~6 us). Not async-signal-safe. */
SNAP_EXPORT int snap_capture_thread_wait(snap_thread_t thread, uintptr_t *pcs,
                                         int max, unsigned flags,
                                         snap_wait_t *wait);
/* "none", "mutex", "rwlock", "unfair_lock", "condvar", "semaphore",
   "futex", "io", "sleep", "poll", "other"; "unknown" for other values.
   A static string. [async-signal-safe] */
SNAP_EXPORT const char *snap_wait_kind_name(unsigned kind);

/* How long snap_capture_thread waits for the target to answer. Default
   100 ms; 1..10000 ms accepted. Returns SNAP_OK or SNAP_EINVAL.
   [async-signal-safe] [thread-safe] (one atomic store) */
SNAP_EXPORT int snap_set_sample_timeout_ms(unsigned ms);

/* Linux: the real-time signal used for cross-thread samples.
   Default SIGRTMIN+5. Must be called before the first snap_capture_thread;
   returns SNAP_EBUSY after that, SNAP_EINVAL for a non-real-time signal,
   SNAP_EUNSUPPORTED where samples do not use signals (Apple). A handler the
   app had installed for that signal keeps receiving every signal that is not
   a stacksnap sample request. [thread-safe] [locks] Allocates nothing. */
SNAP_EXPORT int snap_set_sample_signal(int signo);

/* ---- Images ------------------------------------------------------------ */

/* True if pc lies in the executable range of an app image. Reads the last
   image table: images loaded or unloaded since are picked up by the next
   snap_capture_thread, snap_image_lookup or snap_set_app_image_prefixes.
   [async-signal-safe] [thread-safe] */
SNAP_EXPORT bool snap_is_app_address(uintptr_t pc);

/* Which images count as "the app": those whose path starts with one of the
   prefixes (copied). NULL/0 restores the default: the main executable and
   every image in its directory tree (on Apple: the app bundle). Returns
   SNAP_OK, SNAP_EINVAL (n < 0, n > 64, a NULL or empty prefix),
   SNAP_ENOMEM, or SNAP_EBUSY (the new table could not be published yet
   because older ones are still being read; the prefixes are kept and
   apply from the next refresh). [thread-safe] [allocates] [locks: the
   image table's writer lock] [blocks: the loader's lock while it lists
   the images] */
SNAP_EXPORT int snap_set_app_image_prefixes(const char *const *prefixes, int n);

/* What image holds pc. Useful before symbols exist: prints as
   "image + offset".
   API v1: a struct the caller provides starts with its own size. Set
   `size = sizeof(snap_image_info_t)` before the call; the library fills
   only the fields that size covers, so fields added in later versions
   (always at the end) never write past an older caller's struct, and
   refuses a size it does not know with SNAP_EINVAL, writing nothing. */
typedef struct snap_image_info {
  uint32_t size;   /* set by the caller: sizeof(snap_image_info_t) */
  uintptr_t base;  /* load address (what addr2line's offsets count from) */
  uintptr_t start; /* executable range containing pc: [start, end) */
  uintptr_t end;
  const char *path; /* full path; valid for the life of the process */
  const char *name; /* base name of path */
  bool in_app;
  /* API 1.1 (callers built against 1.0 pass the smaller size and get the
     fields above only): */
  uintptr_t image_size; /* the image's extent: every segment lies in
                           [base, base + image_size) */
  /* What names this build later, NULL if the image has none: Linux, the
     GNU build-id note in lowercase hex (the file name under
     /usr/lib/debug/.build-id/, as `readelf -n` shows it); Apple, LC_UUID
     as 8-4-4-4-12 uppercase hex (as `dwarfdump --uuid` prints it). Valid
     for the life of the process. */
  const char *build_id;
} snap_image_info_t;

/* Returns SNAP_OK and fills *out, or SNAP_EINVAL (out NULL, out->size not
   a size this library knows, or pc in no executable image). Refreshes the
   image table first. [thread-safe] [allocates and locks when the table
   must be rebuilt] [blocks: the loader's lock, briefly] */
SNAP_EXPORT int snap_image_lookup(uintptr_t pc, snap_image_info_t *out);

/* ---- Symbols ----------------------------------------------------------- */

/* One named frame. Strings live as long as the stack object holding it. */
typedef struct snap_frame {
  uintptr_t pc;          /* as captured */
  uintptr_t image_base;  /* load address of the containing image, 0 if none */
  const char *image;     /* image file's base name, "???" if none */
  const char *symbol;    /* demangled function name (mangled with
                            SNAP_SYMBOLICATE_MANGLED), NULL if unknown */
  uintptr_t symbol_addr; /* start of that function, 0 if unknown */
  bool in_app;
  /* Source position, only with SNAP_SYMBOLICATE_SOURCE_LINES
     where elfutils' libdw is installed and the image has DWARF line
     tables; NULL / 0 otherwise. */
  const char *source_file;
  unsigned source_line;
  /* Since 1.1: the containing image's full path, its build id (as in
     snap_image_info_t; NULL if none) and its extent from image_base, so a
     stack printed or stored now can be named later from the image's
     separate debug file (stacksnap-symbolicate). NULL / 0 when pc is in no
     image. (Frames are reached through snap_stack_frame only: the struct
     may grow at its end.) */
  const char *image_path;
  const char *build_id;
  uintptr_t image_size;
} snap_frame_t;

typedef struct snap_stack snap_stack_t; /* immutable, shared, ref-counted */

/* Flag for snap_symbolicate: pcs[0] is an exact pc (where a thread
   was stopped, as frame 0 of snap_capture_thread is), not a return address.
   Every other pc is taken as a return address and named by the call before
   it (pc - 1), except the pc right after a signal-return trampoline, which
   is always exact. Without the flag a frame stopped on a function's first
   instruction would be named for the function before it. */
#define SNAP_SYMBOLICATE_EXACT_PC0 0x100u
/* Flag: also fill source_file / source_line (see snap_frame_t).
   Costs a DWARF lookup per frame on a cache miss; never on a hit. */
#define SNAP_SYMBOLICATE_SOURCE_LINES 0x200u
/* Flag (since 1.3): symbol not demangled, C++ ("_Z...") and Swift
   ("$s...") names as the compilers mangled them (as dladdr gives them: on
   Apple without the extra leading underscore of Mach-O symbol tables):
   for reports demangled elsewhere (a server, c++filt, swift demangle), and
   the cheapest naming: the runtimes' demanglers are most of a cold lookup
   in a C++ library (two thirds in libLLVM). Cached apart from demangled
   names. */
#define SNAP_SYMBOLICATE_MANGLED 0x400u

/* Names the pcs. Results are cached from the second call on: the first
   call for some pcs (and flags) names them without keeping them (most
   stacks are never asked for again), the second names them again and
   caches the result, and later calls give that object back quickly,
   verified pc by pc, so two different stacks never share an answer; names
   cached for an image that was unloaded since are not served. flags:
   SNAP_CAPTURE_APP_ONLY drops non-app frames, SNAP_SYMBOLICATE_EXACT_PC0,
   SNAP_SYMBOLICATE_SOURCE_LINES, SNAP_SYMBOLICATE_MANGLED. n == 0 gives an
   empty stack. NULL for NULL pcs with n > 0, n < 0, n > SNAP_MAX_FRAMES,
   unknown flags, or out of memory (snap_symbolicate_ex tells which). Release
   the result with snap_stack_release. [thread-safe] A hit (the same pcs a third
   time) allocates nothing and takes no lock when the calling thread's own front
   holds it; a miss [allocates] [locks: a cache stripe, the symbol provider's]
   [blocks: the loader's lock briefly; reading an image's symbol file the first
   time one of its pcs is named]. Not async-signal-safe. */
SNAP_EXPORT const snap_stack_t *snap_symbolicate(const uintptr_t *pcs, int n,
                                                 unsigned flags);

/* The job of +[NSThread callStackSymbols], with a depth limit and the cache:
   capture the caller's stack (frame 0 = the caller) and name it. max is
   1..SNAP_MAX_FRAMES; flags as for snap_capture_self plus the
   SNAP_SYMBOLICATE_* flags. SNAP_SYMBOLICATE_EXACT_PC0 is accepted (flags
   can be passed through from snap_symbolicate's callers) and changes
   nothing: every frame of the caller's own stack, frame 0 included, is a
   return address and is named by its call. NULL on bad arguments or out of
   memory (snap_callstack_symbols_ex tells which).
   [thread-safe] Tags as snap_symbolicate. Not async-signal-safe (it may
   allocate and lock on a cache miss); from a signal handler, capture with
   snap_capture_self and name later. */
SNAP_EXPORT const snap_stack_t *snap_callstack_symbols(int max, unsigned flags);

/* The naming calls' int-returning twins, for callers that want
   to know why there is no stack. Each takes the same arguments plus `out`
   and returns SNAP_OK with *out set (release it with snap_stack_release),
   or a negative code with *out NULL:
     SNAP_EINVAL  out NULL; pcs NULL with n > 0; n < 0 or > SNAP_MAX_FRAMES
                  (max <= 0 or > SNAP_MAX_FRAMES); unknown flag bits
     SNAP_ENOMEM  an allocation failed while naming (nothing is cached)
   The NULL-returning calls above are these with the code dropped; tags
   as theirs. */
SNAP_EXPORT int snap_symbolicate_ex(const uintptr_t *pcs, int n, unsigned flags,
                                    const snap_stack_t **out);
SNAP_EXPORT int snap_callstack_symbols_ex(int max, unsigned flags,
                                          const snap_stack_t **out);

/* Since 1.3. One address named into the caller's buffer, the job of
   dladdr or libbacktrace's backtrace_syminfo with this library's names
   (.symtab and debug files, PLT entries, Objective-C methods, demangled):
   for a hook that wants only who called it, or a tool naming addresses one
   by one. No stack object is made and nothing is cached, so a name costs
   less than a cold snap_symbolicate of one pc. The struct is sized
   like snap_image_info_t: set `size = sizeof(snap_symbol_info_t)`. */
typedef struct snap_symbol_info {
  uint32_t size;          /* set by the caller: sizeof(snap_symbol_info_t) */
  uintptr_t symbol_addr;  /* the function's first byte; 0 if unnamed */
  size_t symbol_len;      /* the whole name's length, which may be more than
                             the buffer held; 0 if unnamed */
  uintptr_t image_base;   /* load address of the image holding addr */
  const char *image;      /* that image's base name, and */
  const char *image_path; /* its full path: both valid for the life of
                             the process */
  bool in_app;
} snap_symbol_info_t;

/* Names addr, taken as it is (as dladdr takes it: to name the call
   before a return address, pass the return address minus one). Writes the
   function's name into name, NUL-terminated and cut to name_size - 1
   bytes (out->symbol_len says how long it is whole: with name NULL and
   name_size 0, only the length is asked); "" when the image has no name
   for addr. flags: 0 or SNAP_SYMBOLICATE_MANGLED. Refreshes the image
   table first, so an unloaded image is never named. Returns SNAP_OK, or
   SNAP_EINVAL (out NULL or of a size this library does not know, name NULL
   with name_size > 0, unknown flags, addr in no executable image: then
   nothing is written). A name memory ran out for is "", as an unknown one.
   [thread-safe] [allocates: the demangled name; reading an image's symbol
   file the first time one of its addresses is named] [locks: the symbol
   provider's] [blocks: the loader's lock briefly] Not async-signal-safe. */
SNAP_EXPORT int snap_symbol_lookup(uintptr_t addr, unsigned flags,
                                   snap_symbol_info_t *out, char *name,
                                   size_t name_size);

/* 0 for NULL. [async-signal-safe] [thread-safe] */
SNAP_EXPORT int snap_stack_count(const snap_stack_t *s);
/* NULL when s is NULL or i is out of range (or out of memory: a stack's
   frames and lines are built on the first call of either).
   [thread-safe] [allocates: the frames and lines, on the first call for a
   stack] Lock-free. */
SNAP_EXPORT const snap_frame_t *snap_stack_frame(const snap_stack_t *s, int i);
/* One line per frame, in the layout of Apple's callStackSymbols lines:
   "<index>   <image, padded>   0x<pc, 16 hex digits> <symbol> + <offset>",
   where offset = pc - symbol_addr; "<image> + <pc - image_base>" when the
   symbol is unknown, "0x0 + <pc>" when the image is. NULL when out of
   range. Tags as snap_stack_frame. */
SNAP_EXPORT const char *snap_stack_line(const snap_stack_t *s, int i);
/* Since 1.3. Adds one reference and returns s (NULL: NULL), so a stack
   can be kept by two owners, each releasing its own.
   [async-signal-safe] [thread-safe] (one atomic add) */
SNAP_EXPORT const snap_stack_t *snap_stack_retain(const snap_stack_t *s);
/* Drops one reference; NULL is ignored. The last one frees the stack.
   [thread-safe] [allocates: frees] [locks: the shared names', on the last
   reference] Not async-signal-safe. */
SNAP_EXPORT void snap_stack_release(const snap_stack_t *s);

/* Debug printing of the caller's stack to a file descriptor, one line per
   frame as snap_stack_line. max and flags as for snap_callstack_symbols.
   Returns the number of frames printed, or SNAP_EINVAL (fd < 0, or as
   snap_callstack_symbols_ex), SNAP_ENOMEM, SNAP_EIO (a write failed).
   [thread-safe] Tags as snap_callstack_symbols, plus [blocks: write(2) to
   fd]. Never raises SIGPIPE. Not async-signal-safe. */
SNAP_EXPORT int snap_print_callstack(int fd, int max, unsigned flags);

/* The cache's memory cap in bytes: stack objects, index
   entries, the symbol names they share, each thread's front slots, and the
   frames and lines of stacks whose frames or lines were read. Default
   SNAP_SYMBOL_CACHE_DEFAULT_BYTES: 16 MiB holds ~18 000 stacks of depth 32
   (under 1 KiB each: names are shared, frames and lines are built on the
   first snap_stack_frame / snap_stack_line and kept with the stack, ~5 KiB
   more), more distinct call sites than a hooked API sees in a test run.
   A stack is kept from its second lookup on (the first is named and not
   kept: only a small fixed filter of keys remembers it, not counted here).
   Least recently used stacks are evicted past the cap; a lower cap also
   empties every thread's front slots. A stack handed out stays valid until
   released. 0 disables caching (every call names afresh) and lets go of
   everything the cache held (a thread inside the cache at that instant
   lets go of its own front on its next call). Returns SNAP_OK.
   [thread-safe] [locks: every stripe, one after another] [allocates:
   frees what it evicts] */
#define SNAP_SYMBOL_CACHE_DEFAULT_BYTES (16u << 20)
SNAP_EXPORT int snap_set_symbol_cache_limit(size_t bytes);

/* Cache counters, for tests and tuning. As with
   snap_image_info_t, the caller sets `size = sizeof
   (snap_symbol_cache_stats_t)` first; only what that size covers is
   filled. Returns SNAP_OK, or SNAP_EINVAL (out NULL, or a size this
   library does not know: nothing is written). [thread-safe] [locks: every
   stripe, one after another] Allocates nothing. */
typedef struct snap_symbol_cache_stats {
  uint32_t size; /* set by the caller: sizeof(snap_symbol_cache_stats_t) */
  uint64_t hits, misses, evictions;
  uint64_t entries; /* stacks held now */
  uint64_t bytes;   /* memory charged to them now */
} snap_symbol_cache_stats_t;
SNAP_EXPORT int snap_symbol_cache_stats(snap_symbol_cache_stats_t *out);

/* ---- Lag watchdog ------------------------------------------------------ */

/* A watchdog thread watches the main thread's event loop (told through
   snap_lag_loop_busy / snap_lag_loop_idle, or an adapter that makes those
   calls) and writes a JSON report when one busy stretch outlives
   threshold_ms. Reports are named "<unix-ms>-<kind>.json" (the unix-ms is
   when the busy stretch began), schema "stacksnap.lag/2"; the fields are
   listed in docs/lag.md.

   API v1: the struct carries its own size, so later versions can add
   fields without breaking callers built against this header. Start from
   snap_lag_config_default (it sets `size` to this header's sizeof, then
   set what you need); new fields are only ever added at the end, and
   snap_lag_start reads only the fields the caller's `size` covers (the
   rest keep their defaults) and refuses a size it does not know
   (SNAP_EINVAL). */
typedef struct snap_lag_config {
  /* sizeof(snap_lag_config_t) as the caller was built: set by
     snap_lag_config_default; never set it by hand. Always first, and a
     uint32_t like the other structs' size fields. */
  uint32_t size;
  /* Busy longer than this is a lag. Default 250 ms: Apple's definition of
     a hang (a UI that does not answer for 250 ms is felt). 10..60000. */
  unsigned threshold_ms;
  /* While busy, the main thread's stack is sampled this often into a ring;
     the report's costliest_stack is the one seen most. Default 50 ms and
     a ring of 20 (WeChat Matrix's values: one second of history).
     0 = no point-stack sampling; else 1..threshold_ms. */
  unsigned sample_interval_ms;
  unsigned ring_size; /* 1..1000 (0 allowed when sampling is off) */
  /* A lag this long is a hang: the report's kind becomes "hang". Default
     8000 ms (roughly where iOS's watchdog kills an app that does not
     answer). threshold_ms..3600000. */
  unsigned hang_ms;
  /* The main thread above this share of one core over cpu_window_ms gives
     a "cpu" report even when every loop iteration is short. Default 80
     (Matrix). 0 = off; else 1..100. */
  unsigned cpu_percent;
  const char *report_dir; /* required; created (with parents) if missing */
  /* Reports older than this many days are deleted. Default 7; 1..3650. */
  unsigned retention_days;
  /* At most this many new reports per UTC day; updates of a report already
     written are not counted. Default 20; 1..100000. */
  unsigned max_reports_per_day;
  /* Called on the watchdog thread after a report file was renamed into
     place (again after each update). May be NULL. */
  void (*on_report)(const char *report_path, void *ctx);
  void *ctx;
  /* Extensions (set by snap_lag_config_default; keep it the first call). */
  /* The window the CPU trigger averages over. Default 5000 ms: long enough
     that a burst of work is not reported, short enough to catch a screen
     that keeps the main thread hot. 100..600000. */
  unsigned cpu_window_ms;
  /* Threads in a report, running ones first. Default 64: a report stays a
     few hundred KiB with 64 named stacks. 1..1024. */
  unsigned max_threads;
  /* Report even while a debugger traces the process. Default false: a
     process stopped at a breakpoint is not lagging. */
  bool report_when_traced;
  /* Since 1.1 (config version 2). Called on the watchdog thread after every
     write of a
     report, as on_report is, with `final` true exactly once per report, on
     the write that completes it: its lag or hang ended (or the watchdog
     stopped during it), a cpu report, a hang_killed one. A report is
     rewritten while its lag lasts (14 times for a 10 s hang), and an
     annealed repeat later rewrites its count (final false): an uploader
     acts once, on final. May be NULL (the default); both callbacks may be
     set, and both get ctx. */
  void (*on_report_write)(const char *report_path, bool final, void *ctx);
  /* Since 1.1 (config version 2). The whole-process dump of a report
     samples threads
     one after another; past this budget the rest are listed unsampled
     ("the target thread did not stop in time"), and a thread that blocks
     the sampling signal (Linux; libdispatch's workers do) is listed with
     that reason at once instead of costing the sample timeout. Default
     200 ms; 1..10000. */
  unsigned dump_budget_ms;
  /* Not a field: v2's tail padding, kept so that v3 starts past v2's size
     (a struct copy need not copy padding). Never read. */
  unsigned reserved_v2_;
  /* Version 3 (1.3.0). Permission bits of every file the watchdog writes
     (reports, the traces beside them), set exactly, whatever the umask;
     report_dir, when the watchdog creates it (and its missing parents),
     gets these plus search (x) wherever they read: 0600 gives 0700, 0640
     0750. An existing directory is left as it is. Default 0600: reports
     hold stacks, paths and thread names, for the owner only
     (docs/security.md). Owner read and write always; group and others
     read or write at most: 0600, 0640, 0660, 0644 ... (SNAP_EINVAL
     otherwise). */
  unsigned file_mode;
} snap_lag_config_t;

/* Fills the `size` bytes at cfg with the defaults above and cfg->size
   with `size` (NULL: nothing). Call it through snap_lag_config_default,
   which passes the caller's sizeof: the library never writes past the
   caller's struct. A size it does not know gets zeroes and is refused by
   snap_lag_start. [async-signal-safe] [thread-safe] */
SNAP_EXPORT void snap_lag_config_init(snap_lag_config_t *cfg, size_t size);
/* Fills *cfg with the defaults above and its size (report_dir NULL: set
   it). */
static inline void snap_lag_config_default(snap_lag_config_t *cfg) {
  snap_lag_config_init(cfg, sizeof *cfg);
}
/* Starts the watchdog thread for snap_thread_main(). The config is copied.
   Before it returns, reports left by a process that died during a lag are
   turned into "hang_killed" reports, and retention and the daily cap are
   applied to report_dir. Returns SNAP_OK, SNAP_EINVAL (NULL, a size this
   library does not know, a value out of range, no report_dir), SNAP_EIO
   (report_dir cannot be created or written), SNAP_ENOMEM, SNAP_EBUSY (already
   started). [thread-safe] [allocates] [locks] [blocks: reading and
   rewriting report_dir; creating the watchdog thread] */
SNAP_EXPORT int snap_lag_start(const snap_lag_config_t *cfg);
/* Stops and joins the watchdog; an ongoing lag's report is finished (its
   duration so far). SNAP_OK, also when not started or already stopped.
   Not from the watchdog thread (on_report): that returns SNAP_EBUSY.
   [thread-safe] [blocks: until the watchdog finishes the report it is
   writing and exits] */
SNAP_EXPORT int snap_lag_stop(void);

/* Loop observer calls, from the main thread, on every loop iteration:
   busy when the loop woke and starts handling events, idle when it is
   about to sleep. Each is a clock read (no syscall: vDSO / commpage) and
   two atomic stores (busy's second one an exchange); busy also posts a
   semaphore when it finds the watchdog parked, which the watchdog does only
   after a whole sample interval with no busy call (so at most a few times
   a second, and a loop that sleeps costs the watchdog no wakeups). The
   main thread also reads its own CPU time and run-queue wait (two system
   calls, ~4 us) at most every 4 ms and at the end of a stretch as long as
   a lag, so a lag's time split covers that lag alone (docs/lag.md).
   No lock, no allocation. Cheap no-ops when the watchdog is not running.
   Lock-free and wait-free: fit for the hottest path. Main thread only
   (the observer keeps one loop's state, written by that loop alone), and
   not from a signal handler that could interrupt the loop's own call. */
SNAP_EXPORT void snap_lag_loop_busy(void);
SNAP_EXPORT void snap_lag_loop_idle(void);

/* Adapters: hook a real loop so the app needs no manual calls. Each may be
   called before or after snap_lag_start; attaching twice is harmless.
   GLib: wraps the context's poll function (NULL = the default context):
   idle before poll, busy after — the moments of CFRunLoop's BeforeWaiting
   and AfterWaiting. SNAP_EUNSUPPORTED when stacksnap was built without
   GLib's headers or the process has not loaded GLib.
   CFRunLoop (Apple): observers in the common modes (NULL = main run loop);
   SNAP_EUNSUPPORTED elsewhere. [thread-safe] [allocates] [locks] (the
   loop's own: call them where the loop's API may be called) */
SNAP_EXPORT int snap_lag_attach_glib(void *main_context);
SNAP_EXPORT int snap_lag_attach_cfrunloop(void *runloop);

/* ---- Sampling trace ---------------------------------------------------- */

/* Since 1.2. A sampler thread records what the main thread (and, while they
   run, the other threads) did, sample by sample, into a bounded memory
   budget that keeps the last window_seconds; snap_trace_write turns any
   part of it into a Perfetto trace, Trace Event JSON or folded stacks.
   Each sample keeps its time, thread, stack, the thread's CPU time and
   its state: running, runnable (waiting for a CPU: starved) or blocked
   (and on what: the snap_wait_t kinds). Identical consecutive samples of
   a thread merge into one span and stacks share their common frames, so
   a steady main thread costs a few bytes a sample. Nothing is named until
   a trace is written. docs/trace.md has the formats and the costs.

   Threads other than the main one are sampled only while they run (their
   CPU time advanced since the last look, and the kernel says they are on
   a CPU now): idle workers cost nothing and are never interrupted. The
   main thread is sampled whatever it does: a blocked main thread is
   read from what the kernel publishes (SNAP_CAPTURE_QUIET), never
   interrupted, and re-read only when it ran since its last sample.

   The struct follows the versioning rule of snap_lag_config_t: start from
   snap_trace_config_default. */
typedef struct snap_trace_config {
  uint32_t size; /* sizeof(snap_trace_config_t), set by _default */
  /* The main thread's sampling period. Default 1000 (1 kHz); 100..1000000. */
  unsigned main_interval_us;
  /* Other threads', while they run. Default 10000; 0 = the main thread
     only; else 1000..1000000. */
  unsigned other_interval_us;
  /* Keep the last N seconds. Default 30; 1..3600. */
  unsigned window_seconds;
  /* A hard cap on the memory of samples and stacks, allocated whole at
     start: when it is full the oldest spans are dropped (never the
     newest). The trace's own tables (80 KiB) are counted in it. Default
     8 MiB; 128 KiB..1 GiB. */
  size_t max_bytes;
} snap_trace_config_t;

/* Fills the `size` bytes at cfg with the defaults and cfg->size with size;
   use snap_trace_config_default. [async-signal-safe] [thread-safe] */
SNAP_EXPORT void snap_trace_config_init(snap_trace_config_t *cfg, size_t size);
static inline void snap_trace_config_default(snap_trace_config_t *cfg) {
  snap_trace_config_init(cfg, sizeof *cfg);
}
/* Starts the sampler thread. SNAP_OK, SNAP_EINVAL (NULL, unknown size, a
   value out of range), SNAP_ENOMEM, SNAP_EBUSY (already started). A trace
   started again after a stop starts empty. [thread-safe] [allocates: the
   whole max_bytes, at once] [locks] [blocks: creating the sampler
   thread, and until its first look at the main thread, at most 200 ms on
   a busy machine, so the trace holds what follows the start] */
SNAP_EXPORT int snap_trace_start(const snap_trace_config_t *cfg);
/* Stops and joins the sampler. What was recorded stays readable by
   snap_trace_write until the next start. SNAP_OK, also when no trace runs
   (never started, or already stopped: as snap_lag_stop; before 1.3 that
   was SNAP_EINVAL); SNAP_EBUSY while another thread is stopping it.
   [thread-safe] [blocks: until the sampler thread exits] */
SNAP_EXPORT int snap_trace_stop(void);
/* A synchronous sample of the calling thread, labelled (copied; at most
   47 bytes kept; NULL or "" is "mark"): an instant event in the trace
   with its stack. About one stack capture; no lock, no allocation, no
   system call but the clock (a hook can call it on every call of a
   sensitive API). SNAP_OK, SNAP_EINVAL (no trace running), SNAP_EBUSY
   (the sampler's queue of 64 marks is full: this one is dropped and
   counted). [async-signal-safe] [thread-safe] */
SNAP_EXPORT int snap_trace_mark(const char *label);
/* Writes the samples of [since, until] (unix ns; 0 = the oldest kept /
   now) to path, atomically (a new temporary file beside it, created
   exclusively, renamed into place), in one of the formats below, readable
   by the owner only (0600: chmod it to share). Works while tracing and
   after a stop. SNAP_OK, SNAP_EINVAL (NULL or empty path, unknown format,
   since > until, no trace ever started), SNAP_ENOTREG (path holds
   something other than a regular file: a symlink, a FIFO, a device, a
   directory; it is left as it was), SNAP_EIO (the file cannot be written:
   nothing is left at path), SNAP_ENOMEM. A window with no samples writes
   a valid, empty trace. docs/security.md says what is promised.
   [thread-safe] [allocates] [locks: the trace's storage, while it copies
   the window out] [blocks: while tracing, until the sampler has taken in
   the main thread's newest samples (at most 500 ms on a busy machine);
   naming every stack (reading symbol files), writing and fsyncing the
   file] */
SNAP_EXPORT int snap_trace_write(const char *path, unsigned format,
                                 uint64_t since_unix_ns,
                                 uint64_t until_unix_ns);
#define SNAP_TRACE_PERFETTO 1u    /* Perfetto protobuf trace (.pftrace) */
#define SNAP_TRACE_CHROME_JSON 2u /* Trace Event Format JSON */
#define SNAP_TRACE_FOLDED 3u      /* folded stacks "a;b;c count" */

/* What the trace holds and costs. Set size first, as for
   snap_symbol_cache_stats_t. SNAP_OK or SNAP_EINVAL.
   [thread-safe] [locks: the trace's storage, briefly] Allocates nothing. */
typedef struct snap_trace_stats {
  uint32_t size;
  uint64_t samples;       /* taken since start (marks included) */
  uint64_t failed;        /* samples whose capture failed */
  uint64_t spans;         /* spans kept now */
  uint64_t spans_dropped; /* dropped for the window or the memory cap */
  uint64_t marks, marks_dropped;
  uint64_t missed_ticks;   /* main-thread periods the sampler was late for */
  uint64_t stack_nodes;    /* nodes in the stack table now */
  uint64_t bytes_used;     /* of the spans and the stack table now */
  uint64_t bytes_reserved; /* allocated at start: <= max_bytes */
  int64_t sampler_cpu_ns;  /* the sampler thread's CPU time, -1 unknown */
} snap_trace_stats_t;
SNAP_EXPORT int snap_trace_stats(snap_trace_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif /* STACKSNAP_H */
