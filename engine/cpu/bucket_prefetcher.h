// The CPU counterpart of GPH's Bucket Requester (§5.2): keep the memory loads
// of keys further down a batch in flight before comparing the current one.
// A lookup is two dependent misses (the cell byte, then the bucket), so the
// cell is requested kCellAhead keys early and the bucket kBucketAhead keys
// early, with both addresses kept in a ring so each key is hashed once.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gphkv/engine/gph_hash.h"

namespace gphkv::engine::cpu {

struct Located {
  uint32_t cell;
  uint32_t bucket;
};

// Calls body(i, Located) for i in [0, n), where key_at(i) gives key i; keys
// equal to kEmptyKey get no address (body must handle them out of band).
template <class KeyAt, class Body>
void for_each_located(const gph::Geometry& g, const uint8_t* cells, const uint64_t* bucket_keys, size_t n,
                      KeyAt&& key_at, Body&& body) {
  constexpr size_t kCellAhead = 16;
  constexpr size_t kBucketAhead = 8;
  constexpr size_t kRing = 32;  // > kCellAhead, a power of two
  Located ring[kRing];
  auto request_cell = [&](size_t i) {
    const uint64_t key = key_at(i);
    if (key == gph::kEmptyKey) return;
    ring[i % kRing].cell = gph::cell_of(g, key);
    __builtin_prefetch(cells + ring[i % kRing].cell);
  };
  auto request_bucket = [&](size_t i) {
    const uint64_t key = key_at(i);
    if (key == gph::kEmptyKey) return;
    Located& l = ring[i % kRing];
    l.bucket = gph::bucket_for_key(g, key, l.cell, cells[l.cell]);
    const uint64_t* slots = bucket_keys + static_cast<uint64_t>(l.bucket) * g.slots_per_bucket;
    // A 16-slot bucket of keys is two cache lines.
    for (uint32_t s = 0; s < g.slots_per_bucket; s += 8) __builtin_prefetch(slots + s);
  };
  for (size_t i = 0; i < n && i < kCellAhead; ++i) request_cell(i);
  for (size_t i = 0; i < n && i < kBucketAhead; ++i) request_bucket(i);
  for (size_t i = 0; i < n; ++i) {
    if (i + kCellAhead < n) request_cell(i + kCellAhead);
    if (i + kBucketAhead < n) request_bucket(i + kBucketAhead);
    body(i, ring[i % kRing]);
  }
}

}  // namespace gphkv::engine::cpu
