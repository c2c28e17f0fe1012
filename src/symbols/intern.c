/*
 * intern.c — the named stacks' shared strings (intern.h): a cached stack
 * keeps a 32-bit id per symbol, not a copy of its name, so a thousand
 * stacks through one function hold its name once.
 *
 * Algorithm: an open-addressed table of (hash, entry) cells, linear
 * probing, doubled when half full, backward-shift deletion (an entry is
 * its refs, id and bytes). Not chains: each link was an entry elsewhere
 * in the heap, and a cold lookup with the cache on walked a chain to add
 * its names and another to drop the evicted stack's, a cache miss a link
 * (a quarter of such a lookup in a 60 k-function library, perf); a probe
 * here reads cells side by side and an entry only when its hash matches.
 * Ids index a two-level array of entry pointers (chunks of 4096 slots, each
 * allocated once and never moved while any id is held), so reading a string by
 * id takes no lock. An entry is freed with its last reference and its id
 * reused; the tables go when asked with no string left (snap__intern_trim: a
 * cap of 0 leaves nothing behind), not with each last string (naming with the
 * cache off would make them afresh for every stack). One lock guards the cells,
 * the counts and the free ids: taken once per stack packed (all its names
 * at once) and once per stack freed, never per frame.
 *
 * Must not: be used from the stopped window, or take another lock while
 * holding its own (a caller may hold a cache stripe: stripe, then intern).
 */
#include "symbols/intern.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"

#define CHUNK_IDS 4096u
#define MAX_CHUNKS 1024u /* 4 M distinct strings alive at once */

/* Not `struct entry`: <search.h>'s, in the SDK's Darwin module, clashes
   with it under clang modules (SwiftPM and CocoaPods builds for Apple). */
typedef struct intern_entry {
  uint64_t hash;
  uint32_t refs;
  uint32_t id;
  size_t len;
  char s[];
} intern_entry_t;

typedef _Atomic(intern_entry_t *) slot_t;

static snap__lazy_lock_t g_lock;
typedef struct intern_cell {
  uint64_t hash;
  intern_entry_t *e; /* NULL: empty */
} intern_cell_t;

static intern_cell_t *g_cells; /* 1 << g_bits cells, or NULL */
static unsigned g_bits;
static size_t g_count; /* entries (cells in use) */
static _Atomic(slot_t *) g_chunks[MAX_CHUNKS];
static uint32_t *g_free; /* ids to reuse */
static size_t g_nfree, g_free_cap;
static uint32_t g_next_id = 1; /* 0 is "no string" */
static atomic_size_t g_bytes;

/* A word at a time (strlen finds the end 32 bytes a step): a cold lookup
   with the cache on interns a name it has never seen, and FNV-1a's byte
   loop was ~80 instructions of a dozen-byte name, under the lock. */
static uint64_t hash_of(const char *s, size_t *len) {
  const uint64_t k = 0x9E3779B97F4A7C15ull;
  size_t n = strlen(s), i = 0;
  uint64_t h = k ^ n, w;
  for (; i + 8 <= n; i += 8) {
    memcpy(&w, s + i, 8);
    h = (h ^ w) * k;
    h ^= h >> 32;
  }
  if (i < n) {
    w = 0;
    memcpy(&w, s + i, n - i);
    h = (h ^ w) * k;
  }
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  *len = n;
  return h ^ (h >> 32);
}

static slot_t *slot_of(uint32_t id) {
  slot_t *chunk =
      atomic_load_explicit(&g_chunks[id / CHUNK_IDS], memory_order_acquire);
  return chunk ? &chunk[id % CHUNK_IDS] : NULL;
}

