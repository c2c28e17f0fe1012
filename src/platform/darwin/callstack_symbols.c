/*
 * callstack_symbols.c — the system symbol provider on Apple: the names
 * +[NSThread callStackSymbols] would print.
 *
 * Foundation's private _NSCallStackArray does the work behind
 * callStackSymbols. Its contract, as class-dumps (iOS 14.2, 15.2) and
 * decompilations (iOS 18.0, 18.2) of Foundation show it (sources in
 * docs/apple.md, "Contract: _NSCallStackArray"):
 *  - +arrayWithFrames:(void **)frames count:(NSUInteger)count
 *    symbols:(BOOL)wantSyms stores `frames` itself, no copy, and -dealloc
 *    calls free(_frames): from the call on, the buffer is the array's. It
 *    must come from malloc, and the caller never frees it.
 *    +[NSThread callStackSymbols] mallocs it, passes it, never frees it.
 *  - It sets _ignore = 2 and _cnt = count - 2 (0 when count < 2): the
 *    first two entries are never printed (in callStackSymbols they are its
 *    own frames).
 *  - -count is _cnt. -objectAtIndex: i, i < _cnt, is line i of
 *    backtrace_symbols(&_frames[_ignore], _cnt) (made once) as an NSString,
 *    or, if backtrace_symbols failed, an NSNumber of the address; i >= _cnt
 *    raises NSRangeException.
 *
 * Algorithm, per batch of n addresses:
 *  1. frames = two empty entries for the class to skip, our n addresses,
 *     and two more empty entries past the counted ones (a class skipping
 *     more than it subtracts from count would read those: a 0 names
 *     nothing); count = n + 2. Inside our own autorelease pool: the array;
 *     for each k below its -count, element k's -description (an
 *     NSString's is itself; an NSNumber's is a string, where -UTF8String
 *     would raise), its UTF-8, parsed (callstack_lines.c). A line is
 *     matched to our pcs by the address it prints, never by its position:
 *     an OS whose class skips another number of entries leaves pcs
 *     unnamed, never named wrongly. Every pc with that address is named.
 *     Popping the pool frees the array, and its -dealloc frees frames; we
 *     free frames only when the array is nil.
 *  2. Any address still unnamed gets dladdr.
 * Neither step keeps a name that does not start inside the function
 * holding the pc, by the image's __unwind_info (snap__plat_function_bounds,
 * compact_unwind.c): both are dladdr underneath, and dyld's dladdr answers
 * the closest exported symbol at or below the address, so in a stripped
 * image (an embedded framework in a release build) a function that is not
 * exported is named after the exported one before it, and lag reports
 * group its time under that wrong name. Such a pc stays unnamed: the core
 * prints image + offset (docs/lag.md). Where the bounds are unknown (no
 * __unwind_info, or pc not in it) the name is kept. Limit: ld64 folds
 * adjacent functions with the same encoding into one entry, so a neighbour
 * inside the same entry still passes (docs/apple.md, "Names in release
 * builds").
 * Neither step takes a placeholder for a name: the parser refuses Libc's
 * (the image's own name, its UUID, "<redacted>", a hex number), step 2
 * refuses dladdr's "<redacted>", and both refuse a symbol that starts at
 * its image's base: the Mach-O header (_mh_execute_header, _mh_dylib_header)
 * is the nearest symbol below code that has none, not a function.
 *
 * The Objective-C runtime is reached through dlsym at first use, not
 * linked: a process that never loaded libobjc or Foundation (a plain C
 * tool) still works, through dladdr, and users link nothing extra. The
 * class and its method are checked before any message is sent, since an
 * unrecognised selector would raise in the host app. Messages go through
 * objc_messaging.h (objc_msgSend here; GCC's runtime in the Linux test).
 *
 * SNAP_NO_PRIVATE_API (CMake option, or the define in a SwiftPM or
 * CocoaPods build; docs/apple.md, "App Store: private names") leaves step 1
 * out, class and selector names included: naming is dladdr alone, which is
 * what the class itself asks underneath (backtrace_symbols), less the
 * names dladdr refuses here.
 *
 * Must not: run in the stopped window (ObjC messages and dladdr take
 * runtime and loader locks), checked, not only promised; free a buffer the
 * array owns; read a line as a frame's by its position; let an object
 * outlive the call.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "platform/darwin/callstack_lines.h"
#include "platform/darwin/darwin.h"
#include "platform/darwin/objc_messaging.h"

#ifndef SNAP_NO_PRIVATE_API
/* The runtime entry points we use, found once. */
typedef struct objc_api {
  Class (*get_class)(const char *);
  SEL (*sel)(const char *);
  Method (*class_method)(Class, SEL);
  void *(*pool_push)(void);
  void (*pool_pop)(void *);
  snap__objc_fn send; /* objc_msgSend (objc_messaging.h) */
  Class cls;
  SEL make, count, at, describe, utf8;
} objc_api_t;

