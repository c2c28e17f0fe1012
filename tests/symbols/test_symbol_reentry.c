/*
 * test_symbol_reentry.c — no deadlock between stacksnap's locks and the
 * loader's: one thread names ever new stacks (cache misses: the image
 * table, the ELF provider, the Objective-C and demangler lookups, which ask
 * the loader) while another dlopens and dlcloses a library whose
 * constructor names its own stack while the loader's lock is held. Taking
 * our locks and the loader's in both orders would hang here (ctest's
 * timeout fails it).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>

#include "check.h"
#include "stacksnap.h"

static atomic_int g_stop;

/* The library's constructor calls these from the executable's static copy
   of stacksnap: make sure the linker keeps them. */
void *const volatile snap_reentry_keep[] = {(void *)snap_callstack_symbols,
                                            (void *)snap_stack_count,
                                            (void *)snap_stack_release};

__attribute__((noinline)) int snap_reentry_target(int x) { return x * 7 + 3; }

static void *namer(void *arg) {
  (void)arg;
  uintptr_t base = (uintptr_t)snap_reentry_target;
  for (uintptr_t i = 0; !atomic_load(&g_stop); i++) {
    uintptr_t pcs[3] = {base + 1, base + 2 + (i & 0xff), i * 64 + 0x10000};
    snap_stack_release(snap_symbolicate(pcs, 3, 0));
  }
  return NULL;
}

int main(void) {
  pthread_t t;
  pthread_create(&t, NULL, namer, NULL);
  int loads = 0, named = 0;
  for (int i = 0; i < 300; i++) {
    void *h = dlopen(REENTRY_LIB, RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL, "dlopen: %s", dlerror());
    if (!h)
      break;
    const int *frames = dlsym(h, "snap_reentry_frames");
    loads++;
    named += frames && *frames > 0;
    dlclose(h);
  }
  atomic_store(&g_stop, 1);
  pthread_join(t, NULL);
  CHECK(loads == 300 && named == loads, "%d loads, %d constructors named",
        loads, named);
  return check_result("test_symbol_reentry");
}
