/*
 * test_quiet_sample.c — issue 13 item 6, "observing must not change the
 * app": SNAP_CAPTURE_QUIET samples threads blocked in usleep, nanosleep
 * (sleep's system call), poll and epoll_wait without cutting them short.
 *
 * Part 1: four sleepers, each making ONE call per turn with no EINTR retry,
 * timed with CLOCK_MONOTONIC; meanwhile 100 whole-process dumps
 * (snap_thread_list, then snap_capture_thread with SNAP_CAPTURE_QUIET on
 * every thread). A call that returns EINTR or early fails, as does one
 * more than 5 ms late once the time it waited for a CPU is taken off (the
 * kernel's run-queue wait for the thread, /proc/thread-self/schedstat's
 * second field, read around the call: on a loaded box a woken sleeper
 * waits its turn, which no sampler causes), unless a witness thread that
 * is never sampled was as late at the same moments (the machine stalled:
 * the hypervisor took the CPUs, which the guest's schedstat does not
 * count; CI saw three sleepers 13-17 ms late at once). Every stack of a sleeper
 * must contain the sleeper's own function (dladdr over the exported symbols:
 * the dynamic linker's ranges, not ours), and the frames above it must be those
 * glibc's backtrace(), taken by the sleeper just before it blocked, gives.
 *
 * Part 2 (races): targets alternate rapidly between short blocking calls
 * at varying depths and computing over a frame full of frame-like words,
 * sampled with the flag over and over: every stack is an error code or
 * the target's own chain (its function, only its helpers or libc under
 * it, backtrace()'s callers above). Frame 0 may also be in this
 * program's PLT (the stub that jumps to nanosleep), read from its own
 * section headers: a signal can land there, and under qemu-user it lands
 * at translation-block edges, where a stub is a block of its own (CI saw
 * one such stack in 1500). Without the re-read after the walk
 * (snap__plat_blocked_still) about 3 % of these stacks were wrong.
 *
 * Under qemu-user the kernel's syscall file describes the emulator's host
 * thread, so no quiet walk can be verified: the test then requires that
 * every request fell back to the signal (snap__capture_quiet_counts), that
 * the stacks were still taken, says so on stdout, and does not require
 * the sleeps to be whole (the signal ends them, which is what the flag
 * cannot prevent there). Which mode applies is decided from outside the
 * library: whether the pc the kernel publishes for a sleeping thread is
 * in a loaded image according to dladdr.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "capture/capture.h"
#include "check.h"
#include "oracle.h"
#include "stacksnap.h"
#include "test_clock.h"

#define SLEEP_MS 40
#define ROUNDS 100
#define SLACK_NS (5 * 1000000LL)
#define LATES 8 /* late calls of a sleeper kept to be judged */

enum { K_USLEEP, K_NANOSLEEP, K_POLL, K_EPOLL, KINDS };
static const char *const k_names[KINDS] = {"usleep", "nanosleep", "poll",
                                           "epoll_wait"};

typedef struct sleeper {
  int kind;
  atomic_int tid;
  atomic_bool stop;
  atomic_bool counting; /* the dumps are on: calls now count */
  int epfd;
  /* Results, written by the sleeper only. */
  int calls, interrupted, early, late;
  long long worst_late_ns, base_worst_ns; /* run-queue wait taken off */
  struct late_call {
    long long due, woke, late; /* monotonic ns; run-queue wait taken off */
  } lates[LATES];              /* the first late calls, judged at the end */
  void *bt[64];
  int nbt;
} sleeper_t;

static sleeper_t g_sleepers[KINDS];

/* One blocking call, no retry: 0, or -1 when it ended early (EINTR). */
__attribute__((noinline)) int quiet_block_once(sleeper_t *s) {
  int rc;
  switch (s->kind) {
  case K_USLEEP: rc = usleep(SLEEP_MS * 1000); break;
  case K_NANOSLEEP: {
    /* sleep(3) is nanosleep(2) in whole seconds: the same system call
       with a length a 100-round test can afford. */
    struct timespec ts = {0, SLEEP_MS * 1000000L};
    rc = nanosleep(&ts, NULL);
    break;
  }
  case K_POLL: {
    struct pollfd none = {-1, 0, 0};
    rc = poll(&none, 1, SLEEP_MS) < 0 ? -1 : 0;
    break;
  }
  default: {
    struct epoll_event ev;
    rc = epoll_wait(s->epfd, &ev, 1, SLEEP_MS) < 0 ? -1 : 0;
    break;
  }
  }
  __asm__ volatile("" ::: "memory"); /* not a tail call */
  return rc;
}

