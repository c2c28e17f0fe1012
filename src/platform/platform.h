/*
 * platform.h — the seam between the portable core and the operating system.
 *
 * Owns: the declarations every backend (platform/linux, platform/darwin)
 * defines. Nothing outside src/platform/ may name an OS API; it calls these.
 * Must not: grow OS types into its signatures. Registers travel as
 * snap__regs_t, threads as snap_thread_t.
 *
 * Safety tags: [signal-safe] functions may run inside the stopped window (the
 * sampling signal handler on Linux, between thread_suspend and thread_resume
 * on Apple): no lock, no allocation, no stdio. [setup] functions may do
 * anything and must never be called from the stopped window.
 */
#ifndef SNAP_PLATFORM_H
#define SNAP_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stacksnap.h"

/* The registers a walk starts from. lr is the arm64 link register; it is
   meaningful only when lr_valid (a thread stopped at an arbitrary
   instruction), never for a frame reached by unwinding. */
typedef struct snap__regs {
  uintptr_t pc;
  uintptr_t sp;
  uintptr_t fp;
  uintptr_t lr;
  bool lr_valid;
} snap__regs_t;

/* ---- Threads ----------------------------------------------------------- */

snap_thread_t snap__plat_thread_self(void); /* [signal-safe] */
snap_thread_t snap__plat_thread_main(void); /* [signal-safe] */
int snap__plat_thread_list(snap_thread_t *out, int max);
/* The same, for a caller that lists often (the trace's sampler, every
   10 ms): where the list is a directory (Linux: /proc/self/task), it is
   kept open between calls and read again from its start, which saves the
   open's path walk (44 us of a 130 us look on this VM). Reopened in a
   child after fork (its /proc/self was the parent's), and when the
   descriptor is no longer the directory it opened (the host closed it:
   its number is then the host's, never read or closed here). One owner
   at a time; snap__plat_thread_lister_close when done. */
typedef struct snap__plat_thread_lister {
  int fd, pid; /* fd < 0: not open */
  uint64_t dev, ino;
} snap__plat_thread_lister_t;
#define SNAP__PLAT_THREAD_LISTER_INIT                                          \
  { .fd = -1 }
int snap__plat_thread_list_kept(snap__plat_thread_lister_t *l,
                                snap_thread_t *out, int max);
void snap__plat_thread_lister_close(snap__plat_thread_lister_t *l);
int snap__plat_thread_is_running(snap_thread_t thread);
/* One look at a thread, from one read of what the OS keeps of it: whether
   it is on a CPU or waiting for one (snap__plat_thread_is_running's
   answer), and the earliest instant on snap__plat_now_ns's clock at which
   it may have begun (0: unknown). The start tells a thread from one that
   was given its id after it exited (Linux reuses a TID once the TIDs
   wrap, after pid_max: 32768 on Android). Linux keeps the start to a
   clock tick (10 ms); Apple: 0. SNAP_OK, SNAP_ENOTHREAD or SNAP_EIO (out
   zeroed). */
typedef struct snap__plat_thread_look {
  bool running;
  uint64_t began_ns;
} snap__plat_thread_look_t;
int snap__plat_thread_look(snap_thread_t thread, snap__plat_thread_look_t *out);

/* The part of the current thread's stack a walk starting at sp may read
   directly: [*lo, *hi) with *lo == sp. Returns false when the bounds are
   unknown (then every read must go through snap__plat_read). [signal-safe] */
bool snap__plat_stack_bounds(uintptr_t sp, uintptr_t *lo, uintptr_t *hi);
/* The same, but only when sp is on the calling thread's own stack (the main
   thread's, or the one its thread library gave it); false for any other
   memory. For registers that came out of memory (a signal frame), which a
   corrupt stack could point anywhere. [signal-safe] */
bool snap__plat_own_stack_bounds(uintptr_t sp, uintptr_t *lo, uintptr_t *hi);

/* ---- What a sampled thread waits for ----------------------------------- */

/* The registers a wait is decoded from, taken with the sample: in the
   stopped window they are only copied (a few words); whether the thread
   was in a system call, and what it waited for, is decided afterwards by
   snap__plat_wait_decode. */
#define SNAP__WAIT_REGS_NONE 0 /* nothing known */
#define SNAP__WAIT_REGS_KERNEL                                                 \
  1 /* the OS said: blocked in system call nr                                  \
       with these arguments (Linux's syscall                                   \
       file) */
#define SNAP__WAIT_REGS_THREAD                                                 \
  2 /* the registers of the stopped thread:                                    \
       nr is the register the ABI passes the                                   \
       number in (x86_64 rax, Linux aarch64                                    \
       x8, Apple arm64 x16); whether pc is at                                  \
       a system call is the decoder's to tell */
typedef struct snap__plat_wait_regs {
  uint32_t source; /* SNAP__WAIT_REGS_* */
  uintptr_t pc;    /* THREAD: where it was stopped */
  int64_t nr;
  uint64_t args[6];
} snap__plat_wait_regs_t;

