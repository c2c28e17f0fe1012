/*
 * symbolicate.c — naming pcs: snap_symbolicate and snap_symbolicate_ex,
 * and one address into the caller's buffer: snap_symbol_lookup.
 * (Capturing the caller's stack and naming it is src/callstack.c's job:
 * nothing here captures.)
 *
 * Hit path: hash the pcs, probe the cache (which verifies the pcs and that
 * every image the names came from is still loaded), hand out a reference.
 * Miss path (the only one that names): for each pc pick the address to
 * name — the pc itself when it is exact (frame 0 of a stopped thread, a
 * signal-return trampoline, the pc a signal interrupted), else pc - 1, so
 * that a return address just past a call at the very end of a function
 * (a noreturn call) names the caller, not the next function — find its
 * image in the image table, ask the platform's symbol provider for all of
 * them in one batch (one _NSCallStackArray on Apple), demangle (unless
 * SNAP_SYMBOLICATE_MANGLED), then pack
 * one stack object and offer it to the cache — on the second sighting of
 * its pcs only: the first is packed with its own strings and handed out
 * uncached, as with the cache off (cache_admit.c says why).
 *
 * snap_symbol_lookup is the miss path for one exact address without the
 * stack object: the image table, then the provider, the name demangled
 * straight into the caller's buffer. A stack's block, its pool of name
 * copies, its pack and its allocation were 40 % of the instructions of a
 * cold lookup of one address (callgrind: 1 843 a call, 1 128 without).
 *
 * Why a hit still asks the platform's load/unload stamp, which on Linux
 * takes the loader's lock: a hit must not serve names of an image that was
 * unloaded, nor of whatever was loaded at its place, and no lock-free
 * answer tells that exactly (images_linux.c, snap__plat_images_stamp, has
 * the evidence). The lock-free alternative, "identity hits", stays a
 * measured switch, off by default (snap__symbolicate_set_identity_hits;
 * bench_symbols part 3).
 *
 * Must not: run in the stopped window, or name anything while holding a
 * cache stripe.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "images/images.h"
#include "platform/platform.h"
#include "symbols/cache.h"
#include "symbols/hash.h"
#include "symbols/stack.h"
#include "symbols/symbolicate.h"
#include "symbols/trampolines.h"

#define NAMING_FLAGS                                                           \
  (SNAP_CAPTURE_APP_ONLY | SNAP_SYMBOLICATE_EXACT_PC0 |                        \
   SNAP_SYMBOLICATE_SOURCE_LINES | SNAP_SYMBOLICATE_MANGLED)

static atomic_bool g_identity_hits;

void snap__symbolicate_set_identity_hits(bool on) {
  atomic_store(&g_identity_hits, on);
  snap__cache_set_identity_hits(on);
}

/* Copies of the names, for the moment between the provider's answer and
   the pack (which interns them): in a pool on the stack while it lasts,
   else malloc'ed and listed in owned. A cold lookup of a pc or a few then
   allocates nothing here (a strdup and a free a frame were a tenth of it). */
#define NAME_POOL 1024
typedef struct naming {
  snap_frame_t *frames;
  char **owned; /* per frame: symbol, then source file (2 slots each) */
  char *pool;
  size_t left;
  bool mangled; /* SNAP_SYMBOLICATE_MANGLED: names as the table has them */
} naming_t;

/* Keeps s (malloc'ed when heap) as slot's string; returns it, or NULL. */
static const char *keep(naming_t *nm, size_t slot, const char *s, bool heap) {
  if (nm->owned[slot]) { /* rarely: a name given twice, or a long one */
    free(nm->owned[slot]);
    nm->owned[slot] = NULL;
  }
  if (heap)
    return nm->owned[slot] = (char *)s;
  size_t len = strlen(s);
  char *d;
  if (len < nm->left) {
    d = nm->pool;
    nm->pool += len + 1, nm->left -= len + 1;
  } else if ((d = malloc(len + 1)) != NULL) {
    nm->owned[slot] = d;
  } else {
    return NULL; /* out of memory: this frame stays unnamed */
  }
  memcpy(d, s, len + 1);
  return d;
}

