/*
 * adapters.c — the public loop adapters: hooks into the app's event loop
 * that make the snap_lag_loop_busy / snap_lag_loop_idle calls for it.
 *
 * Owns: nothing but the public names. Must not: know any loop library;
 * GLib's adapter and Apple's run loop observers are platform code
 * (src/platform/posix/glib_loop.c, src/platform/darwin/runloop.c).
 */
#include "lag/lag.h"

/* The calls every adapter makes: the loop observer's (observer.c). */
static const snap__loop_hooks_t g_hooks = {snap_lag_loop_busy,
                                           snap_lag_loop_idle};

SNAP_EXPORT int snap_lag_attach_glib(void *main_context) {
  return snap__plat_attach_glib(main_context, &g_hooks);
}

SNAP_EXPORT int snap_lag_attach_cfrunloop(void *runloop) {
  return snap__plat_attach_runloop(runloop, &g_hooks);
}
