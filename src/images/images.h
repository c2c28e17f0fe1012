/*
 * images.h — the table of loaded images: executable ranges, names,
 * app-or-system, unwind tables, and a generation that changes on every
 * load or unload.
 *
 * Concurrency contract (PLCrashReporter style, stated where the data lives):
 * a table is immutable once published. Readers — any thread, including the
 * stopped window — take a reference with snap__images_acquire (two atomic
 * operations, no lock) and drop it with snap__images_release. One writer at a
 * time (a mutex, setup side only) builds a new table and publishes it with
 * an atomic pointer swap; a replaced table is freed only once its reader
 * count has drained, so a reader never sees freed memory.
 */
#ifndef SNAP_IMAGES_H
#define SNAP_IMAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct snap__image {
  uintptr_t start, end; /* executable range [start, end) */
  uintptr_t base;       /* image load address */
  uintptr_t unwind_hdr; /* .eh_frame_hdr, 0 if none */
  uintptr_t unwind_lo;  /* every CFI read stays in [unwind_lo, unwind_hi) */
  uintptr_t unwind_hi;
  uintptr_t func_index; /* the platform's function-start index, 0 if none */
  size_t func_index_size;
  const char *path;     /* points into the table's string pool */
  const char *name;     /* base name of path */
  uint64_t ident;       /* who the image was (snap__plat_ident_t.id): a pc whose
                           live identity differs is no longer this image's */
  uint64_t content;     /* snap__plat_range_t.content */
  const char *build_id; /* its text (snap__plat_build_id_text), interned
                           like path; NULL if the image has none */
  uintptr_t size;       /* extent from base (snap__plat_range_t.size) */
  bool in_app;
  /* Set only on a record the walker makes from the loader's lock-free
     answer where the table is stale (live_images.h): its bounds are the
     whole mapping, holes included, and the image may be unmapped at any
     instant, so every byte of its tables is read through snap__plat_read.
     Records in a table are read directly: the loader has confirmed them. */
  bool read_safely;
  /* The generation of the first table that held this range unchanged
     (same start, end, base, path, identity, contents, app-ness). A result
     computed under generation g for a pc in this range is still right while
     since <= g: that is how the symbol cache revalidates after a load or
     unload. */
  uint64_t since;
} snap__image_t;

typedef struct snap__images snap__images_t;

/* [signal-safe] Never NULL once the library has loaded. */
const snap__images_t *snap__images_acquire(void);
void snap__images_release(const snap__images_t *t);

/* The range holding pc, or NULL. O(log n). [signal-safe] */
const snap__image_t *snap__images_find(const snap__images_t *t, uintptr_t pc);
/* Changes whenever the table is rebuilt. [signal-safe] */
uint64_t snap__images_generation(const snap__images_t *t);
/* The generation of the table published now, without taking a reference:
   lets a walk whose unwind rules all come from cache skip the table.
   [signal-safe] */
uint64_t snap__images_current_generation(void);

/* Rebuilds the table if an image was loaded or unloaded since the last build
   (or always, with force). Returns SNAP_OK or SNAP_ENOMEM. [setup] */
int snap__images_refresh(bool force);
/* The same for hot paths: asks the platform's load/unload stamp and takes
   the writer lock only when the stamp moved. [setup] */
int snap__images_refresh_if_stale(void);

/* Test hook: fn runs in every build between enumerating the images and
   taking the writer lock to publish (NULL: none). [setup] */
void snap__images_set_publish_hook(void (*fn)(void));

#endif /* SNAP_IMAGES_H */