/* The sleeper's own function: what every sample of it must show. */
__attribute__((noinline)) void quiet_sleeper_loop(sleeper_t *s) {
  backtrace_fn bt = oracle_backtrace();
  s->nbt = bt ? bt(s->bt, 64) : 0;
  while (!atomic_load(&s->stop)) {
    bool counting = atomic_load(&s->counting);
    long long q0 = runq_wait_ns(0), t0 = mono_ns();
    int rc = quiet_block_once(s);
    long long dt = mono_ns() - t0, q1 = runq_wait_ns(0);
    /* Early is judged on the wall time alone: waiting for a CPU only ever
       makes a call later. The run-queue wait read around the call also
       covers the schedstat reads themselves, so on a loaded box taking
       it off made whole calls look early with both cores busy. */
    bool early = dt < SLEEP_MS * 1000000LL - 1000000LL; /* poll rounds */
    long long late = dt - SLEEP_MS * 1000000LL;
    if (q0 >= 0 && q1 >= q0)
      late -= q1 - q0; /* waiting for a CPU is the scheduler's, not ours */
    if (!counting) {
      if (late > s->base_worst_ns)
        s->base_worst_ns = late;
      continue;
    }
    s->calls++;
    if (rc != 0)
      s->interrupted++;
    else if (early)
      s->early++;
    if (late > s->worst_late_ns)
      s->worst_late_ns = late;
    if (late > SLACK_NS) {
      if (s->late < LATES)
        s->lates[s->late] = (struct late_call){
            .due = t0 + SLEEP_MS * 1000000LL, .woke = t0 + dt, .late = late};
      s->late++;
    }
  }
  __asm__ volatile("" ::: "memory");
}

/* The witness: never sampled, it sleeps 1 ms at a time and records each
   wake that came more than WITNESS_LATE_NS late beyond its run-queue
   wait. What delays it delays the whole machine, not a sampled thread. */
#define WITNESS_LATE_NS (2 * 1000000LL)
#define WITNESS_MAX 512
static struct late_call g_stalls[WITNESS_MAX];
static atomic_int g_n_stalls, g_witness_tid;
static atomic_bool g_witness_stop;

static void *witness_main(void *arg) {
  (void)arg;
  atomic_store(&g_witness_tid, (int)syscall(SYS_gettid));
  while (!atomic_load(&g_witness_stop)) {
    long long q0 = runq_wait_ns(0), t0 = mono_ns();
    struct timespec ts = {0, 1000000L};
    nanosleep(&ts, NULL);
    long long t1 = mono_ns(), q1 = runq_wait_ns(0);
    long long late = t1 - t0 - 1000000LL;
    if (q0 >= 0 && q1 >= q0)
      late -= q1 - q0;
    int n = atomic_load(&g_n_stalls);
    if (late > WITNESS_LATE_NS && n < WITNESS_MAX) {
      g_stalls[n] =
          (struct late_call){.due = t0 + 1000000LL, .woke = t1, .late = late};
      atomic_store(&g_n_stalls, n + 1);
    }
  }
  return NULL;
}

/* Whether a late call was the machine's: a stall of the witness overlaps
   the call's lateness and explains all but SLACK_NS of it. */
static bool machine_stalled(const struct late_call *c) {
  int n = atomic_load(&g_n_stalls);
  for (int i = 0; i < n; i++)
    if (g_stalls[i].due < c->woke && g_stalls[i].woke > c->due &&
        g_stalls[i].late + SLACK_NS >= c->late)
      return true;
  return false;
}

static void *sleeper_main(void *arg) {
  sleeper_t *s = arg;
  atomic_store(&s->tid, (int)syscall(SYS_gettid));
  quiet_sleeper_loop(s);
  return NULL;
}

/* Samples that fell back to the signal under TSan and came back without
   the sleeper's frames (see check_stack). */
static int g_tsan_stale;

/* The sleeper's stack as the sample gave it: it holds quiet_sleeper_loop,
   and above it the frames backtrace() gave above that function.
   tsan_signalled: the sample fell back to the signal under TSan, which
   defers a signal that arrives in a blocking call and runs the handler
   later, deeper in the thread, with the registers of its arrival: a walk
   from them reads a stack that has moved on (seen: `read` and then the
   request's own "SNAP" magic as a return address). Such a sample may miss
   the sleeper's frames; it is counted and printed, not failed. A quiet
   walk never may. */
