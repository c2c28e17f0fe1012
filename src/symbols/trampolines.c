/*
 * trampolines.c — which pcs are signal-return trampolines, for naming,
 * without reading code per pc.
 *
 * Naming must know where a signal interrupted a thread: the pc after a
 * trampoline is exact, not a return address (symbolicate.c). Whether a pc
 * is a trampoline is a question about the code there; asked per pc it is
 * a safe read, a system call, and a cold lookup names pcs nothing named
 * before, so in a big library nearly every lookup paid one (73 % of a
 * lookup's time in libLLVM, whose code a memo of 4 KiB chunks never
 * covered). Trampolines are few and fixed, so they are learnt in bulk:
 *
 *  - the kernel says where it returns handlers to now: the restorer of
 *    every installed handler (snap__plat_sigreturn_restorers; glibc's
 *    __restore_rt on x86_64, a runtime's own where it installs one). The
 *    set is asked again when the image table changed, and otherwise at
 *    most every RESTORERS_NS (64 system calls: too many for every stack);
 *  - images of at most SCAN_MAX bytes of code are searched whole, once
 *    (snap__plat_find_sigreturns): the vdso, whose trampoline the kernel
 *    picks itself on arm64 (no restorer is registered there), libc, a
 *    small static executable. Bigger images are not read: the set above
 *    answers for them. Reading all of a 100 MB library's code would fault
 *    it into memory for one rarely used answer.
 *
 * Pcs outside every image (anonymous code, a JIT's) take the platform's
 * per-pc check (snap__plat_is_sigreturn), as do images whose code could
 * not be read whole.
 *
 * What this can miss: a trampoline in a big image whose handler was
 * removed, or installed less than RESTORERS_NS ago, before its frames are
 * named; such a frame is then named as a return address (its pc - 1),
 * and so is the interrupted pc after it — the cost is a name, never a
 * fault.
 *
 * An entry for a searched image is keyed by everything that says it is
 * still the image that was searched: its range, its identity and the
 * generation since which the image table has held it unchanged
 * (images.h). Entries of images no longer in the table are dropped when
 * the table's generation moves, so a library loaded where another was is
 * searched afresh.
 *
 * Concurrency: one lock, taken once per call (a stack's worth of pcs),
 * never while another of ours is held; searches run under it, so two
 * threads naming their first pcs in one image search it once.
 *
 * Must not: run in the stopped window (it reads, allocates and locks).
 */
#include "symbols/trampolines.h"

#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"

#define MAX_AT 4                      /* per searched image; more: per pc */
#define SCAN_MAX ((uintptr_t)4 << 20) /* bytes of code searched whole */
#define MAX_RESTORERS 16              /* more: per pc, everywhere */
#define RESTORERS_NS 50000000u        /* 50 ms */

typedef struct tramp_entry {
  uintptr_t start, end; /* the image's executable range */
  uint64_t ident, since;
  int n; /* trampolines in at[]; -1: ask per pc */
  uintptr_t at[MAX_AT];
} tramp_entry_t;

/* Guarded by g_lock. Entries sorted by start (ranges of one table never
   overlap). */
static snap__lazy_lock_t g_lock;
static tramp_entry_t *g_entries;
static int g_count, g_cap;
static uint64_t g_generation; /* of the table the entries were pruned to */
static bool g_pruned;
static uintptr_t g_restorers[MAX_RESTORERS];
static int g_restorer_count; /* -1: too many to keep */
static uint64_t g_restorers_ns;

static bool same_image(const tramp_entry_t *e, const snap__image_t *img) {
  return e->start == img->start && e->end == img->end &&
         e->ident == img->ident && e->since == img->since;
}

/* The index of the first entry whose start is >= start. */
static int lower_bound(uintptr_t start) {
  int lo = 0, hi = g_count;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (g_entries[mid].start < start)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Keeps only the entries of images t still holds unchanged. */
static void prune(const snap__images_t *t) {
  int kept = 0;
  for (int i = 0; i < g_count; i++) {
    const snap__image_t *img = snap__images_find(t, g_entries[i].start);
    if (img && same_image(&g_entries[i], img))
      g_entries[kept++] = g_entries[i];
  }
  g_count = kept;
}

static void refresh_restorers(void) {
  int n = snap__plat_sigreturn_restorers(g_restorers, MAX_RESTORERS);
  g_restorer_count = n > MAX_RESTORERS ? -1 : n;
  g_restorers_ns = snap__plat_coarse_ns();
}

/* The entry for a small image, searching its code when there is none yet;
   NULL when there is no room for one (the caller asks per pc). */
static const tramp_entry_t *entry_for(const snap__image_t *img) {
  int i = lower_bound(img->start);
  if (i < g_count && same_image(&g_entries[i], img))
    return &g_entries[i];
  tramp_entry_t e = {img->start, img->end, img->ident, img->since, 0, {0}};
  e.n = snap__plat_find_sigreturns(img->start, img->end, e.at, MAX_AT);
  if (e.n > MAX_AT)
    e.n = -1;
  if (i < g_count && g_entries[i].start == img->start) {
    g_entries[i] = e; /* the same place, another image */
    return &g_entries[i];
  }
  if (g_count == g_cap) {
    int cap = g_cap ? 2 * g_cap : 32;
    tramp_entry_t *grown = realloc(g_entries, sizeof *grown * (size_t)cap);
    if (!grown)
      return NULL;
    g_entries = grown, g_cap = cap;
  }
  memmove(&g_entries[i + 1], &g_entries[i],
          sizeof *g_entries * (size_t)(g_count - i));
  g_entries[i] = e;
  g_count++;
  return &g_entries[i];
}

static bool listed(const uintptr_t *at, int n, uintptr_t pc) {
  for (int k = 0; k < n; k++)
    if (at[k] == pc)
      return true;
  return false;
}

/* One pc in img (NULL: in no image). *last: the entry found for the pc
   before, of last_img: frames come in runs of one image, and entry_for's
   search was a third of marking a stack (an entry added moves the others,
   so only the one just found is kept). */
static bool is_trampoline(const snap__image_t *img, uintptr_t pc,
                          const snap__image_t **last_img,
                          const tramp_entry_t **last) {
  if (!img || img->read_safely || g_restorer_count < 0)
    return snap__plat_is_sigreturn(pc);
  if (listed(g_restorers, g_restorer_count, pc))
    return true;
  if (img->end - img->start > SCAN_MAX)
    return false;
  if (img != *last_img) {
    *last_img = img;
    *last = entry_for(img);
  }
  const tramp_entry_t *e = *last;
  if (!e || e->n < 0)
    return snap__plat_is_sigreturn(pc);
  return listed(e->at, e->n, pc);
}

void snap__trampolines_mark(const snap__images_t *t, const uintptr_t *pcs,
                            const snap__image_t *const *imgs, int n,
                            bool *out) {
  snap__plat_lazy_lock(&g_lock);
  uint64_t gen = snap__images_generation(t);
  if (!g_pruned || gen != g_generation) {
    prune(t);
    g_generation = gen, g_pruned = true;
    refresh_restorers();
  } else if (snap__plat_coarse_ns() - g_restorers_ns >= RESTORERS_NS) {
    refresh_restorers();
  }
  const snap__image_t *last_img = NULL;
  const tramp_entry_t *last = NULL;
  for (int i = 0; i < n; i++)
    out[i] = pcs[i] && is_trampoline(imgs[i], pcs[i], &last_img, &last);
  snap__plat_lazy_unlock(&g_lock);
}
