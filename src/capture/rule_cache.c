/*
 * rule_cache.c — remembers the unwind rule of each pc, without a lock.
 *
 * Decoding .eh_frame for one pc costs a binary search plus a CIE/FDE parse
 * (~100 ns); a call stack repeats its pcs, so the walker asks this cache
 * first and pays the parse once per pc.
 *
 * Shape: a direct-mapped table of entries {key, value, check}, each word an
 * atomic. Writers (any thread, signal handlers included) store the three
 * words without coordination; a reader accepts an entry only if
 * check == mix(key, value, generation). Two racing writers can interleave
 * their words, but a mixed entry fails the check (64-bit mix: a false accept
 * needs a 2^-64 coincidence), so a reader sees a whole entry or a miss.
 * Folding the image-table generation into the check retires every entry at
 * once when an image is loaded or unloaded: a pc reused by a new library
 * never gets the old library's rule.
 *
 * Must not: block, allocate, or return a rule it has not verified.
 */
#include <stdatomic.h>

#include "capture/cfi.h"

#define ENTRIES 4096 /* 96 KiB; a process's hot pcs fit */

typedef struct entry {
  atomic_uint_least64_t key, value, check;
} entry_t;

static entry_t g_cache[ENTRIES];

static uint64_t mix(uint64_t x) { /* splitmix64 finaliser */
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

static uint64_t check_of(uint64_t key, uint64_t value, uint64_t gen) {
  return mix(key ^ mix(value ^ mix(gen + 0x9e3779b97f4a7c15ull)));
}

/* A rule packs into 64 bits when its offsets are small multiples of 8 (all
   that compilers emit for ra/fp) and the CFA offset fits 32 bits. */
static bool pack(const snap__rule_t *r, uint64_t *out) {
  if (r->ra_off % 8 || r->fp_off % 8 || r->ra_off / 8 < -128 ||
      r->ra_off / 8 > 127 || r->fp_off / 8 < -128 || r->fp_off / 8 > 127)
    return false;
  *out = (uint64_t)r->cfa | (uint64_t)r->ra << 2 | (uint64_t)r->fp << 4 |
         (uint64_t)1 << 6 /* present */ |
         (uint64_t)(uint8_t)(int8_t)(r->ra_off / 8) << 8 |
         (uint64_t)(uint8_t)(int8_t)(r->fp_off / 8) << 16 |
         (uint64_t)(uint32_t)r->cfa_off << 32;
  return true;
}

static void unpack(uint64_t v, snap__rule_t *r) {
  r->cfa = v & 3;
  r->ra = (v >> 2) & 3;
  r->fp = (v >> 4) & 3;
  r->ra_off = (int8_t)(uint8_t)(v >> 8) * 8;
  r->fp_off = (int8_t)(uint8_t)(v >> 16) * 8;
  r->cfa_off = (int32_t)(uint32_t)(v >> 32);
}

void snap__cfi_rule_cached(const snap__image_t *img, uint64_t generation,
                           uintptr_t pc, snap__rule_t *out) {
  uint64_t key = (uint64_t)pc;
  entry_t *e = &g_cache[mix(key) & (ENTRIES - 1)];
  uint64_t k = atomic_load_explicit(&e->key, memory_order_relaxed);
  if (k == key) {
    uint64_t v = atomic_load_explicit(&e->value, memory_order_relaxed);
    uint64_t c = atomic_load_explicit(&e->check, memory_order_relaxed);
    if (c == check_of(k, v, generation)) {
      unpack(v, out);
      return;
    }
  }
  snap__cfi_find_rule(img, pc, out);
  uint64_t v;
  if (pack(out, &v)) {
    atomic_store_explicit(&e->key, key, memory_order_relaxed);
    atomic_store_explicit(&e->value, v, memory_order_relaxed);
    atomic_store_explicit(&e->check, check_of(key, v, generation),
                          memory_order_relaxed);
  }
}