/* What `waiter` waited for, from regs and the stack sampled with them
   (pcs[0..n), frame 0 exact): fills every field of *out but owner_name
   (size untouched). Reads lock memory only through snap__plat_read and
   accepts an owner only when it is a live thread of this process other
   than the waiter. Never fails: what cannot be told is SNAP_WAIT_NONE /
   SNAP_OWNER_UNKNOWN. [setup] Never from the stopped window. */
void snap__plat_wait_decode(snap_thread_t waiter,
                            const snap__plat_wait_regs_t *regs,
                            const uintptr_t *pcs, int n, snap_wait_t *out);
/* A wait of kind none, no owner, no call (size untouched): where every
   decoder starts. [signal-safe] */
static inline void snap__plat_wait_none(snap_wait_t *out) {
  out->kind = SNAP_WAIT_NONE;
  out->owner_state = SNAP_OWNER_NONE;
  out->owner = 0;
  out->fd = -1;
  out->address = 0;
  out->syscall = SNAP_WAIT_NO_SYSCALL;
  for (int i = 0; i < 6; i++)
    out->args[i] = 0;
  out->owner_name[0] = '\0';
}

/* ---- Sampling another thread -------------------------------------------- */

/* Runs inside the stopped window, on a private block of SNAP__SAMPLE_ARG_MAX
   bytes: the first arg_size a copy of the caller's argument block, the rest
   scratch (uninitialised, not copied back) for state that must not sit on
   the target's stack, which on Linux is where fn runs. Returns a count or a
   negative SNAP_E* code. [signal-safe] */
typedef int (*snap__sample_fn)(const snap__regs_t *regs, void *arg);

/* The private block: up to SNAP_MAX_FRAMES pcs and a walk's state. */
#define SNAP__SAMPLE_ARG_MAX (sizeof(uintptr_t) * (SNAP_MAX_FRAMES + 8) + 1024)

/* Stops `thread` (never the caller), runs fn(regs, copy of arg) while it
   cannot run user code, lets it go, copies the block back into arg, and
   into *wait (when not NULL) the registers a wait is decoded from
   (SNAP__WAIT_REGS_THREAD; _NONE when fn did not run). Waits at
   most the sample timeout. Returns fn's result, SNAP_ENOTHREAD,
   SNAP_ETIMEDOUT or SNAP_EINVAL.
   Serialised process-wide: at most one thread is stopped by us at any
   instant. Each backend holds the one sampler lock (posix/sampler_lock.c)
   from before it stops the target to after the target runs free again or
   the sample is abandoned, so two samplers can never stop each other (on
   Apple that hangs both for good). [setup] */
int snap__plat_sample(snap_thread_t thread, snap__sample_fn fn, void *arg,
                      size_t arg_size, snap__plat_wait_regs_t *wait);
int snap__plat_set_sample_timeout_ms(unsigned ms); /* 1..10000, checked */
/* How long the calling thread has waited inside snap__plat_sample so far
   (for the sampler lock and for its targets), each sample's share capped at
   what a sample may legitimately wait (the lock and the target's answer,
   each at most the timeout and its grace): blocking that is the sampler's
   own doing, which a watchdog must not take for a stopped process. A
   longer wait ran into a stop. 0 where samples never wait (Apple: the
   suspension is synchronous). [setup] */
uint64_t snap__plat_sample_waited_ns(void);
/* Whether a sample of `thread` can be answered now: SNAP_OK, or
   SNAP_EBLOCKED when it blocks the sampling signal (Linux: its SigBlk in
   /proc/self/task/<tid>/status; libdispatch's worker threads block nearly
   every signal), so that a caller with many threads to sample need not
   wait the full timeout for each; SNAP_ENOTHREAD when it is gone. A hint:
   the mask may change right after. Apple stops threads without signals:
   always SNAP_OK. [setup] */
int snap__plat_sample_reachable(snap_thread_t thread);
int snap__plat_set_sample_signal(int signo);

/* ==== BEGIN per-thread CPU-time sampling timers (cpu_timer.c) =========== */

/* A running thread samples itself: the OS delivers a timer signal to the
   thread each time it has used `period_ns` of CPU time, and the handler
   calls fn on that thread with the registers it was interrupted at. A
   CPU-time timer never fires in a thread that does not run, so a blocked
   thread is never interrupted (a signal would end its sleep or poll
   early): whoever arms the timer reads a thread that stopped running
   quietly instead (snap__plat_blocked_regs). One stream of samples, no
   cross-thread stop and no sampler lock (docs/trace.md, "One sampler").

   fn runs in the thread's signal handler: [signal-safe] code only (no
   lock, no allocation, no stdio). regs is NULL when the handler cannot
   walk here safely (a stack whose bounds the thread does not know yet, or
   too little room left under the handler's frame): the caller learns the
   stack through one snap__plat_sample of the thread and the next tick
   walks. Apple has no CPU-time timer signal: SNAP_EUNSUPPORTED there, and
   the trace samples with snap__plat_sample (thread_suspend) as before. */
