/*
 * callstack_standin.h — the knobs and counters of callstack_standin.m, a
 * Linux stand-in for Foundation's _NSCallStackArray (GCC's runtime), shared
 * with test_callstack_class.c. Every knob's default is the contract of
 * docs/apple.md "Contract: _NSCallStackArray"; the others model what
 * another OS version or a failure could do.
 */
#ifndef SNAP_TEST_CALLSTACK_STANDIN_H
#define SNAP_TEST_CALLSTACK_STANDIN_H

#include <stdint.h>

/* ---- Knobs --------------------------------------------------------------- */

/* Entries +arrayWithFrames:count:symbols: skips (_ignore; _cnt is count
   minus it). Foundation: 2. */
extern unsigned long cs_standin_ignore;
/* +arrayWithFrames:count:symbols: returns nil and keeps nothing. */
extern int cs_standin_return_nil;
/* backtrace_symbols fails (returns NULL): the elements are then numbers
   (NSNumber of the address), as in Foundation. */
extern int cs_standin_symbols_fail;
/* _dyld_get_image_uuid succeeds: a "<redacted>" symbol is printed as the
   image's UUID with the offset from the image base (Libc today); otherwise
   "<redacted>" itself is printed with the offset from dli_saddr. */
extern int cs_standin_have_uuid;

/* ---- What the stand-in saw ----------------------------------------------- */

/* Nonzero while the stand-in's backtrace_symbols calls dladdr (the test's
   dladdr uses it to answer only the class when it models "names only the
   class can give"). */
extern volatile int cs_standin_formatting;
extern unsigned long cs_standin_made;      /* arrays created */
extern unsigned long cs_standin_freed;     /* -dealloc: free(_frames) ran */
extern unsigned long cs_standin_bad_index; /* objectAtIndex: past count */
/* The lines of the last backtrace_symbols, for failure messages. */
#define CS_STANDIN_LINES 32
extern char cs_standin_lines[CS_STANDIN_LINES][256];
extern int cs_standin_nlines;

/* Resets every knob to the contract and every counter to 0. */
void cs_standin_reset(void);

/* Foundation's autorelease pool entry points, which GCC's runtime lacks
   (GNUstep's libobjc2 has them): the stand-in provides them, and the code
   under test finds them with dlsym as on Apple. */
void *objc_autoreleasePoolPush(void);
void objc_autoreleasePoolPop(void *pool);

#endif /* SNAP_TEST_CALLSTACK_STANDIN_H */