static void on_symbol(int i, const char *name, uintptr_t addr, void *ctx) {
  naming_t *nm = ctx;
  char *dm = nm->mangled ? NULL : snap__plat_demangle(name);
  const char *s = keep(nm, 2 * (size_t)i, dm ? dm : name, dm != NULL);
  if (!s)
    return;
  nm->frames[i].symbol = s;
  nm->frames[i].symbol_addr = addr;
}

typedef struct line_ctx {
  naming_t *nm;
  int i;
} line_ctx_t;

static void on_line(const char *file, unsigned line, void *ctx) {
  line_ctx_t *lc = ctx;
  const char *s = keep(lc->nm, 2 * (size_t)lc->i + 1, file, false);
  if (!s)
    return;
  lc->nm->frames[lc->i].source_file = s;
  lc->nm->frames[lc->i].source_line = line;
}

/* Records the image that held addr (img NULL: none) once per image, or
   once per address for addresses in no image. */
static int note_image(snap__stack_image_t *rec, int nrec, uintptr_t addr,
                      const snap__image_t *img) {
  for (int i = 0; i < nrec; i++)
    if (img ? rec[i].path == img->path && rec[i].base == img->base
            : !rec[i].path && rec[i].addr == addr)
      return nrec;
  rec[nrec].addr = addr;
  rec[nrec].base = img ? img->base : 0;
  rec[nrec].path = img ? img->path : NULL;
  return nrec + 1;
}

/* The provider's question for addr, found in img (NULL: in no image) of
   the table of that generation. */
static void ask(snap__plat_sym_query_t *q, uintptr_t addr,
                const snap__image_t *img, uint64_t generation) {
  q->addr = addr;
  q->image_base = img ? img->base : 0;
  q->image_path = img ? img->path : NULL;    /* interned: outlives the table */
  q->func_index = img ? img->func_index : 0; /* read through safe reads */
  q->func_index_size = img ? img->func_index_size : 0;
  q->images_generation = generation;
}

/* The stack block of name_stack: a stack of up to 16 frames. */
#define LOCAL_BLOCK 3072

/* Names pcs[0..n) into a new stack that also carries its key; cached:
   the cache will be offered it (else it keeps its own strings: stack.h). */