typedef void (*snap__cpu_tick_fn)(const snap__regs_t *regs, void *ctx);

typedef struct snap__plat_cpu_timer {
  _Alignas(8) unsigned char opaque[32];
} snap__plat_cpu_timer_t;

/* Arms a timer on `thread`'s CPU clock: fn(regs, ctx) on that thread
   every period_ns of its CPU time, until stopped. SNAP_OK;
   SNAP_EUNSUPPORTED (Apple, or no such timer); SNAP_EBUSY (every timer
   slot is taken: sample the thread the other way); SNAP_ENOTHREAD.
   [setup] */
int snap__plat_cpu_timer_start(snap__plat_cpu_timer_t *t, snap_thread_t thread,
                               uint64_t period_ns, snap__cpu_tick_fn fn,
                               void *ctx);
/* Disarms t and returns once no handler of it runs any more (fn's ctx may
   be freed then). A timer never started or already stopped: nothing.
   [setup] */
void snap__plat_cpu_timer_stop(snap__plat_cpu_timer_t *t);
/* One tick of t soon, for a thread seen awake: fn runs on it at the next
   scheduler tick while it runs (`waiting` false: it is on a CPU now; a
   thread that went to sleep meanwhile is not interrupted), or as soon as
   it gets a CPU (`waiting` true: it waits for one, its clock does not
   move; delivered on its return to user mode, before it can begin a
   sleep), instead of after a whole period of its CPU time (on a busy
   machine, tens of ms of wall time). No reply is waited for, no lock
   taken. SNAP_OK, or a negative code. [setup] */
int snap__plat_cpu_timer_nudge(snap__plat_cpu_timer_t *t, snap_thread_t thread,
                               bool waiting);
/* The calling thread's CPU time in ns, from inside fn. [signal-safe] */
int64_t snap__plat_self_cpu_ns(void);

/* ==== END per-thread CPU-time sampling timers ============================= */

/* ---- Reading a blocked thread without stopping it ----------------------- */

/* What the platform could tell of a thread blocked in a system call, and
   what it saw of the thread then, to tell afterwards whether it ran. */
typedef struct snap__plat_blocked {
  snap__regs_t regs; /* pc: right after the system call instruction (an
                        exact pc, not a return address); sp; fp 0 and
                        lr_valid false: the OS does not publish them */
  snap__plat_wait_regs_t wait; /* KERNEL: the call and its arguments */
  uint64_t seen[12]; /* the platform's witness of the thread's state */
  bool restartable;  /* a sampling signal cannot change what this wait
                        does: the kernel restarts it (SA_RESTART) and the
                        program never sees it end (an untimed futex wait,
                        a PI lock). A timed wait, a sleep, a poll: false */
} snap__plat_blocked_t;

/* The registers of `thread` while it is blocked in a system call, read
   without sending it anything (a signal would end sleeps early with
   EINTR). Its stack belongs to a live thread: read it only through
   snap__plat_read. SNAP_OK; SNAP_EBUSY when it is not blocked in a system
   call now (running, runnable, or the pc is not right after this
   architecture's system-call instruction: under qemu-user the kernel
   describes the emulator's host thread); SNAP_ENOTHREAD; SNAP_EUNSUPPORTED
   where the OS does not publish them (Apple). Costs a few /proc reads
   (Linux: tens of microseconds). [setup] */
int snap__plat_blocked_regs(snap_thread_t thread, snap__plat_blocked_t *out);
/* SNAP_OK when the thread has not run since snap__plat_blocked_regs filled
   b (so its stack still holds what it held then), SNAP_EBUSY when it ran
   or moved, SNAP_ENOTHREAD. [setup] */
int snap__plat_blocked_still(snap_thread_t thread,
                             const snap__plat_blocked_t *b);
/* After a sampling signal to a thread blocked as `before` says (its wait
   restartable): SNAP_OK with *after filled when the thread is back in the
   same wait (the same call, arguments, sp and pc) and was scheduled in
   exactly once since `before`, for the signal: so it ran nothing but the
   handler and the restart, and its stack is the one the handler walked.
   SNAP_EBUSY when not (yet), SNAP_ENOTHREAD, SNAP_EUNSUPPORTED. Two
   snap__plat_blocked_t whose `seen` are equal describe a thread that did
   not run in between. [setup] */
int snap__plat_blocked_again(snap_thread_t thread,
                             const snap__plat_blocked_t *before,
                             snap__plat_blocked_t *after);

/* True while the calling thread is inside the stopped window as the sampled
   thread. Tests use it to prove the window allocates nothing. [signal-safe] */
bool snap__plat_in_stopped_window(void);

/* ---- Memory ------------------------------------------------------------ */

/* Copies n bytes from addr, surviving unmapped memory. [signal-safe] */
bool snap__plat_read(uintptr_t addr, void *dst, size_t n);

/* ---- Images ------------------------------------------------------------ */