static size_t home_of(uint64_t h, unsigned bits) {
  return (size_t)((h * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

static size_t cells_of(unsigned bits) { return bits ? (size_t)1 << bits : 0; }

/* Under g_lock. */
static void place(intern_cell_t *cells, unsigned bits, intern_entry_t *e) {
  size_t mask = cells_of(bits) - 1;
  size_t i = home_of(e->hash, bits);
  while (cells[i].e)
    i = (i + 1) & mask;
  cells[i] = (intern_cell_t){e->hash, e};
}

/* Under g_lock. */
static bool grow_cells(void) {
  unsigned bits = g_bits ? g_bits + 1 : 11;
  intern_cell_t *c = calloc(cells_of(bits), sizeof *c);
  if (!c)
    return false;
  for (size_t i = 0; i < cells_of(g_bits); i++)
    if (g_cells[i].e)
      place(c, bits, g_cells[i].e);
  free(g_cells);
  atomic_fetch_add(&g_bytes, (cells_of(bits) - cells_of(g_bits)) * sizeof *c);
  g_cells = c;
  g_bits = bits;
  return true;
}

/* Under g_lock: takes e's cell out; the cells after it that probed past it
   move back, so that every entry stays reachable from its home. */
static void unplace(const intern_entry_t *e) {
  size_t mask = cells_of(g_bits) - 1;
  size_t hole = home_of(e->hash, g_bits);
  while (g_cells[hole].e != e)
    hole = (hole + 1) & mask;
  for (size_t i = (hole + 1) & mask; g_cells[i].e; i = (i + 1) & mask) {
    size_t home = home_of(g_cells[i].hash, g_bits);
    /* It stays when its home is in (hole, i], cyclically. */
    bool stays =
        hole <= i ? (hole < home && home <= i) : (hole < home || home <= i);
    if (!stays) {
      g_cells[hole] = g_cells[i];
      hole = i;
    }
  }
  g_cells[hole] = (intern_cell_t){0, NULL};
}

/* Under g_lock: a fresh id with a slot to hold its entry, or 0. */
static uint32_t new_id(void) {
  if (g_nfree)
    return g_free[--g_nfree];
  uint32_t id = g_next_id;
  if (id / CHUNK_IDS >= MAX_CHUNKS)
    return 0;
  if (!slot_of(id)) {
    slot_t *chunk = calloc(CHUNK_IDS, sizeof *chunk);
    if (!chunk)
      return 0;
    atomic_fetch_add(&g_bytes, CHUNK_IDS * sizeof *chunk);
    atomic_store_explicit(&g_chunks[id / CHUNK_IDS], chunk,
                          memory_order_release);
  }
  g_next_id++;
  return id;
}

/* Under g_lock. */
static void drop_ref(uint32_t id) {
  slot_t *slot = slot_of(id);
  intern_entry_t *e =
      slot ? atomic_load_explicit(slot, memory_order_relaxed) : NULL;
  if (!e || --e->refs > 0)
    return;
  unplace(e);
  g_count--;
  atomic_store_explicit(slot, NULL, memory_order_relaxed);
  atomic_fetch_sub(&g_bytes, snap__plat_alloc_size(e, sizeof *e + e->len + 1));
  free(e);
  if (g_nfree == g_free_cap) { /* out of memory here: the id is not reused */
    size_t cap = g_free_cap ? 2 * g_free_cap : 256;
    uint32_t *f = realloc(g_free, cap * sizeof *f);
    if (!f)
      return;
    atomic_fetch_add(&g_bytes, (cap - g_free_cap) * sizeof *f);
    g_free = f;
    g_free_cap = cap;
  }
  g_free[g_nfree++] = id;
}

/* Under g_lock, when no string is left: no id is held anywhere, so no
   reader can be in a chunk. */
static void drop_tables(void) {
  for (unsigned c = 0; c < MAX_CHUNKS; c++) {
    slot_t *chunk = atomic_load_explicit(&g_chunks[c], memory_order_relaxed);
    if (!chunk)
      break;
    atomic_store_explicit(&g_chunks[c], NULL, memory_order_relaxed);
    free(chunk);
  }
  free(g_cells);
  free(g_free);
  g_cells = NULL;
  g_free = NULL;
  g_bits = 0;
  g_nfree = g_free_cap = 0;
  g_next_id = 1;
  atomic_store(&g_bytes, 0);
}

/* Under g_lock: s's id with one more reference, or 0 (out of memory). */
static uint32_t take(const char *s) {
  size_t len;
  uint64_t h = hash_of(s, &len);
  size_t mask = cells_of(g_bits) - 1;
  for (size_t i = g_cells ? home_of(h, g_bits) : 0; g_cells && g_cells[i].e;
       i = (i + 1) & mask) {
    intern_entry_t *e = g_cells[i].e;
    if (g_cells[i].hash == h && e->len == len && memcmp(e->s, s, len) == 0) {
      e->refs++;
      return e->id;
    }
  }
  /* Half full: double. If that fails, fill up to seven eighths (probes
     grow long, but stay finite), then refuse. */
  if (2 * (g_count + 1) > cells_of(g_bits) && !grow_cells() &&
      8 * (g_count + 1) > 7 * cells_of(g_bits))
    return 0;
  intern_entry_t *e = malloc(sizeof *e + len + 1);
  uint32_t id = e ? new_id() : 0;
  if (!id) {
    free(e);
    return 0;
  }
  e->hash = h;
  e->refs = 1;
  e->id = id;
  e->len = len;
  memcpy(e->s, s, len + 1);
  place(g_cells, g_bits, e);
  g_count++;
  atomic_store_explicit(slot_of(id), e, memory_order_release);
  atomic_fetch_add(&g_bytes, snap__plat_alloc_size(e, sizeof *e + len + 1));
  return id;
}

int snap__intern_acquire(const char *const *s, int n, uint32_t *ids) {
  snap__plat_lazy_lock(&g_lock);
  int rc = SNAP_OK;
  for (int i = 0; i < n; i++) {
    ids[i] = s[i] ? take(s[i]) : 0;
    if (s[i] && !ids[i]) {
      for (int k = 0; k < i; k++)
        if (ids[k])
          drop_ref(ids[k]);
      memset(ids, 0, (size_t)n * sizeof *ids);
      rc = SNAP_ENOMEM;
      break;
    }
  }
  snap__plat_lazy_unlock(&g_lock);
  return rc;
}

void snap__intern_release(const uint32_t *ids, int n) {
  bool any = false;
  for (int i = 0; i < n && !any; i++)
    any = ids[i] != 0;
  if (!any)
    return;
  snap__plat_lazy_lock(&g_lock);
  for (int i = 0; i < n; i++)
    if (ids[i])
      drop_ref(ids[i]);
  snap__plat_lazy_unlock(&g_lock);
}

void snap__intern_trim(void) {
  snap__plat_lazy_lock(&g_lock);
  if (g_count == 0)
    drop_tables();
  snap__plat_lazy_unlock(&g_lock);
}

const char *snap__intern_get(uint32_t id) {
  slot_t *slot = id ? slot_of(id) : NULL;
  intern_entry_t *e =
      slot ? atomic_load_explicit(slot, memory_order_acquire) : NULL;
  return e ? e->s : NULL;
}

size_t snap__intern_bytes(void) {
  return atomic_load_explicit(&g_bytes, memory_order_relaxed);
}
