/*
 * source_lines.c — file:line for an address, through elfutils' libdwfl.
 *
 * Owns: one Dwfl session (the modules reported into it so far) behind a
 * mutex. libdw is loaded at run time (dlopen("libdw.so.1") + dlsym), so the
 * library has no link dependency on it: where it is not installed, or
 * where its header was not there at build time (__has_include; the arm64
 * cross build has none), the answer is SNAP_EUNSUPPORTED.
 *
 * Each image is reported once at its load bias (dwfl_report_elf with
 * add_p_vaddr, right for PIE, shared objects and, base ignored, non-PIE
 * executables); libdwfl then finds the DWARF itself, separate debug files
 * included (dwfl_standard_find_debuginfo: build-id, then debuglink). When a
 * report fails (an image unloaded and another now sits at its addresses)
 * the session is thrown away and begun again.
 *
 * Files: libdw maps what it reads, so it is handed a copy of each image's
 * file in a memfd (copy_to_memfd), never the file itself: a library
 * rewritten in place cannot fault it. Separate debug files that libdwfl
 * finds by itself (/usr/lib/debug) are still its own mappings.
 *
 * Must not: run in the stopped window or on a hot path: the first query of
 * an image copies its file and reads its whole line table (milliseconds to
 * seconds).
 */
#include "platform/linux/linux.h"
#include "platform/posix/locks.h"

#if defined(__has_include)
#if __has_include(<elfutils/libdwfl.h>)
#define SNAP_HAVE_LIBDWFL 1
#endif
#endif

#ifndef SNAP_HAVE_LIBDWFL

int snap__plat_source_line(const snap__plat_sym_query_t *q,
                           snap__plat_line_cb cb, void *ctx) {
  (void)q, (void)cb, (void)ctx;
  return SNAP_EUNSUPPORTED;
}

#else

#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Modules remembered before the session is begun anew (each holds a
   parsed ELF and, once used, its line tables). */
#define MAX_MODULES 64

typedef struct dw_api {
  Dwfl *(*begin)(const Dwfl_Callbacks *);
  void (*end)(Dwfl *);
  void (*report_begin_add)(Dwfl *);
  Dwfl_Module *(*report_elf)(Dwfl *, const char *, const char *, int, GElf_Addr,
                             bool);
  int (*report_end)(Dwfl *,
                    int (*)(Dwfl_Module *, void *, const char *, Dwarf_Addr,
                            void *),
                    void *);
  Dwfl_Line *(*getsrc)(Dwfl_Module *, Dwarf_Addr);
  const char *(*lineinfo)(Dwfl_Line *, Dwarf_Addr *, int *, int *, Dwarf_Word *,
                          Dwarf_Word *);
  /* The slow path, when the file has no .debug_aranges (clang emits none,
     and libdw 0.188 then finds no CU for any address): walk the CUs. */
  Dwarf_Die *(*nextcu)(Dwfl_Module *, Dwarf_Die *, Dwarf_Addr *);
  int (*haspc)(Dwarf_Die *, Dwarf_Addr);
  Dwarf_Line *(*getsrc_die)(Dwarf_Die *, Dwarf_Addr);
  int (*lineno)(Dwarf_Line *, int *);
  const char *(*linesrc)(Dwarf_Line *, Dwarf_Word *, Dwarf_Word *);
} dw_api_t;

typedef struct module {
  char *path;
  uintptr_t base;
  Dwfl_Module *mod; /* NULL: reported and failed; not tried again */
} module_t;

/* Guards the session (g_dwfl, g_mods): every libdw call is made under
   it, so no thread of ours is inside libdw at fork. Made on first use
   (platform.h, snap__lazy_lock_t). */
static snap__lazy_lock_t g_lock;
/* 0 not tried, 2 a thread is loading it, 1 loaded, -1 unavailable. Loaded
   with no lock of ours held, and never waited for: dlopen takes the
   loader's lock, and a thread inside dlopen (a constructor asking for a
   stack) may be waiting for ours. A caller that finds the load under way
   gets no line this once. */
