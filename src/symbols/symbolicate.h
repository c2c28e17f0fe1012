/*
 * symbolicate.h — naming pcs, for the capturing facade (src/callstack.c):
 * snap_symbolicate_ex with one refresh of the image table saved.
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

#endif /* SNAP_SYMBOLS_SYMBOLICATE_H */
