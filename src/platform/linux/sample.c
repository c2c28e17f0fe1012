/*
 * sample.c — stopping another thread on Linux: a real-time signal.
 *
 * Linux cannot suspend one thread of a process from another without ptrace,
 * so the target stops itself: we queue a real-time signal at it with
 * rt_tgsigqueueinfo, its handler takes the registers from the ucontext and
 * runs the walk there, then posts a semaphore the sampler waits on.
 *
 * Protocol, per request slot (a static array: the handler must not allocate,
 * and a slot must outlive a sampler that gave up):
 *   FREE -> CLAIMED (sampler, CAS)  -> ARMED (sampler, after filling it)
 *   ARMED -> RUNNING (handler, CAS) -> DONE (handler, CAS; then sem_post)
 *   ARMED -> FREE (sampler on timeout, CAS: the handler never started)
 *   RUNNING -> ABANDONED (sampler on timeout) -> FREE (handler, when done)
 * Each state word carries a sequence number that changes on every claim, and
 * the signal carries (magic, slot, sequence), so a late signal for an old
 * request finds a mismatch and does nothing.
 *
 * The whole request, from the claim of a slot (before the signal is
 * queued) to DONE, FREE or ABANDONED, runs under the process-wide sampler
 * lock (posix/sampler_lock.c): one stopped window at a time, as on Apple.
 * An abandoned handler may still be finishing on its thread when the next
 * sampler starts; it touches only its own slot.
 *
 * The handler saves and restores errno, passes every signal that is not one
 * of our requests to the handler the app had, and is installed with
 * SA_RESTART so the target's interrupted system calls resume.
 *
 * The handler runs on the target's own stack, below the kernel's signal
 * frame (whether the app gives its threads an alternate signal stack is the
 * app's choice; we install none and ask for none). So before it runs fn it
 * checks the room left under its own frame against SNAP__LINUX_WINDOW_STACK
 * and answers SNAP_ENOSTACK when there is less: a thread deep in its stack is
 * refused, never pushed into its guard page. The room is measured from the
 * stack's low bound, which the window does not look up itself (that means
 * parsing /proc/self/maps): the sampler learns it on its own thread and
 * hands it in. A request whose handler meets a stack it knows nothing of
 * (a thread's first sample, an alternate signal stack, a coroutine's) does
 * nothing but report the sp and its thread, and the sampler learns that
 * stack (threads.c) and sends the request again, at most ROUNDS times in
 * all. The handler keeps its own frame small; the walk's state travels in
 * the argument block, not on the target's stack (capture.c).
 *
 * Every import the handler calls is bound before the first signal (install):
 * a first call through a lazy-binding stub would run the dynamic linker's
 * resolver on the target's stack, which saves every vector register there
 * (kilobytes with AVX-512).
 *
 * Must not: let the handler allocate, lock, print, wait or read a file. Its
 * whole work is the snap__sample_fn, which is [signal-safe] by contract.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "platform/linux/linux.h"
#include "platform/posix/locks.h"

#define SLOTS 16
#define MAGIC 0x534e4150u /* "SNAP" */
#define ROUNDS 3          /* signals per request: up to two to learn a stack */
/* The handler's answer when it does not know the stack it runs on: never
   returned to a caller (sample() learns the stack and asks again). */
#define NEED_STACK (-1000)

enum { FREE, CLAIMED, ARMED, RUNNING, DONE, ABANDONED };
#define PHASE(s) ((s)&7u)
#define SEQ(s) ((s) >> 3)
#define STATE(seq, phase) (((seq) << 3) | (phase))

typedef struct slot {
  atomic_uint state;
  snap__sample_fn fn;
  int result;
  size_t arg_size;
  snap__linux_stack_t stack;   /* in: what the sampler learned, if anything */
  uintptr_t seen_sp;           /* out, with NEED_STACK: the unknown stack */
  uintptr_t seen_self;         /* out: the target's pthread_self() */
  snap__plat_wait_regs_t wait; /* out: what a wait is decoded from */
  sem_t done;
  _Alignas(16) unsigned char arg[SNAP__SAMPLE_ARG_MAX];
} slot_t;

