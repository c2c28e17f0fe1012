/*
 * alloc_size.c — what a heap block really takes: the allocator's size
 * class, not the size asked for.
 *
 * Why: the symbol cache's cap counts what the cache holds, and rounding to
 * size classes plus glibc's per-chunk header made the process grow 1.3-2.2x
 * what the cache counted for small blocks (issue 26). glibc: the usable size
 * (the size class less the header) plus the 8-byte header that sits before
 * every chunk; Apple: malloc_size, the block's size class (its zones keep
 * no header in the block). Elsewhere, the size asked for. Under a
 * sanitizer's allocator the usable size is the size asked for: counts are
 * then exact for that allocator, not for glibc's.
 */
#include "platform/platform.h"

#if defined(__APPLE__)
#include <malloc/malloc.h>
#elif defined(__GLIBC__)
#include <malloc.h>
#endif

size_t snap__plat_alloc_size(const void *p, size_t asked) {
  if (!p)
    return 0;
#if defined(__APPLE__)
  size_t n = malloc_size(p);
  return n ? n : asked;
#elif defined(__GLIBC__)
  size_t n = malloc_usable_size((void *)p);
  return n ? n + sizeof(size_t) : asked;
#else
  return asked;
#endif
}