static objc_api_t g_objc;
static bool g_objc_ok;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* dlsym hands back data pointers; the casts to function pointers are the
   POSIX-sanctioned use of it. */
#define FIND(field, name)                                                      \
  (*(void **)(&g_objc.field) = dlsym(RTLD_DEFAULT, name))

static void find_objc(void) {
  if (!FIND(get_class, "objc_getClass") || !FIND(sel, "sel_registerName") ||
      !FIND(class_method, "class_getClassMethod") ||
      !FIND(pool_push, "objc_autoreleasePoolPush") ||
      !FIND(pool_pop, "objc_autoreleasePoolPop") ||
      !FIND(send, SNAP__OBJC_DISPATCH))
    return;
  g_objc.cls = g_objc.get_class("_NSCallStackArray");
  if (!g_objc.cls)
    return; /* Foundation is not loaded */
  g_objc.make = g_objc.sel("arrayWithFrames:count:symbols:");
  g_objc.count = g_objc.sel("count");
  g_objc.at = g_objc.sel("objectAtIndex:");
  g_objc.describe = g_objc.sel("description");
  g_objc.utf8 = g_objc.sel("UTF8String");
  g_objc_ok = g_objc.class_method(g_objc.cls, g_objc.make) != NULL;
}
#endif /* SNAP_NO_PRIVATE_API */

typedef struct namer {
  const snap__plat_sym_query_t *q;
  int n;
  bool *named;
  char *buf; /* the current name, NUL-terminated */
  size_t cap;
  snap__plat_sym_cb cb;
  void *ctx;
} namer_t;

static void answer(namer_t *nm, int i, const char *name, size_t len,
                   uintptr_t symbol_addr) {
  if (len + 1 > nm->cap) {
    char *b = realloc(nm->buf, len + 1);
    if (!b)
      return; /* unnamed: the core shows image + offset */
    nm->buf = b;
    nm->cap = len + 1;
  }
  memcpy(nm->buf, name, len);
  nm->buf[len] = '\0';
  nm->named[i] = true;
  nm->cb(i, nm->buf, symbol_addr, nm->ctx);
}

/* Whether a name (the class's or dladdr's) whose function starts at sym can be
   q's: sym lies in the function holding q->addr, or that function's bounds are
   unknown. */
static bool starts_inside(const snap__plat_sym_query_t *q, uintptr_t sym) {
  uintptr_t start, end;
  if (!q->func_index ||
      !snap__plat_function_bounds(q->func_index, q->func_index_size,
                                  q->image_base, q->addr, &start, &end))
    return true;
  return sym >= start && sym < end;
}

#ifndef SNAP_NO_PRIVATE_API
/* The function that runs selector `sel` for `recv`, as type T. */
#define METHOD(T, recv, sel) ((T)snap__objc_method(g_objc.send, (recv), (sel)))

/* Entries before and after ours in the class's buffer (see the head). */
enum { SKIPPED = 2, SPARE = 2 };

/* Names every pc still unnamed that has the line's address. */
static void name_by_line(namer_t *nm, const snap__cs_line_t *l) {
  if (!l->symbol || !l->addr || l->offset > l->addr)
    return;
  uintptr_t start = l->addr - l->offset;
  for (int i = 0; i < nm->n; i++) {
    const snap__plat_sym_query_t *q = &nm->q[i];
    if (!nm->named[i] && q->addr == l->addr && start != q->image_base &&
        starts_inside(q, start))
      answer(nm, i, l->symbol, l->symbol_len, start);
  }
}

