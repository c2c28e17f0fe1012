/*
 * stack_table.c — the trace's stack table: a prefix tree of pcs, so that
 * stacks that share their outer frames share their nodes (a 40-deep stack
 * whose leaf moves costs one node per new leaf, not 40).
 *
 * Owns: the nodes, the index that finds a (parent, pc, exact) node, and
 * compaction (dropping nodes no span holds any more). Must not: allocate
 * (its memory is given at init and is fixed), lock (the trace's lock is
 * held by its callers), or name anything.
 *
 * The index is open addressing with linear probing over at least twice as
 * many slots as nodes, so a probe is short and a full table is seen as
 * "cap nodes", never as an endless probe.
 */
#include <string.h>

#include "trace/trace.h"

_Static_assert(sizeof(((snap__stack_path_t *)0)->pcs) / sizeof(uintptr_t) >=
                   SNAP__TRACE_DEPTH,
               "a path holds any stack the trace keeps");

size_t snap__stack_table_bytes(uint32_t cap) {
  size_t slots = 2;
  while (slots < 2 * (size_t)cap)
    slots *= 2;
  return (size_t)cap * sizeof(snap__tnode_t) + slots * sizeof(uint32_t);
}

void snap__stack_table_init(snap__stack_table_t *t, void *mem, size_t bytes) {
  /* The most nodes whose index still fits: nodes 16 bytes (8 on 32-bit),
     slots 4 bytes each and at least 2 per node, a power of two. */
  uint32_t cap = (uint32_t)(bytes / (sizeof(snap__tnode_t) + 8));
  while (cap > 1 && snap__stack_table_bytes(cap) > bytes)
    cap--;
  size_t slots = 2;
  while (slots < 2 * (size_t)cap)
    slots *= 2;
  t->nodes = mem;
  t->slots =
      (uint32_t *)(void *)((char *)mem + (size_t)cap * sizeof(snap__tnode_t));
  t->cap = cap;
  t->n = 0;
  t->slot_mask = (uint32_t)(slots - 1);
  memset(t->slots, 0, slots * sizeof(uint32_t));
}

static uint32_t slot_of(const snap__stack_table_t *t, uint32_t parent,
                        uintptr_t pc, uint32_t exact) {
  uint64_t h = ((uint64_t)pc ^ ((uint64_t)parent << 32 | exact)) *
               UINT64_C(0x9e3779b97f4a7c15);
  return (uint32_t)(h >> 32) & t->slot_mask;
}

static uint32_t find_or_add(snap__stack_table_t *t, uint32_t parent,
                            uintptr_t pc, uint32_t exact) {
  for (uint32_t s = slot_of(t, parent, pc, exact);;
       s = (s + 1) & t->slot_mask) {
    uint32_t v = t->slots[s];
    if (v == 0) {
      if (t->n == t->cap)
        return SNAP__TRACE_NONE;
      uint32_t id = t->n++;
      t->nodes[id] =
          (snap__tnode_t){.parent = parent, .flags = exact, .pc = pc};
      t->slots[s] = id + 1;
      return id;
    }
    const snap__tnode_t *nd = &t->nodes[v - 1];
    if (nd->pc == pc && nd->parent == parent &&
        (nd->flags & SNAP__TNODE_EXACT) == exact)
      return v - 1;
  }
}

uint32_t snap__stack_table_add(snap__stack_table_t *t, const uintptr_t *pcs,
                               int n, bool exact0) {
  uint32_t id = SNAP__TRACE_NONE;
  /* From the root (the last pc) to the leaf. A full table adds nothing
     more: the nodes made so far are kept (a later stack may use them) and
     the stack has no leaf. */
  for (int i = n - 1; i >= 0; i--) {
    id = find_or_add(t, id, pcs[i], i == 0 && exact0 ? SNAP__TNODE_EXACT : 0);
    if (id == SNAP__TRACE_NONE)
      return SNAP__TRACE_NONE;
  }
  return id;
}

