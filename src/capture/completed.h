/*
 * completed.h — stacks a signal completed, kept while their thread stays
 * blocked (completed.c).
 */
#ifndef SNAP_CAPTURE_COMPLETED_H
#define SNAP_CAPTURE_COMPLETED_H

#include <stdbool.h>
#include <stdint.h>

#include "platform/platform.h"

/* Keeps pcs[0..n) and *wait for `thread` sampled with `flags`, valid while
   the thread's witness stays `at` (snap__plat_blocked_again). [setup] */
void snap__completed_put(snap_thread_t thread, unsigned flags,
                         const snap__plat_blocked_t *at, const uintptr_t *pcs,
                         int n, const snap__plat_wait_regs_t *wait);

/* The stack kept for `thread` and `flags` if its witness is still `now`
   (the thread has not run since): up to max pcs and *wait, and the count;
   -1 when there is none. [setup] */
int snap__completed_get(snap_thread_t thread, unsigned flags,
                        const snap__plat_blocked_t *now, uintptr_t *pcs,
                        int max, snap__plat_wait_regs_t *wait);

#endif /* SNAP_CAPTURE_COMPLETED_H */