/* Who an image is, as a number the platform can recompute for any address
   in it without the loader's lock and without reading the loader's
   records (a record a concurrent dlclose may free): a library loaded where
   an unloaded one was gets another identity. Linux (glibc >= 2.35): a mix
   of what _dl_find_object copies out — the image's mapping, its
   .eh_frame_hdr address and its link map's address, compared, never
   dereferenced. Platforms without such a lookup (Apple, older glibc)
   answer SNAP__IDENT_UNKNOWN; their unwind-table reads go through
   snap__plat_read or are trusted to the last refresh (docs/guarantees.md). */
#define SNAP__IDENT_NONE 0u    /* addr is in no image */
#define SNAP__IDENT_UNKNOWN 1u /* the platform cannot tell lock-free */
typedef struct snap__plat_ident {
  uintptr_t lo, hi;     /* every address in [lo, hi) has the same answer */
  uint64_t id;          /* SNAP__IDENT_NONE, _UNKNOWN, or the identity */
  uintptr_t unwind_hdr; /* the image's .eh_frame_hdr, 0 if none known */
} snap__plat_ident_t;

/* The identity of the image holding addr now. Never fails: lo == hi == 0
   when the answer covers addr alone. [signal-safe] */
void snap__plat_image_ident(uintptr_t addr, snap__plat_ident_t *out);

/* What a report says it was taken on, for the tools that name it later:
   the OS ("linux", "darwin") and the architecture as that OS's tools spell
   it (atos -arch wants arm64 / arm64e / x86_64; Linux says aarch64). */
static inline const char *snap__plat_os_name(void) {
#if defined(__APPLE__)
  return "darwin";
#else
  return "linux";
#endif
}
static inline const char *snap__plat_arch_name(void) {
#if defined(__arm64e__)
  return "arm64e";
#elif defined(__aarch64__) && defined(__APPLE__)
  return "arm64";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__x86_64__)
  return "x86_64";
#else
  return "unknown";
#endif
}

/* The longest build id kept: SHA-1 notes are 20 bytes, UUIDs 16; a longer
   --build-id=0x... is allowed by the linker but rare. */
#define SNAP__BUILD_ID_MAX 32

/* One executable range of a loaded image, as the platform reports it. */
typedef struct snap__plat_range {
  uintptr_t start, end; /* executable range [start, end) */
  uintptr_t base;       /* load address / slide base of the image */
  uintptr_t unwind_hdr; /* .eh_frame_hdr address, 0 if none */
  uintptr_t unwind_lo;  /* readable segment holding the unwind */
  uintptr_t unwind_hi;  /*   tables: every CFI read stays inside */
  uintptr_t func_index; /* the platform's own index of function starts
                           (Apple: the image's __unwind_info), 0 if none */
  size_t func_index_size;
  const char *path; /* valid during the callback only */
  uint64_t ident;   /* snap__plat_image_ident's id for the range, taken
                       while the loader could not change it */
  uint64_t content; /* a hash of the image's build ID (Linux), 0 if none:
                       tells a rebuilt library loaded again at the same
                       place, with the same layout, from the one before */
  /* What names the image's build later (a debug file, a dSYM): Linux, the
     NT_GNU_BUILD_ID note's bytes; Apple, LC_UUID's 16. build_id_len 0:
     none (or longer than SNAP__BUILD_ID_MAX: not kept). Read at
     enumeration, never in the stopped window. */
  uint8_t build_id[SNAP__BUILD_ID_MAX];
  uint8_t build_id_len;
  /* The image's extent from base: every loaded segment lies in
     [base, base + size) (Linux: the highest PT_LOAD's p_vaddr + p_memsz;
     Apple: the highest segment's end but __PAGEZERO's, from the header). */
  uintptr_t size;
} snap__plat_range_t;

typedef void (*snap__plat_range_cb)(const snap__plat_range_t *r, void *ctx);

/* A build id as the platform's own tools print it, NUL-terminated into
   out[size] (size >= 2 * SNAP__BUILD_ID_MAX + 5 always suffices): Linux,
   lowercase hex of the note's bytes (the name under .build-id/, what
   `readelf -n` and `file` show); Apple, LC_UUID as
   8-4-4-4-12 uppercase hex (what `dwarfdump --uuid` prints and Spotlight
   indexes dSYMs by). "" when len is 0. [setup] */
void snap__plat_build_id_text(const uint8_t *id, size_t len, char *out,
                              size_t size);

/* The function holding pc, [*start, *end), from an image's func_index
   (snap__plat_range_t) at load address base: what tells a stale link
   register from a live one when the image has no call-frame information
   (Apple). Every read of the index survives an unmapped image. False when
   the index does not know pc (or there is none: Linux, whose function
   bounds are the .eh_frame entries capture/cfi.c reads). [signal-safe] */
bool snap__plat_function_bounds(uintptr_t index, size_t index_size,
                                uintptr_t base, uintptr_t pc, uintptr_t *start,
                                uintptr_t *end);

