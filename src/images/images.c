/*
 * images.c — builds, publishes and searches the image table.
 *
 * Algorithm: the platform reports every executable range of every loaded
 * image; we copy them (paths interned), sort by start address
 * and publish the result in one of a few static slots. Lookups binary-search
 * the published slot.
 *
 * Why static slots: a reader in a signal handler increments the slot's reader
 * count before it knows whether the slot is still current. If slots were
 * heap blocks, that increment could land in freed memory. Slots never go
 * away; only their payload (the sorted ranges) is freed, and
 * only when the slot is not current and nobody reads it.
 *
 * Must not: call the platform from a reader path, allocate or lock on one.
 */
#include "images/images.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "platform/platform.h"

#define SLOTS 8
#define MAX_PREFIXES 64

struct snap__images {
  atomic_int readers;
  /* Atomic: snap__images_current_generation reads it without a
     reference, so from a slot a writer may be refilling; the value read
     then is a generation no stack was checked under yet (it is published
     after), which only sends the caller to the table. */
  _Atomic uint64_t generation;
  int count;
  snap__image_t *ranges; /* sorted by start; the slot's payload */
};

static struct snap__images g_slots[SLOTS];
static struct snap__images g_empty; /* before the first build, or on ENOMEM */
static _Atomic(struct snap__images *) g_current;

/* Paths and build ids are interned for the life of the process: a name
   handed to a user (snap_image_info_t, later a symbolicated frame) must
   outlive table rebuilds. Distinct ones are few, and a library loaded
   again reuses its entries, so the set stays small. Guarded by g_writer; read
   freely. */
typedef struct interned {
  struct interned *next;
  char str[];
} interned_t;
#define INTERN_BUCKETS 256
static interned_t *g_interned[INTERN_BUCKETS];

/* Writer state: guarded by g_writer, made on first use (platform.h,
   snap__lazy_lock_t); g_built, g_dirty and g_stamp are also read without
   it, to skip a rebuild. */
static snap__lazy_lock_t g_writer;
static _Atomic uint64_t g_stamp; /* of the published table; read unlocked */
static uint64_t g_generation;
static atomic_bool g_built;
static atomic_bool g_dirty; /* prefixes changed since the last build */
static char *g_prefixes[MAX_PREFIXES];
static int g_prefix_count; /* 0: the default rule */

const snap__images_t *snap__images_acquire(void) {
  for (int tries = 0; tries < 64; tries++) {
    struct snap__images *t =
        atomic_load_explicit(&g_current, memory_order_acquire);
    if (!t)
      return &g_empty;
    atomic_fetch_add_explicit(&t->readers, 1, memory_order_acq_rel);
    if (atomic_load_explicit(&g_current, memory_order_acquire) == t)
      return t;
    atomic_fetch_sub_explicit(&t->readers, 1, memory_order_acq_rel);
  }
  /* A writer republished 64 times while we looked: give an empty view
     rather than spin in a signal handler. */
  return &g_empty;
}

void snap__images_release(const snap__images_t *t) {
  if (t && t != &g_empty)
    atomic_fetch_sub_explicit(&((struct snap__images *)t)->readers, 1,
                              memory_order_acq_rel);
}

const snap__image_t *snap__images_find(const snap__images_t *t, uintptr_t pc) {
  int lo = 0, hi = t->count - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    const snap__image_t *r = &t->ranges[mid];
    if (pc < r->start)
      hi = mid - 1;
    else if (pc >= r->end)
      lo = mid + 1;
    else
      return r;
  }
  return NULL;
}

uint64_t snap__images_generation(const snap__images_t *t) {
  return atomic_load_explicit(&t->generation, memory_order_relaxed);
}

uint64_t snap__images_current_generation(void) {
  struct snap__images *t =
      atomic_load_explicit(&g_current, memory_order_acquire);
  return t ? atomic_load_explicit(&t->generation, memory_order_relaxed) : 0;
}

/* ---- Building (writer side) --------------------------------------------- */

static const char *intern(const char *path) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (const char *p = path; *p; p++)
    h = (h ^ (unsigned char)*p) * 16777619u;
  interned_t **bucket = &g_interned[h % INTERN_BUCKETS];
  for (interned_t *e = *bucket; e; e = e->next)
    if (strcmp(e->str, path) == 0)
      return e->str;
  size_t len = strlen(path) + 1;
  interned_t *e = malloc(sizeof *e + len);
  if (!e)
    return NULL;
  memcpy(e->str, path, len);
  e->next = *bucket;
  *bucket = e;
  return e->str;
}

typedef struct collect {
  snap__image_t *v;
  int n, cap;
  bool oom;
} collect_t;

/* Runs inside the platform's enumeration, which may hold the loader's
   lock: it takes no lock of ours (paths are copied here and interned
   later, under g_writer). */