static atomic_int g_state;
static dw_api_t g_dw;
static Dwfl_Callbacks g_callbacks;
static Dwfl *g_dwfl;
static module_t g_mods[MAX_MODULES];
static int g_nmods;

#define SYM(field, name) (*(void **)&g_dw.field = dlsym(h, name)) != NULL

/* In a forked child: a load some parent thread had under way will never
   finish there; the next caller tries again. */
static void state_fork_child(void) {
  int loading = 2;
  atomic_compare_exchange_strong(&g_state, &loading, 0);
}

static bool load_libdw_gated(void) {
  void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return false;
  void *find_elf = dlsym(h, "dwfl_build_id_find_elf");
  void *find_dbg = dlsym(h, "dwfl_standard_find_debuginfo");
  void *sec_addr = dlsym(h, "dwfl_offline_section_address");
  if (!(SYM(begin, "dwfl_begin") && SYM(end, "dwfl_end") &&
        SYM(report_begin_add, "dwfl_report_begin_add") &&
        SYM(report_elf, "dwfl_report_elf") &&
        SYM(report_end, "dwfl_report_end") &&
        SYM(getsrc, "dwfl_module_getsrc") && SYM(lineinfo, "dwfl_lineinfo") &&
        SYM(nextcu, "dwfl_module_nextcu") && SYM(haspc, "dwarf_haspc") &&
        SYM(getsrc_die, "dwarf_getsrc_die") && SYM(lineno, "dwarf_lineno") &&
        SYM(linesrc, "dwarf_linesrc") && find_elf && find_dbg && sec_addr)) {
    dlclose(h);
    return false;
  }
  /* Object pointers to function pointers: POSIX guarantees dlsym's
     results convert; memcpy keeps -Wpedantic quiet about it. */
  memcpy(&g_callbacks.find_elf, &find_elf, sizeof find_elf);
  memcpy(&g_callbacks.find_debuginfo, &find_dbg, sizeof find_dbg);
  memcpy(&g_callbacks.section_address, &sec_addr, sizeof sec_addr);
  /* libdwfl (0.186 and later) dlopens libdebuginfod the first time a
     debug file is not found locally (a pthread_once inside
     dwfl_get_debuginfod_client), which would be from inside a call we
     make under g_lock: a loader call under a lock of ours. Have it happen
     now, with no lock of ours held. Earlier versions do it in libdw's
     constructor, during the dlopen above. */
  void *get_client = dlsym(h, "dwfl_get_debuginfod_client");
  if (get_client) {
    void *(*fn)(Dwfl *);
    memcpy(&fn, &get_client, sizeof fn);
    Dwfl *d = g_dw.begin(&g_callbacks);
    if (d) {
      (void)fn(d);
      g_dw.end(d);
    }
  }
  return true; /* h stays open for the life of the process */
}

/* Inside the fork gate (posix/locks.h): dlopen edits the loader's list
   under dl_load_write_lock, which glibc does not renew in a forked child;
   a fork while this thread loaded libdw would leave the child waiting on
   it in its first dl_iterate_phdr (seen under TSan, whose slower dlopen
   overlaps the forks of test_fork_naming). */
static bool load_libdw(void) {
  snap__fork_gate_enter();
  bool ok = load_libdw_gated();
  snap__fork_gate_leave();
  return ok;
}

static void reset_session(void) {
  if (g_dwfl)
    g_dw.end(g_dwfl);
  g_dwfl = NULL;
  for (int i = 0; i < g_nmods; i++)
    free(g_mods[i].path);
  g_nmods = 0;
}

/* A copy of the file at path in memory we own (a memfd), or -1. libdw
   maps the files it reads (elf_begin with ELF_C_READ_MMAP): a library
   rewritten or cut in place under that mapping (cp over one being
   developed) would SIGBUS whoever reads its line table next. A memfd
   only we write cannot shrink. Read with bounded preads (EINTR retried,
   end of file ends it: a file cut meanwhile is copied as far as it goes). */