/* Calls cb once per executable range of every loaded image. [setup] */
int snap__plat_images_enumerate(snap__plat_range_cb cb, void *ctx);
/* A number that changes whenever an image is loaded or unloaded, and
   only grows: a stamp read later is never smaller. [setup] */
uint64_t snap__plat_images_stamp(void);
/* The directory whose images count as the app by default, with its
   trailing '/': Linux, the main executable's directory; Apple, the
   outermost .app bundle around it (so Contents/Frameworks of a macOS app
   count). False if unknown. [setup] */
bool snap__plat_app_root(char *buf, size_t size);
/* The main executable's full path into buf; false if unknown. [setup] */
bool snap__plat_main_executable(char *buf, size_t size);

/* ---- Frames the OS builds ---------------------------------------------- */

/* sp is the stack pointer on entry to a signal-return trampoline (a frame
   whose unwind info carries the 'S' augmentation): read the interrupted
   registers from the kernel's signal frame there. Reads go through
   snap__plat_read. [signal-safe] */
bool snap__plat_sigframe_regs(uintptr_t sp, snap__regs_t *out);

/* Whether pc is the first instruction of a signal-return trampoline, judged
   by its code (for trampolines without unwind info). [signal-safe] */
bool snap__plat_is_sigreturn(uintptr_t pc);
/* The signal-return trampolines whose code starts in [start, end), a loaded
   image's executable range, found by searching all of its code at once
   (bulk safe reads, outside the stopped window), so that naming learns an
   image's few trampolines once instead of reading code per pc. Stores up
   to max addresses in out and returns how many there are (more than max
   is possible), or -1 when the range could not be read whole. Where the
   platform recognises no trampoline by its code (Apple), 0. [setup] */
int snap__plat_find_sigreturns(uintptr_t start, uintptr_t end, uintptr_t *out,
                               int max);
/* The signal-return trampolines the kernel returns signal handlers to now:
   the restorer of every installed handler (Linux x86_64: glibc's
   __restore_rt, or a runtime's own). Up to max into out; returns how many
   there are. Where the kernel picks the trampoline itself (Linux arm64:
   the vdso's) or none is recognised (Apple), 0. [setup] */
int snap__plat_sigreturn_restorers(uintptr_t *out, int max);

/* Whether the current thread runs a Swift async task, so an extended frame
   record really leads to an async context chain. [signal-safe] */
bool snap__plat_async_task_active(void);
/* Whether Swift concurrency can run in this process, so samples should ask
   for async frames (SNAP_CAPTURE_ASYNC): always on Apple (the runtime is
   in the OS); on Linux once the Swift concurrency runtime is loaded. [setup] */
bool snap__plat_has_swift_concurrency(void);

/* ---- Symbols: the system provider ------------------------------------- */

/* One address to name. The core fills the inputs from the image table; the
   provider answers through the callback. */
typedef struct snap__plat_sym_query {
  uintptr_t addr;         /* the address to name: an exact pc, or a return
                             address minus one (so a call at the very end of
                             a function names that function) */
  uintptr_t image_base;   /* load address of the image holding addr, 0 if
                             none */
  const char *image_path; /* that image's full path, NULL if none;
                             interned (images.c): it lives as long as the
                             process and no other path has its address, so
                             a provider may know a path by its pointer */
  uintptr_t func_index;   /* that image's function index (Apple: its
                             __unwind_info; snap__plat_range_t), 0 if none:
                             a name is kept only if it starts inside the
                             function holding addr */
  size_t func_index_size;
  /* The generation of the image table (images.h) the inputs came from,
     the same in every query of a batch: while it holds, no image was
     loaded or unloaded, so what the provider learnt about the loaded set
     (Linux: that no Objective-C runtime is loaded) still holds. 0:
     unknown. */
  uint64_t images_generation;
} snap__plat_sym_query_t;

/* name: the function's raw name as the binary spells it (possibly mangled;
   Objective-C methods as "-[Class selector]"), never NULL; valid during the
   call only. symbol_addr: the function's first byte. */
typedef void (*snap__plat_sym_cb)(int index, const char *name,
                                  uintptr_t symbol_addr, void *ctx);

/* Names q[0..n): calls cb at most once per index, only for addresses whose
   function is known (an unknown address gets no call). Returns SNAP_OK or a
   negative code when the provider cannot work at all (then no call is made).
   Bad or hostile files name nothing for their image; never a crash. May
   allocate and lock. [setup] Never called from the stopped window. */
int snap__plat_symbolize(const snap__plat_sym_query_t *q, int n,
                         snap__plat_sym_cb cb, void *ctx);

/* A malloc'ed human-readable form of a mangled name (C++ through
   __cxa_demangle, Swift through swift_demangle, each found at run time), or
   NULL when name is not mangled or no demangler is loaded. [setup] */
char *snap__plat_demangle(const char *name);

/* Source position of q->addr from the image's DWARF line table, through the
   platform's debug-info reader where one is installed (Linux: elfutils'
   libdw, loaded at run time, so there is no link dependency). Calls cb at
   most once, with strings valid during the call only. Returns SNAP_OK
   (called or not), SNAP_EUNSUPPORTED when no reader is available. [setup] */
