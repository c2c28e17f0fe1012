/*
 * hash.h — the symbol cache's key: an order-sensitive hash of a stack's pcs.
 *
 * Why not the XOR of the return addresses that a well-known iOS write-up
 * uses: XOR commutes and cancels, so A B A B hashes like the empty stack and
 * every permutation of the same frames collides. Here each pc is folded in
 * with a multiply by an odd constant after an xor, so position matters and
 * repeats do not cancel; a final avalanche spreads the bits the stripe and
 * bucket choices read. One multiply per frame, in four chains that run side
 * by side: ~0.4 ns a frame, next to the ~9 ns a frame costs to capture.
 *
 * Collisions are still possible (64 bits): the cache verifies every hit
 * against the stored pcs, so a collision costs a miss, never a wrong answer.
 */
#ifndef SNAP_SYMBOLS_HASH_H
#define SNAP_SYMBOLS_HASH_H

#include <stdint.h>

#define SNAP__HASH_K 0xff51afd7ed558ccdull

static inline uint64_t snap__hash_rotl(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}

static inline uint64_t snap__stack_hash(const uintptr_t *pcs, int n,
                                        unsigned flags) {
  /* Four lanes, each its own seed, take pcs 0,4,8.. / 1,5,9.. / ...: four
     independent multiply chains, so the CPU overlaps them (one chain costs
     a multiply's latency per pc). Lanes are combined rotated differently,
     so a pc counts for its position even across lanes: A B != B A. */
  uint64_t l[4] = {
      0x9E3779B97F4A7C15ull ^ ((uint64_t)flags << 32) ^ (uint64_t)n,
      0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull, 0x27D4EB2F165667C5ull};
  for (int i = 0; i < n; i++)
    l[i & 3] = (l[i & 3] ^ (uint64_t)pcs[i]) * SNAP__HASH_K;
  uint64_t h = l[0] ^ snap__hash_rotl(l[1], 17) ^ snap__hash_rotl(l[2], 31) ^
               snap__hash_rotl(l[3], 47);
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 29;
  return h;
}

#endif /* SNAP_SYMBOLS_HASH_H */
