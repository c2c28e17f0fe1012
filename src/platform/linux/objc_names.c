/*
 * objc_names.c — Objective-C method names from the Objective-C runtime, so
 * methods are named even in a stripped binary (the strategy
 * PLCrashReporter uses on Apple: the runtime knows every method's IMP).
 *
 * Owns: snap__linux_objc_method and its table of IMPs.
 * Must not: link against libobjc (a C program must not gain it), or run in
 * the stopped window (it allocates, locks and calls into the runtime).
 * Must not hold its own lock while calling anything outside this file: a
 * +load method runs inside dlopen holding the loader lock (and, in GCC's
 * runtime, the runtime's own lock), and may ask for a stack (a hooked API
 * called from +load); if we held our lock while waiting for theirs, that
 * thread would deadlock against us. So the table lock is a leaf: it guards
 * a pointer swap, a binary search and one snprintf.
 *
 * Algorithm:
 *   1. Find the runtime with dlsym(RTLD_DEFAULT): objc_getClassList,
 *      class_copyMethodList, method_getImplementation, method_getName,
 *      sel_getName, class_getName, and the metaclass through
 *      object_getClass where the runtime exports it (GNUstep's libobjc2,
 *      Apple) or objc_getMetaClass(class_getName(c)) where it is an inline
 *      function (GCC's libobjc). Declared here with opaque pointers instead
 *      of <objc/runtime.h>: the library builds with any C compiler, with or
 *      without an Objective-C toolchain. Not found: remembered until the
 *      image list changes (the runtime may arrive with a dlopen), so a
 *      process without Objective-C pays one images-stamp read per call.
 *   2. The table: every class and metaclass method's (IMP, class name,
 *      selector name), sorted by IMP. Names are the runtime's own strings,
 *      which live as long as the class: GCC's runtime has no way to
 *      unregister one, so unloading an image that defines classes would
 *      leave the runtime itself with dangling classes; programs don't.
 *   3. The table is keyed by the class count (objc_getClassList(NULL, 0))
 *      and the images stamp: a new class, or a dlopen'ed image (which may
 *      bring categories onto existing classes without a new class), makes
 *      the next call rebuild it outside the lock and swap it in (of two
 *      concurrent builds, the one whose keys were read later). Methods
 *      added one by one with class_addMethod between loads are missed until
 *      the next rebuild: their names fall back to the ELF symbols.
 *   4. Lookup: binary search for the highest IMP <= addr; it must be above
 *      floor (the caller's nearest ELF symbol), else there is no answer.
 *      Several methods sharing one IMP are reported by the first in a fixed
 *      order (IMP, class methods last, class name, selector), so the answer
 *      does not depend on the runtime's list order.
 *
 * Memory is bounded: at most SNAP_OBJC_MAX_METHODS entries (8 MiB) a
 * table, twice that for the moment a rebuild overlaps the table it
 * replaces. That is far more methods than GNUstep's base and GUI libraries
 * together define (tens of thousands); past it the remaining methods are
 * left to the ELF symbols.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/linux/linux.h"
#include "platform/linux/objc_names.h"

#define SNAP_OBJC_MAX_METHODS (1u << 18)

/* ---- The runtime, found at run time ------------------------------------- */

/* Class, Method and SEL are pointers to runtime structures and IMP a
   function pointer; all are passed and returned as plain pointers by the
   ABIs we run on, so void * stands for each. */
typedef struct objc_api {
  int (*get_class_list)(void **out, int max);
  void **(*copy_method_list)(void *cls, unsigned *count);
  void *(*method_imp)(void *method);
  void *(*method_name)(void *method);
  const char *(*sel_name)(void *sel);
  const char *(*class_name)(void *cls);
  void *(*object_class)(void *obj);          /* NULL in GCC's runtime */
  void *(*meta_class)(const char *cls_name); /* the fallback */
} objc_api_t;

/* Guards the copy into api. Made on first use (platform.h,
   snap__lazy_lock_t). */
static snap__lazy_lock_t api_lock;
static objc_api_t api;         /* complete before api_ready is set */
static atomic_bool api_ready;  /* release-set once, never cleared */
static atomic_ullong api_miss; /* images stamp + 1 of the last failed probe */
/* The core's image table generation at the last failed probe (or at a
   later call that found the stamp unchanged): a caller naming under that
   generation needs no stamp read (one dl_iterate_phdr, with the loader's
   lock: half the cost of a cold lookup's platform part in a process
   without Objective-C). 0: none. */
static atomic_ullong api_miss_gen;

static void *sym(const char *name) { return dlsym(RTLD_DEFAULT, name); }

