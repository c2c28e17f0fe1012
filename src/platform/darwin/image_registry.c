/*
 * image_registry.c — loaded images from dyld's add/remove callbacks, and
 * their enumeration without a raw read of any image.
 *
 * Why not _dyld_get_image_header(i) and a parse of the header it returns
 * (what images_darwin.c did): nothing keeps the image mapped after the
 * call returns, so a dlclose on another thread between the call and the
 * parse leaves us dereferencing unmapped memory, and the name string dyld
 * hands out dies with the image too. dyld's callbacks are the one place it
 * tells us about an image while holding it: the add callback runs when the
 * image is mapped, the remove callback before it is unmapped (dyld4's
 * RuntimeState::garbageCollectImages calls notifyUnload, then
 * removeLoaders, which unmaps; docs/apple.md "Images vs dlclose").
 *
 * What the callbacks record, and how: (header, slide) in a fixed array of
 * slots, nothing read from the image, no allocation, no lock (dyld calls
 * them with its own locks held). Each slot's seq word is generation << 2 |
 * state (FREE, CLAIMED while its fields are written, LIVE, DEAD); an add
 * takes the next never-used slot (one fetch-add), or once all are used a
 * DEAD one, by compare-and-swap, so concurrent callbacks cannot share a
 * slot; a remove swaps LIVE to DEAD. Reusing a slot moves its generation,
 * so a reader's snapshot of seq never matches a later image.
 *
 * Enumeration (set-up code): per LIVE slot, snapshot seq, copy the Mach-O
 * header and its load commands and the loader's path string through the
 * caller's read function (snap__plat_read: it cannot fault), then load seq
 * again. Unchanged means no remove callback ran during the copies, and
 * since dyld unmaps only after that callback, the bytes copied are the
 * image's. Changed: the image is left out (the stamp has moved; the next
 * refresh sees the current set). The parse and the callback see only our
 * copy, so nothing read later can have been freed.
 *
 * Must not: read an image's memory directly, name an Apple API or header
 * (tested on Linux), allocate or lock in the callbacks.
 */
#include "platform/darwin/image_registry.h"

#include <stdlib.h>
#include <string.h>

#include "stacksnap.h"

enum { FREE = 0, CLAIMED = 1, LIVE = 2, DEAD = 3 };

#define STATE(seq) ((unsigned)((seq)&3u))
#define NEXT_GEN(seq, state) ((((seq) >> 2) + 1u) << 2 | (state))

#define HEADER_64_SIZE 32u
#define MAX_COMMANDS (1u << 20) /* sizeofcmds beyond this: not an image */
#define PATH_CAP 4096u          /* PATH_MAX on Darwin is 1024 */
#define PAGE 4096u              /* path reads never cross one */

/* Writes the slot's fields and publishes it LIVE; seq (state FREE or DEAD)
   is what the caller found there. */
static bool claim(snap__image_slot_t *s, uint64_t seq, uintptr_t header,
                  intptr_t slide) {
  uint64_t claimed = NEXT_GEN(seq, CLAIMED);
  if (!atomic_compare_exchange_strong_explicit(
          &s->seq, &seq, claimed, memory_order_acquire, memory_order_relaxed))
    return false;
  atomic_store_explicit(&s->header, header, memory_order_relaxed);
  atomic_store_explicit(&s->slide, slide, memory_order_relaxed);
  atomic_store_explicit(&s->seq, (claimed & ~(uint64_t)3) | LIVE,
                        memory_order_release);
  return true;
}

static uint32_t used(snap__image_registry_t *r) {
  uint32_t n = atomic_load_explicit(&r->next, memory_order_acquire);
  return n < SNAP__IMAGE_SLOTS ? n : SNAP__IMAGE_SLOTS;
}

void snap__imgreg_add(snap__image_registry_t *r, uintptr_t header,
                      intptr_t slide) {
  if (!header)
    return;
  uint32_t n = used(r);
  for (uint32_t i = 0; i < n; i++) {
    snap__image_slot_t *s = &r->slot[i];
    if (STATE(atomic_load_explicit(&s->seq, memory_order_acquire)) == LIVE &&
        atomic_load_explicit(&s->header, memory_order_relaxed) == header)
      return; /* registering reports every loaded image; a load may too */
  }
  uint32_t i = atomic_fetch_add_explicit(&r->next, 1, memory_order_acq_rel);
  if (i < SNAP__IMAGE_SLOTS) {
    snap__image_slot_t *s = &r->slot[i];
    uint64_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
    if (claim(s, seq, header, slide)) /* a fresh slot is ours alone */
      return;
  } else {
    atomic_store_explicit(&r->next, SNAP__IMAGE_SLOTS, memory_order_relaxed);
  }
  for (uint32_t j = 0; j < SNAP__IMAGE_SLOTS; j++) {
    snap__image_slot_t *s = &r->slot[j];
    uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (STATE(seq) == DEAD && claim(s, seq, header, slide))
      return;
  }
  atomic_fetch_add_explicit(&r->dropped, 1, memory_order_relaxed);
}

