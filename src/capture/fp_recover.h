/*
 * fp_recover.h — finding an unpublished frame pointer (fp_recover.c).
 */
#ifndef SNAP_CAPTURE_FP_RECOVER_H
#define SNAP_CAPTURE_FP_RECOVER_H

#include <stdbool.h>

#include "platform/platform.h"

/* What snap__fp_recover found. */
typedef enum snap__fp_recover {
  SNAP__FP_RECOVERED,  /* *caller is the caller of `at` */
  SNAP__FP_NOT_NEEDED, /* fp was known, or the rule of `at` does not count
                          from fp: the walk ended for another reason */
  SNAP__FP_LOST,       /* the rule counts from fp and no record was accepted:
                           the walk ended short of the thread's root */
} snap__fp_recover_t;

/* `at` is the frame where a walk that had no fp (at->fp == 0) ended, exact
   as the walk's cursor says. When its unwind rule counts from fp and its
   frame record is found above at->sp (every read through snap__plat_read),
   *caller gets the caller's registers (fp recovered from the record).
   [signal-safe] but meant for the sampler's thread. */
snap__fp_recover_t snap__fp_recover(const snap__regs_t *at, bool exact,
                                    unsigned flags, snap__regs_t *caller);

#endif /* SNAP_CAPTURE_FP_RECOVER_H */
