/*
 * runloop.c — the lag watchdog's adapter for CFRunLoop, the loop every
 * Apple app's main thread runs: two run-loop observers that call
 * snap_lag_loop_busy and snap_lag_loop_idle, so the app needs no manual
 * calls.
 *
 * One iteration of a run loop, as CFRunLoopRun reports it to observers:
 *   Entry → BeforeTimers → BeforeSources → (sources, blocks, maybe the main
 *   queue) → BeforeWaiting → sleep → AfterWaiting → (the timer, port or
 *   main-queue work that woke it) → BeforeTimers → … → Exit.
 * The loop's busy stretch runs from waking to the next sleep:
 *  - busy on AfterWaiting (it woke up) and BeforeSources (an iteration
 *    that did not sleep is still work, and a nested run's first iteration
 *    starts here), with order LONG_MIN: observers run in ascending order,
 *    so ours comes before any other observer of the same activity and the
 *    time they take counts as busy;
 *  - idle on BeforeWaiting (about to sleep) and Exit (the run ends, e.g. a
 *    nested modal run returning), with order LONG_MAX: after every other
 *    observer — Core Animation's commit, UIKit's layout, the autorelease
 *    pool's drain all run at BeforeWaiting, and their cost is the app's.
 * WeChat's Matrix and Apple's own hang detection bracket the run loop the
 * same way: the first observer starts the clock, the last one stops it.
 * The observers sit in kCFRunLoopCommonModes, so scrolling (the tracking
 * mode) and modal panels are watched, not only the default mode.
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
 * the two calls (they run on every iteration of the app's main loop).
 */
#include <CoreFoundation/CFRunLoop.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>

#include "platform/darwin/darwin.h"

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
typedef CFTypeRef (*retain_fn)(CFTypeRef);
typedef void (*release_fn)(CFTypeRef);

/* The types must be the header's: a mismatch would be a silent ABI bug. */
#define SAME_TYPE(fn, type)                                                    \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&fn), type),          \
                 #fn " has changed type")
SAME_TYPE(CFRunLoopGetMain, get_main_fn);
SAME_TYPE(CFRunLoopObserverCreate, observer_create_fn);
SAME_TYPE(CFRunLoopAddObserver, add_observer_fn);
SAME_TYPE(CFRetain, retain_fn);
SAME_TYPE(CFRelease, release_fn);

typedef struct cf_api {
  get_main_fn get_main;
  observer_create_fn observer_create;
  add_observer_fn add_observer;
  retain_fn retain;
  release_fn release;
  const CFRunLoopMode *common_modes; /* the address of the constant */
} cf_api_t;

#define MAX_LOOPS 8

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static cf_api_t g_cf;                   /* under g_lock */
static CFRunLoopRef g_loops[MAX_LOOPS]; /* attached (and retained) */
static int g_nloops;

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
         FIND(h, api, retain, "CFRetain") &&
         FIND(h, api, release, "CFRelease") &&
         FIND(h, api, common_modes, "kCFRunLoopCommonModes");
}

static void on_busy(CFRunLoopObserverRef obs, CFRunLoopActivity act,
                    void *info) {
  (void)obs, (void)act, (void)info;
  snap_lag_loop_busy();
}

static void on_idle(CFRunLoopObserverRef obs, CFRunLoopActivity act,
                    void *info) {
  (void)obs, (void)act, (void)info;
  snap_lag_loop_idle();
}

/* Under g_lock, g_cf filled. CoreFoundation's calls here take no loader
   lock. */
static int attach(CFRunLoopRef rl) {
  for (int i = 0; i < g_nloops; i++)
    if (g_loops[i] == rl)
      return SNAP_OK; /* already watched */
  if (g_nloops == MAX_LOOPS)
    return SNAP_ENOMEM;
  CFRunLoopObserverRef busy = g_cf.observer_create(
      NULL, kCFRunLoopAfterWaiting | kCFRunLoopBeforeSources, true, LONG_MIN,
      on_busy, NULL);
  CFRunLoopObserverRef idle =
      g_cf.observer_create(NULL, kCFRunLoopBeforeWaiting | kCFRunLoopExit, true,
                           LONG_MAX, on_idle, NULL);
  if (!busy || !idle) {
    if (busy)
      g_cf.release(busy);
    if (idle)
      g_cf.release(idle);
    return SNAP_ENOMEM;
  }
  CFRunLoopMode modes = *g_cf.common_modes;
  g_cf.add_observer(rl, busy, modes);
  g_cf.add_observer(rl, idle, modes);
  g_cf.release(busy); /* the run loop holds them now */
  g_cf.release(idle);
  g_loops[g_nloops++] = (CFRunLoopRef)g_cf.retain(rl);
  return SNAP_OK;
}

int snap__plat_attach_runloop(void *runloop) {
  cf_api_t api;
  if (!find_cf(&api))
    return SNAP_EUNSUPPORTED;
  CFRunLoopRef rl = runloop ? (CFRunLoopRef)runloop : api.get_main();
  if (!rl)
    return SNAP_EUNSUPPORTED;
  pthread_mutex_lock(&g_lock);
  g_cf = api; /* the same addresses every time */
  int rc = attach(rl);
  pthread_mutex_unlock(&g_lock);
  return rc;
}