static void check_stack(const sleeper_t *s, const uintptr_t *pcs, int n,
                        int *shown, bool tsan_signalled) {
  int at = oracle_find_fn(pcs, n, 0, (void *)quiet_sleeper_loop, 0);
  if (tsan_signalled && at < 0) {
    g_tsan_stale++;
    return;
  }
  CHECK(at >= 0, "%s: its own function is not in the stack", k_names[s->kind]);
  if (at < 0) {
    if ((*shown)++ < 2)
      oracle_print("sample", pcs, n);
    return;
  }
  /* backtrace()'s frame 0 is in quiet_sleeper_loop (its call of
     backtrace); frames 1.. are its callers, return addresses both ways. */
  int want = s->nbt - 1, have = n - at - 1, same = 0;
  for (int i = 1; i < s->nbt && at + i < n; i++) {
    if ((uintptr_t)s->bt[i] != pcs[at + i])
      break;
    same++;
  }
  if (tsan_signalled && same != want && same == have) {
    g_tsan_stale++; /* the walk stopped short: the same stale registers */
    return;
  }
  CHECK(same == want || (same == have && n == SNAP_MAX_FRAMES),
        "%s: %d of backtrace()'s %d frames above the sleeper's function "
        "(sample has %d)",
        k_names[s->kind], same, want, have);
  if (same != want && (*shown)++ < 2) {
    oracle_print("sample", pcs, n);
    oracle_print("backtrace", (const uintptr_t *)s->bt, s->nbt);
  }
}

