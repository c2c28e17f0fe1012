/*
 * test_safe_read.c — snap__plat_read, the checked read every walk falls
 * back on: mapped memory comes back byte for byte; unmapped, PROT_NONE,
 * NULL and wrapping ranges fail without a signal.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "platform/platform.h"

int main(void) {
  long page = sysconf(_SC_PAGESIZE);
  char *m = mmap(NULL, (size_t)page * 3, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(m != MAP_FAILED, "mmap");
  memset(m, 0x5a, (size_t)page * 3);
  strcpy(m + 100, "stacksnap");
  mprotect(m + page, (size_t)page, PROT_NONE);
  munmap(m + 2 * page, (size_t)page);

  char buf[16] = {0};
  CHECK(snap__plat_read((uintptr_t)m + 100, buf, 10), "mapped read");
  CHECK(strcmp(buf, "stacksnap") == 0, "got %s", buf);
  CHECK(!snap__plat_read((uintptr_t)m + page, buf, 8), "PROT_NONE page");
  CHECK(!snap__plat_read((uintptr_t)m + 2 * page, buf, 8), "unmapped page");
  CHECK(!snap__plat_read((uintptr_t)m + page - 4, buf, 8),
        "a read straddling into PROT_NONE");
  CHECK(!snap__plat_read(0, buf, 8), "NULL");
  CHECK(!snap__plat_read(UINTPTR_MAX - 3, buf, 8), "wrapping range");
  CHECK(snap__plat_read((uintptr_t)m, buf, 0), "empty read");
  /* Many reads in a row: the pipe fallback (qemu, sandboxes) must leave its
     pipes empty and free after each one. */
  for (int i = 0; i < 10000; i++) {
    uintptr_t w = 0;
    if (!snap__plat_read((uintptr_t)&m[100], &w, sizeof w) ||
        memcmp(&w, "stacksna", 8) != 0) {
      CHECK(0, "read %d", i);
      break;
    }
    if (snap__plat_read((uintptr_t)m + 2 * page, &w, sizeof w)) {
      CHECK(0, "bad read %d succeeded", i);
      break;
    }
  }
  return check_result("test_safe_read");
}
