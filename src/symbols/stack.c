/*
 * stack.c — packing named frames into one immutable, reference-counted,
 * compact block, the views users read, and the public accessors.
 *
 * Layout of the block: header, the key's pcs and image records, the
 * distinct (image name, image base) pairs of its frames, then per frame a
 * 12-byte record: the symbol's intern id, pc - symbol_addr, the index of
 * its pc in the key, the index of its image pair and app-ness. Symbol
 * names live once for all stacks (intern.c); a symbol_addr more than 4 GiB
 * below its pc (no real function) makes the block keep full addresses
 * (wide); source lines, when asked for, add a file id and line per frame.
 * A stack packed for the cache ends with room for the cache's entry of
 * it (snap__stack_link). One allocation, so the cache can charge its exact
 * size against the cap.
 *
 * A stack the cache will not keep (own_strings) is laid out flat instead:
 * header, its frames view, then copies of its names (pack_own). It takes
 * neither the shared strings' lock nor their hash, and is read only
 * through the view.
 *
 * The views: snap_frame_t per frame, built on the first snap_stack_frame
 * call (a flat stack is its view already), and the formatted lines (their
 * layout: stack_line.c), on the first snap_stack_line call; each published
 * once with a compare-and-swap (a racing builder frees its own copy),
 * freed with the stack. Its size is told to the cache
 * (snap__stack_on_view), which counts views against its cap.
 *
 * Must not: be called from the stopped window (allocates, locks).
 */
#include "symbols/stack.h"

#include <stdlib.h>
#include <string.h>

#include "symbols/intern.h"

/* One frame, compact. image: index into the stack's name pairs, with the
   frame's app-ness in its top bit. */
typedef struct rec {
  uint32_t symbol; /* intern id (own strings: offset), 0: unknown */
  uint32_t delta;  /* pc - symbol_addr (wide stacks: see wide_addrs) */
  uint16_t pc;     /* index into key.pcs */
  uint16_t image;
} rec_t;
#define IN_APP 0x8000u

/* A frame's image as a user sees it: its strings are the image table's
   (interned: they live as long as the process). */
typedef struct name_pair {
  const char *name;
  const char *path;
  const char *build_id;
  uintptr_t base;
  uintptr_t size;
} name_pair_t;

typedef struct line_rec {
  uint32_t file; /* intern id (own strings: offset), 0: none */
  uint32_t line;
} line_rec_t;

/* One view: the frames, or the lines (then frames is NULL). */
struct snap__stack_view {
  size_t bytes;
  snap_frame_t *frames;
  const char **lines;
};

_Static_assert(SNAP_MAX_FRAMES <= 0x7fff, "rec_t's 15-bit indices");

static atomic_size_t g_view_bytes;
static void (*_Atomic g_on_view)(size_t);

/* Where each part of a block starts (byte offsets). */
typedef struct layout {
  size_t pcs, images, names, wide_addrs, recs, lines, end;
} layout_t;

static layout_t layout_of(int n_pcs, int n_images, int n_names, int count,
                          bool wide, bool lines) {
  /* Every part before recs holds pointer-sized members, so each starts
     pointer-aligned after the one before; recs and lines need 4. */
  _Static_assert(sizeof(snap_stack_t) % sizeof(void *) == 0, "alignment");
  _Static_assert(sizeof(snap__stack_image_t) % sizeof(void *) == 0,
                 "alignment");
  _Static_assert(sizeof(name_pair_t) % sizeof(void *) == 0, "alignment");
  _Static_assert(sizeof(rec_t) % 4 == 0, "alignment");
  layout_t l;
  l.pcs = sizeof(snap_stack_t);
  l.images = l.pcs + (size_t)n_pcs * sizeof(uintptr_t);
  l.names = l.images + (size_t)n_images * sizeof(snap__stack_image_t);
  l.wide_addrs = l.names + (size_t)n_names * sizeof(name_pair_t);
  l.recs = l.wide_addrs + (wide ? (size_t)count * sizeof(uintptr_t) : 0);
  l.lines = l.recs + (size_t)count * sizeof(rec_t);
  l.end = l.lines + (lines ? (size_t)count * sizeof(line_rec_t) : 0);
  return l;
}

typedef struct parts {
  uintptr_t *pcs;
  snap__stack_image_t *images;
  name_pair_t *names;
  uintptr_t *wide_addrs; /* symbol_addr per frame, when s->wide */
  rec_t *recs;
  line_rec_t *lines; /* when s->lines */
} parts_t;

