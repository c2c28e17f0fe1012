/*
 * sample.c — stopping another thread on Apple platforms: thread_suspend.
 *
 * Sequence, on the sampling thread:
 *   setup (may lock, may allocate):
 *     refuse the calling thread; find the target's pthread (NULL: exiting,
 *     or not a thread of ours) and measure its stack; copy the argument
 *     block; publish the window record (darwin.h).
 *   make sure the rescuer runs (rescuer.c); take the sampler lock
 *   (posix/sampler_lock.c: two samplers that suspend each other never
 *   wake; SNAP_EBUSY when its holder was parked by another profiler);
 *   publish the window for the rescuer (target, its suspend count now);
 *   the stopped window:
 *     thread_suspend (returns once the target is off the CPU);
 *     confirm with thread_info that it is suspended;
 *     thread_get_state, copying the registers a wait is decoded from
 *     (wait_darwin.c decodes them after the resume); check the stack is
 *     still mapped at both ends;
 *     fn(regs, copy);
 *     close the window; thread_resume, unless the rescuer resumed the
 *     target already (another profiler parked us in the window: the
 *     sample is void, SNAP_EBUSY).
 *   release the sampler lock;
 *   setup again: withdraw the record, copy the block back.
 *
 * Every import the window calls is bound at load time (prebind.c, from
 * the constructor below): a first call through a lazy stub would take
 * dyld's lock, which the suspended thread may hold.
 *
 * The rules of the stopped window, learned from the deadlocks KSCrash,
 * Sentry and btrace shipped and fixed: the suspended thread may hold any
 * lock in the process at the instant it stopped — malloc's zone lock, the
 * dyld loader lock, the Objective-C runtime lock, a pthread mutex, stdio's
 * FILE lock, the os_log buffer lock. Anything that might take one of those
 * waits for a thread that cannot run until we resume it: the app hangs for
 * good. So between thread_suspend and thread_resume there is no malloc or
 * free, no Objective-C message (a cache miss locks the runtime), no dladdr
 * or other dyld query, no printf/NSLog/os_log, no pthread lock, and no
 * pthread_*_np call about another thread (they take the thread-list lock).
 * What may run: Mach calls to the kernel (thread_info, thread_get_state,
 * vm_read_overwrite), loads and stores on memory prepared beforehand, and
 * fn, which is [signal-safe] by contract. Every exit path resumes the
 * thread; no error branch returns from inside the window.
 *
 * No timeout: a Mach suspension does not depend on the target's
 * cooperation (Linux's signal does), so there is nothing to wait for; the
 * sample timeout is accepted for API symmetry only. What is bounded is how
 * long a target stays stopped when another profiler parks this sampler in
 * the window: the rescuer's bound (rescuer.c).
 *
 * Must not: suspend the calling thread (it would never resume itself);
 * sample a thread that is exiting (its stack may already be gone: an exiting
 * thread has left the pthread list, and its stack is probed after the
 * suspension anyway).
 */
#include <mach/mach.h>
#include <pthread.h>
#include <string.h>

#include "platform/darwin/darwin.h"
#include "platform/posix/locks.h"

static pthread_key_t g_window_key;
static bool g_key_ok;

/* At load time, before any sample: the window's key, and every import the
   window calls bound now rather than under dyld's lock with a thread
   stopped (prebind.c). */
__attribute__((constructor)) static void sample_init(void) {
  g_key_ok = pthread_key_create(&g_window_key, NULL) == 0;
  snap__darwin_prebind(g_key_ok ? g_window_key : 0);
}

const snap__darwin_window_t *snap__darwin_window(void) {
  if (!g_key_ok)
    return NULL;
  return pthread_getspecific(g_window_key);
}

void snap__darwin_set_window(const snap__darwin_window_t *w) {
  if (g_key_ok)
    pthread_setspecific(g_window_key, w);
}

/* On Apple the target is suspended and runs nothing; the code that must
   keep the window's rules is the sampler running fn. */
bool snap__plat_in_stopped_window(void) {
  const snap__darwin_window_t *w = snap__darwin_window();
  return w && w->stopped;
}

