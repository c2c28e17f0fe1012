/*
 * libstacksnap_audit.c — an LD_PRELOAD library that tells who in a program
 * calls sensitive functions: the privacy-compliance job, on any program.
 *
 *   LD_PRELOAD=.../libstacksnap_audit.so some-program args...
 *
 * Owns: the interposed getaddrinfo, connect, open, openat, open64,
 * openat64 and fopen (file opens only for paths under a prefix), the table
 * of distinct call sites, and the report written at exit.
 * Must not: abort or change the behaviour of the host (every hook calls
 * the real function, found with dlsym(RTLD_NEXT), and returns its result
 * with its errno), record its own calls or stacksnap's (a thread-local
 * guard: naming a stack opens ELF files, and loading a demangler opens
 * libraries, all through these same hooks), or print before exit.
 *
 * Environment:
 *   STACKSNAP_AUDIT_PREFIX  file opens are recorded only for paths starting
 *                           with it; default "/etc/"
 *   STACKSNAP_AUDIT_APP     colon-separated image path prefixes that count
 *                           as the app (snap_set_app_image_prefixes);
 *                           default: the main executable's directory tree
 *   STACKSNAP_AUDIT_FULL    "1": record every frame, not the app's only
 *   STACKSNAP_AUDIT_OUT     the report's file (appended to, so the reports
 *                           of forked or exec'ed children add up instead
 *                           of overwriting each other); default stderr
 *   STACKSNAP_AUDIT_JSON    also the same sites as JSON to this file
 *                           (replaced; "-<pid>" appended when it exists
 *                           already, for children): frames and images in
 *                           the lag report's schema-2 shape, so
 *                           stacksnap-symbolicate names a stripped
 *                           program's sites later (issue 15)
 *
 * The text report ends with the images its frames point into, with their
 * build ids: what names an "image + offset" frame later.
 *
 * What a call site is: the stack of app frames above the hook, from
 * snap_callstack_symbols(.., SNAP_CAPTURE_APP_ONLY). That is what a user
 * can act on ("this function of mine resolves a host"). But for a
 * preloaded tool "the app" is only the main executable's tree by default,
 * and a call can have no app frame at all: curl resolves names on a thread
 * libcurl starts, python's C stack is the interpreter's. So when the
 * app-only stack is empty, the whole stack is recorded instead (the hook's
 * own frames skipped) and the report says so; STACKSNAP_AUDIT_APP widens
 * the app (e.g. curl plus libcurl), STACKSNAP_AUDIT_FULL always records
 * whole stacks.
 *
 * Identity: the cache hands back the same stack object for the same pcs
 * while it holds it, so a site is first looked up by that pointer (one
 * probe per call). The site keeps a reference, so the object outlives any
 * eviction; but after an eviction the cache names the same pcs into a new
 * object, so a pointer miss falls back to comparing the frames' pcs with
 * the known sites, and a match adopts the new pointer. The site's text is
 * formatted when the site is first seen, so the report at exit needs
 * nothing from stacksnap.
 *
 * Limits: at most MAX_SITES distinct sites (further ones are counted as
 * "not kept"); a hooked call made from a signal handler that interrupted
 * malloc or this library's lock could deadlock, as any allocating hook
 * would; programs that end with _exit() or are killed write no report.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "stacksnap.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_FRAMES 32
#define MAX_SITES 4096
#define INDEX_SLOTS (2 * MAX_SITES) /* open addressing, <= 1/2 full */
#define ARG_CHARS 120

/* ---- The guard ------------------------------------------------------------
 * Set while this thread is inside a hook's bookkeeping (or writing the
 * report): any hooked call made meanwhile — by stacksnap opening an ELF
 * file, by libc, by dlsym — goes straight to the real function.
 * initial-exec: a preloaded library gets static TLS, and the first access
 * must not allocate (the default model may call malloc inside
 * __tls_get_addr). */
static __thread int t_busy __attribute__((tls_model("initial-exec")));

/* ---- Settings (read once, on the first recorded call) ---------------------
 */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static const char *g_prefix = "/etc/";
