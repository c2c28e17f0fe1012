/*
 * loop_adapters.c — the platform's own event loop adapter on Linux: there
 * is none. Apple's CFRunLoop is the loop every app there runs, so the Apple
 * backend hooks it (darwin/runloop.c); Linux has no system loop, and the
 * loops apps bring are adapted where they are portable (GLib:
 * posix/glib_loop.c), not here.
 *
 * Must not: pretend. A CFRunLoop pointer handed to Linux gets
 * SNAP_EUNSUPPORTED, never a silent success.
 */
#include "platform/linux/linux.h"

int snap__plat_attach_runloop(void *runloop, const snap__loop_hooks_t *hooks) {
  (void)runloop, (void)hooks;
  return SNAP_EUNSUPPORTED;
}
