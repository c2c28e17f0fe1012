/*
 * find_symbol.c — looking up a function of a library the app already
 * loaded (GLib's, for the GLib loop adapter), so stacksnap never links the
 * loop libraries it can adapt to. POSIX dlsym, so both backends compile it.
 *
 * RTLD_DEFAULT searches the global scope: the executable and every library
 * loaded with RTLD_GLOBAL or as a dependency. A library the app dlopen'ed
 * with RTLD_LOCAL is not found, which is the right answer for an adapter:
 * such a library's loop is not the app's main loop.
 *
 * Must not: load anything (no dlopen): an adapter for a library the process
 * does not use must fail, not pull the library in.
 */
#include <dlfcn.h>

#include "platform/platform.h"
#include "platform/process.h"

void *snap__plat_find_symbol(const char *name) {
  if (!name || !name[0])
    return NULL;
  return dlsym(RTLD_DEFAULT, name);
}
