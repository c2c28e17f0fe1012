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
