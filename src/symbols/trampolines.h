/*
 * trampolines.h — which pcs are signal-return trampolines, for naming:
 * learnt once per image (trampolines.c).
 */
#ifndef SNAP_SYMBOLS_TRAMPOLINES_H
#define SNAP_SYMBOLS_TRAMPOLINES_H

#include <stdbool.h>
#include <stdint.h>

#include "images/images.h"

/* For each of the n pcs, whether it is the first instruction of a
   signal-return trampoline: pcs in an image of t by what is known of that
   image (its code searched once, on the first pc named in it), other pcs
   (anonymous code, a JIT's) by the platform's per-pc check. A zero pc is
   none. imgs[i]: the image of t holding pcs[i] (snap__images_find), NULL
   for none; the caller has looked them up to name the pcs anyway.
   [setup] */
void snap__trampolines_mark(const snap__images_t *t, const uintptr_t *pcs,
                            const snap__image_t *const *imgs, int n, bool *out);

#endif /* SNAP_SYMBOLS_TRAMPOLINES_H */