/* Nothing to wait for (see the head comment): accepted, unused. */
int snap__plat_set_sample_timeout_ms(unsigned ms) {
  (void)ms;
  return SNAP_OK;
}

/* Apple samples with thread_suspend; there is no signal to choose. */
int snap__plat_set_sample_signal(int signo) {
  (void)signo;
  return SNAP_EUNSUPPORTED;
}

/* The registers of a suspended thread, and into *wait (when not NULL) the
   system-call number and argument registers as they are: copied, never
   judged here (docs/apple.md, "Contract: what a blocked thread waits
   for"). [signal-safe] */
static kern_return_t get_regs(mach_port_t port, snap__regs_t *regs,
                              snap__plat_wait_regs_t *wait) {
#if defined(__arm64__) || defined(__aarch64__)
  arm_thread_state64_t st;
  mach_msg_type_number_t count = ARM_THREAD_STATE64_COUNT;
  kern_return_t kr =
      thread_get_state(port, ARM_THREAD_STATE64, (thread_state_t)&st, &count);
  if (kr != KERN_SUCCESS)
    return kr;
  /* arm64e: strip, never authenticate. An authentication that fails (a
     thread stopped mid-prologue, a state the kernel signed differently)
     would trap on CPUs with FPAC; we only record these values, never jump
     to them. An lr signed with the thread's own B key is left signed by
     the SDK's strip and stripped by the walker (snap__strip_pac). Without
     pointer authentication the macro does nothing. */
  arm_thread_state64_ptrauth_strip(st);
  regs->pc = (uintptr_t)arm_thread_state64_get_pc(st);
  regs->lr = (uintptr_t)arm_thread_state64_get_lr(st);
  regs->sp = (uintptr_t)arm_thread_state64_get_sp(st);
  regs->fp = (uintptr_t)arm_thread_state64_get_fp(st);
  regs->lr_valid = true; /* stopped anywhere: lr may be the caller */
  if (wait) {
    /* x16 carries the number (BSD positive, Mach traps negative), x0..x5
       the arguments; the stripped pc. */
    wait->pc = regs->pc;
    wait->nr = (int64_t)st.__x[16];
    for (int i = 0; i < 6; i++)
      wait->args[i] = st.__x[i];
    wait->source = SNAP__WAIT_REGS_THREAD;
  }
#elif defined(__x86_64__)
  x86_thread_state64_t st;
  mach_msg_type_number_t count = x86_THREAD_STATE64_COUNT;
  kern_return_t kr =
      thread_get_state(port, x86_THREAD_STATE64, (thread_state_t)&st, &count);
  if (kr != KERN_SUCCESS)
    return kr;
  regs->pc = (uintptr_t)st.__rip;
  regs->sp = (uintptr_t)st.__rsp;
  regs->fp = (uintptr_t)st.__rbp;
  regs->lr = 0;
  regs->lr_valid = false;
  if (wait) {
    /* rax: class << 24 | number; arguments rdi rsi rdx r10 r8 r9 (r10:
       the stub moved rcx there, which syscall overwrites). */
    wait->pc = regs->pc;
    wait->nr = (int64_t)st.__rax;
    wait->args[0] = st.__rdi;
    wait->args[1] = st.__rsi;
    wait->args[2] = st.__rdx;
    wait->args[3] = st.__r10;
    wait->args[4] = st.__r8;
    wait->args[5] = st.__r9;
    wait->source = SNAP__WAIT_REGS_THREAD;
  }
#else
#error "stacksnap: unsupported Apple architecture"
#endif
  return KERN_SUCCESS;
}

/* Inside the window: is [sp, hi) still what we measured? A thread that
   began to exit after we looked it up may have had its stack unmapped; the
   stack pointer may be on an alternate signal stack. Either way the walk
   then reads only through vm_read_overwrite. [signal-safe] */
static void check_stack(snap__darwin_window_t *w, uintptr_t sp) {
  uintptr_t word;
  if (!w->stack_hi || sp < w->stack_lo || sp >= w->stack_hi ||
      !snap__plat_read(sp & ~(uintptr_t)7, &word, sizeof word) ||
      !snap__plat_read(w->stack_hi - sizeof word, &word, sizeof word))
    w->stack_hi = 0;
}