static size_t g_prefix_len = 5;
static bool g_full;
static const char *g_out;
static const char *g_json; /* STACKSNAP_AUDIT_JSON */
static uintptr_t g_self_base;              /* this library's load address */
static uintptr_t g_self_start, g_self_end; /* its code: [start, end) */

static void setup(void) {
  const char *p = getenv("STACKSNAP_AUDIT_PREFIX");
  if (p && *p) {
    g_prefix = p;
    g_prefix_len = strlen(p);
  }
  p = getenv("STACKSNAP_AUDIT_FULL");
  g_full = p && strcmp(p, "1") == 0;
  g_out = getenv("STACKSNAP_AUDIT_OUT");
  g_json = getenv("STACKSNAP_AUDIT_JSON");
  snap_image_info_t self = {.size = sizeof self};
  if (snap_image_lookup((uintptr_t)setup, &self) == SNAP_OK) {
    g_self_base = self.base;
    g_self_start = self.start;
    g_self_end = self.end;
  }

  p = getenv("STACKSNAP_AUDIT_APP");
  if (p && *p) {
    /* The prefixes are copied by stacksnap; this copy only splits them. */
    char *copy = strdup(p);
    const char *list[64];
    int n = 0;
    for (char *save = NULL, *tok = copy ? strtok_r(copy, ":", &save) : NULL;
         tok && n < 64; tok = strtok_r(NULL, ":", &save))
      list[n++] = tok;
    if (n > 0)
      (void)snap_set_app_image_prefixes(list, n);
    free(copy);
  }
}

/* ---- Call sites ------------------------------------------------------------
 */

enum { API_GETADDRINFO, API_CONNECT, API_OPEN, API_FOPEN, API_COUNT };
static const char *const k_api[API_COUNT] = {"getaddrinfo", "connect", "open",
                                             "fopen"};

typedef struct site {
  const snap_stack_t *stack; /* one reference: keeps the identity alive */
  int api;                   /* an API_* index ("open" covers its variants) */
  const char *fn;            /* the hooked function's own name */
  bool full;                 /* no app frame: the whole stack was kept */
  uint64_t count;
  char arg[ARG_CHARS]; /* the first call's host or path */
  char *text;          /* the stack's lines, formatted when first seen */
} site_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static site_t g_sites[MAX_SITES];
static int g_nsites;
static int g_index[INDEX_SLOTS]; /* site number + 1; 0 = empty */
static uint64_t g_calls, g_not_kept;

static size_t slot_of(const snap_stack_t *s, int api) {
  uint64_t h = ((uint64_t)(uintptr_t)s ^ (uint64_t)api) * 0x9e3779b97f4a7c15u;
  return (size_t)(h >> 40) % INDEX_SLOTS;
}

static int index_find(const snap_stack_t *s, int api) {
  for (size_t i = slot_of(s, api);; i = (i + 1) % INDEX_SLOTS) {
    int k = g_index[i];
    if (k == 0)
      return -1;
    if (g_sites[k - 1].stack == s && g_sites[k - 1].api == api)
      return k - 1;
  }
}

static void index_add(int site) {
  size_t i = slot_of(g_sites[site].stack, g_sites[site].api);
  while (g_index[i] != 0)
    i = (i + 1) % INDEX_SLOTS;
  g_index[i] = site + 1;
}

/* Rebuilds the pointer index (after a site adopted a new stack object). */
static void index_rebuild(void) {
  memset(g_index, 0, sizeof g_index);
  for (int i = 0; i < g_nsites; i++)
    index_add(i);
}

static bool same_frames(const snap_stack_t *a, const snap_stack_t *b) {
  int n = snap_stack_count(a);
  if (n != snap_stack_count(b))
    return false;
  for (int i = 0; i < n; i++)
    if (snap_stack_frame(a, i)->pc != snap_stack_frame(b, i)->pc)
      return false;
  return true;
}

/* The lines of s, minus frames in this library (when the user's app
   prefixes cover it), one per line; NULL when out of memory. */
