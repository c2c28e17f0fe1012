/*
 * images_darwin.c — loaded images through dyld.
 *
 * Enumeration: _dyld_image_count, then per index _dyld_get_image_header,
 * _dyld_get_image_vmaddr_slide and _dyld_get_image_name. Each image gives
 * one range, its whole __TEXT segment (macho_ranges.c: the load commands
 * are read from the header dyld mapped), slid by the image's slide. The
 * image's base is its header's address. There is no .eh_frame_hdr in a
 * Mach-O image (Apple's unwind tables are __unwind_info, plus __eh_frame
 * for a few functions), so unwind_hdr is 0: on Apple the walker follows
 * frame records, which the arm64 and x86_64 Apple ABIs keep in every
 * function.
 *
 * Staying current: _dyld_register_func_for_add_image and
 * _dyld_register_func_for_remove_image callbacks bump an atomic stamp,
 * nothing else — dyld may call them with its loader lock held, so they must
 * not call back into dyld, allocate or lock. The image table (images.c)
 * compares stamps and rebuilds outside any window. Indices shift if an
 * image is loaded or unloaded during an enumeration; the stamp has then
 * moved too, and the next refresh rebuilds.
 *
 * The main executable's path is the name dyld gives the MH_EXECUTE image,
 * so it is spelled exactly like the names of the app's other images (iOS
 * prefixes /private/var/... or /var/... the same way for both), with
 * _NSGetExecutablePath as the fallback.
 *
 * Must not: run from the stopped window (every dyld call may take the
 * loader lock, which a stopped thread may hold).
 */
#include <dlfcn.h>
#include <mach-o/dyld.h>
#include <mach-o/loader.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "platform/darwin/darwin.h"
#include "platform/darwin/macho_ranges.h"

static _Atomic uint64_t g_stamp;

/* Headers of removed images, for snap__plat_image_holds: a ring of
   REMOVED_LOG slots written with one atomic store each (the callback runs
   under dyld's lock: no allocation, no lock of ours). g_removed counts
   every removal ever; past REMOVED_LOG the oldest entries are overwritten
   and every image is treated as possibly removed. */
#define REMOVED_LOG 256
static _Atomic uintptr_t g_removed_log[REMOVED_LOG];
static _Atomic uint64_t g_removed;

static void on_image_add(const struct mach_header *mh, intptr_t slide) {
  (void)mh;
  (void)slide;
  atomic_fetch_add_explicit(&g_stamp, 1, memory_order_release);
}

static void on_image_remove(const struct mach_header *mh, intptr_t slide) {
  (void)slide;
  /* dyld runs remove callbacks one at a time: the entry is written before
     the count that makes readers look at it. */
  uint64_t i = atomic_load_explicit(&g_removed, memory_order_relaxed);
  atomic_store_explicit(&g_removed_log[i % REMOVED_LOG], (uintptr_t)mh,
                        memory_order_release);
  atomic_store_explicit(&g_removed, i + 1, memory_order_release);
  atomic_fetch_add_explicit(&g_stamp, 1, memory_order_release);
}

__attribute__((constructor)) static void images_darwin_init(void) {
  /* Registering calls the add callback once per image already loaded. */
  _dyld_register_func_for_add_image(on_image_add);
  _dyld_register_func_for_remove_image(on_image_remove);
}

/* The symbol cache asks this on every hit. Apps almost never unload an
   image (iOS cannot dlclose most of them), so the common answer costs one
   atomic load. Only an image whose header is in the removal log — or any,
   once the log has wrapped — and pcs that were in no image are checked
   through dladdr, which takes dyld's lock. */
static bool maybe_removed(uintptr_t base) {
  uint64_t n = atomic_load_explicit(&g_removed, memory_order_acquire);
  if (n == 0)
    return false;
  if (n > REMOVED_LOG)
    return true;
  for (uint64_t i = 0; i < n; i++)
    if (atomic_load_explicit(&g_removed_log[i], memory_order_acquire) == base)
      return true;
  return false;
}

bool snap__plat_image_holds(uintptr_t addr, uintptr_t base, const char *path) {
  if (path && !maybe_removed(base))
    return true;
  Dl_info info;
  if (!dladdr((const void *)addr, &info) || !info.dli_fbase)
    return path == NULL;
  return path && (uintptr_t)info.dli_fbase == base && info.dli_fname &&
         strcmp(info.dli_fname, path) == 0;
}

uint64_t snap__plat_images_stamp(void) {
  return atomic_load_explicit(&g_stamp, memory_order_acquire);
}

/* The load commands of a mapped image: the header says how long they are;
   dyld has validated them when it mapped the image. */
static bool parse_loaded(const struct mach_header *mh,
                         snap__macho_info_t *info) {
  if (!mh || mh->magic != MH_MAGIC_64)
    return false;
  size_t size = sizeof(struct mach_header_64) + mh->sizeofcmds;
  return snap__macho_parse(mh, size, info);
}

int snap__plat_images_enumerate(snap__plat_range_cb cb, void *ctx) {
  uint32_t count = _dyld_image_count();
  for (uint32_t i = 0; i < count; i++) {
    const struct mach_header *mh = _dyld_get_image_header(i);
    const char *path = _dyld_get_image_name(i);
    intptr_t slide = _dyld_get_image_vmaddr_slide(i);
    snap__macho_info_t info;
    if (!path || !parse_loaded(mh, &info) || info.text_vmsize == 0)
      continue; /* unloaded while we looked, or not a 64-bit image */
    snap__plat_range_t r;
    memset(&r, 0, sizeof r);
    r.start = (uintptr_t)(info.text_vmaddr + (uint64_t)slide);
    r.end = r.start + (uintptr_t)info.text_vmsize;
    r.base = (uintptr_t)mh;
    r.path = path;
    cb(&r, ctx);
  }
  return SNAP_OK;
}

/* iOS: App.app/App; macOS: App.app/Contents/MacOS/App, with the app's
   frameworks in App.app/Contents/Frameworks: the bundle is the app. */
bool snap__plat_app_root(char *buf, size_t size) {
  char exe[4096];
  return snap__plat_main_executable(exe, sizeof exe) &&
         snap__macho_app_root(exe, buf, size);
}

bool snap__plat_main_executable(char *buf, size_t size) {
  if (!buf || size == 0)
    return false;
  uint32_t count = _dyld_image_count();
  for (uint32_t i = 0; i < count; i++) {
    const struct mach_header *mh = _dyld_get_image_header(i);
    const char *path = _dyld_get_image_name(i);
    if (mh && path && mh->filetype == MH_EXECUTE) {
      size_t len = strlen(path);
      if (len >= size)
        return false;
      memcpy(buf, path, len + 1);
      return true;
    }
  }
  uint32_t len = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
  return _NSGetExecutablePath(buf, &len) == 0;
}
