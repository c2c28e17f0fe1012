/*
 * demangle.c — human-readable names for C++ and Swift symbols, through the
 * demanglers the language runtimes themselves ship.
 *
 * Owns: snap__plat_demangle, shared by the Linux and Apple backends, so it
 * uses POSIX and <dlfcn.h> only (RTLD_DEFAULT exists on glibc and Apple).
 * Must not: link against a C++ or Swift runtime (a C program using
 * stacksnap must not gain libstdc++ or libswiftCore), or run in the stopped
 * window: dlsym and dlopen take the loader lock and the demanglers allocate.
 *
 * Algorithm:
 *   1. The prefix says the language. C++ (Itanium ABI): "_Z", spelled "__Z"
 *      in Apple symbol tables (one more leading underscore). Swift: "$s",
 *      "$S", "$e", "_T0", and the same with Apple's extra underscore.
 *      Anything else is not mangled: NULL, with no lookup at all.
 *   2. C++: __cxa_demangle from whatever is loaded (dlsym(RTLD_DEFAULT)).
 *      If no C++ runtime is loaded, dlopen it once — libstdc++.so.6 on
 *      Linux, /usr/lib/libc++abi.dylib on Apple — and keep it loaded for
 *      good (the function pointer must stay valid). Loading a library from
 *      inside a symbolicator is acceptable here because this runs only on
 *      the symbol cache's miss path, on a thread that asked for names,
 *      never in the stopped window; the cost is paid once per process. A
 *      failed load is remembered: a process without the runtime asks once.
 *   3. Swift: swift_demangle, looked up with dlsym only, never loaded: a
 *      Swift-mangled name in the process means its runtime is loaded
 *      already, and dlopening libswiftCore would run its initialisers in a
 *      program that never wanted Swift. Not found is not remembered (the
 *      runtime may come later with a dlopen'ed Swift library); Swift names
 *      without a runtime are rare enough that the repeated dlsym costs
 *      nothing that matters.
 *
 * Thread safety: the C++ lookup runs once, claimed by an atomic (see
 * cxx_state); the Swift pointer is an atomic written by whoever finds it
 * first (every finder finds the same function). No lock: nothing here can
 * be inherited held by a forked child. A lookup claimed by a thread that
 * does not exist in the child is given back there (the child handler), so
 * the child demangles C++ too.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"
#include "platform/posix/locks.h"

typedef char *(*cxa_demangle_fn)(const char *mangled, char *buf, size_t *len,
                                 int *status);
typedef char *(*swift_demangle_fn)(const char *mangled, size_t mangled_len,
                                   char *out, size_t *out_size, uint32_t flags);

#if defined(__APPLE__)
#define SNAP_CXX_RUNTIME "/usr/lib/libc++abi.dylib"
/* Mach-O symbol tables prefix every C symbol with '_'. */
#define SNAP_EXTRA_UNDERSCORE 1
#else
#define SNAP_CXX_RUNTIME "libstdc++.so.6"
#define SNAP_EXTRA_UNDERSCORE 0
#endif

/* ---- C++ ---------------------------------------------------------------- */

/* 0: not looked up; 1: a thread is looking; 2: done (cxx_demangle set or
   NULL for good). Not pthread_once: a thread inside dlopen (a library
   constructor naming a stack) holds the loader's lock, and waiting there
   for another thread's lookup — itself waiting for that lock in dlopen —
   would deadlock. A thread that finds the lookup under way does not wait:
   its name stays mangled this once. */
static atomic_int cxx_state;
static _Atomic(cxa_demangle_fn) cxx_demangle;

static void cxx_lookup(void) {
  void *sym = dlsym(RTLD_DEFAULT, "__cxa_demangle");
  if (!sym) {
    /* RTLD_LOCAL: the runtime's symbols must not start satisfying lookups
       of the program's own libraries. The handle is never closed. */
    snap__fork_gate_enter(); /* dlopen edits the loader's list: locks.h */
    void *lib = dlopen(SNAP_CXX_RUNTIME, RTLD_NOW | RTLD_LOCAL);
    snap__fork_gate_leave();
    if (lib)
      sym = dlsym(lib, "__cxa_demangle");
  }
  /* NULL: remembered as absent */
  atomic_store_explicit(&cxx_demangle, (cxa_demangle_fn)sym,
                        memory_order_release);
}

/* In a forked child: a lookup some parent thread had claimed will never
   finish there; the next caller makes it. */
static void cxx_fork_child(void) {
  int claimed = 1;
  atomic_compare_exchange_strong(&cxx_state, &claimed, 0);
}

static pthread_once_t cxx_hook_once = PTHREAD_ONCE_INIT;
static void cxx_hook(void) {
  (void)snap__plat_on_fork(SNAP__FORK_DEMANGLER, NULL, NULL, cxx_fork_child);
}

static char *demangle_cxx(const char *mangled) {
  /* Read first: once the lookup is done (every call but the first few),
     threads demangling at once write no shared cache line here. */
  int expected = atomic_load_explicit(&cxx_state, memory_order_acquire);
  if (expected != 2) {
    pthread_once(&cxx_hook_once, cxx_hook);
    if (expected == 0 &&
        atomic_compare_exchange_strong(&cxx_state, &expected, 1)) {
      cxx_lookup();
      atomic_store(&cxx_state, 2);
    } else if (expected == 1) {
      return NULL;
    }
  }
  cxa_demangle_fn fn =
      atomic_load_explicit(&cxx_demangle, memory_order_acquire);
  if (!fn)
    return NULL;
  int status = -1;
  char *out = fn(mangled, NULL, NULL, &status);
  if (status != 0) { /* -2: not a valid name; -1: out of memory */
    free(out);
    return NULL;
  }
  return out;
}

/* ---- Swift -------------------------------------------------------------- */

static _Atomic(swift_demangle_fn) swift_fn;

static char *demangle_swift(const char *mangled) {
  swift_demangle_fn fn = atomic_load_explicit(&swift_fn, memory_order_acquire);
  if (!fn) {
    fn = (swift_demangle_fn)dlsym(RTLD_DEFAULT, "swift_demangle");
    if (!fn)
      return NULL;
    atomic_store_explicit(&swift_fn, fn, memory_order_release);
  }
  /* NULL buffer: the runtime mallocs the result (with the process's
     malloc, so the caller's free matches). */
  return fn(mangled, strlen(mangled), NULL, NULL, 0);
}

/* ---- Dispatch ----------------------------------------------------------- */

static bool has_prefix(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool is_swift(const char *s) {
  return has_prefix(s, "$s") || has_prefix(s, "$S") || has_prefix(s, "$e") ||
         has_prefix(s, "_T0");
}

char *snap__plat_demangle(const char *name) {
  if (!name)
    return NULL;
  /* Apple's extra underscore goes; swift_demangle accepts both spellings
     but __cxa_demangle wants "_Z". */
  /* Every mangled spelling starts with '_' or '$'; a plain C name (most
     names) goes without the prefix tests below. */
  if (name[0] != '_' && name[0] != '$')
    return NULL;
  const char *s = name;
  if (SNAP_EXTRA_UNDERSCORE && s[0] == '_' && (s[1] == '_' || s[1] == '$'))
    s++;
  if (s[0] == '_' && s[1] == 'Z')
    return demangle_cxx(s);
  if (is_swift(s) || (s[0] == '_' && is_swift(s + 1)))
    return demangle_swift(s);
  return NULL;
}