static void collect_cb(const snap__plat_range_t *r, void *ctx) {
  collect_t *c = ctx;
  if (c->oom)
    return;
  if (c->n == c->cap) {
    int cap = c->cap ? c->cap * 2 : 64;
    snap__image_t *v = realloc(c->v, (size_t)cap * sizeof *v);
    if (!v) {
      c->oom = true;
      return;
    }
    c->v = v;
    c->cap = cap;
  }
  char id[2 * SNAP__BUILD_ID_MAX + 8];
  snap__plat_build_id_text(r->build_id, r->build_id_len, id, sizeof id);
  char *path = strdup(r->path ? r->path : "");
  char *build_id = id[0] ? strdup(id) : NULL;
  if (!path || (id[0] && !build_id)) {
    free(path);
    free(build_id);
    c->oom = true;
    return;
  }
  snap__image_t *img = &c->v[c->n++];
  memset(img, 0, sizeof *img);
  img->start = r->start;
  img->end = r->end;
  img->base = r->base;
  img->unwind_hdr = r->unwind_hdr;
  img->unwind_lo = r->unwind_lo;
  img->unwind_hi = r->unwind_hi;
  img->func_index = r->func_index;
  img->func_index_size = r->func_index_size;
  img->ident = r->ident;
  img->content = r->content;
  img->size = r->size;
  /* Copies until build() interns them and sets name. */
  img->path = path;
  img->build_id = build_id;
}

