/*
 * string.h — the one libc header the portable core includes that is not
 * among the compiler's freestanding headers, for the emulated Apple build
 * (run_emulated.py): no SDK, no libSystem. It declares what the core calls
 * (cursor.h's memcpy, live_images.c's memset, cfi.c's and rule_cache's
 * compares), defined by freestanding.c in the same image. The host build
 * uses the real <string.h>; this directory is on no other include path.
 */
#ifndef SNAP_EMU_STRING_H
#define SNAP_EMU_STRING_H

#include <stddef.h>

void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);

#endif