static slot_t g_slots[SLOTS];
static pthread_mutex_t g_install_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool g_installed;
static int g_signo; /* 0 until chosen */
static atomic_uint g_timeout_ms = 100;
static struct sigaction g_previous; /* the app's handler, chained to */
static _Thread_local __attribute__((tls_model("initial-exec"))) int t_in_window;

bool snap__plat_in_stopped_window(void) { return t_in_window != 0; }

void snap__linux_window_mark(bool in) { t_in_window = in ? 1 : 0; }

int snap__plat_set_sample_timeout_ms(unsigned ms) {
  atomic_store(&g_timeout_ms, ms);
  return SNAP_OK;
}

int snap__plat_set_sample_signal(int signo) {
  if (signo < SIGRTMIN || signo > SIGRTMAX)
    return SNAP_EINVAL;
  pthread_mutex_lock(&g_install_lock);
  int rc = SNAP_OK;
  if (atomic_load(&g_installed))
    rc = SNAP_EBUSY;
  else
    g_signo = signo;
  pthread_mutex_unlock(&g_install_lock);
  return rc;
}

static void chain(int signo, siginfo_t *si, void *uc) {
  const struct sigaction *p = &g_previous;
  if (p->sa_flags & SA_SIGINFO) {
    if (p->sa_sigaction)
      p->sa_sigaction(signo, si, uc);
  } else if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN &&
             p->sa_handler) {
    p->sa_handler(signo);
  }
  /* SIG_DFL for a real-time signal would kill the process; a signal we took
     over is better dropped than fatal to the host app. */
}

/* The stopped window, on the target: know the stack, check the room, run
   fn. Its frame is part of what SNAP__LINUX_WINDOW_STACK leaves room for
   below `regs`. */
static int window(slot_t *s, void *uc) {
  snap__regs_t regs;
  snap__linux_regs_from_ucontext(uc, &regs);
  snap__linux_window_stack(&s->stack);
  uintptr_t here = (uintptr_t)&regs, lo;
  int rc;
  s->seen_self = (uintptr_t)pthread_self();
  /* Both the stack to walk and the one the handler runs on must be known.
     They are one (we install without SA_ONSTACK) unless TSan ran the
     handler late, deeper in the thread, with the registers of the signal's
     arrival. */
  if (!snap__linux_stack_low(regs.sp, &lo)) {
    s->seen_sp = regs.sp;
    rc = NEED_STACK;
  } else if (!snap__linux_stack_low(here, &lo)) {
    s->seen_sp = here;
    rc = NEED_STACK;
  } else if (here - lo < SNAP__LINUX_WINDOW_STACK) {
    rc = SNAP_ENOSTACK; /* too deep to sample without a fault */
  } else {
    snap__linux_wait_regs_from_ucontext(uc, &s->wait);
    t_in_window = 1;
    rc = s->fn(&regs, s->arg);
    t_in_window = 0;
  }
  snap__linux_window_stack_clear();
  return rc;
}

static void on_signal(int signo, siginfo_t *si, void *uc) {
  int saved_errno = errno;
  uintptr_t token = (uintptr_t)si->si_value.sival_ptr;
  if ((si->si_code == SI_TIMER ||
       (si->si_code == SI_QUEUE && si->si_pid == getpid())) &&
      snap__linux_cpu_timer_token(token)) {
    /* A thread's CPU-time timer (cpu_timer.c): it samples itself. */
    snap__linux_cpu_timer_fire(token, uc);
    errno = saved_errno;
    return;
  }
  bool ours = si->si_code == SI_QUEUE && si->si_pid == getpid() &&
              (uint32_t)(token >> 32) == MAGIC;
  if (!ours) {
    chain(signo, si, uc);
    errno = saved_errno;
    return;
  }
  unsigned idx = (unsigned)(token & 0xff);
  unsigned seq = (unsigned)((token >> 8) & 0xffffff);
  if (idx < SLOTS) {
    slot_t *s = &g_slots[idx];
    unsigned armed = STATE(seq, ARMED);
    /* The kernel delivers the signal to the thread it was queued for, so
       the token alone identifies the request. */
    if (atomic_compare_exchange_strong(&s->state, &armed,
                                       STATE(seq, RUNNING))) {
      s->result = window(s, uc);
      unsigned running = STATE(seq, RUNNING);
      if (atomic_compare_exchange_strong(&s->state, &running, STATE(seq, DONE)))
        sem_post(&s->done); /* async-signal-safe by POSIX */
      else
        atomic_store(&s->state, STATE(seq, FREE)); /* sampler gave up */
    }
  }
  errno = saved_errno;
}