typedef void (*snap__plat_line_cb)(const char *file, unsigned line, void *ctx);
int snap__plat_source_line(const snap__plat_sym_query_t *q,
                           snap__plat_line_cb cb, void *ctx);

/* ---- Output ------------------------------------------------------------ */

/* Writes all n bytes to fd (retrying short writes and EINTR): SNAP_OK or
   SNAP_EIO. [setup] */
int snap__plat_write_all(int fd, const void *buf, size_t n);

/* ---- Thread exit -------------------------------------------------------- */

/* Calls fn(arg) when the calling thread exits (threads other than the main
   one: the process's exit needs no cleanup). One fn for the whole library
   (the symbol cache's per-thread slots); another fn gets SNAP_EBUSY. A
   second call on the same thread replaces arg. [setup] */
int snap__plat_on_thread_exit(void (*fn)(void *), void *arg);

/* What heap block p (from malloc, asked for `asked` bytes) really takes
   from the allocator, its header included where it has one; 0 for NULL.
   For the symbol cache's cap (posix/alloc_size.c). [setup] */
size_t snap__plat_alloc_size(const void *p, size_t asked);

/* ---- Locks ------------------------------------------------------------- */

/* Mutual exclusion: the only way the library's own code keeps one thread
   out of another's critical section. Apple: os_unfair_lock, which records
   its owner so a waiter donates its priority to it (a main-thread hook
   never waits behind a utility thread that cannot get the CPU);
   dispatch_semaphore records no owner and donates nothing, so semaphores
   are for wake-ups only. Linux: a pthread_mutex. See docs/apple.md,
   "Contract: locks and the stopped window".

   Every lock is held across fork() by the forking thread and initialised
   afresh in the child (design.md rule 8), so a child never inherits one
   held by a thread that does not exist there, nor the half-updated data it
   guarded. The library may hold at most one lock at a time (fork takes
   them all in creation order), never across a call out of the library,
   and never in the stopped window. */
typedef struct snap__lock {
  _Alignas(16) unsigned char opaque[64];
} snap__lock_t;

/* SNAP_OK, or SNAP_ENOMEM when no more locks can be registered for fork
   (then the lock must not be used). [setup] */
int snap__plat_lock_init(snap__lock_t *l);
void snap__plat_lock_lock(snap__lock_t *l);   /* [setup] */
void snap__plat_lock_unlock(snap__lock_t *l); /* [setup] */
/* Takes the lock only if no one holds it: true when taken. For a waiter
   that must not wait on a holder that may never run again (the sampler
   lock on Apple, posix/sampler_lock.c). [setup] */
bool snap__plat_lock_trylock(snap__lock_t *l);
/* Only for a lock no thread holds or waits for. [setup] */
void snap__plat_lock_destroy(snap__lock_t *l);

/* A lock made on its first use, for files whose functions can be called
   before their own constructors have run (from another file's
   constructor). Zero-initialised static storage is an unmade lock:
   `static snap__lazy_lock_t l;`. It is made while no fork can start (the
   fork gate: posix/locks.h), so a child never finds one half made; once
   made it is a snap__lock_t like any other (held across fork, made afresh
   in the child). */
typedef struct snap__lazy_lock {
  snap__lock_t lock;
  _Atomic int state; /* 0 unmade, 1 being made, 2 made */
} snap__lazy_lock_t;
void snap__plat_lazy_lock(snap__lazy_lock_t *l);   /* [setup] */
void snap__plat_lazy_unlock(snap__lazy_lock_t *l); /* [setup] */

/* ---- Fork ---------------------------------------------------------------- */

/* The one fork seam (posix/fork_hook.c): every fork handler of the library
   is a stage here, and the stages' order below is the only order they run
   in. fork_hook.c installs a single pthread_atfork at load time; the
   stages' handlers are called from it:

     prepare: last stage to first;  parent and child: first to last.

   Why this order:
   - LOCKS first in the child: it makes every lock of ours afresh (a thread
     that held one is gone) and opens the fork gate, so every later child
     handler may lock and call the rest of the library. Its prepare runs
     LAST, for the same reason: it takes every lock and closes the gate, so
     a prepare that ran after it and locked would wait on itself; the stages
     above it may still lock in theirs. Its parent handler runs first and
     releases them (in the reverse of the order prepare took them).
   - THREADS next: which thread is the main thread (a child's only thread
     is its new main thread), asked by the sampler and the watchdog; and
     which threads are the library's own (none of them exists there).
   - MEMORY: the safe-read path (pipes), which capture walks through.
   - SAMPLER: requests and helper threads a sample of the parent had in
     flight can never finish in the child.
   - CPU_TIMERS: a child inherits no POSIX timer, so every per-thread
     sampling timer slot is free again (before the trace's own reset).
   - DEMANGLER, SOURCE_LINES: look-ups a parent thread had claimed.
   - LAG, TRACE: the core's watchdog and trace, which use all of the
     above (and not each other).
   - EMBEDDER last: a program that links stacksnap in (demo/audit) and uses
     all of it from its handler.
   A handler registered at load time runs before (child) and after
   (prepare) those an app registers later with pthread_atfork, as libc
   orders them: an app's child handler finds the library reset. */
