/*
 * alloc_watch.h — sees every allocation in the process, libc's own
 * included: the test that proves the stopped window allocates nothing and
 * the benchmark that checks libunwind's handler both use it.
 *
 * Include it in exactly one file of a program, after defining
 *   static void alloc_watch_note(void);
 * It defines malloc, calloc, realloc, free, posix_memalign and
 * aligned_alloc; each calls alloc_watch_note() and forwards to glibc's own
 * implementation (__libc_*), so the calls that libc and other libraries make
 * come here too. In sanitizer builds (ALLOC_WATCH_SANITIZED is 1) it
 * defines nothing: the runtime owns these symbols, and the includer uses
 * __sanitizer_install_malloc_and_free_hooks instead.
 */
#ifndef SNAP_TEST_ALLOC_WATCH_H
#define SNAP_TEST_ALLOC_WATCH_H

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ALLOC_WATCH_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ALLOC_WATCH_SANITIZED 1
#endif
#endif
#ifndef ALLOC_WATCH_SANITIZED
#define ALLOC_WATCH_SANITIZED 0
#endif

#if !ALLOC_WATCH_SANITIZED
#include <errno.h>
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

void *malloc(size_t n) {
  alloc_watch_note();
  return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
  alloc_watch_note();
  return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
  alloc_watch_note();
  return __libc_realloc(p, n);
}
void free(void *p) {
  if (p) /* free(NULL) does nothing */
    alloc_watch_note();
  __libc_free(p);
}
int posix_memalign(void **out, size_t align, size_t n) {
  alloc_watch_note();
  *out = __libc_memalign(align, n);
  return *out ? 0 : ENOMEM;
}
void *aligned_alloc(size_t align, size_t n) {
  alloc_watch_note();
  return __libc_memalign(align, n);
}
#endif /* !ALLOC_WATCH_SANITIZED */

#endif
