/*
 * compact_unwind.c — function bounds from an image's __unwind_info (Apple's
 * compact unwind tables), for snap__plat_function_bounds.
 *
 * Not yet read: every answer is "unknown" until the reader lands, so the
 * walker treats a link register as it did before (see frame_records.c).
 *
 * Must not: read the section except through snap__plat_read.
 */
#include "platform/darwin/darwin.h"

bool snap__plat_function_bounds(uintptr_t index, size_t index_size,
                                uintptr_t base, uintptr_t pc, uintptr_t *start,
                                uintptr_t *end) {
  (void)index, (void)index_size, (void)base, (void)pc, (void)start, (void)end;
  return false;
}