typedef enum snap__fork_stage {
  SNAP__FORK_LOCKS,        /* posix/lock_fork.c: locks and fork gate */
  SNAP__FORK_THREADS,      /* linux/threads.c, darwin/threads_darwin.c */
  SNAP__FORK_OUR_THREADS,  /* posix/thread_start.c: the library's own */
  SNAP__FORK_MEMORY,       /* linux/memory.c: the safe-read pipes */
  SNAP__FORK_SAMPLER,      /* linux/sample.c slots, darwin/rescuer.c */
  SNAP__FORK_CPU_TIMERS,   /* linux/cpu_timer.c: the timers' slots */
  SNAP__FORK_DEMANGLER,    /* posix/demangle.c */
  SNAP__FORK_SOURCE_LINES, /* linux/source_lines.c: libdw's loading */
  SNAP__FORK_LAG,          /* lag/watchdog.c */
  SNAP__FORK_TRACE,        /* trace/trace_api.c */
  SNAP__FORK_EMBEDDER,     /* a program that links stacksnap in */
  SNAP__FORK_STAGES
} snap__fork_stage_t;

/* Makes prepare, parent and child (each may be NULL) stage's handlers; a
   stage has one owner, and a second call replaces the first. Allocates
   nothing and takes no lock (the one pthread_atfork is installed at load
   time), so it may be called from constructors, lazily on first use and
   with a lock of ours held. SNAP_OK, or SNAP_ENOMEM when libc refused the
   pthread_atfork (then nothing runs at fork). [setup] */
int snap__plat_on_fork(snap__fork_stage_t stage, void (*prepare)(void),
                       void (*parent)(void), void (*child)(void));

/* ---- Semaphores -------------------------------------------------------- */

/* Wake-ups only (a thread that sleeps until another has news), never
   mutual exclusion: see Locks. Storage for the platform's semaphore
   (sem_t on Linux, a dispatch_semaphore_t on Apple), so the core holds one
   without naming an OS type. Each backend checks that its type fits. */
typedef struct snap__sem {
  _Alignas(16) unsigned char opaque[64];
} snap__sem_t;

int snap__plat_sem_init(snap__sem_t *s, unsigned value); /* SNAP_OK or code */
void snap__plat_sem_wait(snap__sem_t *s);
void snap__plat_sem_post(snap__sem_t *s);
void snap__plat_sem_destroy(snap__sem_t *s);
/* Waits until posted (SNAP_OK) or until the monotonic clock (see
   snap__plat_now_ns) reaches deadline_ns (SNAP_ETIMEDOUT). */
int snap__plat_sem_timedwait(snap__sem_t *s, uint64_t deadline_ns);

/* ---- Wakers ------------------------------------------------------------ */

/* What the trace's sampler sleeps on: a semaphore with a dead man's
   switch. Its wait ends when it is posted, when the deadline passes, or
   when its alarm goes off; a thread sampling itself (its CPU-time timer's
   handler) pushes the alarm later at each tick, so the sampler wakes when
   the ticks stop (the thread slept, or got no CPU), not every few ms while
   they come: on a VM a wake costs more than the tick it drains. Linux: an
   eventfd and a timerfd on the monotonic clock, waited on with poll(2);
   post and alarm are a write(2) and a timerfd_settime(2), both
   async-signal-safe. Apple: the semaphore alone, and the alarm does
   nothing (no thread samples itself there: cpu_timer_darwin.c). */
typedef struct snap__waker {
  _Alignas(16) unsigned char opaque[80];
} snap__waker_t;

int snap__plat_waker_init(snap__waker_t *w); /* SNAP_OK or code */
void snap__plat_waker_destroy(snap__waker_t *w);
/* Wakes the waiter (or its next wait). [signal-safe] */
void snap__plat_waker_post(snap__waker_t *w);
/* Sets the alarm to go off after_ns from now, replacing any set before;
   0 disarms it. [signal-safe] */
void snap__plat_waker_alarm(snap__waker_t *w, uint64_t after_ns);
/* SNAP_OK when posted or the alarm went off since the last wait that
   returned SNAP_OK (both consumed), else SNAP_ETIMEDOUT once the monotonic
   clock reaches deadline_ns. One waiter at a time. */
int snap__plat_waker_wait(snap__waker_t *w, uint64_t deadline_ns);

/* ---- Clocks ------------------------------------------------------------ */

/* Monotonic nanoseconds; not counting time the machine slept where the
   platform allows (a suspended laptop is no lag). No syscall on Linux
   (vDSO) or Apple (commpage). [signal-safe] */
uint64_t snap__plat_now_ns(void);
/* The same clock to the kernel's tick (a few ms), for intervals of tens
   of ms checked often: a fifth of the cost here. [signal-safe] */
