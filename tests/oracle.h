/*
 * oracle.h — outside witnesses for the tests: glibc's backtrace() looked up
 * in libc.so.6 itself (linking libunwind would silently replace the symbol),
 * a printer for pcs with their image and offset, whether the kernel's
 * syscall file speaks of this process's code (not under qemu-user), and
 * which descriptor the kernel says is open on a file (/proc/self/fd).
 */
#ifndef SNAP_TEST_ORACLE_H
#define SNAP_TEST_ORACLE_H

#include <dirent.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stacksnap.h"

typedef int (*backtrace_fn)(void **, int);

static inline backtrace_fn oracle_backtrace(void) {
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  return libc ? (backtrace_fn)dlsym(libc, "backtrace") : NULL;
}

/* Index of the first pc at or after `from` inside function fn, as the
   dynamic linker's dladdr sees it (the test must export its functions:
   ENABLE_EXPORTS), or -1. Return addresses are looked up at pc - 1 (the
   call instruction); frame 0 at pc itself when it is exact (a thread
   stopped there). */
static inline int oracle_find_fn(const uintptr_t *pcs, int n, int from,
                                 void *fn, int frame0_exact) {
  for (int i = from; i < n; i++) {
    Dl_info info;
    uintptr_t lookup = i == 0 && frame0_exact ? pcs[i] : pcs[i] - 1;
    if (dladdr((void *)lookup, &info) && info.dli_saddr == fn)
      return i;
  }
  return -1;
}

static inline void oracle_print(const char *title, const uintptr_t *pcs,
                                int n) {
  fprintf(stderr, "%s (%d frames)\n", title, n);
  for (int i = 0; i < n; i++) {
    Dl_info info;
    if (dladdr((void *)(pcs[i] - 1), &info) && info.dli_fname)
      fprintf(stderr, "  %2d 0x%016lx %s(%s)\n", i, (unsigned long)pcs[i],
              info.dli_fname, info.dli_sname ? info.dli_sname : "?");
    else
      fprintf(stderr, "  %2d 0x%016lx ?\n", i, (unsigned long)pcs[i]);
  }
}

/* Whether the pc the kernel publishes in /proc/self/task/<tid>/syscall for
   thread tid, once it is blocked, lies in an image the dynamic linker
   knows: false under qemu-user, whose file describes the emulator's host
   thread. Waits up to ~200 ms for the thread to block. */
static inline bool oracle_kernel_pc_is_ours(int tid) {
  for (int tries = 0; tries < 200; tries++) {
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    FILE *f = fopen(path, "r");
    if (!f)
      return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (strncmp(buf, "running", 7) != 0) {
      const char *last = strrchr(buf, ' ');
      uintptr_t pc = last ? (uintptr_t)strtoull(last + 1, NULL, 16) : 0;
      Dl_info info;
      return pc && dladdr((void *)pc, &info) && info.dli_fname;
    }
    usleep(1000);
  }
  return false;
}

/* The descriptor whose /proc/self/fd link ends in `suffix`, or -1. */
static inline int oracle_fd_ending_in(const char *suffix) {
  DIR *d = opendir("/proc/self/fd");
  int found = -1;
  struct dirent *e;
  while (d && (e = readdir(d)) && found < 0) {
    char path[300], target[300];
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0)
      continue;
    target[n] = '\0';
    size_t tl = strlen(target), sl = strlen(suffix);
    if (tl >= sl && strcmp(target + tl - sl, suffix) == 0)
      found = atoi(e->d_name);
  }
  if (d)
    closedir(d);
  return found;
}

#endif
