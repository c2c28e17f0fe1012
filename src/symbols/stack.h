/*
 * stack.h — the named stack object handed to users (snap_stack_t): one
 * compact allocation holding the key and, per frame, an interned symbol id
 * and small indices; immutable once packed, shared by reference count. The
 * snap_frame_t array users read is built on the first snap_stack_frame
 * call, the formatted lines on the first snap_stack_line call (the views),
 * not before: a cached stack nobody reads costs ~24 bytes a frame, not
 * ~200.
 *
 * Must not: point into anything that can go away. Symbol and file names
 * are interned (intern.h: held by id, one reference per frame); image
 * names point at the image table's interned paths, which live as long as
 * the process.
 */
#ifndef SNAP_SYMBOLS_STACK_H
#define SNAP_SYMBOLS_STACK_H

#include <stdatomic.h>
#include <stdbool.h>
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

typedef struct snap__stack_view snap__stack_view_t;

struct snap_stack {
  atomic_int refs;
  int count;
  size_t bytes;          /* the compact block: what the cache charges for it */
  snap__stack_key_t key; /* pcs and images point into this block (none
                            in a stack with its own strings: stack.c) */
  /* The newest image table generation the names were found still right
     under; a hint the cache moves forward, never a part of the answer. */
  _Atomic uint64_t checked_generation;
  _Atomic(snap__stack_view_t *) view;       /* frames, once asked */
  _Atomic(snap__stack_view_t *) lines_view; /* lines, once asked */
  uint16_t n_names; /* distinct (image name, base) pairs */
  bool wide;  /* a symbol_addr too far below its pc: full addresses kept */
  bool lines; /* source file and line per frame kept */
  bool own_strings; /* laid out flat, names copied into the block */
};

/* Packs n frames (symbol and file names interned) and the key it answers
   (pcs and image records copied) into one new stack with one reference;
   NULL when out of memory. Every frames[i].pc is one of key->pcs, in
   order (app-only naming drops some). own_strings: the names are copied
   into the block instead, for a stack the cache will not keep (a cap of
   0, snap__symbolicate_uncached, the first sighting of a stack:
   cache_admit.c), laid out as the frames users read (its key's hash,
   flags and generation kept, not its pcs or images): interning is worth
   its lock and hash only for names that many cached stacks share, and an
   uncached stack's were interned and dropped again at once (two lock
   round trips and an allocation per cold lookup: a third of one in a 60
   k-function library). */
snap_stack_t *snap__stack_pack(const snap_frame_t *frames, int n,
                               const snap__stack_key_t *key, bool own_strings);
/* Room at the end of the block of a stack packed for the cache (not
   own_strings) for the cache's record of it (cache_parts.h,
   cache_entry_t), so that keeping a stack is one allocation, not two;
   NULL for a stack with its own strings. Opaque here. */
#define SNAP__STACK_LINK_BYTES 40
void *snap__stack_link(const snap_stack_t *s);
/* Adds a reference; returns s. */
snap_stack_t *snap__stack_retain(const snap_stack_t *s);

/* Bytes of the views (frames and lines) alive now, over all stacks: the
   cache counts them against its cap. */
size_t snap__stack_view_bytes(void);
/* Called with a view's size each time one is built (the cache sets it, to
   keep its total under the cap); NULL for none. [setup] */
void snap__stack_on_view(void (*fn)(size_t bytes));

/* Writes frame f's line (index i) at dst, or only measures it with dst
   NULL (stack_line.c); returns its length, without the terminating NUL,
   which it does not write. */
size_t snap__stack_format_line(char *dst, int i, const snap_frame_t *f);

#endif /* SNAP_SYMBOLS_STACK_H */
