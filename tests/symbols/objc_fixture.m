/*
 * objc_fixture.m — classes with instance and class methods for
 * test_objc_names, built by gcc (GCC's libobjc, the GNU runtime) whatever
 * compiler builds the rest. The executable it goes into is stripped, so
 * the only way to name these methods is the runtime.
 *
 * GCC 12's runtime has no NSObject and its Object has no +alloc: SnapRoot
 * derives from Object and allocates with class_createInstance.
 */
#include <objc/Object.h>
#include <objc/runtime.h>

#include "objc_fixture.h"

/* The return address of this call lies inside the method calling it. */
static uintptr_t last_inside;
static __attribute__((noinline)) void note_here(void) {
  last_inside = (uintptr_t)__builtin_return_address(0) - 1;
  __asm__ volatile("" ::: "memory");
}

static volatile int sink;

@interface SnapRoot : Object
+ (id)alloc;
@end

@implementation SnapRoot
+ (id)alloc {
  return class_createInstance(self, 0);
}
@end

@interface SnapShape : SnapRoot {
  int width, height;
}
+ (id)shapeWithWidth:(int)w height:(int)h;
+ (int)count;
- (int)area;
- (void)setWidth:(int)w height:(int)h;
- (void)visit:(void (*)(void *))fn context:(void *)ctx;
@end

@implementation SnapShape
+ (id)shapeWithWidth:(int)w height:(int)h {
  SnapShape *s = [self alloc];
  [s setWidth:w height:h];
  note_here();
  return s;
}
+ (int)count {
  note_here();
  return sink + 1;
}
- (int)area {
  note_here();
  return width * height + sink;
}
- (void)setWidth:(int)w height:(int)h {
  width = w;
  height = h;
  note_here();
  sink = w;
}
- (void)visit:(void (*)(void *))fn context:(void *)ctx {
  fn(ctx);
  sink++; /* keeps the call from being a tail call */
}
@end

@interface SnapShape (Scaling)
- (void)scaleBy:(int)k;
@end

@implementation SnapShape (Scaling)
- (void)scaleBy:(int)k {
  width *= k;
  note_here();
  height *= k;
}
@end

static uintptr_t imp_of(Class c, const char *sel, int meta) {
  SEL s = sel_registerName(sel);
  Method m = meta ? class_getClassMethod(c, s) : class_getInstanceMethod(c, s);
  return (uintptr_t)method_getImplementation(m);
}

void objc_fixture_probes(objc_probe_t out[OBJC_FIXTURE_PROBES]) {
  Class c = objc_getClass("SnapShape");
  int i = 0;

  SnapShape *s = [SnapShape shapeWithWidth:2 height:3];
  out[i++] =
      (objc_probe_t){"+[SnapShape shapeWithWidth:height:]",
                     imp_of(c, "shapeWithWidth:height:", 1), last_inside};
  sink = [SnapShape count];
  out[i++] =
      (objc_probe_t){"+[SnapShape count]", imp_of(c, "count", 1), last_inside};
  sink = [s area];
  out[i++] =
      (objc_probe_t){"-[SnapShape area]", imp_of(c, "area", 0), last_inside};
  [s setWidth:4 height:5];
  out[i++] = (objc_probe_t){"-[SnapShape setWidth:height:]",
                            imp_of(c, "setWidth:height:", 0), last_inside};
  [s scaleBy:2];
  out[i++] = (objc_probe_t){"-[SnapShape scaleBy:]", imp_of(c, "scaleBy:", 0),
                            last_inside};
  object_dispose(s);
}

uintptr_t objc_fixture_visit(void (*fn)(void *ctx), void *ctx) {
  SnapShape *s = [SnapShape shapeWithWidth:1 height:1];
  [s visit:fn context:ctx];
  object_dispose(s);
  return imp_of(objc_getClass("SnapShape"), "visit:context:", 0);
}

/* Last in the file and built after the methods: the test checks that it
   really lies above every IMP before relying on it. */
__attribute__((noinline)) uintptr_t objc_fixture_after_methods(void) {
  note_here();
  return last_inside;
}