void snap__imgreg_remove(snap__image_registry_t *r, uintptr_t header) {
  uint32_t n = used(r);
  for (uint32_t i = 0; i < n; i++) {
    snap__image_slot_t *s = &r->slot[i];
    uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (STATE(seq) != LIVE ||
        atomic_load_explicit(&s->header, memory_order_relaxed) != header)
      continue;
    /* Every live slot of that header (a race of two adds can make two). */
    atomic_compare_exchange_strong_explicit(
        &s->seq, &seq, (seq & ~(uint64_t)3) | DEAD, memory_order_release,
        memory_order_relaxed);
  }
}

/* The NUL-terminated string at addr into buf (at most size - 1 chars),
   read a page at a time so that a string ending just before an unmapped
   page is still read. False if unreadable or too long. */
static bool copy_string(snap__imgreg_read_fn read, uintptr_t addr, char *buf,
                        size_t size) {
  size_t have = 0;
  while (have < size - 1) {
    size_t chunk = PAGE - (size_t)((addr + have) % PAGE);
    if (chunk > size - 1 - have)
      chunk = size - 1 - have;
    if (!read(addr + have, buf + have, chunk))
      return false;
    const char *nul = memchr(buf + have, '\0', chunk);
    if (nul)
      return true;
    have += chunk;
  }
  return false;
}

typedef struct scratch {
  unsigned char *cmds;
  size_t cap;
  char path[PATH_CAP];
} scratch_t;

/* One slot, snapshot seq: copies and parses, true if the image stayed
   live throughout and is a 64-bit Mach-O image. */
static bool copy_image(snap__image_slot_t *s, uint64_t seq,
                       snap__imgreg_read_fn read, snap__imgreg_name_fn name,
                       scratch_t *sc, snap__imgreg_image_t *img, int *err) {
  uintptr_t h = atomic_load_explicit(&s->header, memory_order_relaxed);
  intptr_t slide = atomic_load_explicit(&s->slide, memory_order_relaxed);
  unsigned char hdr[HEADER_64_SIZE];
  if (!read(h, hdr, sizeof hdr))
    return false;
  uint32_t magic, sizeofcmds;
  memcpy(&magic, hdr, 4);
  memcpy(&sizeofcmds, hdr + 20, 4);
  if (magic != SNAP__MH_MAGIC_64 || sizeofcmds > MAX_COMMANDS)
    return false;
  size_t total = HEADER_64_SIZE + sizeofcmds;
  if (total > sc->cap) {
    unsigned char *b = realloc(sc->cmds, total);
    if (!b) {
      *err = SNAP_ENOMEM;
      return false;
    }
    sc->cmds = b, sc->cap = total;
  }
  memcpy(sc->cmds, hdr, sizeof hdr);
  if (sizeofcmds &&
      !read(h + HEADER_64_SIZE, sc->cmds + HEADER_64_SIZE, sizeofcmds))
    return false;
  const char *p = name ? name(h) : NULL;
  sc->path[0] = '\0';
  if (p && !copy_string(read, (uintptr_t)p, sc->path, sizeof sc->path))
    return false;
  /* Every copy is done: was the image live all along? The acquire fence
     orders the reads above before this load. */
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&s->seq, memory_order_relaxed) != seq)
    return false;
  if (!snap__macho_parse(sc->cmds, total, &img->info))
    return false;
  img->header = h;
  img->slide = slide;
  img->path = sc->path;
  return true;
}

int snap__imgreg_enumerate(snap__image_registry_t *r, snap__imgreg_read_fn read,
                           snap__imgreg_name_fn name, snap__imgreg_cb cb,
                           void *ctx) {
  if (!r || !read || !cb)
    return SNAP_EINVAL;
  scratch_t *sc = calloc(1, sizeof *sc);
  if (!sc)
    return SNAP_ENOMEM;
  int err = 0, count = 0;
  uint32_t n = used(r);
  for (uint32_t i = 0; i < n && !err; i++) {
    snap__image_slot_t *s = &r->slot[i];
    uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
    snap__imgreg_image_t img;
    if (STATE(seq) != LIVE || !copy_image(s, seq, read, name, sc, &img, &err))
      continue;
    cb(&img, ctx);
    count++;
  }
  free(sc->cmds);
  free(sc);
  return err ? err : count;
}
