/*
 * image_registry.h — the loaded images as dyld's add/remove callbacks
 * report them, kept lock-free, and enumerated without ever touching an
 * image's memory except through a read that survives an unmap.
 *
 * Pure: no Apple API and no Apple header (dyld and snap__plat_read are
 * passed in as functions), so it is built and tested on Linux against real
 * Mach-O files mapped and unmapped under it. The rules are in
 * image_registry.c.
 */
#ifndef SNAP_PLATFORM_DARWIN_IMAGE_REGISTRY_H
#define SNAP_PLATFORM_DARWIN_IMAGE_REGISTRY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "platform/darwin/macho_ranges.h"

/* More than any app loads (an iOS app with the shared cache: ~400-900). */
#define SNAP__IMAGE_SLOTS 4096

typedef struct snap__image_slot {
  _Atomic uint64_t seq; /* generation << 2 | state (image_registry.c) */
  _Atomic uintptr_t header;
  _Atomic intptr_t slide;
} snap__image_slot_t;

typedef struct snap__image_registry {
  snap__image_slot_t slot[SNAP__IMAGE_SLOTS];
  _Atomic uint32_t next;    /* slots ever handed out (high-water mark) */
  _Atomic uint64_t dropped; /* adds that found no free slot */
} snap__image_registry_t;

/* dyld's add-image callback: records (header, slide). Nothing else: no
   read of the image, no allocation, no lock, no call. An image already
   recorded live is not recorded twice. [signal-safe] */
void snap__imgreg_add(snap__image_registry_t *r, uintptr_t header,
                      intptr_t slide);
/* dyld's remove-image callback, which dyld calls before it unmaps the
   image: marks the header's slot dead. [signal-safe] */
void snap__imgreg_remove(snap__image_registry_t *r, uintptr_t header);

/* Copies n bytes at addr; false if they are not readable (never faults).
   On Apple: snap__plat_read. */
typedef bool (*snap__imgreg_read_fn)(uintptr_t addr, void *dst, size_t n);
/* The image's path as the loader keeps it (a string that dies with the
   image: it is only read through the read function), or NULL. On Apple:
   dladdr(header). */
typedef const char *(*snap__imgreg_name_fn)(uintptr_t header);

typedef struct snap__imgreg_image {
  uintptr_t header;
  intptr_t slide;
  snap__macho_info_t info; /* parsed from a private copy of the commands */
  const char *path;        /* our copy; "" if the loader gave none */
} snap__imgreg_image_t;

typedef void (*snap__imgreg_cb)(const snap__imgreg_image_t *img, void *ctx);

/* Calls cb for every image live in r whose header and load commands (and
   path) could be copied while it stayed live: an image removed during its
   copy is left out (the next enumeration, after the stamp moves, has the
   current set). img and everything it points to are valid during the
   callback only. Returns the number of images reported, or a negative
   SNAP_E* code (SNAP_ENOMEM: no memory for the copy). [setup] */
int snap__imgreg_enumerate(snap__image_registry_t *r, snap__imgreg_read_fn read,
                           snap__imgreg_name_fn name, snap__imgreg_cb cb,
                           void *ctx);

#endif /* SNAP_PLATFORM_DARWIN_IMAGE_REGISTRY_H */
