/*
 * test_low_stack.c — sampling a thread that is low on stack never kills the
 * process: each sample is whole, or SNAP_ENOSTACK when the room left is below
 * what the sampling handler needs (include/stacksnap.h, snap_capture_thread).
 *
 * On Linux the sampling signal handler runs on the target's own stack (the
 * app decides about sigaltstack, not us), below the signal frame the kernel
 * pushes. Each target here runs on a stack we map ourselves, with an
 * inaccessible guard below it, so "room left" is exact: a thread descends
 * (alloca) until its parking function's sp is 16, 12, 8 or 6 KiB above the
 * guard, then parks there, spinning or blocked in read(). Each is sampled 50
 * times with the default (call-frame information) walk, the most
 * stack-hungry one. A handler that needs more than the room left touches the
 * guard and the process dies of SIGSEGV: the test fails by crashing.
 *
 * Whole: the sample holds park, descend and thread_body in that order (named
 * by dladdr: the executable exports its functions) and is the same stack as
 * every other whole sample of that thread. In builds without sanitizers,
 * threads with 8 KiB or more left must give whole samples every time: the
 * header's documented minimum. A last level leaves 1 KiB beyond what a
 * bare handler uses: every sample there must be refused, and the thread
 * live on. With a sanitizer, whose own frames sit on the same stack, every
 * level gets SANITIZER_ROOM more.
 *
 * Also: a thread whose handler runs on an alternate signal stack (a stack
 * the sampler learns for that one request) is sampled whole, through the
 * signal frame back to its thread function.
 *
 * Measured: how much of the target's stack a sample really uses. The stack
 * below a parked target is filled with a pattern, one sample is taken (its
 * first: the one that used to learn the stack's bounds inside the handler),
 * and the lowest byte changed gives the use, next to the same figure for a
 * bare handler of our own (the kernel's signal frame and little else). The
 * difference must stay under SNAP__LINUX_WINDOW_STACK, the room the handler
 * checks for. (Not under TSan, which runs handlers late, deep inside its
 * interceptors, and holds signals back from a thread blocked in read():
 * there targets park in poll() and usleep() instead.)
 */
#include <alloca.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "check.h"
#include "oracle.h"
#include "platform/linux/linux.h"
#include "stacksnap.h"

#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")
#define KIB 1024u
#define STACK_SIZE (256u * KIB) /* the thread's usable stack */
#define GUARD (64u * KIB)       /* inaccessible, below it */
#define SAMPLES 50
#define DEPTH 64
#define PATTERN 0xa5

#if SNAP_TEST_ASAN || SNAP_TEST_TSAN
#define SANITIZED 1
#else
#define SANITIZED 0
#endif
/* A sanitizer puts frames of its own on the target's stack (an interceptor
   around read(), around the handler, an instrumented handler): there every
   level of room left gets this much more, and the handler asks for more
   (SNAP__LINUX_WINDOW_STACK). */
#define SANITIZER_ROOM (SANITIZED ? 32 * KIB : 0)

enum kind { SPIN, BLOCKED };

typedef struct target {
  enum kind kind;
  size_t headroom;    /* wanted: park's sp - lo */
  unsigned char *map; /* guard + stack */
  uintptr_t lo;       /* lowest usable byte: the guard's end */
  int pipe[2];        /* BLOCKED parks in read() on pipe[0] */
  atomic_int tid;     /* set once parked */
  atomic_int stop;
  atomic_uintptr_t sp; /* park's sp */
  bool calibrating;
  pthread_t thread;
} target_t;

static inline uintptr_t current_sp(void) {
  uintptr_t sp;
#if defined(__x86_64__)
  __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
#elif defined(__aarch64__)
  __asm__ volatile("mov %0, sp" : "=r"(sp));
#else
#error "unsupported architecture"
#endif
  return sp;
}

NOINLINE void park(target_t *t);
NOINLINE void park(target_t *t) {
  atomic_store(&t->sp, current_sp());
  if (t->calibrating)
    return;
  atomic_store(&t->tid, (int)syscall(SYS_gettid));
  if (SNAP_TEST_TSAN) {
    /* TSan runs a handler only when the thread passes one of its
       interceptors, and holds it back while the thread blocks in read()
       (check.h): park where it can deliver. */
    struct pollfd p = {t->pipe[0], POLLIN, 0};
    while (!atomic_load(&t->stop))
      t->kind == SPIN ? usleep(100) : poll(&p, 1, 1);
  } else if (t->kind == SPIN) {
    while (!atomic_load(&t->stop))
      ;
  } else {
    char c;
    while (read(t->pipe[0], &c, 1) < 0 && errno == EINTR)
      ;
  }
  KEEP_FRAME();
}

