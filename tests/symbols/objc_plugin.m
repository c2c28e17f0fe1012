/*
 * objc_plugin.m — a class that arrives after the first lookup: a shared
 * module (built by gcc, linked with libobjc) that test_objc_names dlopens,
 * so the method table must notice the new class and rebuild.
 */
#include <objc/Object.h>
#include <objc/runtime.h>

#include "objc_fixture.h"

static uintptr_t last_inside;
static __attribute__((noinline)) void note_here(void) {
  last_inside = (uintptr_t)__builtin_return_address(0) - 1;
  __asm__ volatile("" ::: "memory");
}

@interface SnapPlugin : Object
+ (void)work;
@end

@implementation SnapPlugin
+ (void)work {
  note_here();
}
@end

void objc_plugin_probe(objc_probe_t *out);
void objc_plugin_probe(objc_probe_t *out) {
  [SnapPlugin work];
  Class c = objc_getClass("SnapPlugin");
  Method m = class_getClassMethod(c, sel_registerName("work"));
  *out = (objc_probe_t){"+[SnapPlugin work]",
                        (uintptr_t)method_getImplementation(m), last_inside};
}
