/*
 * test_malloc_samples.c — cross-thread samples of a thread that lives in
 * libc's allocator (issue 12, defect 6).
 *
 * A worker loops in malloc/free of varying sizes, so it is stopped
 * everywhere in _int_malloc/_int_free, epilogues included (built without
 * frame pointers: only the unwind tables say how to go up). Every sample,
 * wherever it landed, must reach the worker's start routine. The oracle is
 * the dynamic linker's symbol table (dladdr1 with the symbol's st_size; the
 * test is linked -rdynamic), not our own code. On failure the short samples
 * are printed with frame 0 as an offset in its image, to be looked up with
 * objdump -d and readelf --debug-dump=frames-interp.
 *
 * Up to 100 000 samples, fewer when the box is slow (qemu, sanitizers): the
 * loop stops after a time budget and requires a minimum. Under TSan a
 * sample may legitimately come back short (check.h): counted, not judged.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "stacksnap.h"
#include "test_clock.h"

#define NOINLINE __attribute__((noinline))
#define SAMPLES 100000
#define MIN_SAMPLES 2000
#define BUDGET_S 12.0
#define DEPTH 64
#define SLOTS 256

static atomic_int g_stop, g_tid;

/* Keeps its pointers in a global so the compiler cannot drop the calls. */
static void *volatile g_slots[SLOTS];

NOINLINE void churn(void) {
  uint32_t x = 2463534242u;
  while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    unsigned i = x % SLOTS;
    /* Small (tcache/fastbin), medium (smallbin/unsorted) and large sizes:
       _int_malloc and _int_free take all their paths. */
    size_t size = (x >> 8) % 4 == 0 ? (x >> 12) % 40000 : (x >> 12) % 600;
    free(g_slots[i]);
    g_slots[i] = malloc(size + 1);
  }
  __asm__ volatile("" ::: "memory");
}

NOINLINE void *malloc_entry(void *arg) {
  (void)arg;
  atomic_store(&g_tid, (int)syscall(SYS_gettid));
  churn();
  __asm__ volatile("" ::: "memory");
  return NULL;
}

static void print_short(const uintptr_t *pcs, int n) {
  for (int i = 0; i < n; i++) {
    Dl_info info;
    uintptr_t lookup = i == 0 ? pcs[i] : pcs[i] - 1;
    if (dladdr((void *)lookup, &info) && info.dli_fname)
      fprintf(stderr, "    %d %s+0x%lx (%s)\n", i, info.dli_fname,
              (unsigned long)(pcs[i] - (uintptr_t)info.dli_fbase),
              info.dli_sname ? info.dli_sname : "?");
    else
      fprintf(stderr, "    %d 0x%lx ?\n", i, (unsigned long)pcs[i]);
  }
}

int main(void) {
  /* The start routine's range, from the dynamic symbol table. */
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  CHECK(dladdr1((void *)malloc_entry, &info, (void **)&sym, RTLD_DL_SYMENT) &&
            sym && sym->st_size > 0,
        "malloc_entry is not in the dynamic symbol table");
  if (check_failures)
    return check_result("test_malloc_samples");
  uintptr_t lo = (uintptr_t)info.dli_saddr, hi = lo + sym->st_size;

  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, malloc_entry, NULL), 0);
  while (!atomic_load(&g_tid))
    sched_yield();

  int taken = 0, failed = 0, short_ = 0, printed = 0;
  double start = mono_s();
  for (int s = 0; s < SAMPLES; s++) {
    if (s % 256 == 0 && s >= MIN_SAMPLES && mono_s() - start > BUDGET_S)
      break;
    uintptr_t pcs[DEPTH];
    int n =
        snap_capture_thread((snap_thread_t)atomic_load(&g_tid), pcs, DEPTH, 0);
    if (n < 0) {
      failed++; /* a timeout on a loaded box: not this test's subject */
      continue;
    }
    taken++;
    bool whole = false;
    for (int i = 1; i < n && !whole; i++)
      whole = pcs[i] - 1 >= lo && pcs[i] - 1 < hi;
    if (!whole) {
      short_++;
      if (printed < 20) {
        printed++;
        fprintf(stderr, "  short sample (%d frames):\n", n);
        print_short(pcs, n);
      }
    }
  }
  atomic_store(&g_stop, 1);
  pthread_join(t, NULL);

  printf("test_malloc_samples: %d samples, %d short, %d failed, %.1f s\n",
         taken, short_, failed, mono_s() - start);
  CHECK(taken >= MIN_SAMPLES, "only %d samples taken", taken);
  if (!SNAP_TEST_TSAN)
    CHECK(short_ == 0, "%d of %d samples did not reach malloc_entry", short_,
          taken);
  return check_result("test_malloc_samples");
}
