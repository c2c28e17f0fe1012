/*
 * oracle.h — outside witnesses for the tests: glibc's backtrace() looked up
 * in libc.so.6 itself (linking libunwind would silently replace the symbol),
 * and a printer for pcs with their image and offset.
 */
#ifndef SNAP_TEST_ORACLE_H
#define SNAP_TEST_ORACLE_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

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

#endif