static char *format_stack(const snap_stack_t *s) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return NULL;
  for (int i = 0; i < snap_stack_count(s); i++)
    if (snap_stack_frame(s, i)->image_base != g_self_base)
      fprintf(f, "    %s\n", snap_stack_line(s, i));
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* Counts one call of site (s, api); consumes the caller's reference. */
static void count_call(const snap_stack_t *s, int api, const char *fn,
                       bool full, const char *arg) {
  pthread_mutex_lock(&g_lock);
  g_calls++;
  int k = index_find(s, api);
  if (k < 0) /* a new object: a new site, or one the cache named again */
    for (int i = 0; i < g_nsites && k < 0; i++)
      if (g_sites[i].api == api && g_sites[i].full == full &&
          same_frames(g_sites[i].stack, s)) {
        k = i;
        snap_stack_release(g_sites[i].stack);
        g_sites[i].stack = s; /* adopt: the cache now hands out this one */
        s = NULL;
        index_rebuild();
      }
  if (k >= 0) {
    g_sites[k].count++;
  } else if (g_nsites < MAX_SITES) {
    site_t *site = &g_sites[g_nsites];
    site->stack = s;
    s = NULL;
    site->api = api;
    site->fn = fn;
    site->full = full;
    site->count = 1;
    snprintf(site->arg, sizeof site->arg, "%s", arg ? arg : "");
    site->text = format_stack(site->stack);
    index_add(g_nsites++);
  } else {
    g_not_kept++;
  }
  pthread_mutex_unlock(&g_lock);
  snap_stack_release(s); /* NULL when a site kept it */
}

/* The hook's bookkeeping, under the guard. */
static void record(int api, const char *fn, const char *arg) {
  int saved = errno; /* the real call's errno reaches the caller intact */
  pthread_once(&g_once, setup);
  const snap_stack_t *s = NULL;
  bool full = g_full;
  if (!full) {
    s = snap_callstack_symbols(MAX_FRAMES, SNAP_CAPTURE_APP_ONLY);
    if (s && snap_stack_count(s) == 0) {
      snap_stack_release(s);
      s = NULL;
      full = true;
    }
  }
  if (full) {
    /* Our own frames (this function, the hook, whatever the compiler
       inlined or not) are the leading pcs inside this library: drop them,
       so the stack starts at the hooked function's caller. */
    uintptr_t pcs[MAX_FRAMES + 8];
    int n = snap_capture_self(pcs, MAX_FRAMES + 8, 0, 0);
    int skip = 0;
    while (skip < n && pcs[skip] > g_self_start && pcs[skip] <= g_self_end)
      skip++;
    int keep = n - skip < MAX_FRAMES ? n - skip : MAX_FRAMES;
    s = n >= 0 ? snap_symbolicate(pcs + skip, keep, 0) : NULL;
  }
  if (s)
    count_call(s, api, fn, full, arg);
  errno = saved;
}

/* Enter/leave the guard; false when this thread is already inside. */
static bool enter(void) {
  if (t_busy)
    return false;
  t_busy = 1;
  return true;
}
static void leave(void) { t_busy = 0; }

static bool under_prefix(const char *path) {
  return path && strncmp(path, g_prefix, g_prefix_len) == 0;
}

/* ---- The real functions ----------------------------------------------------
 */

/* Looked up on first use. Two threads may both look up: they store the
   same pointer. dlsym may itself open files or allocate; the caller holds
   the guard, so those calls are not recorded. */
#define REAL(type, name)                                                       \
  static type real_##name(void) {                                              \
    static _Atomic(type) fn;                                                   \
    type f = atomic_load_explicit(&fn, memory_order_acquire);                  \
    if (!f) {                                                                  \
      f = (type)dlsym(RTLD_NEXT, #name);                                       \
      atomic_store_explicit(&fn, f, memory_order_release);                     \
    }                                                                          \
    return f;                                                                  \
  }

typedef int (*getaddrinfo_fn)(const char *, const char *,
                              const struct addrinfo *, struct addrinfo **);
typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);
typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef FILE *(*fopen_fn)(const char *, const char *);
REAL(getaddrinfo_fn, getaddrinfo)
REAL(connect_fn, connect)
REAL(open_fn, open)
REAL(open_fn, open64)
REAL(openat_fn, openat)
REAL(openat_fn, openat64)
REAL(fopen_fn, fopen)