NOINLINE void descend(target_t *t, size_t drop);
NOINLINE void descend(target_t *t, size_t drop) {
  volatile char *p = alloca(drop);
  p[0] = 0;
  park(t);
  KEEP_FRAME();
}

NOINLINE void *thread_body(void *arg);
NOINLINE void *thread_body(void *arg) {
  target_t *t = arg;
  /* Once to learn where park's sp lands, then for real at the wanted room
     (the frames in between have fixed sizes). */
  uintptr_t want = t->lo + t->headroom;
  size_t drop = current_sp() - want - 2 * KIB;
  t->calibrating = true;
  descend(t, drop);
  drop += atomic_load(&t->sp) - want;
  t->calibrating = false;
  descend(t, drop);
  KEEP_FRAME();
  return NULL;
}

static void start(target_t *t, enum kind kind, size_t headroom) {
  memset(t, 0, sizeof *t);
  t->kind = kind;
  t->headroom = headroom;
  t->map = mmap(NULL, GUARD + STACK_SIZE, PROT_NONE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  CHECK(t->map != MAP_FAILED, "mmap");
  CHECK(mprotect(t->map + GUARD, STACK_SIZE, PROT_READ | PROT_WRITE) == 0,
        "mprotect");
  t->lo = (uintptr_t)t->map + GUARD;
  CHECK(pipe(t->pipe) == 0, "pipe");
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstack(&attr, t->map + GUARD, STACK_SIZE);
  CHECK(pthread_create(&t->thread, &attr, thread_body, t) == 0, "create");
  pthread_attr_destroy(&attr);
  while (!atomic_load(&t->tid))
    usleep(1000);
  usleep(20000); /* into read() */
}

static void finish(target_t *t) {
  atomic_store(&t->stop, 1);
  if (write(t->pipe[1], "x", 1) != 1)
    CHECK(0, "write");
  pthread_join(t->thread, NULL);
  close(t->pipe[0]);
  close(t->pipe[1]);
  munmap(t->map, GUARD + STACK_SIZE);
}

/* ---- How much of the target's stack one sample uses -------------------- */

static sem_t g_bare_done;
static atomic_uintptr_t g_bare_sp; /* the sp the bare handler interrupted */
static void bare_handler(int sig, siginfo_t *si, void *ucv) {
  (void)sig, (void)si;
  const ucontext_t *uc = ucv;
#if defined(__x86_64__)
  atomic_store(&g_bare_sp, (uintptr_t)uc->uc_mcontext.gregs[REG_RSP]);
#elif defined(__aarch64__)
  atomic_store(&g_bare_sp, (uintptr_t)uc->uc_mcontext.sp);
#endif
  sem_post(&g_bare_done);
}

/* Fills the free stack below the target blocked in read() (below the sp
   where signals find it, learned by a bare signal first, and its red zone),
   runs one sample, returns how far below that sp the lowest changed byte
   lies. */
static size_t used_by(target_t *t, int (*sample)(target_t *)) {
  /* A sampler wakes when the handler posts, before the handler has
     returned: wait until the target sleeps in read() again, or the fill
     would land on live frames. */
  while (snap_thread_is_running((snap_thread_t)atomic_load(&t->tid)) != 0)
    usleep(1000);
  uintptr_t sp = atomic_load(&g_bare_sp);
  size_t span = sp - 256 - t->lo;
  memset((void *)t->lo, PATTERN, span);
  int rc = sample(t);
  CHECK(rc >= 0, "sample for the measure: %d (%s)", rc, snap_strerror(rc));
  size_t i = 0;
  while (i < span && ((unsigned char *)t->lo)[i] == PATTERN)
    i++;
  CHECK(i > 0, "the pattern was overrun: the guard was close");
  return sp - (t->lo + i);
}

static unsigned g_flags;
static int sample_snap(target_t *t) {
  uintptr_t pcs[DEPTH];
  return snap_capture_thread((snap_thread_t)atomic_load(&t->tid), pcs, DEPTH,
                             g_flags);
}

static int sample_bare(target_t *t) {
  int signo = SIGRTMIN + 7;
  if (syscall(SYS_tgkill, getpid(), atomic_load(&t->tid), signo) != 0)
    return -1;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += 5;
  while (sem_timedwait(&g_bare_done, &ts) != 0)
    if (errno != EINTR)
      return -1;
  return 0;
}

static size_t g_bare_use;   /* the kernel's signal frame and a bare handler */
static size_t g_below_park; /* read()'s frames under park, where signals land */

static void measure(void) {
  sem_init(&g_bare_done, 0, 0);
  /* Bound now: a first call through the lazy-binding stub inside the
     handler would save every vector register on the stack as well. */
  sem_post(&g_bare_done);
  sem_wait(&g_bare_done);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = bare_handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGRTMIN + 7, &sa, NULL);

  target_t t;
  start(&t, BLOCKED, 64 * KIB);
  CHECK(sample_bare(&t) == 0, "bare signal"); /* where read() sleeps */
  size_t bare = used_by(&t, sample_bare);
  g_bare_use = bare;
  g_below_park = atomic_load(&t.sp) - atomic_load(&g_bare_sp);
  size_t first = used_by(&t, sample_snap); /* the thread's first sample */
  size_t again = 0;
  unsigned flag_sets[] = {0, SNAP_CAPTURE_APP_ONLY, SNAP_CAPTURE_ASYNC,
                          SNAP_CAPTURE_FP_ONLY};
  for (int i = 0; i < 4; i++) {
    g_flags = flag_sets[i];
    size_t u = used_by(&t, sample_snap);
    again = u > again ? u : again;
  }
  g_flags = 0;
  fprintf(stderr,
          "stack used below the interrupted sp: bare handler %zu bytes "
          "(AT_MINSIGSTKSZ %lu), stacksnap's first sample %zu (cold caches), "
          "later ones at most %zu\n",
          bare, getauxval(AT_MINSIGSTKSZ), first, again);
  /* What the window uses beyond a bare handler must be inside what the
     handler checks for before it walks. */
  CHECK(first - bare < SNAP__LINUX_WINDOW_STACK &&
            again - bare < SNAP__LINUX_WINDOW_STACK,
        "the window used %zu bytes more than a bare handler; it checks for %u",
        (first > again ? first : again) - bare, SNAP__LINUX_WINDOW_STACK);
  if (!SANITIZED)
    CHECK(first < 8 * KIB && again < 8 * KIB,
          "a sample needs more than the documented 8 KiB");
  finish(&t);
}

