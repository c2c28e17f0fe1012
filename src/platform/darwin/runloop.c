/*
 * runloop.c — the lag watchdog's adapter for CFRunLoop, the loop every
 * Apple app's main thread runs: run-loop observers that call the busy and
 * idle hooks the lag layer hands in (snap_lag_loop_busy / _idle), so the
 * app needs no manual calls.
 *
 * What each activity means, nested runs included, is decided by the pure
 * state machine in runloop_nesting.c (its head has the rules and the
 * CFRunLoop order they follow): in short, busy from waking (AfterWaiting,
 * BeforeSources, an outermost Entry) to the next sleep (BeforeWaiting) at
 * any depth, and a run's Exit is idle only when it leaves the outermost
 * run — a nested run returning hands the thread back to a busy handler.
 * Two observers feed it, one state per run loop (the observer context):
 *  - Entry, BeforeSources and AfterWaiting at order LONG_MIN: observers run
 *    in ascending order, so ours comes before any other observer of the
 *    same activity and the time they take counts as busy;
 *  - BeforeWaiting and Exit at order LONG_MAX: after every other observer
 *    — Core Animation's commit, UIKit's layout, the autorelease pool's
 *    drain all run at BeforeWaiting, and their cost is the app's.
 * WeChat's Matrix and Apple's own hang detection bracket the run loop the
 * same way: the first observer starts the clock, the last one stops it.
 *
 * Modes: kCFRunLoopCommonModes (default and tracking: scrolling and modal
 * panels are watched) and UIInitializationRunLoopMode, by name: UIKit runs
 * the main loop in that private mode while the app launches, it is not a
 * common mode, and a launch hang happens there. Adding an observer to a
 * mode creates the mode if needed; on macOS it stays unused. The nesting
 * count starts at 1 when the loop is already running as we attach
 * (CFRunLoopCopyCurrentMode is non-NULL only between a run's Entry and
 * Exit), so the Exit of the run we were attached from is still idle.
 *
 * CoreFoundation is found at run time, never linked: dlopen with
 * RTLD_NOLOAD hands back the framework only if the process already has it
 * (every UIKit/AppKit/Foundation app does), and a plain C tool without it
 * gets SNAP_EUNSUPPORTED — it has no run loop to watch. The CF headers are
 * used for types only; each function pointer's type is checked against
 * the header's declaration at compile time.
 *
 * Attaching twice to one run loop is harmless: attached run loops are
 * remembered (a few slots, under a mutex — this is set-up code) and a
 * second call returns SNAP_OK. Each remembered run loop is retained, so
 * its address can never be reused by a new run loop that would then be
 * mistaken for one already watched. Observers live as long as their run
 * loop; there is no detach.
 *
 * Must not: load or link CoreFoundation; do anything in the observers but
 * one step of the state machine and the call it answers (they run on every
 * iteration of the app's main loop).
 */
#include <CoreFoundation/CFRunLoop.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>

#include "platform/darwin/darwin.h"
#include "platform/darwin/runloop_nesting.h"

#define CF_PATH                                                                \
  "/System/Library/Frameworks/CoreFoundation.framework/CoreFoundation"

typedef CFRunLoopRef (*get_main_fn)(void);
typedef CFRunLoopObserverRef (*observer_create_fn)(CFAllocatorRef,
                                                   CFOptionFlags, Boolean,
                                                   CFIndex,
                                                   CFRunLoopObserverCallBack,
                                                   CFRunLoopObserverContext *);
typedef void (*add_observer_fn)(CFRunLoopRef, CFRunLoopObserverRef,
                                CFRunLoopMode);
typedef CFStringRef (*copy_mode_fn)(CFRunLoopRef);
typedef CFStringRef (*string_create_fn)(CFAllocatorRef, const char *,
                                        CFStringEncoding);
typedef CFTypeRef (*retain_fn)(CFTypeRef);
typedef void (*release_fn)(CFTypeRef);