uint32_t snap__stack_table_add_path(snap__stack_table_t *t,
                                    snap__stack_path_t *path,
                                    const uintptr_t *pcs, int n, bool exact0) {
  if (n <= 0 || n > (int)(sizeof path->pcs / sizeof path->pcs[0]))
    return snap__stack_table_add(t, pcs, n, exact0);
  int m = path->epoch == t->epoch ? path->n : 0;
  /* The outer frames both stacks have, leaves excepted (a leaf node may
     carry the exact flag, an inner one never does). */
  int k = 0, most = (n < m ? n : m) - 1;
  while (k < most && pcs[n - 1 - k] == path->pcs[m - 1 - k])
    k++;
  /* Root first, in place: the shared frames move to their new places. */
  if (k && n != m) {
    memmove(&path->pcs[n - k], &path->pcs[m - k],
            (size_t)k * sizeof(uintptr_t));
    memmove(&path->ids[n - k], &path->ids[m - k], (size_t)k * sizeof(uint32_t));
  }
  uint32_t id = k ? path->ids[n - k] : SNAP__TRACE_NONE;
  for (int i = n - 1 - k; i >= 0; i--) {
    id = find_or_add(t, id, pcs[i], i == 0 && exact0 ? SNAP__TNODE_EXACT : 0);
    if (id == SNAP__TRACE_NONE) {
      path->n = 0;
      return SNAP__TRACE_NONE;
    }
    path->pcs[i] = pcs[i];
    path->ids[i] = id;
  }
  path->n = n;
  path->epoch = t->epoch;
  return id;
}

void snap__stack_table_unmark(snap__stack_table_t *t) {
  for (uint32_t i = 0; i < t->n; i++)
    t->nodes[i].flags &= ~SNAP__TNODE_LIVE;
}

void snap__stack_table_mark(snap__stack_table_t *t, uint32_t leaf) {
  /* Stops at a node already marked: its parents are too. */
  while (leaf < t->n && !(t->nodes[leaf].flags & SNAP__TNODE_LIVE)) {
    t->nodes[leaf].flags |= SNAP__TNODE_LIVE;
    leaf = t->nodes[leaf].parent;
  }
}

void snap__stack_table_plan(snap__stack_table_t *t) {
  uint32_t next = 0;
  for (uint32_t i = 0; i < t->n; i++)
    t->slots[i] =
        t->nodes[i].flags & SNAP__TNODE_LIVE ? next++ : SNAP__TRACE_NONE;
}

uint32_t snap__stack_table_remap(const snap__stack_table_t *t, uint32_t old) {
  return old < t->n ? t->slots[old] : SNAP__TRACE_NONE;
}

void snap__stack_table_finish(snap__stack_table_t *t) {
  /* In order: a node's new id is at most its old one, and its parent's
     new id was written (to slots[parent]) before. */
  uint32_t n = 0;
  for (uint32_t i = 0; i < t->n; i++) {
    if (!(t->nodes[i].flags & SNAP__TNODE_LIVE))
      continue;
    snap__tnode_t nd = t->nodes[i];
    if (nd.parent != SNAP__TRACE_NONE)
      nd.parent = t->slots[nd.parent];
    nd.flags &= ~SNAP__TNODE_LIVE;
    t->nodes[n++] = nd;
  }
  t->n = n;
  t->epoch++;
  memset(t->slots, 0, ((size_t)t->slot_mask + 1) * sizeof(uint32_t));
  for (uint32_t i = 0; i < n; i++) {
    const snap__tnode_t *nd = &t->nodes[i];
    uint32_t s = slot_of(t, nd->parent, nd->pc, nd->flags & SNAP__TNODE_EXACT);
    while (t->slots[s])
      s = (s + 1) & t->slot_mask;
    t->slots[s] = i + 1;
  }
}