static void part1(bool native) {
  pthread_t th[KINDS], witness;
  pthread_create(&witness, NULL, witness_main, NULL);
  while (!atomic_load(&g_witness_tid))
    usleep(1000);
  for (int k = 0; k < KINDS; k++) {
    sleeper_t *s = &g_sleepers[k];
    s->kind = k;
    s->epfd = k == K_EPOLL ? epoll_create1(EPOLL_CLOEXEC) : -1;
    pthread_create(&th[k], NULL, sleeper_main, s);
  }
  for (int k = 0; k < KINDS; k++)
    while (!atomic_load(&g_sleepers[k].tid))
      usleep(1000);
  /* One signalled sample of each before the calls count: a thread's first
     signal sample may take two signals (the sampler learns its stack in
     between, sample.c), which would cut two sleeps for one fallback. */
  static uintptr_t first[SNAP_MAX_FRAMES];
  for (int k = 0; k < KINDS; k++)
    (void)snap_capture_thread((snap_thread_t)atomic_load(&g_sleepers[k].tid),
                              first, SNAP_MAX_FRAMES, 0);
  usleep(4 * SLEEP_MS * 1000); /* baseline lateness */
  for (int k = 0; k < KINDS; k++)
    atomic_store(&g_sleepers[k].counting, true);

  uint64_t kept0, sig0;
  snap__capture_quiet_counts(&kept0, &sig0);
  int taken[KINDS] = {0}, failed = 0, shown = 0,
      self = (int)syscall(SYS_gettid);
  long long t_quiet = 0;
  int n_quiet = 0, interrupted = 0;
  static uintptr_t pcs[SNAP_MAX_FRAMES];
  for (int round = 0; round < ROUNDS; round++) {
    snap_thread_t all[64];
    int nt = snap_thread_list(all, 64);
    CHECK(nt > KINDS, "thread list: %d", nt);
    for (int i = 0; i < nt; i++) {
      if ((int)all[i] == self || (int)all[i] == atomic_load(&g_witness_tid))
        continue;
      uint64_t kept_b, sig_b, kept_a, sig_a;
      snap__capture_quiet_counts(&kept_b, &sig_b);
      long long t0 = mono_ns();
      int n =
          snap_capture_thread(all[i], pcs, SNAP_MAX_FRAMES, SNAP_CAPTURE_QUIET);
      long long dt = mono_ns() - t0;
      snap__capture_quiet_counts(&kept_a, &sig_a);
      bool tsan_signalled = SNAP_TEST_TSAN && sig_a > sig_b;
      for (int k = 0; k < KINDS; k++) {
        if ((snap_thread_t)atomic_load(&g_sleepers[k].tid) != all[i])
          continue;
        if (n < 0) {
          failed++;
          continue;
        }
        taken[k]++;
        t_quiet += dt, n_quiet++;
        check_stack(&g_sleepers[k], pcs, n, &shown, tsan_signalled);
      }
    }
    usleep(3000); /* 100 dumps spread over several sleeps of each */
  }
  uint64_t kept1, sig1;
  snap__capture_quiet_counts(&kept1, &sig1);
  for (int k = 0; k < KINDS; k++)
    atomic_store(&g_sleepers[k].stop, true);
  for (int k = 0; k < KINDS; k++)
    pthread_join(th[k], NULL);
  atomic_store(&g_witness_stop, true);
  pthread_join(witness, NULL);

  printf("mode: %s\n",
         native ? "native (quiet walks from /proc/self/task/<tid>/syscall)"
                : "qemu-user: the syscall file describes the host thread; "
                  "every quiet request must fall back to the signal");
  printf("quiet walks kept %llu, fell back to the signal %llu; sleeper "
         "samples failed %d; mean cost of a sleeper sample %lld us\n",
         (unsigned long long)(kept1 - kept0), (unsigned long long)(sig1 - sig0),
         failed, n_quiet ? t_quiet / n_quiet / 1000 : -1);
  if (SNAP_TEST_TSAN)
    printf("TSan: signalled samples with stale registers (not failed): %d\n",
           g_tsan_stale);
  for (int k = 0; k < KINDS; k++) {
    const sleeper_t *s = &g_sleepers[k];
    printf("%-10s calls %3d interrupted %3d early %d late>5ms %d, worst "
           "lateness %.2f ms (before the dumps %.2f ms; run-queue wait "
           "taken off), samples %d\n",
           k_names[k], s->calls, s->interrupted, s->early, s->late,
           s->worst_late_ns / 1e6, s->base_worst_ns / 1e6, taken[k]);
    CHECK(taken[k] >= ROUNDS / 2, "%s: %d of %d samples taken", k_names[k],
          taken[k], ROUNDS);
    CHECK(s->calls >= 3, "%s: %d calls while sampled", k_names[k], s->calls);
    interrupted += s->interrupted;
    if (native) {
      CHECK(s->early == 0, "%s: %d of %d calls returned early", k_names[k],
            s->early, s->calls);
      int machine = 0;
      for (int i = 0; i < s->late && i < LATES; i++)
        machine += machine_stalled(&s->lates[i]);
      if (machine)
        printf("%s: %d late calls were the machine's (the witness was as "
               "late then)\n",
               k_names[k], machine);
      CHECK(s->late - machine == 0,
            "%s: %d calls more than 5 ms late (worst %.2f ms), %d of them "
            "with the witness as late",
            k_names[k], s->late, s->worst_late_ns / 1e6, machine);
    }
  }
  if (native) {
    /* A thread seen running is signalled (the flag's contract); one that
       was only between two sleeps may have entered the next by the time
       the signal lands. So every EINTR must be one of those fallbacks,
       and the fallbacks must stay the exception. */
    CHECK((uint64_t)interrupted <= sig1 - sig0,
          "%d calls returned EINTR, but only %llu samples were signalled",
          interrupted, (unsigned long long)(sig1 - sig0));
    CHECK(kept1 - kept0 >= (uint64_t)(ROUNDS * KINDS / 2),
          "only %llu quiet walks kept", (unsigned long long)(kept1 - kept0));
  } else {
    CHECK(kept1 == kept0, "%llu quiet walks kept under qemu-user",
          (unsigned long long)(kept1 - kept0));
    CHECK(sig1 - sig0 >= (uint64_t)(ROUNDS * KINDS),
          "only %llu fell back to the signal",
          (unsigned long long)(sig1 - sig0));
  }
  if (g_sleepers[K_EPOLL].epfd >= 0)
    close(g_sleepers[K_EPOLL].epfd);
}

/* ---- Part 2: targets that wake during the walk ------------------------ */

typedef struct flipper {
  atomic_int tid;
  atomic_bool stop;
  unsigned seed;
  void *bt[64]; /* backtrace() in quiet_flipper_loop, before the loop */
  int nbt;
} flipper_t;

static _Thread_local volatile uintptr_t t_sink;

/* Blocks briefly at depth d of its own recursion: the stack a quiet walk
   sees depends on where the target blocked. */
__attribute__((noinline)) void quiet_flip_deep(int d, unsigned r) {
  if (d > 0) {
    quiet_flip_deep(d - 1, r);
  } else {
    struct timespec ts = {0, (long)(r % 60) * 1000}; /* 0..60 us */
    nanosleep(&ts, NULL);
  }
  __asm__ volatile("" ::: "memory"); /* not a tail call */
}

