/*
 * rule_cache.c — the writer half of the unwind-rule cache (the design and
 * the reader are in rule_cache.h).
 */
#include "capture/rule_cache.h"

snap__rule_entry_t snap__rule_cache[1u << SNAP__RULE_CACHE_BITS];

/* Any bijection of the generation will do: the salt only has to differ
   between generations. One multiply, because every walk computes it. */
uint64_t snap__rule_cache_salt(uint64_t generation) {
  return (generation + 1) * 0xd6e8feb86659fd93ull;
}

/* A rule packs into 64 bits when its ra/fp offsets are multiples of 8
   within +-1 KiB (all that compilers emit) and the CFA offset fits 32 bits
   (it always does: cfi.c rejects larger ones). */
static bool pack(const snap__rule_t *r, uint64_t *out) {
  if (r->ra_off % 8 || r->fp_off % 8 || r->ra_off / 8 < -128 ||
      r->ra_off / 8 > 127 || r->fp_off / 8 < -128 || r->fp_off / 8 > 127)
    return false;
  *out = (uint64_t)r->cfa | (uint64_t)r->ra << 2 | (uint64_t)r->fp << 4 |
         SNAP__RULE_PRESENT | (uint64_t)(uint8_t)(int8_t)(r->ra_off / 8) << 8 |
         (uint64_t)(uint8_t)(int8_t)(r->fp_off / 8) << 16 |
         (uint64_t)(uint32_t)r->cfa_off << 32;
  if (snap__rule_record_cfa(r))
    *out |= SNAP__RULE_RECORD;
  return true;
}

void snap__rule_cache_put(uintptr_t pc, uint64_t salt, const snap__rule_t *r) {
  uint64_t v;
  if (!pack(r, &v))
    return;
  uint64_t h = snap__rule_hash(pc);
  snap__rule_entry_t *e = snap__rule_slot(h);
  atomic_store_explicit(&e->key, (uint64_t)pc, memory_order_relaxed);
  atomic_store_explicit(&e->value, v, memory_order_relaxed);
  atomic_store_explicit(&e->check, h ^ v ^ salt, memory_order_relaxed);
}
