/*
 * capture.h — what capture.c shares beyond the public API: counts of its
 * SNAP_CAPTURE_QUIET path, for tests that must tell a quiet sample from a
 * signalled one (under qemu-user every one is signalled).
 */
#ifndef SNAP_CAPTURE_CAPTURE_H
#define SNAP_CAPTURE_CAPTURE_H

#include <stdint.h>

/* Since the process started: quiet walks kept, and quiet requests that
   fell back to the signal (the thread was running, woke during the walk,
   or the platform's registers could not be verified). */
void snap__capture_quiet_counts(uint64_t *kept, uint64_t *signalled);

#endif /* SNAP_CAPTURE_CAPTURE_H */
