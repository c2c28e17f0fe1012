/*
 * rule_cache.h — remembers the unwind rule of each pc, without a lock.
 *
 * Decoding .eh_frame for one pc costs a binary search plus a CIE/FDE parse
 * (~100 ns); a call stack repeats its pcs, so the walker asks this cache
 * first and pays the parse once per pc. The lookup is inline: it runs once
 * per frame of every walk.
 *
 * Shape: a direct-mapped table of entries {key, value, check}, each word an
 * atomic, all three in one cache line. Writers (any thread, signal handlers
 * included) store the three words without coordination; a reader accepts an
 * entry only if check == (key * K) ^ value ^ salt, where key * K is the
 * hash that also picks the slot. Two racing writers can interleave their
 * words, but a mixed entry fails the check: a key from one writer with a
 * value from the other is caught outright (the values differ), and a check
 * from the other would need (k1 * K) ^ (k2 * K) == v1 ^ v2 — for two keys
 * in one slot the left side is pseudo-random in its low 52 bits, so this
 * is a 2^-52 coincidence. A reader sees a whole entry or a miss. The salt is a
 * bijective mix of the image-table generation, xored with the live identity
 * of the pc's image (live_images.h): when the table is rebuilt every entry
 * stops matching at once, and a pc reused by a new library never gets the
 * old library's rule even before the table knows of the change. "No rule
 * here" is cached too.
 *
 * Must not: block, allocate, or return a rule it has not verified.
 */
#ifndef SNAP_CAPTURE_RULE_CACHE_H
#define SNAP_CAPTURE_RULE_CACHE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "capture/cfi.h"

#define SNAP__RULE_CACHE_BITS 12 /* 4096 entries, 128 KiB */

typedef struct snap__rule_entry {
  _Alignas(32) atomic_uint_least64_t key;
  atomic_uint_least64_t value, check;
} snap__rule_entry_t;

extern snap__rule_entry_t snap__rule_cache[1u << SNAP__RULE_CACHE_BITS];

#define SNAP__RULE_MUL 0x9e3779b97f4a7c15ull
#define SNAP__RULE_PRESENT ((uint64_t)1 << 6)
/* Set when the rule is a frame-record rule (snap__rule_record_cfa, asked
   once when the rule is stored): the walk's fast path tests this bit
   instead of unpacking the rule for every frame. */
#define SNAP__RULE_RECORD ((uint64_t)1 << 7)

/* The salt for a table generation. [signal-safe] */
uint64_t snap__rule_cache_salt(uint64_t generation);

/* One multiply serves both the slot (its top bits) and the check. */
static inline uint64_t snap__rule_hash(uintptr_t pc) {
  return (uint64_t)pc * SNAP__RULE_MUL;
}

static inline snap__rule_entry_t *snap__rule_slot(uint64_t hash) {
  return &snap__rule_cache[hash >> (64 - SNAP__RULE_CACHE_BITS)];
}

static inline void snap__rule_unpack(uint64_t v, snap__rule_t *r) {
  r->cfa = v & 3;
  r->ra = (v >> 2) & 3;
  r->fp = (v >> 4) & 3;
  r->ra_off = (int8_t)(uint8_t)(v >> 8) * 8;
  r->fp_off = (int8_t)(uint8_t)(v >> 16) * 8;
  r->cfa_off = (int32_t)(uint32_t)(v >> 32);
}

/* The packed rule of pc, verified, or 0 on a miss. [signal-safe] */
static inline uint64_t snap__rule_cache_probe(uintptr_t pc, uint64_t salt) {
  uint64_t h = snap__rule_hash(pc);
  snap__rule_entry_t *e = snap__rule_slot(h);
  uint64_t k = atomic_load_explicit(&e->key, memory_order_relaxed);
  uint64_t v = atomic_load_explicit(&e->value, memory_order_relaxed);
  uint64_t c = atomic_load_explicit(&e->check, memory_order_relaxed);
  if (k != (uint64_t)pc || c != (h ^ v ^ salt) || !(v & SNAP__RULE_PRESENT))
    return 0;
  return v;
}

/* [signal-safe] */
static inline bool snap__rule_cache_get(uintptr_t pc, uint64_t salt,
                                        snap__rule_t *out) {
  uint64_t v = snap__rule_cache_probe(pc, salt);
  if (!v)
    return false;
  snap__rule_unpack(v, out);
  return true;
}

/* If pc's rule is in the cache and is a frame-record rule, its CFA offset
   K (snap__rule_record_cfa); else 0. [signal-safe] */
static inline intptr_t snap__rule_cache_record_cfa(uintptr_t pc,
                                                   uint64_t salt) {
  uint64_t v = snap__rule_cache_probe(pc, salt);
  return v & SNAP__RULE_RECORD ? (intptr_t)(int32_t)(uint32_t)(v >> 32) : 0;
}

/* Stores the rule if it packs (offsets compilers emit always do).
   [signal-safe] */
void snap__rule_cache_put(uintptr_t pc, uint64_t salt, const snap__rule_t *r);

#endif /* SNAP_CAPTURE_RULE_CACHE_H */
