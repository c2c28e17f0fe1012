/*
 * fp_recover.h — finding an unpublished frame pointer (fp_recover.c).
 */
#ifndef SNAP_CAPTURE_FP_RECOVER_H
#define SNAP_CAPTURE_FP_RECOVER_H

#include <stdbool.h>

#include "platform/platform.h"

/* `at` is the frame where a walk that had no fp (at->fp == 0) ended, exact
   as the walk's cursor says. When its unwind rule counts from fp and its
   frame record is found above at->sp (every read through snap__plat_read),
   *caller gets the caller's registers (fp recovered from the record) and
   the answer is true. [signal-safe] but meant for the sampler's thread. */
bool snap__fp_recover(const snap__regs_t *at, bool exact, unsigned flags,
                      snap__regs_t *caller);

#endif /* SNAP_CAPTURE_FP_RECOVER_H */
