/*
 * darwin.h — what the Apple backend's files share with each other, and
 * nothing else: never included from outside src/platform/darwin/.
 *
 * The one piece of shared state is the sampler's window record. On Apple the
 * walk of a stopped thread runs on the sampling thread (the target is
 * suspended and runs nothing), so functions the walker calls from the
 * window — stack bounds, "is a Swift task running here?" — must answer for
 * the target, not for the caller. sample.c publishes the record through a
 * pthread key before it suspends the target; readers ask for it with
 * snap__darwin_window(). A pthread key and not _Thread_local: a Darwin TLV
 * is allocated lazily on a thread's first access (malloc inside
 * tlv_get_addr), which must never happen in the window; pthread_getspecific
 * is a plain load from the thread's TSD array.
 */
#ifndef SNAP_PLATFORM_DARWIN_H
#define SNAP_PLATFORM_DARWIN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "platform/platform.h"
#include "platform/thread_facts.h"

#ifdef __APPLE__ /* the Linux tests compile files that include this */
#include <mach/mach.h>
/* Drops the send rights task_threads gave us, and its array
   (threads_darwin.c): every caller of task_threads must, or the task's
   port space leaks one right per thread per call. [setup] */
void snap__darwin_release_threads(thread_act_array_t list,
                                  mach_msg_type_number_t count);
#endif

/* What a sampler knows about the thread it has stopped. */
typedef struct snap__darwin_window {
  uintptr_t stack_lo, stack_hi; /* the target's stack; hi == 0: unknown */
  volatile bool stopped;        /* between thread_suspend and thread_resume */
} snap__darwin_window_t;

/* The calling thread's window record while it runs a sample function, NULL
   otherwise. [signal-safe] */
const snap__darwin_window_t *snap__darwin_window(void);
/* Publishes (or, with NULL, withdraws) the caller's window record. Outside
   the window only: the first pthread_setspecific of a thread may grow its
   key range. [setup] */
void snap__darwin_set_window(const snap__darwin_window_t *w);

/* Calls once every import the stopped window calls, so none is bound
   lazily (under dyld's lock) while a thread is suspended. From sample.c's
   constructor. [setup] */
void snap__darwin_prebind(pthread_key_t window_key);

/* The calling thread's stack, [lo, hi), from its pthread record (no lock
   for the caller's own thread). False if unknown. [signal-safe] */
bool snap__darwin_own_stack(uintptr_t *lo, uintptr_t *hi);

/* rescuer.c: the thread that resumes a window's target when another
   profiler has parked our sampler (posix/sampler_lock.c). _up starts it on
   first use and says whether it runs; _note tells it a window opens now.
   snap__darwin_suspend_count: THREAD_BASIC_INFO's suspend_count (xnu's
   user_stop_count), -1 when the port names no thread. [setup] */
bool snap__darwin_rescuer_up(void);
void snap__darwin_rescuer_note(void);
int snap__darwin_suspend_count(uint32_t port);

#endif /* SNAP_PLATFORM_DARWIN_H */