uint64_t snap__plat_coarse_ns(void);
/* The CPU time of all the process's threads so far (ns), or -1. */
int64_t snap__plat_process_cpu_ns(void);
/* Wall-clock nanoseconds since 1970 (a trace's times), 0 if unknown. */
uint64_t snap__plat_unix_ns(void);
/* Wall-clock milliseconds since 1970 (report names and dates). */
int64_t snap__plat_unix_ms(void);

/* ---- Files ------------------------------------------------------------ */

/* The OS side of the library's files: src/report/ holds the policy (temp
   names, the replace sequence, what is refused, retention's names) and is
   their only caller. Paths are whole paths; none of these follows a
   symbolic link in the last component, and none blocks on a FIFO or a
   device. All [setup]: they block on the disk; never the stopped window. */

typedef enum snap__plat_file_kind {
  SNAP__FILE_NONE,    /* nothing there */
  SNAP__FILE_REGULAR, /* a regular file */
  SNAP__FILE_DIR,     /* a directory */
  SNAP__FILE_OTHER    /* a symlink, FIFO, socket or device */
} snap__plat_file_kind_t;

/* Creates dir and its missing parents, each with exactly `mode` (the umask
   does not apply); what exists is left as it is. SNAP_OK if dir is a
   directory afterwards (a symlink to one counts: the app chose the path),
   else SNAP_EIO. */
int snap__plat_dir_make(const char *dir, unsigned mode);
/* Calls cb for each entry of dir (not "." or ".."); cb may remove entries.
   SNAP_OK or SNAP_EIO. */
int snap__plat_dir_list(const char *dir,
                        void (*cb)(const char *name, void *ctx), void *ctx);
/* fsyncs the directory itself (so a rename in it survives a power cut).
   SNAP_OK (also where directories cannot be synced: EINVAL), SNAP_EIO. */
int snap__plat_dir_sync(const char *dir);
/* What is at path, the last component not followed (lstat). SNAP_OK or
   SNAP_EIO (cannot tell: a permission, a path too long). */
int snap__plat_path_kind(const char *path, snap__plat_file_kind_t *kind);
/* Creates path as a new regular file open for writing, with exactly `mode`:
   O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, so it never opens what is already
   there (a file, a planted symlink). SNAP_OK with *fd; SNAP_EBUSY when
   something is at path; SNAP_EIO. */
int snap__plat_file_create(const char *path, unsigned mode, int *fd);
/* Opens path for reading without following a symlink and without
   blocking (O_NONBLOCK: a FIFO with no writer would hang the open), then
   says what it opened (fstat, on the descriptor: no race with the path).
   SNAP_OK with *fd, *kind and, for a regular file, *size; SNAP_EIO when
   it cannot be opened (a symlink among them). The caller closes *fd. */
int snap__plat_file_open_read(const char *path, int *fd,
                              snap__plat_file_kind_t *kind, uint64_t *size);
/* One read(2), EINTR retried: bytes read, 0 at the end, SNAP_EIO. */
long snap__plat_file_read_some(int fd, void *buf, size_t n);
/* fsync, EINTR retried: SNAP_OK or SNAP_EIO. */
int snap__plat_file_sync(int fd);
/* close; its error counts (NFS reports deferred write errors there), but
   EINTR is not retried (the descriptor is gone). SNAP_OK or SNAP_EIO. */
int snap__plat_file_close(int fd);
/* rename(2): atomic; replaces whatever name `to` held. SNAP_OK, SNAP_EIO. */
int snap__plat_file_rename(const char *from, const char *to);
/* unlink(2): SNAP_OK, also when nothing was there; SNAP_EIO. */
int snap__plat_file_unlink(const char *path);
/* n <= 256 unpredictable bytes from the OS (getentropy). SNAP_OK or
   SNAP_EUNSUPPORTED (no source). */
int snap__plat_random(void *buf, size_t n);

/* ---- Loop adapters ----------------------------------------------------- */

/* What a loop adapter calls: busy when the loop wakes to work, idle when
   it is about to sleep. The lag layer hands in its own functions, so the
   platform never calls up into it. hooks must outlive the process (the
   adapters keep the pointer); one set per process. */
typedef struct snap__loop_hooks {
  void (*busy)(void);
  void (*idle)(void);
} snap__loop_hooks_t;

/* Hooks the platform's own event loop (Apple: CFRunLoop observers);
   SNAP_EUNSUPPORTED where there is none. */
int snap__plat_attach_runloop(void *runloop, const snap__loop_hooks_t *hooks);
/* Wraps a GLib main context's poll function (NULL = the default context)
   with idle/busy calls; SNAP_EUNSUPPORTED without GLib's headers at build
   time or GLib in the process, SNAP_EBUSY for a second context whose poll
   function differs from the first one's. */
int snap__plat_attach_glib(void *main_context, const snap__loop_hooks_t *hooks);

#endif /* SNAP_PLATFORM_H */
