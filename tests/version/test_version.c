/*
 * test_version.c — the header's version and the library's agree.
 *
 * Built twice: against the static archive, and against the shared library
 * (TEST_SHARED), where the loader's own record says which file it mapped
 * for snap_version (dladdr): its name must be the SONAME
 * libstacksnap.so.<SNAP_VERSION_MAJOR>, the major this header declares.
 * (tests/version/check_soname.cmake reads the SONAME with readelf too.)
 */
#include <stdio.h>
#include <string.h>
#ifdef TEST_SHARED
#include <dlfcn.h>
#endif

#include "check.h"
#include "stacksnap.h"

int main(void) {
  const char *v = snap_version();
  CHECK(v != NULL, "snap_version() is NULL");
  if (!v)
    return check_result("test_version");
  int major = -1, minor = -1, patch = -1, end = 0;
  CHECK(sscanf(v, "%d.%d.%d%n", &major, &minor, &patch, &end) == 3 &&
            v[end] == '\0',
        "snap_version() = \"%s\" is not MAJOR.MINOR.PATCH", v);
  CHECK_EQ(major, SNAP_VERSION_MAJOR);
  CHECK_EQ(minor, SNAP_VERSION_MINOR);
  CHECK_EQ(patch, SNAP_VERSION_PATCH);
  CHECK(strcmp(v, SNAP_VERSION_STRING) == 0, "\"%s\" != \"%s\"", v,
        SNAP_VERSION_STRING);
  CHECK(snap_version() == v, "a static string: the same pointer each call");
#ifdef TEST_SHARED
  Dl_info info;
  CHECK(dladdr((void *)snap_version, &info) && info.dli_fname,
        "dladdr(snap_version)");
  char want[64];
  snprintf(want, sizeof want, "libstacksnap.so.%d", SNAP_VERSION_MAJOR);
  const char *base = info.dli_fname ? strrchr(info.dli_fname, '/') : NULL;
  base = base ? base + 1 : info.dli_fname;
  CHECK(base && strcmp(base, want) == 0,
        "snap_version lives in %s, expected the SONAME %s",
        info.dli_fname ? info.dli_fname : "(null)", want);
#endif
  printf("header %s, library %s\n", SNAP_VERSION_STRING, v);
  return check_result("test_version");
}
