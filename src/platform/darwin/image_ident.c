/*
 * image_ident.c — Apple's answer to "who is the image holding this
 * address" (platform.h, snap__plat_image_ident): unknown.
 *
 * dyld has no lock-free lookup of the image holding an address (dladdr
 * takes its lock, which a suspended thread may hold: this runs in the
 * stopped window). None is needed: the walker reads Apple's unwind index
 * only through snap__plat_read, which survives an unmapped image, and
 * the symbol cache learns of loads and unloads from dyld's callbacks
 * (images_darwin.c's stamp).
 *
 * Must not: call dyld. [signal-safe]
 */
#include "platform/darwin/darwin.h"

void snap__plat_image_ident(uintptr_t addr, snap__plat_ident_t *out) {
  (void)addr;
  *out = (snap__plat_ident_t){0, 0, SNAP__IDENT_UNKNOWN, 0};
}
