/*
 * test_symbol_unload.c — names cached for a library are not served after
 * it is unloaded, and a different library loaded at the same address gets
 * its own names.
 *
 * libsnap_unload_a.so and libsnap_unload_b.so have the same layout; their
 * one function is alpha_function in the first, beta_function in the
 * second. The loader maps B into the hole A left (same size); the test
 * insists on it (with a few tries), since that is the case a stale cache
 * would get wrong.
 */
#include <dlfcn.h>
#include <string.h>

#include "check.h"
#include "stacksnap.h"

static const char *name_of(uintptr_t pc, char *buf, size_t size) {
  const snap_stack_t *s = snap_symbolicate(&pc, 1, 0);
  const snap_frame_t *f = snap_stack_frame(s, 0);
  snprintf(buf, size, "%s", f && f->symbol ? f->symbol : "(null)");
  snap_stack_release(s);
  return buf;
}

int main(void) {
  char buf[256];
  int same_address = 0;
  for (int attempt = 0; attempt < 5 && !same_address; attempt++) {
    void *a = dlopen(LIB_A, RTLD_NOW | RTLD_LOCAL);
    CHECK(a != NULL, "dlopen A: %s", dlerror());
    if (!a)
      break;
    uintptr_t pc = (uintptr_t)dlsym(a, "alpha_function") + 1;
    /* Twice: the second answer comes from the cache. */
    CHECK(strcmp(name_of(pc, buf, sizeof buf), "alpha_function") == 0,
          "A loaded: %s", buf);
    CHECK(strcmp(name_of(pc, buf, sizeof buf), "alpha_function") == 0,
          "A loaded, cached: %s", buf);
    dlclose(a);

    /* Unloaded: the old name must not come back. */
    CHECK(strcmp(name_of(pc, buf, sizeof buf), "alpha_function") != 0,
          "A unloaded, still named %s", buf);

    void *b = dlopen(LIB_B, RTLD_NOW | RTLD_LOCAL);
    CHECK(b != NULL, "dlopen B: %s", dlerror());
    if (!b)
      break;
    uintptr_t pc_b = (uintptr_t)dlsym(b, "beta_function") + 1;
    if (pc_b == pc) {
      same_address = 1;
      CHECK(strcmp(name_of(pc, buf, sizeof buf), "beta_function") == 0,
            "B at A's address: %s", buf);
      snap_image_info_t info = {.size = sizeof info};
      CHECK(snap_image_lookup(pc, &info) == SNAP_OK &&
                strcmp(info.name, "libsnap_unload_b.so") == 0,
            "image is B");
    }
    dlclose(b);
  }
  CHECK(same_address, "B was never mapped where A had been");
  return check_result("test_symbol_unload");
}