/* thread_suspend returns once the target is stopped: a sample waits for
   no handler, so the watchdog has no sampling waits to account for. */
uint64_t snap__plat_sample_waited_ns(void) { return 0; }

/* thread_suspend needs no cooperation from the target. */
int snap__plat_sample_reachable(snap_thread_t thread) {
  (void)thread;
  return SNAP_OK;
}

int snap__plat_sample(snap_thread_t thread, snap__sample_fn fn, void *arg,
                      size_t arg_size, snap__plat_wait_regs_t *wait) {
  if (wait)
    wait->source = SNAP__WAIT_REGS_NONE;
  if (!fn || arg_size > SNAP__SAMPLE_ARG_MAX || (arg_size && !arg))
    return SNAP_EINVAL;
  if (thread == 0 || thread > 0xffffffffu)
    return SNAP_ENOTHREAD;
  mach_port_t port = (mach_port_t)thread;
  if (port == pthread_mach_thread_np(pthread_self()))
    return SNAP_EINVAL; /* it would never resume itself */

  /* Setup: these take the pthread list lock, so never in the window. */
  pthread_t target = pthread_from_mach_thread_np(port);
  if (!target)
    return SNAP_ENOTHREAD;
  snap__darwin_window_t w = {0, 0, false};
  uintptr_t top = (uintptr_t)pthread_get_stackaddr_np(target);
  size_t size = pthread_get_stacksize_np(target);
  /* Either call answers ESRCH (as a value) once the thread has exited. */
  if (top > 0xffff && size > 0 && size < top) {
    w.stack_lo = top - size;
    w.stack_hi = top;
  }
  _Alignas(16) unsigned char copy[SNAP__SAMPLE_ARG_MAX];
  if (arg_size)
    memcpy(copy, arg, arg_size);
  snap__darwin_set_window(&w);

  /* No thread is stopped without the rescuer running (rescuer.c). */
  if (!snap__darwin_rescuer_up()) {
    snap__darwin_set_window(NULL);
    return SNAP_EUNSUPPORTED;
  }
  /* From before thread_suspend to after thread_resume: one stopped window
     in the process at a time, so two samplers never suspend each other;
     SNAP_EBUSY when the holder was parked by another profiler. */
  int rc = snap__sampler_enter_bounded();
  if (rc != SNAP_OK) {
    snap__darwin_set_window(NULL);
    return rc;
  }
  /* Published before the call: if another profiler parks us, we park on
     the way out of thread_suspend and never run again to say so. */
  int base = snap__darwin_suspend_count(port);
  snap__darwin_rescuer_note();
  snap__sampler_window_open(snap__plat_thread_self(), thread,
                            base < 0 ? 0 : base, snap__plat_now_ns());
  kern_return_t kr = base < 0 ? KERN_TERMINATED : thread_suspend(port);
  if (kr != KERN_SUCCESS) {
    (void)snap__sampler_window_close();
    rc = SNAP_ENOTHREAD; /* KERN_TERMINATED, or not a thread port */
  } else {
    /* ---- the stopped window: see the rules above ---- */
    w.stopped = true;
    thread_basic_info_data_t info;
    mach_msg_type_number_t n = THREAD_BASIC_INFO_COUNT;
    snap__regs_t regs;
    if (thread_info(port, THREAD_BASIC_INFO, (thread_info_t)&info, &n) !=
            KERN_SUCCESS ||
        info.suspend_count < 1) {
      rc = SNAP_ENOTHREAD;
    } else if (get_regs(port, &regs, wait) != KERN_SUCCESS) {
      rc = SNAP_ENOTHREAD;
    } else {
      check_stack(&w, regs.sp);
      rc = fn(&regs, copy);
    }
    w.stopped = false;
    /* Resumed here, unless the rescuer already did: then the target ran
       during the walk, and the sample is void. */
    if (snap__sampler_window_close())
      thread_resume(port);
    else
      rc = SNAP_EBUSY;
    /* ---- end of the window ---- */
  }
  snap__sampler_leave();

  snap__darwin_set_window(NULL);
  if (arg_size)
    memcpy(arg, copy, arg_size);
  return rc;
}