/* Step 1: the lines of _NSCallStackArray. Each line scans the n pcs:
   quadratic, but n is one stack's pcs and every line has cost the class a
   dladdr already. */
static void name_by_class(namer_t *nm) {
  const objc_api_t *o = &g_objc;
  size_t count = (size_t)nm->n + SKIPPED;
  void **frames = calloc(count + SPARE, sizeof *frames); /* free()-able */
  if (!frames)
    return;
  for (int i = 0; i < nm->n; i++)
    frames[SKIPPED + i] = (void *)nm->q[i].addr;

  void *pool = o->pool_push();
  id arr = METHOD(id(*)(Class, SEL, void **, unsigned long, BOOL), o->cls,
                  o->make)(o->cls, o->make, frames, (unsigned long)count, YES);
  if (!arr) {
    free(frames); /* the class took nothing */
  } else {
    /* frames is the array's now: popping the pool frees both. */
    unsigned long lines =
        METHOD(unsigned long (*)(id, SEL), arr, o->count)(arr, o->count);
    if (lines > count)
      lines = count; /* more lines than entries: not the class we know */
    for (unsigned long k = 0; k < lines; k++) {
      id item =
          METHOD(id(*)(id, SEL, unsigned long), arr, o->at)(arr, o->at, k);
      id text =
          item ? METHOD(id(*)(id, SEL), item, o->describe)(item, o->describe)
               : NULL;
      const char *line =
          text ? METHOD(const char *(*)(id, SEL), text, o->utf8)(text, o->utf8)
               : NULL;
      snap__cs_line_t parsed;
      if (line && snap__cs_line_parse(line, strlen(line), &parsed))
        name_by_line(nm, &parsed);
    }
  }
  o->pool_pop(pool);
}

#endif /* SNAP_NO_PRIVATE_API */

/* Step 2: dladdr for whatever is still unnamed. */
static void name_by_dladdr(namer_t *nm) {
  for (int i = 0; i < nm->n; i++) {
    Dl_info info;
    if (nm->named[i] || !nm->q[i].addr ||
        !dladdr((const void *)nm->q[i].addr, &info) || !info.dli_sname ||
        !info.dli_saddr || info.dli_saddr == info.dli_fbase ||
        strcmp(info.dli_sname, "<redacted>") == 0 ||
        !starts_inside(&nm->q[i], (uintptr_t)info.dli_saddr))
      continue; /* no name, a Mach-O header, a name dyld hides, or a
                   neighbour's */
    answer(nm, i, info.dli_sname, strlen(info.dli_sname),
           (uintptr_t)info.dli_saddr);
  }
}

int snap__plat_symbolize(const snap__plat_sym_query_t *q, int n,
                         snap__plat_sym_cb cb, void *ctx) {
  if (n < 0 || (n > 0 && (!q || !cb)))
    return SNAP_EINVAL;
  if (snap__plat_in_stopped_window())
    return SNAP_EINVAL; /* would deadlock on a lock the target holds */
  if (n == 0)
    return SNAP_OK;
  namer_t nm = {q, n, calloc((size_t)n, sizeof(bool)), NULL, 0, cb, ctx};
  if (!nm.named)
    return SNAP_ENOMEM;
#ifndef SNAP_NO_PRIVATE_API
  pthread_once(&g_once, find_objc);
  if (g_objc_ok)
    name_by_class(&nm);
#endif
  name_by_dladdr(&nm);
  free(nm.buf);
  free(nm.named);
  return SNAP_OK;
}

/* Apple keeps line tables out of the shipped binary: dsymutil moves the
   DWARF into a .dSYM bundle that never reaches a device, and the only
   system readers (CoreSymbolication, atos) are private or macOS-only. */
int snap__plat_source_line(const snap__plat_sym_query_t *q,
                           snap__plat_line_cb cb, void *ctx) {
  (void)q;
  (void)cb;
  (void)ctx;
  return SNAP_EUNSUPPORTED;
}
