/*
 * cache_verify.c — whether a cached stack may still be served: the check
 * every hit passes, front or shared (design rule 3: the cache never
 * returns a wrong stack).
 *
 *  - the key: n, flags and every pc equal (same_key, inline in
 *    cache_parts.h). Two stacks with the same hash cannot both be in the
 *    table (the newer replaces the older), so a collision costs a miss,
 *    never a wrong answer;
 *  - the images: the image table is brought up to date by the caller (the
 *    platform's load/unload stamp, asked on every call: ~30 ns on Linux,
 *    the loader's lock held no longer than that), then each image the names
 *    came from must be unchanged in it since the stack was named
 *    (snap__image_t.since: same range, base, path and contents); checked
 *    once per table rebuild, then remembered. So after a dlclose nothing
 *    named for that range is served, a library loaded at the same address
 *    gets its own names, and nothing the loader owns is read unlocked
 *    (reading its record of a library raced with dlclose freeing it).
 *    With identity hits on (symbolicate.c says why they are off by
 *    default), a front hit is served without the stamp when the loader's
 *    lock-free identity of every such image equals what the table recorded
 *    when the slot was filled (snap__cache_idents_of,
 *    snap__cache_idents_live).
 *
 * Owns: nothing but these checks. Must not: be called under a stripe's
 * lock (on Apple a check may ask dyld, and a thread holding dyld's lock
 * may be waiting for that stripe), or read the loader's records unlocked.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "images/images.h"
#include "platform/platform.h"
#include "symbols/cache_parts.h"
#include "symbols/stack.h"

/* Every image the names came from is unchanged in table t since the stack
   was named (so app-ness and ranges are as they were). */
static bool unchanged_since(const snap_stack_t *s, const snap__images_t *t) {
  for (int i = 0; i < s->key.n_images; i++) {
    const snap__stack_image_t *r = &s->key.images[i];
    const snap__image_t *img = snap__images_find(t, r->addr);
    if (!r->path ? img != NULL
                 : !img || img->base != r->base || img->path != r->path ||
                       img->since > s->key.generation)
      return false;
  }
  return true;
}

/* Whether s may still be served, by the image table the caller brought up
   to date (cache.h): its own records — each range's "unchanged since"
   generation — say whether every image the names came from is still the
   one they were read from. Nothing the loader owns is read unlocked.
   Writes shared memory only once per table rebuild (to remember the
   check). */
bool snap__cache_fresh(snap_stack_t *s) {
  uint64_t current = snap__images_current_generation();
  if (atomic_load_explicit(&s->checked_generation, memory_order_relaxed) ==
      current)
    return true;
  const snap__images_t *t = snap__images_acquire();
  bool ok = unchanged_since(s, t);
  if (ok)
    atomic_store_explicit(&s->checked_generation, snap__images_generation(t),
                          memory_order_relaxed);
  snap__images_release(t);
  return ok;
}

/* Mixes one image identity into h (never 0 for a real mix: 0 is "none"). */
static uint64_t mix_ident(uint64_t h, uint64_t id) {
  h = (h ^ id) * 0xD6E8FEB86659FD93ull;
  return h ^ (h >> 32);
}

/* The identities (snap__plat_ident_t.id) of the images s's names came
   from, as the image table recorded them under the loader's lock, mixed;
   0 if the table no longer holds them unchanged since s was named, or the
   platform cannot tell identities lock-free. Takes a table reference:
   called when a front slot is filled, not on a hit. */
uint64_t snap__cache_idents_of(const snap_stack_t *s) {
  const snap__images_t *t = snap__images_acquire();
  uint64_t h = 0x9E3779B97F4A7C15ull;
  if (!unchanged_since(s, t))
    h = 0;
  for (int i = 0; h && i < s->key.n_images; i++) {
    const snap__image_t *img = snap__images_find(t, s->key.images[i].addr);
    uint64_t id = img ? img->ident : SNAP__IDENT_NONE;
    h = id == SNAP__IDENT_UNKNOWN ? 0 : mix_ident(h, id);
  }
  snap__images_release(t);
  return h;
}

/* Whether the images at s's addresses are, now, the ones idents (from
   snap__cache_idents_of) recorded: asked of the loader lock-free
   (_dl_find_object on glibc, ~6 ns an image), no lock and no shared write. */
bool snap__cache_idents_live(const snap_stack_t *s, uint64_t idents) {
  if (!idents)
    return false;
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < s->key.n_images; i++) {
    snap__plat_ident_t id;
    snap__plat_image_ident(s->key.images[i].addr, &id);
    if (id.id == SNAP__IDENT_UNKNOWN)
      return false;
    h = mix_ident(h, id.id);
  }
  return h == idents;
}
