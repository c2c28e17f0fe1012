/*
 * hash.h — the symbol cache's key: an order-sensitive hash of a stack's pcs.
 *
 * Why not the XOR of the return addresses that a well-known iOS write-up
 * uses: XOR commutes and cancels, so A B A B hashes like the empty stack and
 * every permutation of the same frames collides. Here each pc is folded in
 * with a multiply by an odd constant after an xor, so position matters and
 * repeats do not cancel; a final avalanche spreads the bits the stripe and
 * bucket choices read. One multiply per frame: about a nanosecond each,
 * next to the ~10 ns a frame costs to capture.
 *
 * Collisions are still possible (64 bits): the cache verifies every hit
 * against the stored pcs, so a collision costs a miss, never a wrong answer.
 */
#ifndef SNAP_SYMBOLS_HASH_H
#define SNAP_SYMBOLS_HASH_H

#include <stdint.h>

static inline uint64_t snap__stack_hash(const uintptr_t *pcs, int n,
                                        unsigned flags) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ ((uint64_t)flags << 32) ^ (uint64_t)n;
  for (int i = 0; i < n; i++)
    h = (h ^ (uint64_t)pcs[i]) * 0xff51afd7ed558ccdull + 0x632be59bd9b4e019ull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 29;
  return h;
}

#endif /* SNAP_SYMBOLS_HASH_H */
