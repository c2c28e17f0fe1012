/*
 * link_register.h — what a stopped thread's link register (arm64) means at
 * the cursor: whether it is the live return address of frame 0, and
 * whether the next step will hand it out as the caller. Asked by the
 * frame-record reader (which takes a live lr as frame 1) and the async
 * reader (which waits until a pending lr has been handed out). [signal-safe]
 */
#ifndef SNAP_CAPTURE_LINK_REGISTER_H
#define SNAP_CAPTURE_LINK_REGISTER_H

#include <stdbool.h>
#include <stdint.h>

#include "capture/cursor.h"

/* Whether lr is the live return address, given whether a frame record was
   found at fp and its return address ra (pac bits on). See
   link_register.c. False when lr is not valid. */
bool snap__lr_live(snap__cursor_t *c, bool record, uintptr_t ra);

/* Whether the next step hands out the link register as the caller: by the
   unwind rule where there is one (the leaf's return address still in lr),
   by snap__lr_live where there is none. */
bool snap__lr_pending(snap__cursor_t *c);

#endif /* SNAP_CAPTURE_LINK_REGISTER_H */
