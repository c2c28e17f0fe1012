/*
 * callstack_symbols.c — the system symbol provider on Apple: the names
 * +[NSThread callStackSymbols] would print.
 *
 * Algorithm, per batch of addresses:
 *  1. Foundation's private _NSCallStackArray does the work behind
 *     callStackSymbols: +arrayWithFrames:count:symbols: takes raw addresses
 *     and its elements describe themselves as the familiar lines. We call
 *     it with all n addresses, read each element's description as UTF-8,
 *     and parse it (callstack_lines.c). A line's address must equal the one
 *     asked for; its symbol's address is address - offset.
 *  2. Any address the class did not name (no class, a line we could not
 *     parse, a placeholder name) gets dladdr: dli_sname and dli_saddr.
 *
 * The Objective-C runtime is reached through dlsym at first use, not
 * linked: a process that never loaded libobjc or Foundation (a plain C
 * tool) still works, through dladdr, and users link nothing extra. The
 * class and its method are checked before any message is sent, since an
 * unrecognised selector would raise in the host app. Messages run inside an
 * autorelease pool we push and pop, so no object outlives the call.
 *
 * Must not: run in the stopped window (ObjC messages and dladdr take
 * runtime and loader locks); that is checked, not only promised.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "platform/darwin/callstack_lines.h"
#include "platform/darwin/darwin.h"
#include "platform/darwin/objc_messaging.h"

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

/* The function that runs selector `sel` for `recv`, as type T. */
#define METHOD(T, recv, sel) ((T)snap__objc_method(g_objc.send, (recv), (sel)))

/* Step 1: the lines of _NSCallStackArray. */
static void name_by_class(namer_t *nm) {
  void **frames = malloc((size_t)nm->n * sizeof *frames);
  if (!frames)
    return;
  for (int i = 0; i < nm->n; i++)
    frames[i] = (void *)nm->q[i].addr;

  const objc_api_t *o = &g_objc;
  void *pool = o->pool_push();
  id arr = METHOD(id(*)(Class, SEL, void **, unsigned long, BOOL), o->cls,
                  o->make)(o->cls, o->make, frames, (unsigned long)nm->n, YES);
  unsigned long count =
      arr ? METHOD(unsigned long (*)(id, SEL), arr, o->count)(arr, o->count)
          : 0;
  for (unsigned long k = 0; k < count && k < (unsigned long)nm->n; k++) {
    id item = METHOD(id(*)(id, SEL, unsigned long), arr, o->at)(arr, o->at, k);
    id text =
        item ? METHOD(id(*)(id, SEL), item, o->describe)(item, o->describe)
             : NULL;
    const char *line =
        text ? METHOD(const char *(*)(id, SEL), text, o->utf8)(text, o->utf8)
             : NULL;
    snap__cs_line_t parsed;
    if (!line || !snap__cs_line_parse(line, strlen(line), &parsed))
      continue;
    int i = (int)k;
    if (parsed.addr != nm->q[i].addr || !parsed.symbol ||
        parsed.offset > parsed.addr)
      continue;
    answer(nm, i, parsed.symbol, parsed.symbol_len,
           parsed.addr - parsed.offset);
  }
  o->pool_pop(pool);
  free(frames);
}

/* Step 2: dladdr for whatever is still unnamed. */
static void name_by_dladdr(namer_t *nm) {
  for (int i = 0; i < nm->n; i++) {
    Dl_info info;
    if (nm->named[i] || !nm->q[i].addr ||
        !dladdr((const void *)nm->q[i].addr, &info) || !info.dli_sname ||
        !info.dli_saddr || strcmp(info.dli_sname, "<redacted>") == 0)
      continue;
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
  pthread_once(&g_once, find_objc);
  if (g_objc_ok)
    name_by_class(&nm);
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
