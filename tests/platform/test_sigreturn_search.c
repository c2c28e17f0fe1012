/*
 * test_sigreturn_search.c — the two bulk answers naming takes its
 * trampolines from (symbols/trampolines.c):
 *  - snap__plat_find_sigreturns finds the trampoline's code wherever it
 *    starts in a range read in blocks — across a block boundary exactly
 *    once, never past the range's end — and, in the process, the one the
 *    kernel returned a real handler to (the witness);
 *  - snap__plat_sigreturn_restorers lists that same trampoline once a
 *    handler is installed (x86_64: glibc registers __restore_rt; on arm64
 *    the kernel uses the vdso's and nothing is registered).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "platform/platform.h"

#if defined(__x86_64__)
static const unsigned char k_code[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00,
                                       0x00, 0x00, 0x0f, 0x05};
#else
static const unsigned char k_code[] = {0x68, 0x11, 0x80, 0xd2,
                                       0x01, 0x00, 0x00, 0xd4};
#endif
#define BLOCK ((size_t)1 << 20) /* ucontext.c's SCAN_BLOCK */

static volatile uintptr_t g_tramp;

__attribute__((noinline)) static void on_usr1(int sig) {
  (void)sig;
  g_tramp = (uintptr_t)__builtin_return_address(0);
  __asm__ volatile("" ::: "memory");
}

int main(void) {
  /* A range of 3 blocks with the code at its start, across the first
     block boundary, and cut by the range's end. */
  size_t size = 3 * BLOCK;
  unsigned char *m = mmap(NULL, size, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(m != MAP_FAILED, "mmap");
  memcpy(m, k_code, sizeof k_code);
  size_t across = BLOCK - 4;
  memcpy(m + across, k_code, sizeof k_code);
  memcpy(m + size - 4, k_code, 4); /* only its first half in range */
  uintptr_t at[4] = {0};
  int n = snap__plat_find_sigreturns((uintptr_t)m, (uintptr_t)m + size, at, 4);
  CHECK_EQ(n, 2);
  CHECK(at[0] == (uintptr_t)m, "first found at %+ld",
        (long)(at[0] - (uintptr_t)m));
  CHECK(at[1] == (uintptr_t)m + across, "second found at %+ld",
        (long)(at[1] - (uintptr_t)m));
  /* More than out holds: counted, not stored past max. */
  memcpy(m + 100, k_code, sizeof k_code);
  memcpy(m + 200, k_code, sizeof k_code);
  uintptr_t one[1] = {0};
  CHECK_EQ(
      snap__plat_find_sigreturns((uintptr_t)m, (uintptr_t)m + size, one, 1), 4);
  /* An unreadable range: -1, not a guess. */
  munmap(m + BLOCK, BLOCK);
  CHECK_EQ(snap__plat_find_sigreturns((uintptr_t)m, (uintptr_t)m + size, at, 4),
           -1);
  munmap(m, BLOCK);
  munmap(m + 2 * BLOCK, BLOCK);

  if (SNAP_TEST_TSAN) { /* TSan's runtime calls handlers itself */
    printf(
        "test_sigreturn_search: the signal-frame case is not run under TSan\n");
    return check_result("test_sigreturn_search");
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
  raise(SIGUSR1);
  CHECK(g_tramp != 0, "no trampoline seen");
  /* The witness's page, searched: the trampoline is there. */
  uintptr_t page = g_tramp & ~(uintptr_t)4095;
  /* Its page alone: the next one may not be mapped (qemu-user's
     trampoline page). */
  n = snap__plat_find_sigreturns(page, page + 4096, at, 4);
  bool seen = false;
  for (int i = 0; i < n && i < 4; i++)
    seen |= at[i] == g_tramp;
  CHECK(seen, "the kernel's trampoline %#lx not found in its page (%d found)",
        (unsigned long)g_tramp, n);

  uintptr_t r[16];
  n = snap__plat_sigreturn_restorers(r, 16);
  seen = false;
  for (int i = 0; i < n && i < 16; i++)
    seen |= r[i] == g_tramp;
#if defined(__x86_64__)
  CHECK(seen, "restorers (%d) do not list the trampoline %#lx", n,
        (unsigned long)g_tramp);
#else
  CHECK(!seen || n > 0, "restorers");
#endif
  return check_result("test_sigreturn_search");
}