static int by_start(const void *a, const void *b) {
  const snap__image_t *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

static bool has_prefix(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The default app rule: everything under the platform's app root (the
   main executable's directory; on Apple its .app bundle). Computed per build
   because only the platform knows where the app lives. */
static bool is_app_path(const char *path, const char *app_root) {
  if (!path[0])
    return false;
  if (g_prefix_count == 0)
    return app_root[0] && has_prefix(path, app_root);
  for (int i = 0; i < g_prefix_count; i++)
    if (has_prefix(path, g_prefixes[i]))
      return true;
  return false;
}

static void free_payload(struct snap__images *s) {
  free(s->ranges);
  s->ranges = NULL;
  s->count = 0;
}

/* A slot that is neither current nor read. Caller holds g_writer. */
static struct snap__images *free_slot(struct snap__images *current) {
  for (int i = 0; i < SLOTS; i++) {
    struct snap__images *s = &g_slots[i];
    if (s == current)
      continue;
    if (atomic_load_explicit(&s->readers, memory_order_acquire) == 0) {
      free_payload(s);
      return s;
    }
  }
  return NULL;
}

/* Frees what collect_cb copied and build() has not interned yet (an
   image without its name). */
static void free_collected(collect_t *c) {
  for (int i = 0; i < c->n; i++)
    if (!c->v[i].name) {
      free((char *)c->v[i].path);
      free((char *)c->v[i].build_id);
    }
  free(c->v);
}

static void (*_Atomic g_before_publish)(void); /* test hook, or NULL */

void snap__images_set_publish_hook(void (*fn)(void)) {
  atomic_store(&g_before_publish, fn);
}

/* Builds and publishes a new table unless one is current (force: always);
   stamp is the platform's load/unload stamp, read by the caller first.
   Never publishes a table older than the one published: builds run at
   once in several threads, each enumerating outside our lock, and one
   that enumerated before a dlopen could take the lock after another that
   enumerated after it. Publishing it would put a table without that
   library back, with a stamp that says so — but a thread that had just
   compared the newer stamp (refresh_if_stale: equal, nothing to do) and
   acquired the table after it would name that library's pcs as in no
   image (issue 26: 1-2 such pcs in millions under churn). Stamps only grow
   (platform.h), so the older of two builds is the one with the smaller
   stamp, and it is dropped.
   The platform is asked first, holding no lock of ours: enumerating takes
   the loader's lock, and a thread inside dlopen (running a library's
   constructor, say, that asks for a stack) holds that lock and may then
   wait for ours — taking them in the other order would deadlock. */
static int build(bool force, uint64_t stamp) {
  if (!force && atomic_load(&g_built) && !atomic_load(&g_dirty) &&
      stamp == atomic_load(&g_stamp))
    return SNAP_OK;
  collect_t c = {0};
  int rc = snap__plat_images_enumerate(collect_cb, &c);
  if (rc == SNAP_OK && c.oom)
    rc = SNAP_ENOMEM;
  char app_root[4096] = "";
  if (!snap__plat_app_root(app_root, sizeof app_root))
    app_root[0] = '\0';
  if (rc != SNAP_OK) {
    free_collected(&c);
    return rc;
  }

  void (*hook)(void) = atomic_load(&g_before_publish);
  if (hook)
    hook();

  snap__plat_lazy_lock(&g_writer);
  uint64_t published = atomic_load(&g_stamp);
  if (atomic_load(&g_built) &&
      (stamp < published || (!force && stamp == published))) {
    /* Another build published a table at least as new (with the app
       prefixes as they are: in_app is decided under this lock). */
    snap__plat_lazy_unlock(&g_writer);
    free_collected(&c);
    return SNAP_OK;
  }
  for (int i = 0; i < c.n && rc == SNAP_OK; i++) {
    const char *interned = intern(c.v[i].path);
    const char *id = c.v[i].build_id ? intern(c.v[i].build_id) : NULL;
    if (!interned || (c.v[i].build_id && !id)) {
      rc = SNAP_ENOMEM;
      break;
    }
    free((char *)c.v[i].path);
    free((char *)c.v[i].build_id);
    c.v[i].path = interned;
    c.v[i].build_id = id;
    const char *slash = strrchr(interned, '/');
    c.v[i].name = slash ? slash + 1 : interned;
    c.v[i].in_app = is_app_path(interned, app_root);
  }
  struct snap__images *cur =
      atomic_load_explicit(&g_current, memory_order_acquire);
  struct snap__images *slot = rc == SNAP_OK ? free_slot(cur) : NULL;
  if (rc == SNAP_OK && !slot)
    rc = SNAP_EBUSY; /* every other slot still read (a stopped reader) */
  if (rc != SNAP_OK) {
    free_collected(&c);
    snap__plat_lazy_unlock(&g_writer);
    return rc;
  }
  qsort(c.v, (size_t)c.n, sizeof *c.v, by_start);
  uint64_t generation = ++g_generation;
  for (int i = 0; i < c.n; i++) {
    snap__image_t *img = &c.v[i];
    const snap__image_t *old = cur ? snap__images_find(cur, img->start) : NULL;
    img->since = (old && old->start == img->start && old->end == img->end &&
                  old->base == img->base && old->path == img->path &&
                  old->ident == img->ident && old->content == img->content &&
                  old->in_app == img->in_app)
                     ? old->since
                     : generation;
  }
  slot->ranges = c.v;
  slot->count = c.n;
  atomic_store_explicit(&slot->generation, generation, memory_order_relaxed);
  atomic_store_explicit(&g_current, slot, memory_order_release);
  atomic_store_explicit(&g_stamp, stamp, memory_order_release);
  atomic_store(&g_built, true);
  atomic_store(&g_dirty, false);
  snap__plat_lazy_unlock(&g_writer);
  return SNAP_OK;
}

int snap__images_refresh(bool force) {
  return build(force, snap__plat_images_stamp());
}

int snap__images_refresh_if_stale(void) {
  uint64_t stamp = snap__plat_images_stamp(); /* asked once: it locks */
  if (stamp == atomic_load_explicit(&g_stamp, memory_order_acquire))
    return SNAP_OK;
  return build(false, stamp);
}

__attribute__((constructor)) static void images_init(void) {
  (void)snap__images_refresh(true);
}

/* ---- Public API -----------------------------------------------------------
 */

bool snap_is_app_address(uintptr_t pc) {
  const snap__images_t *t = snap__images_acquire();
  const snap__image_t *img = snap__images_find(t, pc);
  bool app = img && img->in_app;
  snap__images_release(t);
  return app;
}

int snap_set_app_image_prefixes(const char *const *prefixes, int n) {
  if (n < 0 || n > MAX_PREFIXES || (n > 0 && !prefixes))
    return SNAP_EINVAL;
  char *copy[MAX_PREFIXES];
  for (int i = 0; i < n; i++) {
    if (!prefixes[i] || !prefixes[i][0]) {
      while (i--)
        free(copy[i]);
      return SNAP_EINVAL;
    }
    if (!(copy[i] = strdup(prefixes[i]))) {
      while (i--)
        free(copy[i]);
      return SNAP_ENOMEM;
    }
  }
  snap__plat_lazy_lock(&g_writer);
  for (int i = 0; i < g_prefix_count; i++)
    free(g_prefixes[i]);
  for (int i = 0; i < n; i++)
    g_prefixes[i] = copy[i];
  g_prefix_count = n;
  atomic_store(&g_dirty, true);
  snap__plat_lazy_unlock(&g_writer);
  return snap__images_refresh(true);
}

int snap_image_lookup(uintptr_t pc, snap_image_info_t *out) {
  if (!out || !snap__abi_size_known(out->size, SNAP__IMAGE_INFO_SIZES))
    return SNAP_EINVAL;
  (void)snap__images_refresh(false);
  const snap__images_t *t = snap__images_acquire();
  const snap__image_t *img = snap__images_find(t, pc);
  int rc = SNAP_EINVAL;
  if (img) {
    snap_image_info_t all = {.base = img->base,
                             .start = img->start,
                             .end = img->end,
                             .path = img->path,
                             .name = img->name,
                             .in_app = img->in_app,
                             .image_size = img->size,
                             .build_id = img->build_id};
    snap__abi_copy_out(out, &all, out->size);
    rc = SNAP_OK;
  }
  snap__images_release(t);
  return rc;
}
