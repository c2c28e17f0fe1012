/*
 * objc_fixture.h — the C face of the Objective-C fixture (objc_fixture.m,
 * built by gcc with GCC's libobjc) and of the plug-in it can load later
 * (objc_plugin.m). Plain C, so the test itself builds with any compiler.
 */
#ifndef SNAP_TEST_OBJC_FIXTURE_H
#define SNAP_TEST_OBJC_FIXTURE_H

#include <stdint.h>

/* One method, as the runtime describes it, run once. */
typedef struct objc_probe {
  const char *name; /* "-[Class sel]" / "+[Class sel]", spelled by hand */
  uintptr_t imp;    /* from the runtime: method_getImplementation */
  uintptr_t inside; /* a return address inside the body, minus one */
} objc_probe_t;

#define OBJC_FIXTURE_PROBES 5

/* Runs each of the fixture's methods once and describes it. */
void objc_fixture_probes(objc_probe_t out[OBJC_FIXTURE_PROBES]);

/* A plain C function placed after every method of the fixture; returns an
   address inside its own body. */
uintptr_t objc_fixture_after_methods(void);

/* Calls fn(ctx) from inside -[SnapShape visit:context:]; returns that
   method's IMP from the runtime. */
uintptr_t objc_fixture_visit(void (*fn)(void *ctx), void *ctx);

/* The plug-in's entry point (dlsym "objc_plugin_probe"): runs
   -[SnapPlugin work] and describes it. */
typedef void (*objc_plugin_probe_fn)(objc_probe_t *out);

#endif