/* ---- 50 samples at each level of room left ----------------------------- */

static int whole_at(const uintptr_t *pcs, int n) {
  int p = oracle_find_fn(pcs, n, 0, (void *)park, 1);
  int d = p < 0 ? -1 : oracle_find_fn(pcs, n, p + 1, (void *)descend, 0);
  int b = d < 0 ? -1 : oracle_find_fn(pcs, n, d + 1, (void *)thread_body, 0);
  return b < 0 ? -1 : p;
}

static void sample_many(enum kind kind, size_t headroom) {
  target_t t;
  start(&t, kind, headroom);
  size_t left = atomic_load(&t.sp) - t.lo;
  CHECK(left < headroom + 64 && left + 64 > headroom,
        "room left %zu, wanted %zu", left, headroom);
  uintptr_t ref[DEPTH];
  int ref_n = 0, ref_at = -1, whole = 0, refused = 0;
  for (int k = 0; k < SAMPLES; k++) {
    uintptr_t pcs[DEPTH];
    int n =
        snap_capture_thread((snap_thread_t)atomic_load(&t.tid), pcs, DEPTH, 0);
    if (n == SNAP_ENOSTACK) {
      refused++;
      continue;
    }
    int at = n > 0 ? whole_at(pcs, n) : -1;
    if (at < 0) {
      CHECK(0, "%s, %zu bytes left: sample %d is neither whole nor refused: %d",
            kind == SPIN ? "spinning" : "blocked", left, k, n);
      if (n > 0)
        oracle_print("sample", pcs, n);
      break;
    }
    if (!ref_n) {
      ref_n = n, ref_at = at;
      memcpy(ref, pcs, sizeof pcs);
    } else if (n - at != ref_n - ref_at ||
               memcmp(pcs + at + 1, ref + ref_at + 1,
                      (size_t)(n - at - 1) * sizeof *pcs)) {
      CHECK(0, "sample %d differs from the first whole one", k);
      oracle_print("first", ref, ref_n);
      oracle_print("this", pcs, n);
      break;
    }
    whole++;
  }
  fprintf(stderr,
          "%-8s %5zu bytes left: %2d whole, %2d refused (SNAP_ENOSTACK)\n",
          kind == SPIN ? "spinning" : "blocked", left, whole, refused);
  if (!SANITIZED && headroom >= 8 * KIB)
    CHECK(refused == 0,
          "refused with %zu bytes left: the header promises 8 KiB", left);
  if (headroom >= 16 * KIB + SANITIZER_ROOM && !SNAP_TEST_TSAN)
    CHECK(whole > 0, "no whole sample with %zu bytes left", left);
  if (g_bare_use &&
      headroom < g_below_park + g_bare_use + SNAP__LINUX_WINDOW_STACK)
    CHECK(whole == 0,
          "%d whole samples with %zu bytes left: the window "
          "needs more than that (test: the refusal works)",
          whole, left);
  finish(&t);
}

