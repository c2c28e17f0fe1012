/*
 * test_stack_bounds.c — snap__plat_stack_bounds gives a top that can be read
 * up to without a fault, and refuses memory that is not stack-like.
 *
 * Accepted: the main thread's stack, a pthread's stack (top at or above its
 * thread descriptor), any anonymous read-write mapping (where an alternate
 * signal stack or a coroutine stack lives). Refused: code and file mappings
 * (a file mapping faults past the file's end), and unmapped memory.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "platform/platform.h"

static void *thread_body(void *arg) {
  uintptr_t lo, hi, sp = (uintptr_t)__builtin_frame_address(0);
  bool ok = snap__plat_stack_bounds(sp, &lo, &hi);
  CHECK(ok && lo == sp && hi > sp, "thread stack: %d", ok);
  CHECK(hi >= (uintptr_t)pthread_self(),
        "the thread descriptor is in the stack's mapping");
  /* Again: now from the per-thread cache, same answer. */
  uintptr_t hi2;
  CHECK(snap__plat_stack_bounds(sp, &lo, &hi2) && hi2 == hi, "cached");
  (void)arg;
  return NULL;
}

int main(void) {
  uintptr_t lo, hi, sp = (uintptr_t)__builtin_frame_address(0);
  CHECK(snap__plat_stack_bounds(sp, &lo, &hi) && hi > sp, "main stack");

  pthread_t t;
  pthread_create(&t, NULL, thread_body, NULL);
  pthread_join(t, NULL);

  long page = sysconf(_SC_PAGESIZE);
  char *anon = mmap(NULL, (size_t)page * 4, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(snap__plat_stack_bounds((uintptr_t)anon + 100, &lo, &hi),
        "anonymous read-write mapping");
  CHECK(hi >= (uintptr_t)anon + 4 * page, "its end: 0x%lx", (unsigned long)hi);

  CHECK(!snap__plat_stack_bounds((uintptr_t)main, &lo, &hi), "code");
  CHECK_EQ(hi, 0);

  char path[] = "/tmp/snap-bounds-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0 && ftruncate(fd, page) == 0, "temp file");
  char *file =
      mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  CHECK(file != MAP_FAILED, "file mapping");
  CHECK(!snap__plat_stack_bounds((uintptr_t)file + 8, &lo, &hi),
        "a file mapping is not stack-like (reading past EOF raises SIGBUS)");
  munmap(file, (size_t)page * 2);
  close(fd);
  unlink(path);

  munmap(anon + page, (size_t)page);
  CHECK(!snap__plat_stack_bounds((uintptr_t)anon + page + 8, &lo, &hi),
        "unmapped memory");
  munmap(anon, (size_t)page * 4);
  return check_result("test_stack_bounds");
}
