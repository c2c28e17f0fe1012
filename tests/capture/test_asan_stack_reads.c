/*
 * test_asan_stack_reads.c — the walker reads other frames' stack words,
 * which AddressSanitizer may have poisoned (the redzones around a frame's
 * arrays): those reads are the walker's job, not the app's bug, and must
 * not be reported. The asan configuration builds this test and the library
 * with -fsanitize=address; any report there ends the process.
 *
 * The frame pointer the walker meets is not always a frame record: code
 * built without frame pointers (Debian's libc) uses it as an ordinary
 * register, often holding the address of a caller's stack buffer. Here an
 * assembly helper (with exact unwind rules) does that on purpose: it sets
 * fp to the end of a 4 KiB array of an instrumented frame — the first byte
 * of that array's right redzone — and calls on. A walk from below it reads
 * that fp as a record (phase 1 of the frame-record run), then recovers by
 * the helper's unwind rules. Checked:
 *   - another thread samples a thread spinning below the helper, 300 times;
 *   - a thread captures its own stack below the helper, 300 times;
 * each time with no ASan report, and the stack reaching the array's frame
 * and the thread's entry (dladdr, through the test's exported symbols).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "oracle.h"
#include "stacksnap.h"

#define ROUNDS 300
#define DEPTH 64

/* call_with_fp(fp, fn, arg): fn(arg) with the frame pointer register set to
   fp for the call; the caller's fp is saved and restored, and the unwind
   rules say where. */
void call_with_fp(uintptr_t fp, void (*fn)(void *), void *arg);
#if defined(__x86_64__)
__asm__(".text\n"
        ".globl call_with_fp\n"
        ".type call_with_fp,@function\n"
        "call_with_fp:\n"
        ".cfi_startproc\n"
        "  pushq %rbp\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rbp, -16\n"
        "  movq %rdi, %rbp\n"
        "  movq %rdx, %rdi\n"
        "  call *%rsi\n"
        "  popq %rbp\n"
        ".cfi_restore %rbp\n"
        ".cfi_def_cfa_offset 8\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size call_with_fp, .-call_with_fp\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl call_with_fp\n"
        ".type call_with_fp,%function\n"
        "call_with_fp:\n"
        ".cfi_startproc\n"
        "  hint #34\n" /* bti c: a nop without branch protection */
        "  stp x29, x30, [sp, #-16]!\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset x29, -16\n"
        ".cfi_offset x30, -8\n"
        "  mov x29, x0\n"
        "  mov x0, x2\n"
        "  blr x1\n"
        "  ldp x29, x30, [sp], #16\n"
        ".cfi_restore x29\n"
        ".cfi_restore x30\n"
        ".cfi_def_cfa_offset 0\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size call_with_fp, .-call_with_fp\n");
#else
#error "test_asan_stack_reads: no call_with_fp for this architecture"
#endif

typedef struct {
  atomic_int tid;
  atomic_int spinning;
  atomic_int stop;
} target_t;

static void expect_reaches(const char *what, const uintptr_t *pcs, int n,
                           int frame0_exact, void *array_frame, void *entry) {
  int at = oracle_find_fn(pcs, n, 0, array_frame, frame0_exact);
  int at_entry = at < 0 ? -1 : oracle_find_fn(pcs, n, at + 1, entry, 0);
  CHECK(at >= 0 && at_entry > at,
        "%s: the walk does not reach the array's frame and the entry", what);
  if (at < 0 || at_entry <= at)
    oracle_print(what, pcs, n);
}

/* ---- Another thread samples ------------------------------------------- */

__attribute__((noinline)) static void spin(void *arg) {
  target_t *t = arg;
  atomic_store(&t->spinning, 1);
  while (!atomic_load_explicit(&t->stop, memory_order_relaxed)) {
  }
}

/* The instrumented frame: its array has redzones on both sides. */
__attribute__((noinline)) void array_frame_spin(target_t *t) {
  char big[4096];
  memset(big, 1, sizeof big);
  call_with_fp((uintptr_t)big + sizeof big, spin, t);
  __asm__ volatile("" ::"r"(big) : "memory");
}

__attribute__((noinline)) void *spin_entry(void *arg) {
  target_t *t = arg;
  atomic_store(&t->tid, (int)snap_thread_self());
  array_frame_spin(t);
  __asm__ volatile("" ::: "memory"); /* no tail call */
  return NULL;
}

static void sampled_from_another_thread(void) {
  static target_t t;
  pthread_t th;
  pthread_create(&th, NULL, spin_entry, &t);
  while (!atomic_load(&t.spinning))
    usleep(1000);
  int whole = 0;
  for (int i = 0; i < ROUNDS; i++) {
    uintptr_t pcs[DEPTH];
    int n =
        snap_capture_thread((snap_thread_t)atomic_load(&t.tid), pcs, DEPTH, 0);
    if (SNAP_TEST_TSAN) { /* see check.h */
      CHECK(n > 0 || n == SNAP_ETIMEDOUT, "sample %d: %d", i, n);
      continue;
    }
    CHECK(n > 0, "sample %d: %d (%s)", i, n, n < 0 ? snap_strerror(n) : "");
    if (n > 0 && whole++ < 3) /* the chain is the same every time */
      expect_reaches("cross-thread", pcs, n, 1, (void *)array_frame_spin,
                     (void *)spin_entry);
  }
  atomic_store(&t.stop, 1);
  pthread_join(th, NULL);
}

/* ---- A thread captures itself ----------------------------------------- */

typedef struct {
  uintptr_t pcs[DEPTH];
  int n, failures;
} self_t;

__attribute__((noinline)) static void capture_rounds(void *arg) {
  self_t *s = arg;
  for (int i = 0; i < ROUNDS; i++) {
    int n = snap_capture_self(s->pcs, DEPTH, 0, 0);
    if (n <= 0)
      s->failures++;
    s->n = n;
  }
}

__attribute__((noinline)) void array_frame_capture(self_t *s) {
  char big[4096];
  memset(big, 2, sizeof big);
  call_with_fp((uintptr_t)big + sizeof big, capture_rounds, s);
  __asm__ volatile("" ::"r"(big) : "memory");
}

__attribute__((noinline)) void *capture_entry(void *arg) {
  array_frame_capture(arg);
  __asm__ volatile("" ::: "memory"); /* no tail call */
  return NULL;
}

static void captured_by_itself(void) {
  static self_t s;
  pthread_t th;
  pthread_create(&th, NULL, capture_entry, &s);
  pthread_join(th, NULL);
  CHECK(s.failures == 0, "%d of %d captures failed", s.failures, ROUNDS);
  expect_reaches("same-thread", s.pcs, s.n, 0, (void *)array_frame_capture,
                 (void *)capture_entry);
}

int main(void) {
  sampled_from_another_thread();
  captured_by_itself();
  return check_result("test_asan_stack_reads");
}
