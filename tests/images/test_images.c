/*
 * test_images.c — the image table: executable ranges agree with the dynamic
 * linker's dladdr (the oracle), app-or-system follows the prefix rule, and
 * the table follows dlopen/dlclose of a library built for this test.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "stacksnap.h"

#ifndef TEST_LIB_PATH
#error "TEST_LIB_PATH must name the test library"
#endif

int main(void) {
  snap_image_info_t info = {.size = sizeof info};

  /* Our own code: in the main executable, which is the app by default. */
  CHECK_EQ(snap_image_lookup((uintptr_t)main, &info), SNAP_OK);
  Dl_info dl;
  CHECK(dladdr((void *)main, &dl) && dl.dli_fbase, "dladdr(main)");
  CHECK_EQ(info.base, (uintptr_t)dl.dli_fbase);
  CHECK(info.in_app, "main is in the app");
  CHECK(snap_is_app_address((uintptr_t)main), "main is an app address");
  CHECK(info.start <= (uintptr_t)main && (uintptr_t)main < info.end,
        "range holds main");

  /* libc: a system image, base as dladdr says. Its own strlen, looked up in
     libc.so.6: under ASan/TSan the plain symbol is the sanitizer's copy,
     linked into the test executable. */
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  uintptr_t libc_fn = libc ? (uintptr_t)dlsym(libc, "strlen") : 0;
  CHECK(libc_fn != 0, "libc's strlen");
  CHECK_EQ(snap_image_lookup(libc_fn, &info), SNAP_OK);
  CHECK(dladdr((void *)libc_fn, &dl) && dl.dli_fbase, "dladdr(strlen)");
  CHECK_EQ(info.base, (uintptr_t)dl.dli_fbase);
  CHECK(!info.in_app, "libc is not the app");
  CHECK(!snap_is_app_address(libc_fn), "libc is not app code");
  CHECK(strstr(info.name, "libc") != NULL, "libc's name: %s", info.name);

  /* Not code at all. */
  int local;
  CHECK_EQ(snap_image_lookup((uintptr_t)&local, &info), SNAP_EINVAL);
  CHECK_EQ(snap_image_lookup(0, &info), SNAP_EINVAL);
  CHECK_EQ(snap_image_lookup((uintptr_t)main, NULL), SNAP_EINVAL);
  CHECK(!snap_is_app_address(0), "0");

  /* dlopen: the new library is found, and is app code (it sits next to
     the test executable); dlclose: gone. */
  void *h = dlopen(TEST_LIB_PATH, RTLD_NOW);
  CHECK(h != NULL, "dlopen %s: %s", TEST_LIB_PATH, dlerror());
  if (h) {
    void *fn = dlsym(h, "snap_test_lib_function");
    CHECK(fn != NULL, "dlsym");
    CHECK_EQ(snap_image_lookup((uintptr_t)fn, &info), SNAP_OK);
    CHECK(strstr(info.path, "libsnap_test_images") != NULL, "path %s",
          info.path);
    CHECK(info.in_app, "a library in the app's tree is app code");
    CHECK(snap_is_app_address((uintptr_t)fn), "and snap_is_app_address");

    /* Prefixes: only libc's directory is the app now. */
    const char *libc_dir[] = {"/lib", "/usr/lib"};
    CHECK_EQ(snap_set_app_image_prefixes(libc_dir, 2), SNAP_OK);
    CHECK(!snap_is_app_address((uintptr_t)fn), "prefix rule: not app");
    CHECK(snap_is_app_address(libc_fn), "prefix rule: libc is");
    CHECK_EQ(snap_set_app_image_prefixes(NULL, 0), SNAP_OK);
    CHECK(snap_is_app_address((uintptr_t)fn), "default rule restored");

    uintptr_t addr = (uintptr_t)fn;
    CHECK_EQ(dlclose(h), 0);
    CHECK_EQ(snap_image_lookup(addr, &info), SNAP_EINVAL);
    CHECK(!snap_is_app_address(addr), "unloaded");
  }

  /* Bad prefixes. */
  const char *bad[] = {"/ok", NULL};
  const char *empty[] = {""};
  CHECK_EQ(snap_set_app_image_prefixes(bad, 2), SNAP_EINVAL);
  CHECK_EQ(snap_set_app_image_prefixes(empty, 1), SNAP_EINVAL);
  CHECK_EQ(snap_set_app_image_prefixes(NULL, 3), SNAP_EINVAL);
  CHECK_EQ(snap_set_app_image_prefixes(bad, -1), SNAP_EINVAL);
  CHECK_EQ(snap_set_app_image_prefixes(bad, 65), SNAP_EINVAL);
  CHECK(snap_is_app_address((uintptr_t)main), "failed calls change nothing");
  return check_result("test_images");
}
