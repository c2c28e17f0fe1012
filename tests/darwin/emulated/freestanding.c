/*
 * freestanding.c — what the emulated Apple image (run_emulated.py) would
 * take from libSystem, which it is not linked with: the string functions
 * the core calls or the compiler emits (struct copies, memset of locals),
 * and the stack protector's guard and failure, which the iOS target turns
 * on by default (so the core runs as an app's build compiles it). A
 * failure executes brk, which the harness reports as a fault.
 *
 * Only in the Mach-O image: the host program uses its libc.
 */
#include <stddef.h>
#include <stdint.h>

void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
void __stack_chk_fail(void);

/* volatile: the compiler must not turn these loops into calls to
   themselves. */
void *memcpy(void *restrict dst, const void *restrict src, size_t n) {
  volatile unsigned char *d = dst;
  const unsigned char *s = src;
  for (size_t i = 0; i < n; i++)
    d[i] = s[i];
  return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
  volatile unsigned char *d = dst;
  const unsigned char *s = src;
  if (d < s)
    for (size_t i = 0; i < n; i++)
      d[i] = s[i];
  else
    for (size_t i = n; i-- > 0;)
      d[i] = s[i];
  return dst;
}

void *memset(void *dst, int c, size_t n) {
  volatile unsigned char *d = dst;
  for (size_t i = 0; i < n; i++)
    d[i] = (unsigned char)c;
  return dst;
}

int memcmp(const void *a, const void *b, size_t n) {
  const volatile unsigned char *x = a, *y = b;
  for (size_t i = 0; i < n; i++)
    if (x[i] != y[i])
      return x[i] < y[i] ? -1 : 1;
  return 0;
}

size_t strlen(const char *s) {
  const volatile char *p = s;
  size_t n = 0;
  while (p[n])
    n++;
  return n;
}

uintptr_t __stack_chk_guard = 0x5eedc0de2badf00dull;

void __stack_chk_fail(void) {
  for (;;)
    __asm__ volatile("brk #0x5c");
}
