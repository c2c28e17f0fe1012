/*
 * stack.h — the named stack object handed to users (snap_stack_t): one
 * allocation holding the frames, their strings and their formatted lines,
 * immutable once packed, shared by reference count.
 *
 * Must not: point into anything that can go away. Symbol and file names
 * are copied in; image names point at the image table's interned paths,
 * which live as long as the process.
 */
#ifndef SNAP_SYMBOLS_STACK_H
#define SNAP_SYMBOLS_STACK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "stacksnap.h"

/* One image a stack's names came from: an address it held when the stack
   was named, its base and (interned) path; path NULL for a pc that was in
   no image. The cache asks the image table whether each is unchanged
   before serving. */
typedef struct snap__stack_image {
  uintptr_t addr;
  uintptr_t base;
  const char *path;
} snap__stack_image_t;

/* What a stack answers (the cache key) and what its names depend on. */
typedef struct snap__stack_key {
  uint64_t hash;
  unsigned flags;
  int n;
  const uintptr_t *pcs;
  int n_images;
  const snap__stack_image_t *images;
  uint64_t generation; /* image table it was named under */
} snap__stack_key_t;

struct snap_stack {
  atomic_int refs;
  int count;
  size_t bytes; /* the whole allocation: what the cache charges for it */
  snap_frame_t *frames;
  const char **lines;
  snap__stack_key_t key; /* pcs and images point into this block */
  /* The newest image table generation the names were found still right
     under; a hint the cache moves forward, never a part of the answer. */
  _Atomic uint64_t checked_generation;
};

/* Packs n frames (strings copied, lines formatted) and the key it answers
   (pcs and image records copied) into one new stack with one reference;
   NULL when out of memory. */
snap_stack_t *snap__stack_pack(const snap_frame_t *frames, int n,
                               const snap__stack_key_t *key);
/* Adds a reference; returns s. */
snap_stack_t *snap__stack_retain(const snap_stack_t *s);

#endif /* SNAP_SYMBOLS_STACK_H */
