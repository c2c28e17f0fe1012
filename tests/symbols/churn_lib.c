/*
 * churn_lib.c — one of two small libraries (built twice, CHURN_TAG a or b)
 * that test_dlclose_naming and test_reload_capture load and unload at one
 * address. Same code, same sizes, different names: the loader puts B where
 * A was, and only the names (and the test's oracle, nm) tell them apart.
 *
 * CHURN_CAPTURE: the library's constructor captures its own stack twice,
 * with snap_capture_self (the test program's, exported) and glibc's
 * backtrace(), for test_reload_capture to compare. A's and B's frames
 * differ in size (CHURN_PAD), so a rule cached for A's code is wrong for
 * B's.
 */
#include <dlfcn.h>
#include <stdint.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define FN(n) CAT(CAT(churn_, CHURN_TAG), CAT(_f, n))

/* Bodies long enough that fn + 16 is still inside fn. */
#define BODY(n)                                                                \
  int FN(n)(int x);                                                            \
  __attribute__((noinline)) int FN(n)(int x) {                                 \
    volatile int v = x;                                                        \
    for (int i = 0; i < 5; i++)                                                \
      v = v * 31 + i + n;                                                      \
    return v;                                                                  \
  }
BODY(0)
BODY(1)
BODY(2)
BODY(3)

#ifdef CHURN_CAPTURE
int snap_capture_self(uintptr_t *pcs, int max, int skip, unsigned flags);

/* Read-only data of a different size in A and B, which moves B's unwind
   tables (.eh_frame_hdr follows .rodata): the walk tells a library loaded
   where another was by the loader's record of it (mapping, unwind-table
   address, link-map address: snap__plat_image_ident), and two builds that
   repeat all three — one layout, the freed link map reused — are the limit
   it states, not the case under test. */
const char CAT(churn_layout_, CHURN_TAG)[48 * CHURN_PAD] = "layout";

#define MAXF 64
/* What the constructor saw, read by the test through dlsym. */
uintptr_t CAT(churn_ctor_snap_, CHURN_TAG)[MAXF];
void *CAT(churn_ctor_glibc_, CHURN_TAG)[MAXF];
int CAT(churn_ctor_nsnap_, CHURN_TAG), CAT(churn_ctor_nglibc_, CHURN_TAG);

/* Two levels inside the library, without frame pointers (the library is
   built with -fomit-frame-pointer), so the walk needs its unwind tables. */
/* glibc's own backtrace, not a sanitizer's interceptor (whose frame would
   come first): tests/oracle.h's way. */
typedef int (*backtrace_fn)(void **, int);
__attribute__((noinline)) static void capture_here(void) {
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  backtrace_fn bt = libc ? (backtrace_fn)dlsym(libc, "backtrace") : 0;
  CAT(churn_ctor_nglibc_, CHURN_TAG) =
      bt ? bt(CAT(churn_ctor_glibc_, CHURN_TAG), MAXF) : -1;
  CAT(churn_ctor_nsnap_, CHURN_TAG) =
      snap_capture_self(CAT(churn_ctor_snap_, CHURN_TAG), MAXF, 0, 0);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void level1(int depth) {
  volatile char pad[64 + 32 * CHURN_PAD];
  pad[0] = (char)depth;
  capture_here();
  __asm__ volatile("" ::"r"(pad) : "memory");
}

/* The same capture again, after loading: the test calls it once the image
   table knows the library, so the rule cache learns its code. */
void CAT(CAT(churn_, CHURN_TAG), _capture)(void);
__attribute__((noinline)) void CAT(CAT(churn_, CHURN_TAG), _capture)(void) {
  level1(2);
  __asm__ volatile("" ::: "memory");
}

__attribute__((constructor)) static void churn_init(void) {
  level1(1);
  __asm__ volatile("" ::: "memory");
}
#endif
