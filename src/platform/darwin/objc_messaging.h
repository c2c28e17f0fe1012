/*
 * objc_messaging.h — how callstack_symbols.c sends an Objective-C message,
 * per runtime. The only difference between the two runtimes it is built for
 * is here; the runtime entry points themselves are found with dlsym.
 *
 *  - Apple's runtime (iOS, macOS: the shipped code): the types come from
 *    <objc/objc.h>, and a message is a call of objc_msgSend cast to the
 *    method's exact type. snap__objc_method hands back objc_msgSend itself,
 *    so each call site compiles to the very objc_msgSend call it would be
 *    without this header.
 *  - GCC's runtime (libobjc, the GNU ABI; only the Linux test of the Apple
 *    naming code, tests/darwin/test_callstack_class.c): it has no
 *    objc_msgSend. objc_msg_lookup(receiver, selector) returns the method's
 *    implementation, which is then called with the same arguments. GCC's
 *    <objc/objc.h> is in GCC's private include directory, which clang does
 *    not search, so the few types are declared here with GCC's definitions
 *    (BOOL is unsigned char there).
 *
 * Must not: hold state, or differ between the runtimes in anything but the
 * dispatch.
 */
#ifndef SNAP_PLATFORM_DARWIN_OBJC_MESSAGING_H
#define SNAP_PLATFORM_DARWIN_OBJC_MESSAGING_H

/* A function pointer of no particular type: cast to the method's exact type
   at each call. */
typedef void (*snap__objc_fn)(void);

#if defined(__APPLE__)
#include <objc/objc.h>
#include <objc/runtime.h>

/* What dlsym finds for sending. */
#define SNAP__OBJC_DISPATCH "objc_msgSend"

/* The function to call as (receiver, selector, arguments...): objc_msgSend,
   which finds the method and jumps to it. */
static inline snap__objc_fn
snap__objc_method(snap__objc_fn dispatch, const void *receiver, SEL selector) {
  (void)receiver;
  (void)selector;
  return dispatch;
}

#else /* GCC's runtime */
typedef struct objc_object *id;
typedef struct objc_class *Class;
typedef const struct objc_selector *SEL;
typedef struct objc_method *Method;
typedef unsigned char BOOL;
#define YES ((BOOL)1)
#define NO ((BOOL)0)

#define SNAP__OBJC_DISPATCH "objc_msg_lookup"

/* objc_msg_lookup's answer for (receiver, selector): the method itself (a
   do-nothing function for a nil receiver, as objc_msgSend does nothing). */
static inline snap__objc_fn
snap__objc_method(snap__objc_fn dispatch, const void *receiver, SEL selector) {
  return ((snap__objc_fn(*)(const void *, SEL))dispatch)(receiver, selector);
}
#endif

#endif /* SNAP_PLATFORM_DARWIN_OBJC_MESSAGING_H */
