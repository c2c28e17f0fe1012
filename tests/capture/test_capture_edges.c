/*
 * test_capture_edges.c — cross-thread samples at the places a frame-pointer
 * walk gets wrong:
 *
 *  1. Stopped on a function's first instructions, before it pushed a frame
 *     record. spin_at_entry (assembly, with unwind info) loops at its entry
 *     on a flag. The caller must be frame 1 — a frame-pointer walk would skip
 *     it (fp still points at the caller's record, which names the caller's
 *     caller). On arm64 this is the link-register case: frame 1 comes from
 *     lr, and must not appear twice.
 *  2. Inside a signal handler: the walk crosses the kernel's signal frame
 *     (the 'S' unwind entry of the return trampoline) back into the code the
 *     signal interrupted.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "oracle.h"
#include "stacksnap.h"

#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")
#define DEPTH 64

/* void spin_at_entry(volatile unsigned char *stop): returns once *stop is
   nonzero; its first instruction is the loop. */
void spin_at_entry(volatile unsigned char *stop);
void spin_at_entry_end(void);
#if defined(__x86_64__)
__asm__(".text\n"
        ".globl spin_at_entry\n"
        ".type spin_at_entry,@function\n"
        "spin_at_entry:\n"
        ".cfi_startproc\n"
        "  cmpb $0, (%rdi)\n"
        "  je spin_at_entry\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size spin_at_entry, .-spin_at_entry\n"
        ".globl spin_at_entry_end\n"
        "spin_at_entry_end:\n"
        "  ret\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl spin_at_entry\n"
        ".type spin_at_entry,%function\n"
        "spin_at_entry:\n"
        ".cfi_startproc\n"
        "  ldrb w1, [x0]\n"
        "  cbz w1, spin_at_entry\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size spin_at_entry, .-spin_at_entry\n"
        ".globl spin_at_entry_end\n"
        "spin_at_entry_end:\n"
        "  ret\n");
#endif

static volatile unsigned char g_entry_stop;
static atomic_int g_tid_entry, g_tid_signal, g_in_handler, g_stop;

NOINLINE void entry_caller(void) {
  spin_at_entry(&g_entry_stop);
  KEEP_FRAME();
}
NOINLINE void *entry_thread(void *arg) {
  (void)arg;
  atomic_store(&g_tid_entry, (int)syscall(SYS_gettid));
  entry_caller();
  KEEP_FRAME();
  return NULL;
}

NOINLINE void in_handler_spin(void) {
  atomic_store(&g_in_handler, 1);
  while (!atomic_load(&g_stop))
    for (volatile int i = 0; i < 1000; i++)
      ;
  KEEP_FRAME();
}
void on_usr1(int sig);
NOINLINE void on_usr1(int sig) {
  (void)sig;
  in_handler_spin();
}
NOINLINE void interrupted_work(void) {
  while (!atomic_load(&g_stop))
    for (volatile int i = 0; i < 1000; i++)
      ;
  KEEP_FRAME();
}
NOINLINE void *signal_thread(void *arg) {
  (void)arg;
  atomic_store(&g_tid_signal, (int)syscall(SYS_gettid));
  interrupted_work();
  KEEP_FRAME();
  return NULL;
}

static void entry_case(void) {
  pthread_t t;
  pthread_create(&t, NULL, entry_thread, NULL);
  while (!atomic_load(&g_tid_entry))
    usleep(1000);
  usleep(10000);
  int good = 0, tries = 50;
  for (int k = 0; k < tries; k++) {
    uintptr_t pcs[DEPTH];
    int n = snap_capture_thread((snap_thread_t)atomic_load(&g_tid_entry), pcs,
                                DEPTH, 0);
    if (n < 3) {
      CHECK(SNAP_TEST_TSAN, "entry sample %d: %d", k, n);
      continue;
    }
    /* Frame 0 in the loop, frame 1 the caller, frame 2 its caller. */
    bool at_entry = pcs[0] >= (uintptr_t)spin_at_entry &&
                    pcs[0] < (uintptr_t)spin_at_entry_end;
    int caller = oracle_find_fn(pcs, n, 1, (void *)entry_caller, 0);
    int outer = oracle_find_fn(pcs, n, 1, (void *)entry_thread, 0);
    if (at_entry && caller == 1 && outer == 2)
      good++;
    else if (!SNAP_TEST_TSAN) {
      CHECK(0, "entry sample %d: at_entry %d, caller at %d, outer at %d", k,
            at_entry, caller, outer);
      oracle_print("entry sample", pcs, n);
      break;
    }
  }
  CHECK(good == tries || (SNAP_TEST_TSAN && good >= 0), "%d of %d", good,
        tries);
  g_entry_stop = 1;
  pthread_join(t, NULL);
}

static void signal_case(void) {
  signal(SIGUSR1, on_usr1);
  pthread_t t;
  pthread_create(&t, NULL, signal_thread, NULL);
  while (!atomic_load(&g_tid_signal))
    usleep(1000);
  usleep(10000);
  pthread_kill(t, SIGUSR1);
  while (!atomic_load(&g_in_handler))
    usleep(1000);
  uintptr_t pcs[DEPTH];
  int n = snap_capture_thread((snap_thread_t)atomic_load(&g_tid_signal), pcs,
                              DEPTH, 0);
  if (!SNAP_TEST_TSAN) {
    CHECK(n > 3, "signal sample: %d", n);
    int h = oracle_find_fn(pcs, n, 1, (void *)on_usr1, 0);
    int w = oracle_find_fn(pcs, n, 1, (void *)interrupted_work, 0);
    int e = oracle_find_fn(pcs, n, 1, (void *)signal_thread, 0);
    /* interrupted_work is where the signal landed: after the signal frame
       its pc is exact, so look it up without the -1 too. */
    if (w < 0)
      for (int i = 1; i < n; i++) {
        Dl_info info;
        if (dladdr((void *)pcs[i], &info) &&
            info.dli_saddr == (void *)interrupted_work)
          w = i;
      }
    CHECK(h > 0 && w > h && e > w,
          "handler at %d, interrupted code at %d, thread entry at %d", h, w, e);
    if (check_failures)
      oracle_print("signal sample", pcs, n);
  }
  atomic_store(&g_stop, 1);
  pthread_join(t, NULL);
}

int main(void) {
  CHECK_EQ(snap_set_sample_timeout_ms(SNAP_TEST_TSAN ? 100 : 2000), SNAP_OK);
  entry_case();
  signal_case();
  return check_result("test_capture_edges");
}
