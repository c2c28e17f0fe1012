/*
 * compact_unwind.h — the function that holds a pc, from an image's
 * __TEXT,__unwind_info section (Apple's compact unwind tables): what
 * snap__plat_function_bounds answers on Apple.
 *
 * Pure: no Apple API and no Apple header (the layout is the documented
 * <mach-o/compact_unwind_encoding.h>, spelled out in compact_unwind.c), and
 * every byte of the section is fetched through the caller's read function,
 * so it is built and tested on Linux against real sections linked with
 * ld64.lld and crafted hostile ones.
 */
#ifndef SNAP_PLATFORM_DARWIN_COMPACT_UNWIND_H
#define SNAP_PLATFORM_DARWIN_COMPACT_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Copies n bytes at offset off of the section into dst; false if they
   cannot be read (an image unmapped under us). Called only with
   off + n <= the section size. [signal-safe] */
typedef bool (*snap__cu_read_fn)(void *ctx, uint32_t off, void *dst, size_t n);

/* The entry of the section (size bytes) that covers target, an offset from
   the image's base (its Mach-O header): [*start, *end), offsets from the
   same base. An entry is one function, or several adjacent functions the
   linker folded because they unwind alike (same encoding, no personality or
   LSDA): the bounds are never narrower than the function. False if the
   table does not cover target (before the first entry, at or past the
   end), is malformed, or a read failed. Reads stay inside [0, size) and
   are few (a header, a handful of probes, one run of entries per level).
   No allocation, no lock. [signal-safe] */
bool snap__cu_find(snap__cu_read_fn read, void *ctx, size_t size,
                   uint64_t target, uint32_t *start, uint32_t *end);

#endif /* SNAP_PLATFORM_DARWIN_COMPACT_UNWIND_H */
