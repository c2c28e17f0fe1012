/*
 * test_swift_capability.c — snap__plat_has_swift_concurrency, the answer
 * the lag watchdog asks before each sample to decide on SNAP_CAPTURE_ASYNC.
 *
 * The oracle is the Swift toolchain's own concurrency runtime: a plain C
 * process has no Swift concurrency (false); once the runtime is loaded —
 * here with dlopen(RTLD_LOCAL), as a Swift plugin of a C host would be,
 * which dlsym(RTLD_DEFAULT) cannot see — the answer is true. Without a
 * Swift toolchain at configure time only the first half runs.
 */
#include <dlfcn.h>

#include "check.h"
#include "platform/platform.h"

int main(void) {
  CHECK(!snap__plat_has_swift_concurrency(),
        "a C process claims Swift concurrency");
#ifdef SWIFT_CONCURRENCY_LIB
  void *lib = dlopen(SWIFT_CONCURRENCY_LIB, RTLD_NOW | RTLD_LOCAL);
  CHECK(lib != NULL, "cannot load %s: %s", SWIFT_CONCURRENCY_LIB,
        lib ? "" : dlerror());
  if (lib) {
    CHECK(snap__plat_has_swift_concurrency(),
          "the Swift concurrency runtime is loaded but not seen");
    /* Twice: the check must not leave a reference that changes the
       answer, nor lose it. */
    CHECK(snap__plat_has_swift_concurrency(), "second answer differs");
  }
#else
  printf("no Swift toolchain at configure time: the loaded case is not run\n");
#endif
  return check_result("test_swift_capability");
}