static parts_t parts(const snap_stack_t *s) {
  layout_t l = layout_of(s->key.n, s->key.n_images, s->n_names, s->count,
                         s->wide, s->lines);
  char *b = (char *)s;
  return (parts_t){(uintptr_t *)(void *)(b + l.pcs),
                   (snap__stack_image_t *)(void *)(b + l.images),
                   (name_pair_t *)(void *)(b + l.names),
                   (uintptr_t *)(void *)(b + l.wide_addrs),
                   (rec_t *)(void *)(b + l.recs),
                   (line_rec_t *)(void *)(b + l.lines)};
}

static snap_frame_t frame_of(const snap_stack_t *s, const parts_t *p, int i);

/* Where the cache's record goes in a block whose parts end at end. */
static size_t link_at(size_t end) {
  return (end + _Alignof(max_align_t) - 1) &
         ~(size_t)(_Alignof(max_align_t) - 1);
}

void *snap__stack_link(const snap_stack_t *s) {
  if (s->own_strings)
    return NULL;
  layout_t l = layout_of(s->key.n, s->key.n_images, s->n_names, s->count,
                         s->wide, s->lines);
  return (char *)s + link_at(l.end);
}

/* The header every block starts with; the view slots empty. */
static void init_header(snap_stack_t *s, int n, size_t bytes,
                        const snap__stack_key_t *key, bool own_strings) {
  memset(s, 0, sizeof *s);
  atomic_init(&s->refs, 1);
  s->count = n;
  s->bytes = bytes;
  s->own_strings = own_strings;
  s->key = *key;
  atomic_init(&s->checked_generation, key->generation);
  atomic_init(&s->view, NULL);
  atomic_init(&s->lines_view, NULL);
}

/* Copies s, NUL and all, to *at and moves *at past it; returns the copy. */
static const char *copy_in(char **at, const char *s) {
  size_t len = strlen(s) + 1;
  const char *copy = memcpy(*at, s, len);
  *at += len;
  return copy;
}

/* A stack nobody keeps (stack.h, own_strings): the frames as users read
   them, then copies of their names, in one block. It has no compact
   records and no copy of its key: those serve the cache, and only the
   view is ever read (snap_stack_frame, snap_stack_line, the release).
   Building the compact form and then a view from it was two thirds of
   packing, and a sixth of a cold lookup of one pc. */
static snap_stack_t *pack_own(const snap_frame_t *frames, int n,
                              const snap__stack_key_t *key) {
  size_t view_at = sizeof(snap_stack_t);
  size_t end =
      view_at + sizeof(snap__stack_view_t) + (size_t)n * sizeof(snap_frame_t);
  for (int i = 0; i < n; i++) {
    if (frames[i].symbol)
      end += strlen(frames[i].symbol) + 1;
    if (frames[i].source_file)
      end += strlen(frames[i].source_file) + 1;
  }
  char *block = malloc(end);
  if (!block)
    return NULL;
  snap_stack_t *s = (snap_stack_t *)(void *)block;
  /* The key's hash, flags and generation only: its pcs and images stay
     with the caller, and nothing reads them from a stack no cache keeps. */
  snap__stack_key_t k = {
      .hash = key->hash, .flags = key->flags, .generation = key->generation};
  init_header(s, n, end, &k, true);
  snap__stack_view_t *v = (snap__stack_view_t *)(void *)(block + view_at);
  v->bytes = 0; /* inside the block: no view of its own to count */
  v->frames = (snap_frame_t *)(void *)(v + 1);
  v->lines = NULL;
  char *at = (char *)(v->frames + n);
  for (int i = 0; i < n; i++) {
    snap_frame_t f = frames[i];
    if (f.symbol)
      f.symbol = copy_in(&at, f.symbol);
    else
      f.symbol_addr = 0;
    if (f.source_file)
      f.source_file = copy_in(&at, f.source_file);
    else
      f.source_line = 0;
    v->frames[i] = f;
  }
  atomic_init(&s->view, v);
  return s;
}

