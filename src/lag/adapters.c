/*
 * adapters.c — loop adapters: GLib's main loop, and the platform's own loop
 * (CFRunLoop on Apple, through the platform seam).
 *
 * Owns: the GLib poll wrapper. Must not: link GLib (only a process that
 * already runs a GLib loop can use the adapter, so GLib's functions are
 * looked up in the process) or put any loop library into the core.
 *
 * Why the poll function: GLib calls it exactly where the loop sleeps, so
 * "idle before poll, busy after" brackets each wait the way CFRunLoop's
 * BeforeWaiting / AfterWaiting observers do. Dispatching, prepare and check
 * all count as busy, which is what the user feels.
 */
#include <stdatomic.h>

#include "lag/lag.h"

SNAP_EXPORT int snap_lag_attach_cfrunloop(void *runloop) {
  return snap__plat_attach_runloop(runloop);
}

#ifdef SNAP_HAVE_GLIB
#include <glib.h>

typedef GPollFunc (*get_poll_fn)(GMainContext *);
typedef void (*set_poll_fn)(GMainContext *, GPollFunc);
typedef GMainContext *(*default_fn)(void);

/* The poll function we wrapped (one per process: GLib's default g_poll in
   every real program; a context with a custom poll keeps its own). */
static _Atomic(GPollFunc) g_inner;

static gint snap_glib_poll(GPollFD *fds, guint nfds, gint timeout) {
  GPollFunc inner = atomic_load_explicit(&g_inner, memory_order_acquire);
  snap_lag_loop_idle();
  gint rc = inner(fds, nfds, timeout);
  snap_lag_loop_busy();
  return rc;
}

SNAP_EXPORT int snap_lag_attach_glib(void *main_context) {
  get_poll_fn get =
      (get_poll_fn)snap__plat_find_symbol("g_main_context_get_poll_func");
  set_poll_fn set =
      (set_poll_fn)snap__plat_find_symbol("g_main_context_set_poll_func");
  default_fn dflt =
      (default_fn)snap__plat_find_symbol("g_main_context_default");
  if (!get || !set || !dflt)
    return SNAP_EUNSUPPORTED; /* GLib is not in this process */
  GMainContext *ctx = main_context ? main_context : dflt();
  GPollFunc cur = get(ctx);
  if (cur == snap_glib_poll)
    return SNAP_OK; /* attached already */
  GPollFunc expect = NULL;
  if (!atomic_compare_exchange_strong(&g_inner, &expect, cur) && expect != cur)
    return SNAP_EBUSY; /* another context with another poll function */
  set(ctx, snap_glib_poll);
  return SNAP_OK;
}
#else
SNAP_EXPORT int snap_lag_attach_glib(void *main_context) {
  (void)main_context;
  return SNAP_EUNSUPPORTED; /* built without GLib's headers */
}
#endif
