/*
 * abi.h — the frozen layouts of the public structs the caller provides,
 * and the size check every function that fills one makes.
 *
 * API v1: such a struct starts with `uint32_t size`, set by the caller (or
 * by its *_default() function). Each version's layout is frozen here as a
 * private struct that never changes; later versions only append fields to
 * the public struct. A function accepts exactly the sizes of the versions
 * listed for its struct (a caller built against any released header) and
 * copies out only that many bytes of a fully filled struct, so an old
 * caller's smaller struct is never written past. The _Static_asserts
 * prove that the public struct still begins with every frozen version's
 * fields at the frozen offsets; a change that moves one fails to compile.
 *
 * (snap_lag_config_t is the lag layer's: src/lag keeps its own check.)
 *
 * Must not: hold anything but layouts and the size check (no state).
 */
#ifndef SNAP_ABI_H
#define SNAP_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "stacksnap.h"

/* snap_image_info_t as API 1.0 declared it. */
typedef struct snap__image_info_v1 {
  uint32_t size;
  uintptr_t base, start, end;
  const char *path, *name;
  bool in_app;
} snap__image_info_v1_t;

/* snap_image_info_t as API 1.1 declared it: 1.0's, then the extent and
   the build id. */
typedef struct snap__image_info_v2 {
  uint32_t size;
  uintptr_t base, start, end;
  const char *path, *name;
  bool in_app;
  uintptr_t image_size;
  const char *build_id;
} snap__image_info_v2_t;

/* snap_symbol_cache_stats_t as API 1.0 declared it. */
typedef struct snap__cache_stats_v1 {
  uint32_t size;
  uint64_t hits, misses, evictions, entries, bytes;
} snap__cache_stats_v1_t;

/* snap_symbol_info_t as API 1.3 declared it. */
typedef struct snap__symbol_info_v1 {
  uint32_t size;
  uintptr_t symbol_addr;
  size_t symbol_len;
  uintptr_t image_base;
  const char *image, *image_path;
  bool in_app;
} snap__symbol_info_v1_t;

#define SNAP__SAME_FIELD(pub, v1, f)                                           \
  _Static_assert(offsetof(pub, f) == offsetof(v1, f) &&                        \
                     sizeof(((pub *)0)->f) == sizeof(((v1 *)0)->f),            \
                 #pub "." #f " moved: a v1 caller would read garbage")

_Static_assert(offsetof(snap_image_info_t, size) == 0,
               "size is the first field");
_Static_assert(sizeof(snap_image_info_t) >= sizeof(snap__image_info_v1_t),
               "later versions only append");
SNAP__SAME_FIELD(snap_image_info_t, snap__image_info_v1_t, size);
SNAP__SAME_FIELD(snap_image_info_t, snap__image_info_v1_t, base);
SNAP__SAME_FIELD(snap_image_info_t, snap__image_info_v1_t, start);
SNAP__SAME_FIELD(snap_image_info_t, snap__image_info_v1_t, end);
SNAP__SAME_FIELD(snap_image_info_t, snap__image_info_v1_t, path);
SNAP__SAME_FIELD(snap_image_info_t, snap__image_info_v1_t, name);
SNAP__SAME_FIELD(snap_image_info_t, snap__image_info_v1_t, in_app);
_Static_assert(sizeof(snap_image_info_t) >= sizeof(snap__image_info_v2_t),
               "later versions only append");
SNAP__SAME_FIELD(snap_image_info_t, snap__image_info_v2_t, in_app);
SNAP__SAME_FIELD(snap_image_info_t, snap__image_info_v2_t, image_size);
SNAP__SAME_FIELD(snap_image_info_t, snap__image_info_v2_t, build_id);

_Static_assert(offsetof(snap_symbol_cache_stats_t, size) == 0,
               "size is the first field");
_Static_assert(sizeof(snap_symbol_cache_stats_t) >=
                   sizeof(snap__cache_stats_v1_t),
               "later versions only append");
SNAP__SAME_FIELD(snap_symbol_cache_stats_t, snap__cache_stats_v1_t, size);
SNAP__SAME_FIELD(snap_symbol_cache_stats_t, snap__cache_stats_v1_t, hits);
SNAP__SAME_FIELD(snap_symbol_cache_stats_t, snap__cache_stats_v1_t, misses);
SNAP__SAME_FIELD(snap_symbol_cache_stats_t, snap__cache_stats_v1_t, evictions);
SNAP__SAME_FIELD(snap_symbol_cache_stats_t, snap__cache_stats_v1_t, entries);
SNAP__SAME_FIELD(snap_symbol_cache_stats_t, snap__cache_stats_v1_t, bytes);

_Static_assert(offsetof(snap_symbol_info_t, size) == 0,
               "size is the first field");
_Static_assert(sizeof(snap_symbol_info_t) >= sizeof(snap__symbol_info_v1_t),
               "later versions only append");
SNAP__SAME_FIELD(snap_symbol_info_t, snap__symbol_info_v1_t, symbol_addr);
SNAP__SAME_FIELD(snap_symbol_info_t, snap__symbol_info_v1_t, symbol_len);
SNAP__SAME_FIELD(snap_symbol_info_t, snap__symbol_info_v1_t, image_base);
SNAP__SAME_FIELD(snap_symbol_info_t, snap__symbol_info_v1_t, image);
SNAP__SAME_FIELD(snap_symbol_info_t, snap__symbol_info_v1_t, image_path);
SNAP__SAME_FIELD(snap_symbol_info_t, snap__symbol_info_v1_t, in_app);

/* The sizes each struct accepts: one per released version, oldest first
   (add the next version's sizeof at the end of the list). */
#define SNAP__IMAGE_INFO_SIZES                                                 \
  sizeof(snap__image_info_v1_t), sizeof(snap__image_info_v2_t)
#define SNAP__CACHE_STATS_SIZES sizeof(snap__cache_stats_v1_t)
#define SNAP__SYMBOL_INFO_SIZES sizeof(snap__symbol_info_v1_t)

/* True when size is one of the listed sizes. [async-signal-safe] */
#define snap__abi_size_known(size, ...)                                        \
  snap__abi_size_in((size), (const size_t[]){__VA_ARGS__},                     \
                    sizeof((const size_t[]){__VA_ARGS__}) / sizeof(size_t))
static inline bool snap__abi_size_in(uint32_t size, const size_t *known,
                                     size_t n) {
  for (size_t i = 0; i < n; i++)
    if (size == known[i])
      return true;
  return false;
}

/* Copies the caller's share (its size, already checked) of a fully filled
   struct, keeping the caller's size field as it was. */
static inline void snap__abi_copy_out(void *out, const void *full,
                                      uint32_t size) {
  memcpy((char *)out + sizeof(uint32_t), (const char *)full + sizeof(uint32_t),
         size - sizeof(uint32_t));
}

#endif