snap_stack_t *snap__stack_pack(const snap_frame_t *frames, int n,
                               const snap__stack_key_t *key, bool own_strings) {
  if (own_strings)
    return pack_own(frames, n, key);
  /* Scratch, one block (on the stack for up to ~30 frames): names and
     strs (pointers) first, then ids and pair (4 and 2 bytes a cell). */
  size_t cells = n ? (size_t)n : 1;
  size_t bytes = cells * (sizeof(name_pair_t) + 2 * sizeof(char *) +
                          2 * sizeof(uint32_t) + sizeof(uint16_t));
  _Alignas(max_align_t) char local[2048];
  char *scratch = bytes <= sizeof local ? local : malloc(bytes);
  snap_stack_t *s = NULL;
  if (!scratch)
    return NULL;
  name_pair_t *names = (name_pair_t *)(void *)scratch;
  const char **strs = (const char **)(void *)(names + cells);
  uint32_t *ids = (uint32_t *)(void *)(strs + 2 * cells);
  uint16_t *pair = (uint16_t *)(void *)(ids + 2 * cells);

  int n_names = 0;
  bool wide = false, lines = false;
  for (int i = 0; i < n; i++) {
    const snap_frame_t *f = &frames[i];
    int k = 0;
    while (k < n_names &&
           !(names[k].path == f->image_path && names[k].name == f->image &&
             names[k].base == f->image_base))
      k++;
    if (k == n_names)
      names[n_names++] = (name_pair_t){f->image, f->image_path, f->build_id,
                                       f->image_base, f->image_size};
    pair[i] = (uint16_t)k;
    wide |= f->symbol &&
            (f->symbol_addr > f->pc || f->pc - f->symbol_addr > UINT32_MAX);
    lines |= f->source_file != NULL;
    strs[i] = f->symbol;
    strs[n + i] = f->source_file;
  }
  layout_t l = layout_of(key->n, key->n_images, n_names, n, wide, lines);
  size_t end = link_at(l.end) + SNAP__STACK_LINK_BYTES;
  char *block = malloc(end);
  if (block && snap__intern_acquire(strs, 2 * n, ids) != SNAP_OK) {
    free(block);
    block = NULL;
  }
  if (!block)
    goto out;
  s = (snap_stack_t *)(void *)block;
  init_header(s, n, end, key, false);
  s->n_names = (uint16_t)n_names;
  s->wide = wide;
  s->lines = lines;
  parts_t p = parts(s);
  if (key->n)
    memcpy(p.pcs, key->pcs, (size_t)key->n * sizeof *p.pcs);
  if (key->n_images)
    memcpy(p.images, key->images, (size_t)key->n_images * sizeof *p.images);
  memcpy(p.names, names, (size_t)n_names * sizeof *names);
  s->key.pcs = p.pcs;
  s->key.images = p.images;
  /* Each frame's pc is the next key pc equal to it (frames are the key's
     pcs, in order, some dropped). */
  int j = 0;
  for (int i = 0; i < n; i++) {
    const snap_frame_t *f = &frames[i];
    while (j < key->n - 1 && p.pcs[j] != f->pc)
      j++;
    if (j > key->n - 1) /* not the key's: cannot be, but stay inside */
      j = key->n - 1;
    uintptr_t sym_addr = f->symbol ? f->symbol_addr : 0;
    p.recs[i] =
        (rec_t){ids[i], f->symbol && !wide ? (uint32_t)(f->pc - sym_addr) : 0,
                (uint16_t)j, (uint16_t)(pair[i] | (f->in_app ? IN_APP : 0))};
    if (wide)
      p.wide_addrs[i] = sym_addr;
    if (lines)
      p.lines[i] = (line_rec_t){ids[n + i], f->source_line};
    j++;
  }
out:
  if (scratch != local)
    free(scratch);
  return s;
}

/* Frame i of s as users see it. */
static snap_frame_t frame_of(const snap_stack_t *s, const parts_t *p, int i) {
  const rec_t *r = &p->recs[i];
  const name_pair_t *np = &p->names[r->image & ~IN_APP];
  snap_frame_t f = {0};
  f.pc = p->pcs[r->pc];
  f.image = np->name;
  f.image_base = np->base;
  f.image_path = np->path;
  f.build_id = np->build_id;
  f.image_size = np->size;
  f.symbol = snap__intern_get(r->symbol);
  if (f.symbol)
    f.symbol_addr = s->wide ? p->wide_addrs[i] : f.pc - r->delta;
  f.in_app = (r->image & IN_APP) != 0;
  if (s->lines) {
    f.source_file = snap__intern_get(p->lines[i].file);
    f.source_line = f.source_file ? p->lines[i].line : 0;
  }
  return f;
}

/* Publishes v as s's view in *slot unless another thread did first (then
   v goes and theirs is returned); counts it and tells the cache. */
static const snap__stack_view_t *publish(_Atomic(snap__stack_view_t *) *slot,
                                         snap__stack_view_t *v) {
  snap__stack_view_t *expected = NULL;
  if (!atomic_compare_exchange_strong_explicit(
          slot, &expected, v, memory_order_acq_rel, memory_order_acquire)) {
    free(v); /* another thread built it first */
    return expected;
  }
  atomic_fetch_add_explicit(&g_view_bytes, v->bytes, memory_order_relaxed);
  void (*hook)(size_t) = atomic_load(&g_on_view);
  if (hook)
    hook(v->bytes);
  return v;
}