/* The types must be the header's: a mismatch would be a silent ABI bug. */
#define SAME_TYPE(fn, type)                                                    \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&fn), type),          \
                 #fn " has changed type")
SAME_TYPE(CFRunLoopGetMain, get_main_fn);
SAME_TYPE(CFRunLoopObserverCreate, observer_create_fn);
SAME_TYPE(CFRunLoopAddObserver, add_observer_fn);
SAME_TYPE(CFRunLoopCopyCurrentMode, copy_mode_fn);
SAME_TYPE(CFStringCreateWithCString, string_create_fn);
SAME_TYPE(CFRetain, retain_fn);

/* The state machine's activity values are CF's. */
_Static_assert(SNAP__RL_ENTRY == kCFRunLoopEntry &&
                   SNAP__RL_BEFORE_TIMERS == kCFRunLoopBeforeTimers &&
                   SNAP__RL_BEFORE_SOURCES == kCFRunLoopBeforeSources &&
                   SNAP__RL_BEFORE_WAITING == kCFRunLoopBeforeWaiting &&
                   SNAP__RL_AFTER_WAITING == kCFRunLoopAfterWaiting &&
                   SNAP__RL_EXIT == kCFRunLoopExit,
               "CFRunLoopActivity values");

/* UIKit's private launch mode (not a common mode). */
#define UI_INIT_MODE "UIInitializationRunLoopMode"
SAME_TYPE(CFRelease, release_fn);

typedef struct cf_api {
  get_main_fn get_main;
  observer_create_fn observer_create;
  add_observer_fn add_observer;
  copy_mode_fn copy_mode;
  string_create_fn string_create;
  retain_fn retain;
  release_fn release;
  const CFRunLoopMode *common_modes; /* the address of the constant */
} cf_api_t;

#define MAX_LOOPS 8

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
/* What the observers call (the lag layer's busy/idle), stored before the
   first observer is added. */
static _Atomic(const snap__loop_hooks_t *) g_hooks;
static cf_api_t g_cf;                   /* under g_lock */
static CFRunLoopRef g_loops[MAX_LOOPS]; /* attached (and retained) */
static int g_nloops;
/* One nesting state per attached loop, the observers' context: written
   only by that loop's thread, in its observers, once attached. */
static snap__rl_nesting_t g_nest[MAX_LOOPS];

/* dlsym hands back data pointers; the casts to function pointers are the
   POSIX-sanctioned use of it. */
#define FIND(h, api, field, name) (*(void **)(&(api)->field) = dlsym(h, name))

/* With no lock of ours held: dlopen and dlsym take the loader's lock, and
   a library constructor that attaches while holding it must never wait for
   ours (the order that deadlocked the symbol cache once). A failure is not
   remembered: the app may load CoreFoundation later and attach again. */
static bool find_cf(cf_api_t *api) {
  /* The reference NOLOAD adds is kept: observers point into the library.
     If the path does not answer (a simulator runtime laid out otherwise),
     the global scope holds CoreFoundation's symbols when it is loaded. */
  void *h = dlopen(CF_PATH, RTLD_LAZY | RTLD_NOLOAD);
  if (!h)
    h = RTLD_DEFAULT;
  return FIND(h, api, get_main, "CFRunLoopGetMain") &&
         FIND(h, api, observer_create, "CFRunLoopObserverCreate") &&
         FIND(h, api, add_observer, "CFRunLoopAddObserver") &&
         FIND(h, api, copy_mode, "CFRunLoopCopyCurrentMode") &&
         FIND(h, api, string_create, "CFStringCreateWithCString") &&
         FIND(h, api, retain, "CFRetain") &&
         FIND(h, api, release, "CFRelease") &&
         FIND(h, api, common_modes, "kCFRunLoopCommonModes");
}

/* Both observers: the earliest (LONG_MIN) and the latest (LONG_MAX) of
   their activities; the state machine tells which call to make. */
