/*
 * images_darwin.c — loaded images through dyld.
 *
 * The image table comes from dyld's add/remove callbacks, kept by
 * image_registry.c: the add callback records (header, slide), the remove
 * callback — which dyld runs before it unmaps the image — marks it dead.
 * Enumeration copies each live image's header, load commands and path
 * through snap__plat_read and keeps the copy only if the image was not
 * removed meanwhile, so a concurrent dlclose can never make us read an
 * unmapped header (as _dyld_get_image_header(i) followed by a parse of the
 * header could) or hand out a path string dyld has freed (the path is
 * copied). Names come from dladdr on the header: dyld's own path for the
 * image, the same spelling for the main executable as for the app's other
 * images (iOS prefixes /private/var/... or /var/... alike).
 *
 * Each image gives one range, its whole __TEXT segment (macho_ranges.c),
 * slid by the image's slide; its base is its header's address, its size
 * the extent of its segments from there, its build id its LC_UUID. There is
 * no .eh_frame_hdr in a Mach-O image (Apple's unwind tables are
 * __unwind_info, plus __eh_frame for a few functions), so unwind_hdr is 0
 * and the walker follows frame records, which the arm64 and x86_64 Apple
 * ABIs keep in every function; func_index is the image's __unwind_info,
 * which compact_unwind.c reads for function bounds.
 *
 * Staying current: the callbacks also bump an atomic stamp. The image
 * table (images.c) compares stamps and rebuilds outside any window.
 *
 * Must not: run enumeration from the stopped window (dladdr takes dyld's
 * lock, which a stopped thread may hold); read an image's memory except
 * through snap__plat_read; allocate, lock or call dyld in the callbacks.
 */
#include <dlfcn.h>
#include <mach-o/dyld.h>
#include <mach-o/loader.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "platform/darwin/darwin.h"
#include "platform/darwin/image_registry.h"
#include "platform/darwin/macho_ranges.h"

static _Atomic uint64_t g_stamp;
static snap__image_registry_t g_images; /* written by dyld's callbacks */

static void on_image_add(const struct mach_header *mh, intptr_t slide) {
  snap__imgreg_add(&g_images, (uintptr_t)mh, slide);
  atomic_fetch_add_explicit(&g_stamp, 1, memory_order_release);
}

static void on_image_remove(const struct mach_header *mh, intptr_t slide) {
  (void)slide;
  snap__imgreg_remove(&g_images, (uintptr_t)mh);
  atomic_fetch_add_explicit(&g_stamp, 1, memory_order_release);
}

__attribute__((constructor)) static void images_darwin_init(void) {
  /* Registering calls the add callback once per image already loaded. */
  _dyld_register_func_for_add_image(on_image_add);
  _dyld_register_func_for_remove_image(on_image_remove);
}

uint64_t snap__plat_images_stamp(void) {
  return atomic_load_explicit(&g_stamp, memory_order_acquire);
}

/* dyld's path for the image at header: the string dladdr points to lives
   in dyld's record of the image and dies with it; the registry reads it
   only through snap__plat_read. */
static const char *image_name(uintptr_t header) {
  Dl_info info;
  if (!dladdr((const void *)header, &info) ||
      (uintptr_t)info.dli_fbase != header)
    return NULL;
  return info.dli_fname;
}

typedef struct ranges_ctx {
  snap__plat_range_cb cb;
  void *ctx;
} ranges_ctx_t;

static void report_range(const snap__imgreg_image_t *img, void *arg) {
  const ranges_ctx_t *rc = arg;
  const snap__macho_info_t *info = &img->info;
  if (info->text_vmsize == 0 || !img->path[0])
    return; /* no code, or dyld no longer names it */
  snap__plat_range_t r;
  memset(&r, 0, sizeof r);
  r.start = (uintptr_t)(info->text_vmaddr + (uint64_t)img->slide);
  r.end = r.start + (uintptr_t)info->text_vmsize;
  r.base = img->header;
  if (info->unwind_info_addr && info->unwind_info_size) {
    r.func_index = (uintptr_t)(info->unwind_info_addr + (uint64_t)img->slide);
    r.func_index_size = (size_t)info->unwind_info_size;
  }
  r.path = img->path;
  r.ident = SNAP__IDENT_UNKNOWN;
  /* Parsed from the registry's copy of the load commands, here at
     enumeration: the stopped window only ever sees the table. */
  r.size = (uintptr_t)info->image_size;
  if (info->has_uuid) {
    memcpy(r.build_id, info->uuid, SNAP__MACHO_UUID_SIZE);
    r.build_id_len = SNAP__MACHO_UUID_SIZE;
  }
  rc->cb(&r, rc->ctx);
}

int snap__plat_images_enumerate(snap__plat_range_cb cb, void *ctx) {
  ranges_ctx_t rc = {cb, ctx};
  int n = snap__imgreg_enumerate(&g_images, snap__plat_read, image_name,
                                 report_range, &rc);
  return n < 0 ? n : SNAP_OK;
}

/* iOS: App.app/App; macOS: App.app/Contents/MacOS/App, with the app's
   frameworks in App.app/Contents/Frameworks: the bundle is the app. */
bool snap__plat_app_root(char *buf, size_t size) {
  char exe[4096];
  return snap__plat_main_executable(exe, sizeof exe) &&
         snap__macho_app_root(exe, buf, size);
}

typedef struct exe_ctx {
  char *buf;
  size_t size;
  bool found, fits;
} exe_ctx_t;

static void find_executable(const snap__imgreg_image_t *img, void *arg) {
  exe_ctx_t *e = arg;
  if (e->found || img->info.filetype != MH_EXECUTE || !img->path[0])
    return;
  size_t len = strlen(img->path);
  e->found = true;
  e->fits = len < e->size;
  if (e->fits)
    memcpy(e->buf, img->path, len + 1);
}

bool snap__plat_main_executable(char *buf, size_t size) {
  if (!buf || size == 0)
    return false;
  exe_ctx_t e = {buf, size, false, false};
  snap__imgreg_enumerate(&g_images, snap__plat_read, image_name,
                         find_executable, &e);
  if (e.found)
    return e.fits;
  uint32_t len = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
  return _NSGetExecutablePath(buf, &len) == 0;
}