/* s's frames, built on first use; NULL when out of memory. */
static const snap__stack_view_t *frames_of(const snap_stack_t *cs) {
  snap_stack_t *s = (snap_stack_t *)cs;
  snap__stack_view_t *v = atomic_load_explicit(&s->view, memory_order_acquire);
  if (v)
    return v;
  size_t total =
      sizeof(snap__stack_view_t) + (size_t)s->count * sizeof(snap_frame_t);
  char *block = malloc(total);
  if (!block)
    return NULL;
  v = (snap__stack_view_t *)(void *)block;
  v->bytes = total;
  v->frames = (snap_frame_t *)(void *)(block + sizeof(snap__stack_view_t));
  v->lines = NULL;
  parts_t p = parts(s);
  for (int i = 0; i < s->count; i++)
    v->frames[i] = frame_of(s, &p, i);
  return publish(&s->view, v);
}

/* s's formatted lines, built on first use; NULL when out of memory. */
static const snap__stack_view_t *lines_of(const snap_stack_t *cs) {
  snap_stack_t *s = (snap_stack_t *)cs;
  snap__stack_view_t *v =
      atomic_load_explicit(&s->lines_view, memory_order_acquire);
  if (v)
    return v;
  const snap__stack_view_t *fv = frames_of(s);
  if (!fv)
    return NULL;
  int n = s->count;
  size_t lines_at = sizeof(snap__stack_view_t);
  size_t pool_at = lines_at + (size_t)n * sizeof(char *);
  size_t total = pool_at;
  for (int i = 0; i < n; i++)
    total += snap__stack_format_line(NULL, i, &fv->frames[i]) + 1;
  char *block = malloc(total);
  if (!block)
    return NULL;
  v = (snap__stack_view_t *)(void *)block;
  v->bytes = total;
  v->frames = NULL;
  v->lines = (const char **)(void *)(block + lines_at);
  char *pool = block + pool_at;
  for (int i = 0; i < n; i++) {
    size_t len = snap__stack_format_line(pool, i, &fv->frames[i]);
    pool[len] = '\0';
    v->lines[i] = pool;
    pool += len + 1;
  }
  return publish(&s->lines_view, v);
}

size_t snap__stack_view_bytes(void) {
  return atomic_load_explicit(&g_view_bytes, memory_order_relaxed);
}

void snap__stack_on_view(void (*fn)(size_t bytes)) {
  atomic_store(&g_on_view, fn);
}

snap_stack_t *snap__stack_retain(const snap_stack_t *cs) {
  snap_stack_t *s = (snap_stack_t *)cs;
  atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
  return s;
}

/* Whether view v lives in s's own block (snap__stack_pack built it). */
static bool in_block(const snap_stack_t *s, const snap__stack_view_t *v) {
  return (const char *)v > (const char *)s &&
         (const char *)v < (const char *)s + s->bytes;
}

/* Drops the shared names' references of a compact stack, in batches (one
   lock each): a small buffer, since any thread may release, whatever its
   stack. */
static void release_names(const snap_stack_t *s) {
  parts_t p = parts(s);
  uint32_t ids[64];
  int k = 0;
  for (int i = 0; i < s->count; i++) {
    ids[k++] = p.recs[i].symbol;
    if (s->lines)
      ids[k++] = p.lines[i].file;
    if (k >= 62) {
      snap__intern_release(ids, k);
      k = 0;
    }
  }
  if (k)
    snap__intern_release(ids, k);
}

static void stack_free(snap_stack_t *s) {
  if (!s->own_strings)
    release_names(s);
  snap__stack_view_t *v[2] = {
      atomic_load_explicit(&s->view, memory_order_acquire),
      atomic_load_explicit(&s->lines_view, memory_order_acquire)};
  for (int i = 0; i < 2; i++)
    if (v[i] && !in_block(s, v[i])) {
      atomic_fetch_sub_explicit(&g_view_bytes, v[i]->bytes,
                                memory_order_relaxed);
      free(v[i]);
    }
  free(s);
}

const snap_stack_t *snap_stack_retain(const snap_stack_t *s) {
  return s ? snap__stack_retain(s) : NULL;
}

void snap_stack_release(const snap_stack_t *cs) {
  snap_stack_t *s = (snap_stack_t *)cs;
  if (s && atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
    stack_free(s);
}

int snap_stack_count(const snap_stack_t *s) { return s ? s->count : 0; }

const snap_frame_t *snap_stack_frame(const snap_stack_t *s, int i) {
  if (!s || i < 0 || i >= s->count)
    return NULL;
  const snap__stack_view_t *v = frames_of(s);
  return v ? &v->frames[i] : NULL;
}

const char *snap_stack_line(const snap_stack_t *s, int i) {
  if (!s || i < 0 || i >= s->count)
    return NULL;
  const snap__stack_view_t *v = lines_of(s);
  return v ? v->lines[i] : NULL;
}
