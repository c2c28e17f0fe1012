/*
 * swift.c — is the current thread running a Swift async task?
 *
 * On Apple the answer comes from the Swift runtime's thread-specific slot
 * (see platform/darwin). On Linux we ask the runtime itself when it is
 * loaded: swift_task_getCurrent reads a thread-local, allocation-free.
 * Without the runtime (plain C programs, and our tests, which build async
 * frames with clang's swiftasynccall) the frame's tag is taken at its word.
 *
 * Whether Swift concurrency is in the process at all (for the watchdog's
 * capture flags) is asked of the loader, by name: the runtime may be
 * dlopen'ed after us, which a weak reference would never see, and maybe
 * with RTLD_LOCAL (a Swift plugin of a C host), which dlsym(RTLD_DEFAULT)
 * would not see; dlopen with RTLD_NOLOAD finds it by soname either way
 * and never loads it.
 */
#include <dlfcn.h>
#include <stdatomic.h>

#include "platform/linux/linux.h"
#include "platform/process.h"

extern void *swift_task_getCurrent(void) __attribute__((weak));

bool snap__plat_async_task_active(void) {
  if (swift_task_getCurrent)
    return swift_task_getCurrent() != NULL;
  return true;
}

/* Once seen, remembered: the watchdog and the trace's sampler ask before
   every sample, and the loader's answer costs its lock and, for a name
   not loaded, a search of the library path (file opens: 60 us of the
   trace sampler's 98 us a sample were this). The runtime is never
   unloaded in practice; if it were, async walks would simply find no
   tagged record. Not seen, the answer holds until an image is loaded or
   unloaded (the image stamp changes). */
static atomic_bool g_seen;
static _Atomic uint64_t g_absent_stamp; /* stamp + 1 of a "no"; 0: none */

bool snap__plat_has_swift_concurrency(void) {
  if (atomic_load_explicit(&g_seen, memory_order_relaxed))
    return true;
  uint64_t stamp = snap__plat_images_stamp() + 1;
  if (atomic_load_explicit(&g_absent_stamp, memory_order_relaxed) == stamp)
    return false;
  bool seen = false;
  void *lib = dlopen("libswift_Concurrency.so", RTLD_LAZY | RTLD_NOLOAD);
  if (lib) {
    dlclose(lib); /* NOLOAD took a reference */
    seen = true;
  } else {
    seen = snap__plat_find_symbol("swift_task_getCurrent") != NULL;
  }
  if (seen)
    atomic_store_explicit(&g_seen, true, memory_order_relaxed);
  else
    atomic_store_explicit(&g_absent_stamp, stamp, memory_order_relaxed);
  return seen;
}
