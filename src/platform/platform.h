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
int snap__plat_thread_is_running(snap_thread_t thread);

/* The part of the current thread's stack a walk starting at sp may read
   directly: [*lo, *hi) with *lo == sp. Returns false when the bounds are
   unknown (then every read must go through snap__plat_read). [signal-safe] */
bool snap__plat_stack_bounds(uintptr_t sp, uintptr_t *lo, uintptr_t *hi);
/* The same, but only when sp is on the calling thread's own stack (the main
   thread's, or the one its thread library gave it); false for any other
   memory. For registers that came out of memory (a signal frame), which a
   corrupt stack could point anywhere. [signal-safe] */
bool snap__plat_own_stack_bounds(uintptr_t sp, uintptr_t *lo, uintptr_t *hi);

/* ---- Sampling another thread -------------------------------------------- */

/* Runs inside the stopped window, on a private copy of the caller's argument
   block; returns a count or a negative SNAP_E* code. [signal-safe] */
typedef int (*snap__sample_fn)(const snap__regs_t *regs, void *arg);

/* The largest argument block snap__plat_sample copies in and out. */
#define SNAP__SAMPLE_ARG_MAX (sizeof(uintptr_t) * (SNAP_MAX_FRAMES + 8))

/* Stops `thread` (never the caller), runs fn(regs, copy of arg) while it
   cannot run user code, lets it go, copies the block back into arg. Waits at
   most the sample timeout. Returns fn's result, SNAP_ENOTHREAD,
   SNAP_ETIMEDOUT or SNAP_EINVAL. [setup] */
int snap__plat_sample(snap_thread_t thread, snap__sample_fn fn, void *arg,
                      size_t arg_size);
int snap__plat_set_sample_timeout_ms(unsigned ms);
int snap__plat_set_sample_signal(int signo);

/* True while the calling thread is inside the stopped window as the sampled
   thread. Tests use it to prove the window allocates nothing. [signal-safe] */
bool snap__plat_in_stopped_window(void);

/* ---- Memory ------------------------------------------------------------ */

/* Copies n bytes from addr, surviving unmapped memory. [signal-safe] */
bool snap__plat_read(uintptr_t addr, void *dst, size_t n);

/* ---- Images ------------------------------------------------------------ */

/* One executable range of a loaded image, as the platform reports it. */
typedef struct snap__plat_range {
  uintptr_t start, end; /* executable range [start, end) */
  uintptr_t base;       /* load address / slide base of the image */
  uintptr_t unwind_hdr; /* .eh_frame_hdr address, 0 if none */
  uintptr_t unwind_lo;  /* readable segment holding the unwind */
  uintptr_t unwind_hi;  /*   tables: every CFI read stays inside */
  const char *path;     /* valid during the callback only */
} snap__plat_range_t;

typedef void (*snap__plat_range_cb)(const snap__plat_range_t *r, void *ctx);

/* Calls cb once per executable range of every loaded image. [setup] */
int snap__plat_images_enumerate(snap__plat_range_cb cb, void *ctx);
/* A number that changes whenever an image is loaded or unloaded. [setup] */
uint64_t snap__plat_images_stamp(void);
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

/* Whether the current thread runs a Swift async task, so an extended frame
   record really leads to an async context chain. [signal-safe] */
bool snap__plat_async_task_active(void);

#endif /* SNAP_PLATFORM_H */