/* Computes over a frame it fills with words that look like frames: code
   addresses of this test and pointers into this stack. A walk that read
   the stack of a blocked moment after the thread moved on here would
   follow these to frames that do not exist. */
__attribute__((noinline)) void quiet_flip_scribble(unsigned r) {
  volatile uintptr_t junk[192];
  for (int i = 0; i < 192; i++)
    junk[i] = i & 1 ? (uintptr_t)quiet_flip_deep + 16 + (r + (unsigned)i) % 64
                    : (uintptr_t)&junk[(r + (unsigned)i * 7) % 192];
  for (unsigned i = 0; i < (r % 512) * 8; i++)
    t_sink += junk[i % 192];
}

__attribute__((noinline)) void quiet_flipper_loop(flipper_t *f) {
  backtrace_fn bt = oracle_backtrace();
  f->nbt = bt ? bt(f->bt, 64) : 0;
  while (!atomic_load(&f->stop)) {
    f->seed = f->seed * 1103515245u + 12345u;
    unsigned r = f->seed >> 16;
    if (r & 1)
      quiet_flip_deep((int)(r >> 1) % 4, r);
    else
      quiet_flip_scribble(r);
  }
  __asm__ volatile("" ::: "memory");
}

static void *flipper_main(void *arg) {
  flipper_t *f = arg;
  atomic_store(&f->tid, (int)syscall(SYS_gettid));
  quiet_flipper_loop(f);
  return NULL;
}

/* This program's PLT sections (.plt, .plt.sec, .plt.got), as loaded:
   from the section headers of /proc/self/exe, moved by its load bias. */
typedef struct plt_ranges {
  uintptr_t lo[3], hi[3];
  int n;
} plt_ranges_t;

static int note_bias(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  *(uintptr_t *)arg = info->dlpi_addr; /* the first object: the program */
  return 1;
}

static plt_ranges_t program_plt(void) {
  plt_ranges_t r = {.n = 0};
  uintptr_t bias = 0;
  dl_iterate_phdr(note_bias, &bias);
  int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  ElfW(Ehdr) eh;
  if (fd < 0 || pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
      eh.e_shentsize != sizeof(ElfW(Shdr)) || eh.e_shnum > 4096 ||
      eh.e_shstrndx >= eh.e_shnum) {
    if (fd >= 0)
      close(fd);
    return r;
  }
  static ElfW(Shdr) sh[4096]; /* e_shnum's bound above */
  ElfW(Shdr) names;
  size_t bytes = (size_t)eh.e_shnum * sizeof sh[0];
  if (pread(fd, sh, bytes, (off_t)eh.e_shoff) == (ssize_t)bytes) {
    names = sh[eh.e_shstrndx];
    for (int i = 0; i < eh.e_shnum && r.n < 3; i++) {
      char name[16] = "";
      if (pread(fd, name, sizeof name - 1,
                (off_t)(names.sh_offset + sh[i].sh_name)) <= 0)
        continue;
      if (strcmp(name, ".plt") && strcmp(name, ".plt.sec") &&
          strcmp(name, ".plt.got"))
        continue;
      r.lo[r.n] = bias + (uintptr_t)sh[i].sh_addr;
      r.hi[r.n++] = bias + (uintptr_t)(sh[i].sh_addr + sh[i].sh_size);
    }
  }
  close(fd);
  return r;
}

static bool in_plt(const plt_ranges_t *r, uintptr_t pc) {
  for (int i = 0; i < r->n; i++)
    if (pc >= r->lo[i] && pc < r->hi[i])
      return true;
  return false;
}