static int copy_to_memfd(const char *path) {
  struct stat st;
  int in = snap__linux_open_regular(path, &st);
  if (in < 0)
    return -1;
  int out = memfd_create("stacksnap-dwarf", MFD_CLOEXEC);
  char *chunk = malloc(1 << 16);
  bool ok = out >= 0 && chunk;
  for (off_t at = 0; ok;) {
    ssize_t n = pread(in, chunk, 1 << 16, at);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      ok = n == 0 && at > 0;
      break;
    }
    for (ssize_t done = 0; ok && done < n;) {
      ssize_t w = write(out, chunk + done, (size_t)(n - done));
      if (w < 0 && errno == EINTR)
        continue;
      ok = w > 0;
      done += w > 0 ? w : 0;
    }
    at += n;
  }
  free(chunk);
  close(in);
  if (!ok && out >= 0) {
    close(out);
    out = -1;
  }
  return out;
}

static Dwfl_Module *report(const char *path, uintptr_t base) {
  if (!g_dwfl && !(g_dwfl = g_dw.begin(&g_callbacks)))
    return NULL;
  int fd = copy_to_memfd(path);
  if (fd < 0)
    return NULL;
  g_dw.report_begin_add(g_dwfl);
  /* With an fd of ours, libdw reads that, not path; the module owns the fd
     from then on (closed with it), but not when the report fails. */
  Dwfl_Module *m = g_dw.report_elf(g_dwfl, path, path, fd, base, true);
  g_dw.report_end(g_dwfl, NULL, NULL);
  if (!m)
    close(fd);
  return m;
}

static Dwfl_Module *module_for(const char *path, uintptr_t base) {
  for (int i = 0; i < g_nmods; i++)
    if (g_mods[i].base == base && strcmp(g_mods[i].path, path) == 0)
      return g_mods[i].mod;
  if (g_nmods == MAX_MODULES)
    reset_session();
  Dwfl_Module *m = report(path, base);
  if (!m && g_nmods > 0) { /* perhaps a clash with an unloaded image */
    reset_session();
    m = report(path, base);
  }
  char *copy = strdup(path);
  if (copy)
    g_mods[g_nmods++] = (module_t){copy, base, m};
  return m;
}

static const char *line_of(Dwfl_Module *m, Dwarf_Addr addr, int *lineno) {
  Dwfl_Line *line = g_dw.getsrc(m, addr);
  if (line)
    return g_dw.lineinfo(line, NULL, lineno, NULL, NULL, NULL);
  Dwarf_Addr bias = 0;
  for (Dwarf_Die *cu = NULL; (cu = g_dw.nextcu(m, cu, &bias)) != NULL;) {
    if (g_dw.haspc(cu, addr - bias) <= 0)
      continue;
    Dwarf_Line *l = g_dw.getsrc_die(cu, addr - bias);
    if (l && g_dw.lineno(l, lineno) == 0)
      return g_dw.linesrc(l, NULL, NULL);
    return NULL;
  }
  return NULL;
}

int snap__plat_source_line(const snap__plat_sym_query_t *q,
                           snap__plat_line_cb cb, void *ctx) {
  if (!q || !cb)
    return SNAP_EINVAL;
  int state = 0;
  if (atomic_compare_exchange_strong(&g_state, &state, 2)) {
    (void)snap__plat_on_fork(SNAP__FORK_SOURCE_LINES, NULL, NULL,
                             state_fork_child); /* once: 0 -> 2 */
    state = load_libdw() ? 1 : -1;
    atomic_store(&g_state, state);
  }
  if (state < 0)
    return SNAP_EUNSUPPORTED;
  if (state == 2)
    return SNAP_OK; /* being loaded by another thread */
  snap__plat_lazy_lock(&g_lock);
  /* Only files: the vdso ("linux-vdso.so.1") has no line table. */
  if (q->image_path && q->image_path[0] == '/') {
    Dwfl_Module *m = module_for(q->image_path, q->image_base);
    int lineno = 0;
    const char *file = m ? line_of(m, q->addr, &lineno) : NULL;
    if (file && lineno > 0)
      cb(file, (unsigned)lineno, ctx);
  }
  snap__plat_lazy_unlock(&g_lock);
  return SNAP_OK;
}

#endif /* SNAP_HAVE_LIBDWFL */