/* ---- The hooks
 * --------------------------------------------------------------- Each: look up
 * the real function under the guard, call it outside the guard (a callback
 * inside it, e.g. an NSS module opening /etc files on the app's behalf, is the
 * app's call too), then record under the guard. A missing real function fails
 * with ENOSYS rather than crash. */

EXPORT int getaddrinfo(const char *node, const char *service,
                       const struct addrinfo *hints, struct addrinfo **res) {
  bool mine = enter();
  getaddrinfo_fn real = real_getaddrinfo();
  if (mine)
    leave();
  if (!real)
    return EAI_SYSTEM;
  int rc = real(node, service, hints, res);
  if (mine && enter()) {
    char arg[ARG_CHARS];
    snprintf(arg, sizeof arg, "%s%s%s", node ? node : "(null)",
             service ? " service " : "", service ? service : "");
    record(API_GETADDRINFO, "getaddrinfo", arg);
    leave();
  }
  return rc;
}

static void describe_addr(const struct sockaddr *sa, socklen_t len, char *out,
                          size_t size) {
  char ip[INET6_ADDRSTRLEN];
  if (!sa || len < (socklen_t)sizeof(sa_family_t)) {
    snprintf(out, size, "(no address)");
  } else if (sa->sa_family == AF_INET &&
             len >= (socklen_t)sizeof(struct sockaddr_in)) {
    const struct sockaddr_in *in = (const void *)sa;
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
    snprintf(out, size, "%s port %u", ip, ntohs(in->sin_port));
  } else if (sa->sa_family == AF_INET6 &&
             len >= (socklen_t)sizeof(struct sockaddr_in6)) {
    const struct sockaddr_in6 *in6 = (const void *)sa;
    inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
    snprintf(out, size, "[%s] port %u", ip, ntohs(in6->sin6_port));
  } else if (sa->sa_family == AF_UNIX) {
    const struct sockaddr_un *un = (const void *)sa;
    size_t max = (size_t)len - offsetof(struct sockaddr_un, sun_path);
    if (max > sizeof un->sun_path)
      max = sizeof un->sun_path;
    /* An abstract socket's name starts with a NUL: show it as '@'. */
    snprintf(out, size, "unix %s%.*s", un->sun_path[0] ? "" : "@",
             (int)(max ? max - !un->sun_path[0] : 0),
             un->sun_path + !un->sun_path[0]);
  } else {
    snprintf(out, size, "family %d", sa->sa_family);
  }
}

EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len) {
  bool mine = enter();
  connect_fn real = real_connect();
  if (mine)
    leave();
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  int rc = real(fd, addr, len);
  if (mine && enter()) {
    char arg[ARG_CHARS];
    describe_addr(addr, len, arg, sizeof arg);
    record(API_CONNECT, "connect", arg);
    leave();
  }
  return rc;
}

/* open's mode argument exists only with O_CREAT or O_TMPFILE. */
static bool has_mode(int flags) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

/* The shared body of the four open variants: dirfd < -1 means "no dirfd"
   (open, open64). A relative path under openat is not matched against the
   prefix: its directory is unknown here. */
static int open_common(open_fn (*get_open)(void), openat_fn (*get_openat)(void),
                       const char *fn, int dirfd, const char *path, int flags,
                       unsigned mode) {
  bool mine = enter();
  open_fn ro = get_open ? get_open() : NULL;
  openat_fn rat = get_openat ? get_openat() : NULL;
  bool watch = mine && (pthread_once(&g_once, setup), under_prefix(path));
  if (mine)
    leave();
  int rc;
  if (get_open && ro)
    rc = ro(path, flags, mode);
  else if (!get_open && rat)
    rc = rat(dirfd, path, flags, mode);
  else {
    errno = ENOSYS;
    return -1;
  }
  if (watch && enter()) {
    record(API_OPEN, fn, path);
    leave();
  }
  return rc;
}

#define OPEN_MODE(flags)                                                       \
  unsigned mode = 0;                                                           \
  if (has_mode(flags)) {                                                       \
    va_list ap;                                                                \
    va_start(ap, flags);                                                       \
    mode = va_arg(ap, unsigned);                                               \
    va_end(ap);                                                                \
  }

