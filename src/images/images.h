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
  /* The loader's identity of the image when the table was built
     (snap__plat_image_live; 0 if it had none). A walk reads this image's
     unwind tables directly only while the loader still reports this
     identity at the pc: else the table is stale there. */
  uint64_t live_id;
  /* Set only on a record a walk makes from the loader's answer when the
     table is stale: every read of its tables goes through snap__plat_read
     (its bounds are the whole mapping, gaps between segments included). */
  bool read_safely;
  const char *path; /* points into the table's string pool */
  const char *name; /* base name of path */
  bool in_app;
  /* The generation of the first table that held this range unchanged
     (same start, end, base, path, app-ness). A result computed under
     generation g for a pc in this range is still right while since <= g:
     that is how the symbol cache revalidates after a load or unload. */
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

/* True when `loads`, the platform's lock-free load count read by the
   caller (snap__plat_images_loads_now), says nothing was loaded since the
   published table was built (unloads may have happened: nothing new sits
   where the table says something was). The caller reads the generation
   after this, which is then at least the table's that the count vouched
   for. [signal-safe] */
bool snap__images_current(uint64_t loads);

#endif /* SNAP_IMAGES_H */