static snap_stack_t *name_stack(const uintptr_t *pcs, int n, unsigned flags,
                                uint64_t hash, bool cached) {
  /* One zeroed block for the six arrays (a cold lookup is a few hundred
     ns: six allocations were a good part of it), on the stack for a stack
     of a few frames (then none); pointer-aligned parts first, the bools
     last. */
  size_t cells = n ? (size_t)n : 1;
  size_t bytes =
      cells * (sizeof(snap_frame_t) + sizeof(snap__plat_sym_query_t) +
               2 * sizeof(char *) + sizeof(snap__stack_image_t) +
               sizeof(snap__image_t *) + sizeof(bool));
  _Alignas(max_align_t) char local[LOCAL_BLOCK];
  char *block = bytes <= sizeof local ? local : malloc(bytes);
  snap_stack_t *s = NULL;
  if (!block)
    return NULL;
  memset(block, 0, bytes);
  snap_frame_t *frames = (snap_frame_t *)(void *)block;
  snap__plat_sym_query_t *q =
      (snap__plat_sym_query_t *)(void *)(frames + cells);
  char **owned = (char **)(void *)(q + cells);
  snap__stack_image_t *rec = (snap__stack_image_t *)(void *)(owned + 2 * cells);
  const snap__image_t **imgs = (const snap__image_t **)(void *)(rec + cells);
  bool *sigret = (bool *)(void *)(imgs + cells);

  const snap__images_t *t = snap__images_acquire();
  snap__stack_key_t key = {.hash = hash,
                           .flags = flags,
                           .n = n,
                           .pcs = pcs,
                           .images = rec,
                           .generation = snap__images_generation(t)};
  /* Each pc's image, looked up once: for its trampoline mark and (nearly
     always: see below) for its name. */
  for (int i = 0; i < n; i++)
    imgs[i] = snap__images_find(t, pcs[i]);
  /* A pc's trampoline mark only decides whether it and the pc after it
     are exact. One pc that is exact already (the way a single address is
     named: snap_symbolicate(&addr, 1, SNAP_SYMBOLICATE_EXACT_PC0)) has no
     use for it: skip the trampoline table's lock (sigret stays false). */
  if (n > 1 || (n == 1 && pcs[0] && !(flags & SNAP_SYMBOLICATE_EXACT_PC0)))
    snap__trampolines_mark(t, pcs, imgs, n, sigret);
  for (int i = 0; i < n; i++) {
    uintptr_t pc = pcs[i];
    bool exact = pc == 0 || sigret[i] || (i > 0 && sigret[i - 1]) ||
                 (i == 0 && (flags & SNAP_SYMBOLICATE_EXACT_PC0));
    uintptr_t addr = exact ? pc : pc - 1;
    /* pc - 1 is in pc's range unless pc begins it (or is in none: then
       pc - 1 may end one). */
    const snap__image_t *img = imgs[i];
    if (addr != pc && (!img || addr < img->start))
      img = snap__images_find(t, addr);
    key.n_images = note_image(rec, key.n_images, addr, img);
    snap_frame_t *f = &frames[i];
    f->pc = pc;
    f->image = img ? img->name : "???";
    f->image_base = img ? img->base : 0;
    f->image_path = img ? img->path : NULL;
    f->build_id = img ? img->build_id : NULL;
    f->image_size = img ? img->size : 0;
    f->in_app = img && img->in_app;
    ask(&q[i], addr, img, key.generation);
  }
  snap__images_release(t);

  char pool[NAME_POOL];
  naming_t nm = {frames, owned, pool, sizeof pool,
                 (flags & SNAP_SYMBOLICATE_MANGLED) != 0};
  (void)snap__plat_symbolize(q, n, on_symbol, &nm);
  if (flags & SNAP_SYMBOLICATE_SOURCE_LINES)
    for (int i = 0; i < n; i++) {
      line_ctx_t lc = {&nm, i};
      if (q[i].image_path)
        (void)snap__plat_source_line(&q[i], on_line, &lc);
    }

  int kept = n;
  if (flags & SNAP_CAPTURE_APP_ONLY) {
    kept = 0;
    for (int i = 0; i < n; i++)
      if (frames[i].in_app)
        frames[kept++] = frames[i];
  }
  s = snap__stack_pack(frames, kept, &key, !cached);
  for (size_t i = 0; i < 2 * cells; i++)
    if (owned[i]) /* most names were in the pool: no call for those */
      free(owned[i]);
  if (block != local)
    free(block);
  return s;
}

/* images_current: the caller brought the image table up to date during
   this call already (the capturing facade does it first: an app-only
   capture needs it too). A table that could not be refreshed serves no
   hit. */
int snap__symbolicate(const uintptr_t *pcs, int n, unsigned flags,
                      bool images_current, const snap_stack_t **out) {
  if (!out)
    return SNAP_EINVAL;
  *out = NULL;
  if (n < 0 || n > SNAP_MAX_FRAMES || (n > 0 && !pcs) ||
      (flags & ~NAMING_FLAGS))
    return SNAP_EINVAL;
  /* Whether the cache keeps anything now, decided once: with the cache
     off nothing is probed, so no hash is needed; the cache turned on
     meanwhile only misses. */
  bool keeps = snap__cache_keeps();
  uint64_t hash = keeps ? snap__stack_hash(pcs, n, flags) : 0;
  const snap_stack_t *hit = NULL;
  /* Identity hits (off by default, see the head comment): this thread's
     front answers without the loader's lock if every image is still the
     one recorded. */
  if (keeps && !images_current &&
      atomic_load_explicit(&g_identity_hits, memory_order_relaxed))
    hit = snap__cache_get(hash, pcs, n, flags, false, NULL);
  if (hit) {
    *out = hit;
    return SNAP_OK;
  }
  /* Hits and names both answer for the images loaded now: a dlclose and a
     dlopen that finished before this call must be seen (cache_verify.c). */
  if (!images_current)
    images_current = snap__images_refresh_if_stale() == SNAP_OK;
  /* admit: this miss is its key's second sighting (cache_admit.c), and
     what is named now is offered to the cache. Else (the first sighting,
     the cache off, a table that could not be refreshed) it is named the
     cache-off way: its own strings, no room for an entry, never offered. */
  bool admit = false;
  hit = images_current ? snap__cache_get(hash, pcs, n, flags, true, &admit)
                       : NULL;
  if (hit) {
    *out = hit;
    return SNAP_OK;
  }
  snap_stack_t *s = name_stack(pcs, n, flags, hash, admit);
  if (!s)
    return SNAP_ENOMEM; /* name_stack fails only when an allocation does */
  *out = admit ? snap__cache_put(s) : s;
  return SNAP_OK;
}