EXPORT int open(const char *path, int flags, ...) {
  OPEN_MODE(flags)
  return open_common(real_open, NULL, "open", -2, path, flags, mode);
}

EXPORT int open64(const char *path, int flags, ...) {
  OPEN_MODE(flags)
  return open_common(real_open64, NULL, "open64", -2, path, flags, mode);
}

EXPORT int openat(int dirfd, const char *path, int flags, ...) {
  OPEN_MODE(flags)
  return open_common(NULL, real_openat, "openat", dirfd, path, flags, mode);
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...) {
  OPEN_MODE(flags)
  return open_common(NULL, real_openat64, "openat64", dirfd, path, flags, mode);
}

EXPORT FILE *fopen(const char *path, const char *how) {
  bool mine = enter();
  fopen_fn real = real_fopen();
  bool watch = mine && (pthread_once(&g_once, setup), under_prefix(path));
  if (mine)
    leave();
  if (!real) {
    errno = ENOSYS;
    return NULL;
  }
  FILE *f = real(path, how);
  if (watch && enter()) {
    record(API_FOPEN, "fopen", path);
    leave();
  }
  return f;
}

/* ---- The report ------------------------------------------------------------
 * Written once, at exit, as one write (so the reports of several processes
 * appending to one file do not interleave line by line). */

/* ---- The images of the report, and its JSON ---------------------------- */

/* The frames of the sites' stacks that are not this library's, each image
   once (by path and base). */
typedef struct images {
  const snap_frame_t *v[256];
  int n;
} images_t;

static void images_add(images_t *im, const snap_stack_t *s) {
  for (int i = 0; i < snap_stack_count(s); i++) {
    const snap_frame_t *f = snap_stack_frame(s, i);
    if (!f->image_path || f->image_base == g_self_base)
      continue;
    int k = 0;
    while (k < im->n && !(im->v[k]->image_path == f->image_path &&
                          im->v[k]->image_base == f->image_base))
      k++;
    if (k == im->n && im->n < 256)
      im->v[im->n++] = f;
  }
}

/* A JSON string. Bytes past ASCII are written as \u00XX (read as
   Latin-1): a path need not be UTF-8, and the output must stay JSON. */
static void json_str(FILE *f, const char *s) {
  if (!s) {
    fputs("null", f);
    return;
  }
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p < 0x20 || *p >= 0x7f)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

static void json_frames(FILE *f, const snap_stack_t *s) {
  fputs("[", f);
  int k = 0;
  for (int i = 0; i < snap_stack_count(s); i++) {
    const snap_frame_t *fr = snap_stack_frame(s, i);
    if (fr->image_base == g_self_base)
      continue;
    fprintf(f, "%s\n    {\"pc\":\"0x%" PRIxPTR "\",\"image\":", k++ ? "," : "",
            fr->pc);
    json_str(f, fr->image);
    fputs(",\"symbol\":", f);
    json_str(f, fr->symbol);
    if (fr->image_path)
      fprintf(f, ",\"image_offset\":\"0x%" PRIxPTR "\"",
              fr->pc - fr->image_base);
    else
      fputs(",\"image_offset\":null", f);
    if (fr->symbol)
      fprintf(f, ",\"symbol_offset\":%" PRIuPTR, fr->pc - fr->symbol_addr);
    else
      fputs(",\"symbol_offset\":null", f);
    fprintf(f, ",\"in_app\":%s}", fr->in_app ? "true" : "false");
  }
  fputs("]", f);
}