/* ---- A thread inside a handler on its alternate signal stack ----------- */

/* The stack the sampled handler interrupts is not the thread's own: the
   sampler learns it for that one request (threads.c), and the walk crosses
   the signal frame back to the thread's stack. */
static atomic_int g_alt_tid, g_alt_stop;
NOINLINE void alt_handler(int sig);
NOINLINE void alt_handler(int sig) {
  (void)sig;
  atomic_store(&g_alt_tid, (int)syscall(SYS_gettid));
  while (!atomic_load(&g_alt_stop))
    ;
  KEEP_FRAME();
}
NOINLINE void *alt_thread(void *arg);
NOINLINE void *alt_thread(void *arg) {
  stack_t ss = {.ss_sp = arg, .ss_size = 64 * KIB, .ss_flags = 0};
  CHECK(sigaltstack(&ss, NULL) == 0, "sigaltstack");
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = alt_handler;
  sa.sa_flags = SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR2, &sa, NULL);
  pthread_kill(pthread_self(), SIGUSR2);
  KEEP_FRAME();
  return NULL;
}

static void sample_on_altstack(void) {
  void *alt = mmap(NULL, 64 * KIB, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  pthread_t t;
  pthread_create(&t, NULL, alt_thread, alt);
  while (!atomic_load(&g_alt_tid))
    usleep(1000);
  int whole = 0;
  for (int k = 0; k < SAMPLES; k++) {
    uintptr_t pcs[DEPTH];
    int n = snap_capture_thread((snap_thread_t)atomic_load(&g_alt_tid), pcs,
                                DEPTH, 0);
    int h = oracle_find_fn(pcs, n, 0, (void *)alt_handler, 1);
    int b = h < 0 ? -1 : oracle_find_fn(pcs, n, h + 1, (void *)alt_thread, 0);
    if (b < 0) {
      CHECK(0,
            "on the alternate stack: sample %d: %d, handler at %d, "
            "thread at %d",
            k, n, h, b);
      if (n > 0)
        oracle_print("sample", pcs, n);
      break;
    }
    whole++;
  }
  fprintf(stderr, "on an alternate signal stack: %d whole of %d\n", whole,
          SAMPLES);
  atomic_store(&g_alt_stop, 1);
  pthread_join(t, NULL);
  munmap(alt, 64 * KIB);
}

int main(void) {
  CHECK_EQ(snap_set_sample_timeout_ms(5000), SNAP_OK);
  /* Under TSan the handler runs late, deep in an interceptor, on the stack
     as it is then: there is nothing to measure from the interrupted sp. */
  if (!SNAP_TEST_TSAN)
    measure();
  size_t levels[] = {16 * KIB, 12 * KIB, 8 * KIB, 6 * KIB};
  for (size_t i = 0; i < sizeof levels / sizeof *levels; i++) {
    sample_many(SPIN, levels[i] + SANITIZER_ROOM);
    sample_many(BLOCKED, levels[i] + SANITIZER_ROOM);
  }
  /* Not under TSan: it delivers nothing to a thread inside a handler, and
     there is no measure to place the last level with. */
  if (!SNAP_TEST_TSAN) {
    sample_on_altstack();
    /* Room for read()'s frames, the kernel's signal frame and a bare
       handler, and 1 KiB (4 with a sanitizer, whose frames are fat): the
       handler must refuse, and survive. */
    size_t refuse = g_below_park + g_bare_use + (SANITIZED ? 4 : 1) * KIB;
    sample_many(SPIN, refuse);
    sample_many(BLOCKED, refuse);
  }
  return check_result("test_low_stack");
}
