/*
 * symbolicate.h — naming pcs, for the capturing facade (src/callstack.c):
 * snap_symbolicate_ex with one refresh of the image table saved; and for
 * the trace's writer, naming without the cache.
 */
#ifndef SNAP_SYMBOLS_SYMBOLICATE_H
#define SNAP_SYMBOLS_SYMBOLICATE_H

#include <stdbool.h>
#include <stdint.h>

#include "stacksnap.h"

/* snap_symbolicate_ex; images_current says the caller brought the image
   table up to date (snap__images_refresh_if_stale returned SNAP_OK)
   during its call, so it is not asked again. */
int snap__symbolicate(const uintptr_t *pcs, int n, unsigned flags,
                      bool images_current, const snap_stack_t **out);

/* Names pcs as snap_symbolicate_ex does, without the cache (neither
   looked up nor filled): for callers that name many pcs once, as the
   trace's writer does with every node of its stack table, whose results
   nobody asks for again. Release with snap_stack_release. */
int snap__symbolicate_uncached(const uintptr_t *pcs, int n, unsigned flags,
                               const snap_stack_t **out);

/* Cache hits checked by image identity, lock-free, instead of the loader's
   load/unload stamp, which takes the loader's lock (symbolicate.c's head
   comment says why this is off by default: it is not exact). For the
   bench, which measures both. [setup] */
void snap__symbolicate_set_identity_hits(bool on);

#endif /* SNAP_SYMBOLS_SYMBOLICATE_H */