int snap__symbolicate_uncached(const uintptr_t *pcs, int n, unsigned flags,
                               const snap_stack_t **out) {
  if (!out)
    return SNAP_EINVAL;
  *out = NULL;
  if (n < 0 || n > SNAP_MAX_FRAMES || (n > 0 && !pcs) ||
      (flags & ~NAMING_FLAGS))
    return SNAP_EINVAL;
  (void)snap__images_refresh_if_stale();
  snap_stack_t *s = name_stack(pcs, n, flags, 0, false); /* no key: kept by
                                                            no cache */
  if (!s)
    return SNAP_ENOMEM;
  *out = s;
  return SNAP_OK;
}

int snap_symbolicate_ex(const uintptr_t *pcs, int n, unsigned flags,
                        const snap_stack_t **out) {
  return snap__symbolicate(pcs, n, flags, false, out);
}

const snap_stack_t *snap_symbolicate(const uintptr_t *pcs, int n,
                                     unsigned flags) {
  const snap_stack_t *s;
  (void)snap__symbolicate(pcs, n, flags, false, &s);
  return s;
}

/* ---- One address, into the caller's buffer ------------------------------ */

typedef struct one_name {
  snap_symbol_info_t *info;
  char *buf;
  size_t size;
  bool mangled;
} one_name_t;

static void on_one(int i, const char *name, uintptr_t addr, void *ctx) {
  (void)i;
  one_name_t *o = ctx;
  char *dm = o->mangled ? NULL : snap__plat_demangle(name);
  const char *s = dm ? dm : name;
  size_t len = strlen(s);
  if (o->size) {
    size_t k = len < o->size ? len : o->size - 1;
    memcpy(o->buf, s, k);
    o->buf[k] = '\0';
  }
  o->info->symbol_len = len;
  o->info->symbol_addr = addr;
  free(dm);
}

/* The cold path of name_stack for one exact address, without what a stack
   object needs (its block, the pool of copies, the pack, the allocation):
   the image table's answer and the provider's, nothing else. */
int snap_symbol_lookup(uintptr_t addr, unsigned flags, snap_symbol_info_t *out,
                       char *name, size_t name_size) {
  if (!out || !snap__abi_size_known(out->size, SNAP__SYMBOL_INFO_SIZES) ||
      (!name && name_size) || (flags & ~SNAP_SYMBOLICATE_MANGLED))
    return SNAP_EINVAL;
  /* As a miss of snap_symbolicate: names for the images loaded now. */
  (void)snap__images_refresh_if_stale();
  const snap__images_t *t = snap__images_acquire();
  const snap__image_t *img = snap__images_find(t, addr);
  snap_symbol_info_t all = {0};
  snap__plat_sym_query_t q;
  if (img) {
    all.image_base = img->base;
    all.image = img->name; /* interned, as the path: outlive the table */
    all.image_path = img->path;
    all.in_app = img->in_app;
    ask(&q, addr, img, snap__images_generation(t));
  }
  snap__images_release(t);
  if (!img)
    return SNAP_EINVAL;
  if (name_size)
    name[0] = '\0';
  one_name_t o = {&all, name, name_size,
                  (flags & SNAP_SYMBOLICATE_MANGLED) != 0};
  (void)snap__plat_symbolize(&q, 1, on_one, &o);
  snap__abi_copy_out(out, &all, out->size);
  return SNAP_OK;
}