/* The JSON form of the report into path (see STACKSNAP_AUDIT_JSON). */
static void write_json(const char *path, const images_t *im, const char *exe) {
  char name[4200];
  snprintf(name, sizeof name, "%s", path);
  if (access(name, F_OK) == 0) /* a parent's: ours beside it */
    snprintf(name, sizeof name, "%s-%d", path, (int)getpid());
  FILE *f = fopen(name, "w");
  if (!f)
    return;
#if defined(__aarch64__)
  const char *arch = "aarch64";
#else
  const char *arch = "x86_64";
#endif
  fprintf(f, "{\"schema\":\"stacksnap.audit/1\",\"os\":\"linux\",\"arch\":");
  json_str(f, arch);
  fprintf(f, ",\"pid\":%d,\"exe\":", (int)getpid());
  json_str(f, exe);
  fputs(",\n\"images\":[", f);
  for (int i = 0; i < im->n; i++) {
    const snap_frame_t *fr = im->v[i];
    fprintf(f, "%s\n  {\"name\":", i ? "," : "");
    json_str(f, fr->image);
    fputs(",\"path\":", f);
    json_str(f, fr->image_path);
    fprintf(f, ",\"base\":\"0x%" PRIxPTR "\",\"size\":%" PRIuPTR ",\"build_id\":",
            fr->image_base, fr->image_size);
    json_str(f, fr->build_id);
    fprintf(f, ",\"in_app\":%s}", fr->in_app ? "true" : "false");
  }
  fputs("],\n\"sites\":[", f);
  for (int i = 0; i < g_nsites; i++) {
    const site_t *s = &g_sites[i];
    fprintf(f, "%s\n {\"function\":", i ? "," : "");
    json_str(f, s->fn);
    fprintf(f, ",\"count\":%llu,\"argument\":", (unsigned long long)s->count);
    json_str(f, s->arg);
    fputs(",\"api\":", f);
    json_str(f, k_api[s->api]);
    fputs(",\"frames\":", f);
    json_frames(f, s->stack);
    fputs("}", f);
  }
  fputs("]}\n", f);
  fclose(f);
}

__attribute__((destructor)) static void write_report(void) {
  t_busy = 1;                   /* for good: nothing after this is recorded */
  pthread_once(&g_once, setup); /* a process that made no call: read env */
  pthread_mutex_lock(&g_lock);
  char *buf = NULL;
  size_t len = 0;
  /* A process that made no audited call says nothing: a shell script or a
     launcher under the preload would otherwise bury the real report. */
  FILE *f = g_calls ? open_memstream(&buf, &len) : NULL;
  if (f) {
    char exe[256];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    fprintf(f,
            "stacksnap audit: pid %d (%s): %d distinct call sites, %llu "
            "calls",
            (int)getpid(), exe, g_nsites, (unsigned long long)g_calls);
    if (g_not_kept)
      fprintf(f, " (%llu calls at sites past the first %d not kept)",
              (unsigned long long)g_not_kept, MAX_SITES);
    fprintf(f, "\n");
    for (int i = 0; i < g_nsites; i++) {
      const site_t *s = &g_sites[i];
      fprintf(f, "\n%s x%llu  %s  (%s, %s)\n", s->fn,
              (unsigned long long)s->count, s->arg, k_api[s->api],
              s->full ? (g_full ? "full stack" : "no app frame: full stack")
                      : "app frames");
      fputs(s->text ? s->text : "    (out of memory)\n", f);
    }
    images_t im = {.n = 0};
    for (int i = 0; i < g_nsites; i++)
      images_add(&im, g_sites[i].stack);
    fprintf(f, "\nImages (base - end, name, build id, path):\n");
    for (int i = 0; i < im.n; i++) {
      const snap_frame_t *fr = im.v[i];
      fprintf(f, "  0x%" PRIxPTR " - 0x%" PRIxPTR " %s <%s> %s\n",
              fr->image_base, fr->image_base + fr->image_size, fr->image,
              fr->build_id ? fr->build_id : "no build id", fr->image_path);
    }
    if (g_json && *g_json)
      write_json(g_json, &im, exe);
    if (fclose(f) != 0) {
      free(buf);
      buf = NULL;
    }
  }
  pthread_mutex_unlock(&g_lock);
  if (!buf)
    return;
  int fd = 2;
  if (g_out && *g_out) {
    open_fn ro = real_open();
    fd = ro ? ro(g_out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
  }
  for (size_t off = 0; fd >= 0 && off < len;) {
    ssize_t w = write(fd, buf + off, len - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      break;
    off += (size_t)w;
  }
  if (fd > 2)
    close(fd);
  free(buf);
}