static bool api_probe(objc_api_t *a) {
  typedef int (*class_list_fn)(void **, int);
  typedef void **(*method_list_fn)(void *, unsigned *);
  typedef void *(*ptr_fn)(void *);
  typedef const char *(*name_fn)(void *);
  typedef void *(*meta_fn)(const char *);
  a->get_class_list = (class_list_fn)sym("objc_getClassList");
  a->copy_method_list = (method_list_fn)sym("class_copyMethodList");
  a->method_imp = (ptr_fn)sym("method_getImplementation");
  a->method_name = (ptr_fn)sym("method_getName");
  a->sel_name = (name_fn)sym("sel_getName");
  a->class_name = (name_fn)sym("class_getName");
  a->object_class = (ptr_fn)sym("object_getClass");
  a->meta_class = (meta_fn)sym("objc_getMetaClass");
  return a->get_class_list && a->copy_method_list && a->method_imp &&
         a->method_name && a->sel_name && a->class_name &&
         (a->object_class || a->meta_class);
}

/* The runtime's entry points, or NULL when no runtime is loaded.
   generation: the caller's image table generation (0: unknown); a table
   that has not changed since a probe failed cannot hold a runtime the
   probe missed. */
static const objc_api_t *api_get(uint64_t generation) {
  if (atomic_load_explicit(&api_ready, memory_order_acquire))
    return &api;
  if (generation &&
      atomic_load_explicit(&api_miss_gen, memory_order_relaxed) == generation)
    return NULL;
  unsigned long long stamp = snap__plat_images_stamp() + 1;
  if (atomic_load_explicit(&api_miss, memory_order_relaxed) == stamp) {
    atomic_store_explicit(&api_miss_gen, generation, memory_order_relaxed);
    return NULL; /* nothing was loaded since we last looked */
  }
  objc_api_t found = {0};
  if (!api_probe(&found)) {
    atomic_store_explicit(&api_miss, stamp, memory_order_relaxed);
    atomic_store_explicit(&api_miss_gen, generation, memory_order_relaxed);
    return NULL;
  }
  snap__plat_lazy_lock(&api_lock);
  if (!atomic_load_explicit(&api_ready, memory_order_relaxed)) {
    api = found;
    atomic_store_explicit(&api_ready, true, memory_order_release);
  }
  snap__plat_lazy_unlock(&api_lock);
  return &api;
}

/* ---- The table ---------------------------------------------------------- */

typedef struct objc_entry {
  uintptr_t imp;
  const char *cls; /* the runtime's string */
  const char *sel; /* the runtime's string */
  bool meta;       /* a class method: "+[...]" */
} objc_entry_t;

typedef struct objc_table {
  objc_entry_t *e;
  size_t n, cap;   /* cap <= SNAP_OBJC_MAX_METHODS */
  int classes;     /* key: objc_getClassList(NULL, 0) when built */
  uint64_t stamp;  /* key: snap__plat_images_stamp() when built */
  uint64_t ticket; /* when its keys were read (g_tickets): newer wins */
} objc_table_t;

/* Guards `current` only; a leaf lock (see the head comment). Made on
   first use (platform.h, snap__lazy_lock_t). */
static snap__lazy_lock_t table_lock;
static objc_table_t *current;
/* Taken before a build reads its keys: a table with a later ticket saw
   the runtime and the image list at least as late. */
static atomic_ullong g_tickets;

static int entry_cmp(const void *pa, const void *pb) {
  const objc_entry_t *a = pa, *b = pb;
  if (a->imp != b->imp)
    return a->imp < b->imp ? -1 : 1;
  if (a->meta != b->meta)
    return a->meta ? 1 : -1;
  int c = strcmp(a->cls, b->cls);
  return c ? c : strcmp(a->sel, b->sel);
}

/* Appends the methods of cls (a class, or its metaclass when meta), as
   many as the cap leaves room for. False only when out of memory. */
static bool add_methods(const objc_api_t *a, objc_table_t *t, void *cls,
                        const char *cls_name, bool meta) {
  unsigned count = 0;
  void **methods = a->copy_method_list(cls, &count);
  if (!methods)
    return true; /* no methods */
  size_t want = t->n + count;
  if (want > SNAP_OBJC_MAX_METHODS)
    want = SNAP_OBJC_MAX_METHODS;
  if (want > t->cap) {
    size_t cap = t->cap * 2 > want ? t->cap * 2 : want;
    if (cap > SNAP_OBJC_MAX_METHODS)
      cap = SNAP_OBJC_MAX_METHODS;
    objc_entry_t *e = realloc(t->e, cap * sizeof *e);
    if (!e) {
      free(methods);
      return false;
    }
    t->e = e;
    t->cap = cap;
  }
  for (unsigned i = 0; i < count && t->n < t->cap; i++) {
    uintptr_t imp = (uintptr_t)a->method_imp(methods[i]);
    const char *sel = a->sel_name(a->method_name(methods[i]));
    if (imp && sel)
      t->e[t->n++] = (objc_entry_t){imp, cls_name, sel, meta};
  }
  free(methods); /* the runtime mallocs the list for its caller */
  return true;
}