static void on_activity(CFRunLoopObserverRef obs, CFRunLoopActivity act,
                        void *info) {
  (void)obs;
  const snap__loop_hooks_t *h =
      atomic_load_explicit(&g_hooks, memory_order_acquire);
  switch (snap__rl_nesting_step(info, (unsigned)act)) {
  case SNAP__RL_BUSY: h->busy(); break;
  case SNAP__RL_IDLE: h->idle(); break;
  case SNAP__RL_NOTHING: break;
  }
}

/* Under g_lock, g_cf filled. CoreFoundation's calls here take no loader
   lock. */
static int attach(CFRunLoopRef rl) {
  for (int i = 0; i < g_nloops; i++)
    if (g_loops[i] == rl)
      return SNAP_OK; /* already watched */
  if (g_nloops == MAX_LOOPS)
    return SNAP_ENOMEM;
  snap__rl_nesting_t *nest = &g_nest[g_nloops];
  CFRunLoopObserverContext ctx = {0, nest, NULL, NULL, NULL};
  CFRunLoopObserverRef first = g_cf.observer_create(
      NULL, kCFRunLoopEntry | kCFRunLoopAfterWaiting | kCFRunLoopBeforeSources,
      true, LONG_MIN, on_activity, &ctx);
  CFRunLoopObserverRef last =
      g_cf.observer_create(NULL, kCFRunLoopBeforeWaiting | kCFRunLoopExit, true,
                           LONG_MAX, on_activity, &ctx);
  CFStringRef init_mode =
      g_cf.string_create(NULL, UI_INIT_MODE, kCFStringEncodingUTF8);
  if (!first || !last || !init_mode) {
    if (first)
      g_cf.release(first);
    if (last)
      g_cf.release(last);
    if (init_mode)
      g_cf.release(init_mode);
    return SNAP_ENOMEM;
  }
  /* Before the observers can fire: a run already going (we are attached
     from one of its handlers, or the loop runs on another thread) has had
     its Entry. Only whether a run is going can be known, not how deep, and
     a run starting or ending on another thread right now can be miscounted
     by one. A miscount changes only what an Exit means, and it lasts: one
     too many leaves every outermost Exit busy until the next BeforeWaiting
     (harmless where the loop re-enters at once, as UIKit's and AppKit's
     main loops do; the watchdog watches the main loop); one too few makes
     the Exit of a run nested one level idle, as before nesting was
     counted. Counting 1 matters: the main loop's outermost run, which we
     are usually attached from, never exits, so its Entry is never seen.
     The CF lock that CFRunLoopAddObserver takes publishes this state to
     the loop's thread. */
  CFStringRef running = g_cf.copy_mode(rl);
  snap__rl_nesting_init(nest, running ? 1u : 0u, running != NULL);
  if (running)
    g_cf.release(running);
  CFRunLoopMode common = *g_cf.common_modes;
  g_cf.add_observer(rl, first, common);
  g_cf.add_observer(rl, last, common);
  g_cf.add_observer(rl, first, init_mode);
  g_cf.add_observer(rl, last, init_mode);
  g_cf.release(init_mode); /* the run loop keeps its own mode name */
  g_cf.release(first);     /* the run loop holds them now */
  g_cf.release(last);
  g_loops[g_nloops++] = (CFRunLoopRef)g_cf.retain(rl);
  return SNAP_OK;
}

int snap__plat_attach_runloop(void *runloop, const snap__loop_hooks_t *hooks) {
  if (!hooks || !hooks->busy || !hooks->idle)
    return SNAP_EINVAL;
  cf_api_t api;
  if (!find_cf(&api))
    return SNAP_EUNSUPPORTED;
  CFRunLoopRef rl = runloop ? (CFRunLoopRef)runloop : api.get_main();
  if (!rl)
    return SNAP_EUNSUPPORTED;
  pthread_mutex_lock(&g_lock);
  atomic_store_explicit(&g_hooks, hooks, memory_order_release);
  g_cf = api; /* the same addresses every time */
  int rc = attach(rl);
  pthread_mutex_unlock(&g_lock);
  return rc;
}
