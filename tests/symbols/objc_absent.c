/*
 * objc_absent.c (test_objc_absent) — a C program with no Objective-C
 * runtime gets no method names, quickly and without loading one; a runtime
 * dlopen'ed later is found (the "absent" answer is not kept forever).
 *
 * Oracle: GCC's libobjc itself, reached through dlsym after the dlopen:
 * the IMP of -[Object isEqual:] (a method of the runtime's own root class).
 */
#include <dlfcn.h>
#include <string.h>

#include "check.h"
#include "platform/linux/objc_names.h"

typedef void *(*get_class_fn)(const char *);
typedef void *(*register_fn)(const char *);
typedef void *(*instance_method_fn)(void *, void *);
typedef void *(*imp_fn)(void *);

int main(void) {
  CHECK(dlsym(RTLD_DEFAULT, "objc_getClassList") == NULL,
        "an Objective-C runtime is loaded: this test needs a process without");
  CHECK(dlopen(OBJC_RUNTIME_SONAME, RTLD_NOW | RTLD_NOLOAD) == NULL,
        "%s is loaded before the test", OBJC_RUNTIME_SONAME);

  char buf[64] = "untouched";
  uintptr_t here = (uintptr_t)&main;
  for (int i = 0; i < 3; i++)
    CHECK(snap__linux_objc_method(here, 0, buf, sizeof buf) == 0,
          "no runtime, yet an answer");
  CHECK(strcmp(buf, "untouched") == 0, "buf written: \"%s\"", buf);
  CHECK(dlopen(OBJC_RUNTIME_SONAME, RTLD_NOW | RTLD_NOLOAD) == NULL,
        "the lookup loaded %s", OBJC_RUNTIME_SONAME);

  void *objc = dlopen(OBJC_RUNTIME_SONAME, RTLD_NOW | RTLD_GLOBAL);
  CHECK(objc != NULL, "dlopen %s: %s", OBJC_RUNTIME_SONAME, dlerror());
  if (!objc)
    return check_result("test_objc_absent");
  get_class_fn get_class = (get_class_fn)dlsym(objc, "objc_getClass");
  register_fn sel = (register_fn)dlsym(objc, "sel_registerName");
  instance_method_fn method =
      (instance_method_fn)dlsym(objc, "class_getInstanceMethod");
  imp_fn imp_of = (imp_fn)dlsym(objc, "method_getImplementation");
  CHECK(get_class && sel && method && imp_of, "libobjc lacks its API");
  if (!(get_class && sel && method && imp_of))
    return check_result("test_objc_absent");
  void *object = get_class("Object");
  CHECK(object != NULL, "libobjc has no Object class");
  uintptr_t imp =
      object ? (uintptr_t)imp_of(method(object, sel("isEqual:"))) : 0;
  CHECK(imp != 0, "no IMP for -[Object isEqual:]");

  uintptr_t got = snap__linux_objc_method(imp, 0, buf, sizeof buf);
  CHECK(got == imp, "after dlopen: 0x%lx, the runtime says 0x%lx",
        (unsigned long)got, (unsigned long)imp);
  CHECK(strcmp(buf, "-[Object isEqual:]") == 0, "named \"%s\"", buf);
  return check_result("test_objc_absent");
}