/* A fresh table of every method the runtime knows; NULL when out of
   memory. Runs without any lock of ours. */
static objc_table_t *table_build(const objc_api_t *a, int classes,
                                 uint64_t stamp) {
  objc_table_t *t = calloc(1, sizeof *t);
  void **list = classes > 0 ? malloc((size_t)classes * sizeof *list) : NULL;
  if (!t || (classes > 0 && !list))
    goto fail;
  t->classes = classes;
  t->stamp = stamp;
  /* Apple's runtime returns the total count, GCC's the number written:
     either way no more than we gave room for. */
  int got = classes > 0 ? a->get_class_list(list, classes) : 0;
  if (got > classes)
    got = classes;
  for (int i = 0; i < got; i++) {
    const char *name = a->class_name(list[i]);
    if (!name)
      continue;
    void *meta =
        a->object_class ? a->object_class(list[i]) : a->meta_class(name);
    if (!add_methods(a, t, list[i], name, false) ||
        (meta && !add_methods(a, t, meta, name, true)))
      goto fail;
  }
  free(list);
  if (t->n)
    qsort(t->e, t->n, sizeof *t->e, entry_cmp);
  return t;
fail:
  free(list);
  if (t)
    free(t->e);
  free(t);
  return NULL;
}

static void table_free(objc_table_t *t) {
  if (t)
    free(t->e);
  free(t);
}

/* Under table_lock: the answer from t, as snap__linux_objc_method. */
static uintptr_t table_lookup(const objc_table_t *t, uintptr_t addr,
                              uintptr_t lo, char *buf, size_t size) {
  /* First entry with imp > addr. */
  size_t l = 0, r = t->n;
  while (l < r) {
    size_t mid = l + (r - l) / 2;
    if (t->e[mid].imp <= addr)
      l = mid + 1;
    else
      r = mid;
  }
  if (l == 0)
    return 0;
  size_t i = l - 1;
  while (i > 0 && t->e[i - 1].imp == t->e[i].imp)
    i--; /* the first of those sharing this IMP */
  const objc_entry_t *e = &t->e[i];
  if (e->imp <= lo)
    return 0;
  if (size > 0)
    snprintf(buf, size, "%c[%s %s]", e->meta ? '+' : '-', e->cls, e->sel);
  return e->imp;
}

bool snap__linux_objc_prepare(uint64_t images_generation) {
  const objc_api_t *a = api_get(images_generation);
  if (!a)
    return false;
  uint64_t ticket = atomic_fetch_add(&g_tickets, 1) + 1;
  int classes = a->get_class_list(NULL, 0);
  uint64_t stamp = snap__plat_images_stamp();

  snap__plat_lazy_lock(&table_lock);
  bool up_to_date =
      current && current->classes == classes && current->stamp == stamp;
  snap__plat_lazy_unlock(&table_lock);
  if (up_to_date)
    return true;

  /* Stale or missing: build outside the lock (the runtime takes its own
     locks), then publish. Two threads may both build, the one that read
     its keys before a dlopen finishing after the one that read them
     since: the table with the later ticket stays (a stale one published
     last hid a loaded plugin's methods from the thread that had just
     built them: test_objc_names, 1 run in 20 under qemu). */
  objc_table_t *fresh = table_build(a, classes, stamp);
  if (!fresh)
    return false;
  fresh->ticket = ticket;
  snap__plat_lazy_lock(&table_lock);
  objc_table_t *old = current;
  if (!old || old->ticket < fresh->ticket)
    current = fresh;
  else
    old = fresh; /* built on older keys than the one in place */
  snap__plat_lazy_unlock(&table_lock);
  table_free(old);
  return true;
}

uintptr_t snap__linux_objc_lookup(uintptr_t addr, uintptr_t lo, char *buf,
                                  size_t size) {
  if (!buf && size)
    return 0;
  snap__plat_lazy_lock(&table_lock);
  uintptr_t imp = current ? table_lookup(current, addr, lo, buf, size) : 0;
  snap__plat_lazy_unlock(&table_lock);
  return imp;
}

uintptr_t snap__linux_objc_method(uintptr_t addr, uintptr_t lo, char *buf,
                                  size_t size) {
  if (!buf && size)
    return 0;
  return snap__linux_objc_prepare(0)
             ? snap__linux_objc_lookup(addr, lo, buf, size)
             : 0;
}