/* A forked child has one thread: requests that were in flight in the
   parent can never finish there, so their slots start over. */
static void reset_slots_in_child(void) {
  for (int i = 0; i < SLOTS; i++) {
    unsigned cur = atomic_load(&g_slots[i].state);
    atomic_store(&g_slots[i].state, STATE(SEQ(cur), FREE));
  }
}

/* One call to each function the handler calls, on this thread, so that
   none goes through the lazy-binding resolver on the target's stack (the
   walk's only import is the checked read, snap__plat_read). */
static void bind_window_imports(void) {
  int saved = errno;
  (void)getpid();
  (void)pthread_self();
  sem_post(&g_slots[0].done);
  while (sem_trywait(&g_slots[0].done) == 0)
    ;
  uintptr_t word = 0, copy;
  (void)snap__plat_read((uintptr_t)&word, &copy, sizeof copy);
  errno = saved;
}

static int install(void) {
  if (atomic_load_explicit(&g_installed, memory_order_acquire))
    return SNAP_OK;
  pthread_mutex_lock(&g_install_lock);
  int rc = SNAP_OK;
  if (!atomic_load(&g_installed)) {
    if (!g_signo)
      g_signo = SIGRTMIN + 5;
    for (int i = 0; i < SLOTS; i++)
      sem_init(&g_slots[i].done, 0, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    bind_window_imports();
    if (sigaction(g_signo, &sa, &g_previous) != 0) {
      rc = SNAP_EUNSUPPORTED;
    } else {
      (void)snap__plat_on_fork(SNAP__FORK_SAMPLER, NULL, NULL,
                               reset_slots_in_child);
      atomic_store_explicit(&g_installed, true, memory_order_release);
    }
  }
  pthread_mutex_unlock(&g_install_lock);
  return rc;
}

int snap__linux_sample_install(void) { return install(); }

int snap__linux_sample_signo(void) { return g_signo; }

static slot_t *claim(unsigned *seq_out) {
  for (int i = 0; i < SLOTS; i++) {
    slot_t *s = &g_slots[i];
    unsigned cur = atomic_load(&s->state);
    if (PHASE(cur) != FREE)
      continue;
    unsigned seq = (SEQ(cur) + 1) & 0xffffff;
    if (atomic_compare_exchange_strong(&s->state, &cur, STATE(seq, CLAIMED))) {
      /* A post from a request that completed after its sampler timed out
         may still be counted: drain it. */
      while (sem_trywait(&s->done) == 0)
        ;
      *seq_out = seq;
      return s;
    }
  }
  return NULL;
}

/* The calling thread's waits in snap__plat_sample, for
   snap__plat_sample_waited_ns: the time it was blocked waiting, which the
   lag watchdog counts as time the process ran. A stop of the process
   (SIGSTOP) that lands inside a wait must not count: the wait then ends
   late, stop and all, and a wait counted up to its timeout counted up to
   120 ms of every such stop as busy (issue 25: a steady loop beside 3 busy
   loops, stopped for 2 s, made a 250 ms lag 1 run in 3). So a wait for
   the handler is cut into slices of SLICE_MS, and each counts at most its
   own planned length and a millisecond of timer slack: a slice that ends
   later either waited for a CPU (the waiter's run-queue wait, which the
   watchdog counts apart) or held a stop, so at most a slice of a stop is
   counted (the extra cost: a wake every 10 ms, only while a target keeps
   the sampler waiting). */
static _Thread_local uint64_t t_waited_ns;
#define SLICE_MS 10
#define SLICE_SLACK_NS 1000000u

static uint64_t mono_ns(const struct timespec *t) {
  return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

/* sem_clockwait until `deadline`, in slices; 0 when posted, else errno's
   reason (ETIMEDOUT). */
static int wait_sliced(sem_t *sem, const struct timespec *deadline) {
  uint64_t end = mono_ns(deadline);
  for (;;) {
    struct timespec now_ts, slice;
    clock_gettime(CLOCK_MONOTONIC, &now_ts);
    uint64_t now = mono_ns(&now_ts);
    if (now >= end)
      return ETIMEDOUT;
    uint64_t until = now + (uint64_t)SLICE_MS * 1000000u;
    if (until > end)
      until = end;
    slice.tv_sec = (time_t)(until / 1000000000u);
    slice.tv_nsec = (long)(until % 1000000000u);
    int w = sem_clockwait(sem, CLOCK_MONOTONIC, &slice);
    int err = w == 0 ? 0 : errno;
    uint64_t took = snap__plat_now_ns() - now, planned = until - now;
    t_waited_ns +=
        took < planned + SLICE_SLACK_NS ? took : planned + SLICE_SLACK_NS;
    if (w == 0)
      return 0;
    if (err != ETIMEDOUT && err != EINTR)
      return err;
  }
}

static void deadline_after(struct timespec *ts, unsigned ms) {
  clock_gettime(CLOCK_MONOTONIC, ts);
  ts->tv_sec += ms / 1000;
  ts->tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

/* One signal, from the claim of a slot to its completion or abandonment:
   under the sampler lock. `stack` goes in; *seen out with NEED_STACK. */
static int request(int tid, snap__sample_fn fn, void *arg, size_t arg_size,
                   const snap__linux_stack_t *stack, uintptr_t seen[2],
                   snap__plat_wait_regs_t *wait) {
  unsigned seq;
  slot_t *s = claim(&seq);
  if (!s)
    return SNAP_EBUSY;
  s->fn = fn;
  s->result = SNAP_ETIMEDOUT;
  s->arg_size = arg_size;
  s->stack = *stack;
  s->wait.source = SNAP__WAIT_REGS_NONE;
  memcpy(s->arg, arg, arg_size);
  atomic_store(&s->state, STATE(seq, ARMED));

  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = g_signo;
  si.si_code = SI_QUEUE;
  si.si_pid = getpid();
  si.si_uid = getuid();
  si.si_value.sival_ptr =
      (void *)(((uintptr_t)MAGIC << 32) | ((uintptr_t)seq << 8) |
               (uintptr_t)(s - g_slots));
  if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, g_signo, &si) != 0) {
    int err = errno;
    atomic_store(&s->state, STATE(seq, FREE));
    return err == ESRCH    ? SNAP_ENOTHREAD
           : err == EAGAIN ? SNAP_EBUSY
                           : SNAP_EINVAL;
  }

  struct timespec deadline;
  deadline_after(&deadline, atomic_load(&g_timeout_ms));
  int w;
  for (;;) {
    w = wait_sliced(&s->done, &deadline);
    if (w == 0) {
      /* Confirm through the state word (acquire: pairs with the handler's
         DONE) rather than trust the post alone. */
      if (atomic_load_explicit(&s->state, memory_order_acquire) ==
          STATE(seq, DONE))
        break;
      continue; /* a stale post from an earlier request */
    }
    break; /* timed out */
  }

  unsigned expect = STATE(seq, ARMED);
  if (w != 0 &&
      atomic_compare_exchange_strong(&s->state, &expect, STATE(seq, FREE))) {
    /* The handler never started; a late signal finds FREE and leaves. */
    return snap__linux_thread_alive(tid) ? SNAP_ETIMEDOUT : SNAP_ENOTHREAD;
  }
  if (w != 0 && PHASE(expect) == RUNNING) {
    /* It is walking right now: a walk is bounded, give it a moment more. */
    struct timespec extra;
    deadline_after(&extra, 20);
    wait_sliced(&s->done, &extra);
    expect = STATE(seq, RUNNING);
    if (atomic_compare_exchange_strong(&s->state, &expect,
                                       STATE(seq, ABANDONED)))
      return SNAP_ETIMEDOUT; /* the handler frees the slot when it ends */
  }
  /* DONE: the semaphore was (or will be) posted; the slot is ours. Every
     way here read DONE with acquire ordering (the load in the wait loop or
     a failed compare-and-swap), so the handler's writes are visible. */
  int rc = s->result;
  if (rc == NEED_STACK) {
    seen[0] = s->seen_sp;
    seen[1] = s->seen_self;
  } else {
    memcpy(arg, s->arg, arg_size);
    if (wait)
      *wait = s->wait;
  }
  atomic_store(&s->state, STATE(seq, FREE));
  return rc;
}

/* A request, with the rounds it takes to learn the target's stack. */
static int sample(int tid, snap__sample_fn fn, void *arg, size_t arg_size,
                  snap__plat_wait_regs_t *wait) {
  snap__linux_stack_t stack = {0, 0, 0, false, false};
  for (int round = 1;; round++) {
    uintptr_t seen[2];
    int rc = request(tid, fn, arg, arg_size, &stack, seen, wait);
    if (rc != NEED_STACK)
      return rc;
    if (round == ROUNDS)
      return SNAP_EBUSY; /* it keeps moving to stacks it has not shown */
    /* Outside the window: the target runs free while we read the maps. */
    if (!snap__linux_learn_stack(seen[0], seen[1], tid, &stack))
      return SNAP_EIO;
  }
}

int snap__plat_sample_reachable(snap_thread_t thread) {
  if (!snap__linux_tid_ok(thread))
    return SNAP_ENOTHREAD;
  char status[4096];
  if (snap__linux_read_task((int)thread, "status", status, sizeof status) < 0)
    return errno == ENOENT ? SNAP_ENOTHREAD : SNAP_OK; /* no /proc: try */
  /* SigBlk: the blocked-signal mask in hex, bit signo - 1. */
  const char *p = snap__linux_status_field(status, "SigBlk:");
  if (!p)
    return SNAP_OK;
  uint64_t mask = 0;
  for (;; p++) {
    int d = *p >= '0' && *p <= '9'   ? *p - '0'
            : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
                                     : -1;
    if (d < 0)
      break;
    mask = mask << 4 | (uint64_t)d;
  }
  int signo = g_signo ? g_signo : SIGRTMIN + 5; /* install()'s default */
  return mask >> (signo - 1) & 1 ? SNAP_EBLOCKED : SNAP_OK;
}

/* The wait for the sampler lock (another sampler's sample): at most the
   timeout and the 20 ms grace for a walk in progress. Anything longer was
   a stop of the process. */
static void count_wait(uint64_t ns) {
  uint64_t cap = ((uint64_t)atomic_load(&g_timeout_ms) + 20) * 1000000u;
  t_waited_ns += ns < cap ? ns : cap;
}

uint64_t snap__plat_sample_waited_ns(void) { return t_waited_ns; }

int snap__plat_sample(snap_thread_t thread, snap__sample_fn fn, void *arg,
                      size_t arg_size, snap__plat_wait_regs_t *wait) {
  if (wait)
    wait->source = SNAP__WAIT_REGS_NONE;
  if (!fn || arg_size > SNAP__SAMPLE_ARG_MAX || (arg_size && !arg))
    return SNAP_EINVAL;
  if (!snap__linux_tid_ok(thread))
    return SNAP_ENOTHREAD;
  int tid = (int)thread;
  if (tid == snap__linux_gettid())
    return SNAP_EINVAL; /* a thread cannot wait for its own handler */
  int rc = install();
  if (rc != SNAP_OK)
    return rc;
  /* From before the signal is queued until the request is complete or
     abandoned: one stopped window in the process at a time (Apple's
     contract, kept here too so both backends behave alike). */
  uint64_t t0 = snap__plat_now_ns();
  rc = snap__sampler_enter();
  uint64_t t1 = snap__plat_now_ns();
  count_wait(t1 - t0);
  if (rc != SNAP_OK)
    return rc;
  rc = sample(tid, fn, arg, arg_size, wait); /* counts its own waits */
  snap__sampler_leave();
  return rc;
}