static void part2(void) {
  enum { FLIPPERS = 2, SAMPLES = 1500 };
  flipper_t fl[FLIPPERS];
  pthread_t th[FLIPPERS];
  for (int i = 0; i < FLIPPERS; i++) {
    fl[i] = (flipper_t){.seed = 7u + (unsigned)i};
    atomic_init(&fl[i].tid, 0);
    atomic_init(&fl[i].stop, false);
    pthread_create(&th[i], NULL, flipper_main, &fl[i]);
  }
  for (int i = 0; i < FLIPPERS; i++)
    while (!atomic_load(&fl[i].tid))
      usleep(1000);
  uint64_t kept0, sig0;
  snap__capture_quiet_counts(&kept0, &sig0);
  int ok = 0, errors = 0, wrong = 0;
  Dl_info self;
  if (!dladdr((void *)quiet_flipper_loop, &self))
    self.dli_fbase = NULL;
  static plt_ranges_t plt;
  plt = program_plt();
  CHECK(plt.n > 0, "this program's PLT was not found in /proc/self/exe");
  for (int i = 0; i < plt.n; i++)
    printf("PLT section at +0x%llx-0x%llx\n",
           (unsigned long long)(plt.lo[i] - (uintptr_t)self.dli_fbase),
           (unsigned long long)(plt.hi[i] - (uintptr_t)self.dli_fbase));
  static uintptr_t pcs[SNAP_MAX_FRAMES];
  long long deadline = mono_ns() + 8000000000LL; /* slow configurations */
  for (int i = 0; i < SAMPLES && mono_ns() < deadline; i++) {
    flipper_t *f = &fl[i % FLIPPERS];
    uint64_t kept_before, kept_after, sig;
    snap__capture_quiet_counts(&kept_before, &sig);
    int n = snap_capture_thread((snap_thread_t)atomic_load(&f->tid), pcs,
                                SNAP_MAX_FRAMES, SNAP_CAPTURE_QUIET);
    snap__capture_quiet_counts(&kept_after, &sig);
    if (n < 0) {
      errors++;
      continue;
    }
    /* Under TSan a signalled sample is walked late, from the registers of
       the signal's arrival (check.h): only quiet walks are checked there. */
    if (SNAP_TEST_TSAN && kept_after == kept_before) {
      ok++;
      continue;
    }
    /* Right: the target's function; under it only libc's frames
       (nanosleep), quiet_flip_deep or quiet_flip_scribble, and at the
       top perhaps the PLT stub between them; above it exactly the
       callers backtrace() saw. */
    int at = oracle_find_fn(pcs, n, 0, (void *)quiet_flipper_loop, 1);
    bool right = at >= 0;
    for (int j = 0; right && j < at; j++) {
      Dl_info info;
      if (j == 0 && in_plt(&plt, pcs[0]))
        continue; /* interrupted in the stub to nanosleep */
      right = dladdr((void *)(pcs[j] - (j > 0)), &info) && info.dli_fname &&
              (strstr(info.dli_fname, "libc.so") ||
               info.dli_saddr == (void *)quiet_flip_deep ||
               info.dli_saddr == (void *)quiet_flip_scribble ||
               /* TSan's interceptors and runtime, linked into the test */
               (SNAP_TEST_TSAN && info.dli_fbase == self.dli_fbase) ||
               /* ASan's runtime (in the test with clang, libasan with
                  gcc): a large frame's prologue and epilogue call
                  __asan_set_shadow_*, and a signal can land there */
               (SNAP_TEST_ASAN && info.dli_sname &&
                strncmp(info.dli_sname, "__asan_", 7) == 0));
    }
    for (int j = 1; right && j < f->nbt && at + j < n; j++)
      right = pcs[at + j] == (uintptr_t)f->bt[j];
    if (!right) {
      if (wrong++ < 2)
        oracle_print("a stack unlike the target's", pcs, n);
    } else {
      ok++;
    }
  }
  uint64_t kept1, sig1;
  snap__capture_quiet_counts(&kept1, &sig1);
  for (int i = 0; i < FLIPPERS; i++)
    atomic_store(&fl[i].stop, true);
  for (int i = 0; i < FLIPPERS; i++)
    pthread_join(th[i], NULL);
  printf("races: %d stacks right, %d wrong, %d errors; quiet walks kept "
         "%llu, signalled %llu\n",
         ok, wrong, errors, (unsigned long long)(kept1 - kept0),
         (unsigned long long)(sig1 - sig0));
  CHECK(wrong == 0, "%d wrong stacks (not the target's own chain)", wrong);
  CHECK(ok > 0, "no stack taken");
}

int main(void) {
  /* Mode, from outside the library: a thread of ours asleep in usleep. */
  sleeper_t probe = {.kind = K_USLEEP};
  atomic_init(&probe.tid, 0);
  pthread_t pt;
  pthread_create(&pt, NULL, sleeper_main, &probe);
  while (!atomic_load(&probe.tid))
    usleep(1000);
  bool native = oracle_kernel_pc_is_ours(atomic_load(&probe.tid));
  atomic_store(&probe.stop, true);
  pthread_join(pt, NULL);

  part1(native);
  part2();
  return check_result("test_quiet_sample");
}
