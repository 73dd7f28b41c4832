// Extended Move's choice of a new (Φ, Δ) for one cell (GPH §6.1), shared by
// the CPU backend and the CUDA Refinement phase so both pick the same cell byte
// from the same state.
#pragma once

#include <cstdint>

#include "gphkv/engine/gph_hash.h"

namespace gphkv::engine::gph {

// Finds a cell byte under which all `n` keys of cell `cell` (the new key
// included) fit into that cell's R buckets, given how many slots of each
// bucket the other cells occupy (`others(bucket_id)`, at most M).
//
// The order of the search is the paper's: every Offset Δ' of the current
// Mapping, then the next Mapping Φ' (wrapping) with every Δ', and so on. A
// candidate is pruned without touching any slot when the cell's keys that
// land on one bucket exceed the room the other cells leave there; virtual
// buckets that share a real bucket (V_i^{j1} = V_i^{j2}) share its room.
// Returns false when no (Φ', Δ') fits: the insert fails and the caller grows.
template <class OthersFn>
GPHKV_HD bool plan_extended_move(const Geometry& g, uint32_t cell, uint8_t current, const uint64_t* keys, uint32_t n,
                                 OthersFn&& others, uint8_t* chosen) {
  const uint32_t R = g.virtual_buckets;
  const uint32_t M = g.slots_per_bucket;
  if (n > R * M) return false;  // more keys than the cell's buckets hold (§6.2)
  const uint32_t mappings = g.num_mappings();
  const uint32_t first = cell_mapping(g, current);
  uint32_t bucket[kMaxVirtualBuckets];
  uint32_t canon[kMaxVirtualBuckets];   // first r with the same real bucket
  uint32_t room[kMaxVirtualBuckets];    // free slots of bucket[r] (canonical r)
  uint32_t vcount[kMaxVirtualBuckets];  // keys per virtual bucket j
  uint32_t load[kMaxVirtualBuckets];
  for (uint32_t t = 0; t < mappings; ++t) {
    const uint32_t phi = (first + t) % mappings;
    for (uint32_t r = 0; r < R; ++r) {
      bucket[r] = bucket_of(g, cell, r, phi);
      canon[r] = r;
      for (uint32_t q = 0; q < r; ++q) {
        if (bucket[q] == bucket[r]) {
          canon[r] = q;
          break;
        }
      }
      if (canon[r] == r) room[r] = M - others(bucket[r]);
      vcount[r] = 0;
    }
    for (uint32_t k = 0; k < n; ++k) ++vcount[virtual_bucket_of(g, keys[k], phi)];
    // The current Mapping starts at the current Offset: if that fits, nothing moves.
    const uint32_t first_offset = t == 0 ? cell_offset(g, current) : 0;
    for (uint32_t step = 0; step < R; ++step) {
      const uint32_t d = (first_offset + step) & (R - 1);
      for (uint32_t r = 0; r < R; ++r) load[r] = 0;
      bool fits = true;
      for (uint32_t j = 0; j < R && fits; ++j) {
        if (vcount[j] == 0) continue;
        const uint32_t c = canon[(j + d) & (R - 1)];
        load[c] += vcount[j];
        fits = load[c] <= room[c];
      }
      if (fits) {
        *chosen = make_cell(g, phi, d);
        return true;
      }
    }
  }
  return false;
}

}  // namespace gphkv::engine::gph
