/*
 * glib_loop.c — the lag watchdog's adapter for GLib's main loop: the
 * context's poll function is wrapped so that the loop calls the idle hook
 * before it sleeps and the busy hook after (snap__loop_hooks_t: the lag
 * layer's snap_lag_loop_idle/busy).
 *
 * Why the poll function: GLib calls it exactly where the loop sleeps, so
 * "idle before poll, busy after" brackets each wait the way Apple's run
 * loop observers (BeforeWaiting / AfterWaiting) do. Dispatching, prepare
 * and check all count as busy, which is what the user feels.
 *
 * Must not: link GLib. Only a process that already runs a GLib loop can
 * use the adapter, so GLib's functions are looked up in the process; its
 * headers are used for types only, and without them (cross builds, Apple)
 * the adapter is SNAP_EUNSUPPORTED. One wrapped poll function per process:
 * GLib's default g_poll in every real program.
 */
#include <stdatomic.h>

#include "platform/platform.h"
#include "platform/process.h"

#ifdef SNAP_HAVE_GLIB
#include <glib.h>

typedef GPollFunc (*get_poll_fn)(GMainContext *);
typedef void (*set_poll_fn)(GMainContext *, GPollFunc);
typedef GMainContext *(*default_fn)(void);

/* The poll function we wrapped, and what to call around it (stored before
   the wrapper is installed). */
static _Atomic(GPollFunc) g_inner;
static _Atomic(const snap__loop_hooks_t *) g_hooks;

/* The wait itself, called DIRECTLY by snap_glib_poll (never inlined, never
   a tail call): a quiet sample of the idle main thread (SNAP_CAPTURE_QUIET,
   capture.c) has no frame pointer from the kernel, and finds a frame
   record on the stack only behind a direct call to its function
   (capture/fp_recover.c). GLib calls snap_glib_poll through its poll
   function pointer, so without this frame the walk ended at the wrapper
   and the idle main thread became a root of its own in a flame graph. */
__attribute__((noinline)) static gint
wait_in_poll(GPollFunc inner, GPollFD *fds, guint nfds, gint timeout) {
  gint rc = inner(fds, nfds, timeout);
  __asm__ volatile("" ::: "memory"); /* keeps the call a call */
  return rc;
}

static gint snap_glib_poll(GPollFD *fds, guint nfds, gint timeout) {
  GPollFunc inner = atomic_load_explicit(&g_inner, memory_order_acquire);
  const snap__loop_hooks_t *h =
      atomic_load_explicit(&g_hooks, memory_order_acquire);
  h->idle();
  gint rc = wait_in_poll(inner, fds, nfds, timeout);
  h->busy();
  return rc;
}

int snap__plat_attach_glib(void *main_context,
                           const snap__loop_hooks_t *hooks) {
  if (!hooks || !hooks->busy || !hooks->idle)
    return SNAP_EINVAL;
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
  atomic_store_explicit(&g_hooks, hooks, memory_order_release);
  set(ctx, snap_glib_poll);
  return SNAP_OK;
}
#else
int snap__plat_attach_glib(void *main_context,
                           const snap__loop_hooks_t *hooks) {
  (void)main_context, (void)hooks;
  return SNAP_EUNSUPPORTED; /* built without GLib's headers */
}
#endif
