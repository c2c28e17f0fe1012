/*
 * threads_darwin.c — Apple threads: who am I, who is main, who exists, who
 * runs, and where a thread's stack ends.
 *
 * Thread ids are mach thread port names in this task. The name of a live
 * thread's port is stable: libpthread holds a send right to it for the
 * thread's whole life, so the names we hand out stay meaningful after we
 * drop the extra references task_threads gave us — and we always drop them
 * (mach_port_deallocate per port, vm_deallocate of the array): a profiler
 * that lists threads every few milliseconds and leaks one right per thread
 * each time exhausts the task's port space within hours.
 *
 * Self: pthread_mach_thread_np(pthread_self()) reads the port libpthread
 * cached, adding no reference. mach_thread_self() would add one per call,
 * to be released by hand — wrong in a signal handler that returns early.
 *
 * Main: recorded by a constructor, which dyld runs on the main thread when
 * the library is linked into the app or loaded before main (the same moment
 * an Objective-C +load runs). Loaded later by dlopen from another thread,
 * the constructor asks task_threads instead: the kernel lists a task's
 * threads oldest first, and the first thread is the main thread.
 *
 * Stack bounds: pthread_get_stackaddr_np is the top (stacks grow down) and
 * pthread_get_stacksize_np the size; for the calling thread both read its
 * own pthread record without the thread-list lock. A Darwin thread stack is
 * allocated whole, so every byte of [sp, top) is mapped. For the thread a
 * sampler has stopped, the bounds the sampler measured before suspending it
 * (darwin.h) are used instead.
 *
 * Must not: leak a port or the array; take the pthread list lock (any
 * pthread_*_np call about another thread) inside the stopped window.
 */
#include <mach/mach.h>
#include <pthread.h>

#include "platform/darwin/darwin.h"

static mach_port_t g_main_port;

snap_thread_t snap__plat_thread_self(void) {
  return (snap_thread_t)pthread_mach_thread_np(pthread_self());
}

snap_thread_t snap__plat_thread_main(void) {
  return (snap_thread_t)g_main_port;
}

void snap__darwin_release_threads(thread_act_array_t list,
                                  mach_msg_type_number_t count) {
  for (mach_msg_type_number_t i = 0; i < count; i++)
    mach_port_deallocate(mach_task_self(), list[i]);
  vm_deallocate(mach_task_self(), (vm_address_t)list,
                (vm_size_t)count * sizeof list[0]);
}

/* A forked child's only thread is its new main thread. */
static void after_fork_child(void) {
  g_main_port = pthread_mach_thread_np(pthread_self());
}

static void record_main(void) {
  if (pthread_main_np()) {
    g_main_port = pthread_mach_thread_np(pthread_self());
    return;
  }
  thread_act_array_t list;
  mach_msg_type_number_t count;
  if (task_threads(mach_task_self(), &list, &count) != KERN_SUCCESS)
    return;
  if (count > 0)
    g_main_port = list[0]; /* the name outlives our reference (above) */
  snap__darwin_release_threads(list, count);
}

__attribute__((constructor)) static void threads_init(void) {
  record_main();
  (void)snap__plat_on_fork(SNAP__FORK_THREADS, NULL, NULL, after_fork_child);
}

int snap__plat_thread_list(snap_thread_t *out, int max) {
  thread_act_array_t list;
  mach_msg_type_number_t count;
  if (task_threads(mach_task_self(), &list, &count) != KERN_SUCCESS)
    return SNAP_EIO;
  for (mach_msg_type_number_t i = 0; i < count && (int)i < max; i++)
    out[i] = (snap_thread_t)list[i];
  snap__darwin_release_threads(list, count);
  return count > 0x7fffffffu ? 0x7fffffff : (int)count;
}

/* task_threads keeps nothing open: the kept lister is the plain one. */
int snap__plat_thread_list_kept(snap__plat_thread_lister_t *l,
                                snap_thread_t *out, int max) {
  (void)l;
  return snap__plat_thread_list(out, max);
}

void snap__plat_thread_lister_close(snap__plat_thread_lister_t *l) { (void)l; }

/* A port name is 32 bits; anything wider was never one of ours. */
static bool as_port(snap_thread_t thread, mach_port_t *port) {
  if (thread == 0 || thread > 0xffffffffu)
    return false;
  *port = (mach_port_t)thread;
  return true;
}

int snap__plat_thread_is_running(snap_thread_t thread) {
  mach_port_t port;
  if (!as_port(thread, &port))
    return SNAP_ENOTHREAD;
  thread_basic_info_data_t info;
  mach_msg_type_number_t n = THREAD_BASIC_INFO_COUNT;
  if (thread_info(port, THREAD_BASIC_INFO, (thread_info_t)&info, &n) !=
      KERN_SUCCESS)
    return SNAP_ENOTHREAD;
  return info.run_state == TH_STATE_RUNNING && !(info.flags & TH_FLAGS_IDLE);
}

/* Mach keeps no creation time of a thread that a thread port can ask
   for: the start is unknown (0), so no owner is doubted for its age. */
int snap__plat_thread_look(snap_thread_t thread,
                           snap__plat_thread_look_t *out) {
  *out = (snap__plat_thread_look_t){0};
  int rc = snap__plat_thread_is_running(thread);
  if (rc < 0)
    return rc;
  out->running = rc == 1;
  return SNAP_OK;
}

bool snap__darwin_own_stack(uintptr_t *lo, uintptr_t *hi) {
  pthread_t self = pthread_self();
  uintptr_t top = (uintptr_t)pthread_get_stackaddr_np(self);
  size_t size = pthread_get_stacksize_np(self);
  if (top < size || size == 0)
    return false;
  *lo = top - size;
  *hi = top;
  return true;
}

static bool stack_bounds(uintptr_t sp, bool own_only, uintptr_t *lo,
                         uintptr_t *hi) {
  *lo = sp;
  *hi = 0;
  const snap__darwin_window_t *w = snap__darwin_window();
  if (w) {
    /* Walking the stopped thread: its bounds, measured by the sampler.
       Registers that came out of its memory get no direct reads. */
    if (!own_only && w->stack_hi && sp >= w->stack_lo && sp < w->stack_hi) {
      *hi = w->stack_hi;
      return true;
    }
    return false;
  }
  uintptr_t slo, shi;
  if (!snap__darwin_own_stack(&slo, &shi) || sp < slo || sp >= shi)
    return false; /* an alternate signal stack, a coroutine's: unknown */
  *hi = shi;
  return true;
}

bool snap__plat_stack_bounds(uintptr_t sp, uintptr_t *lo, uintptr_t *hi) {
  return stack_bounds(sp, false, lo, hi);
}

bool snap__plat_own_stack_bounds(uintptr_t sp, uintptr_t *lo, uintptr_t *hi) {
  return stack_bounds(sp, true, lo, hi);
}
