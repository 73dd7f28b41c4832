// The social graph's key space: objects and associations, as TAO names them.
//
// An index in [0, n) names one stored item. Indexes [0, objects) are objects
// (id = index); the rest are associations (id1, type, id2), an edge of type
// `type` from object id1 to object id2. Each maps to one 64-bit key:
//
//   object       key = id                                   (bit 63 clear)
//   association  key = 1<<63 | type<<60 | id1<<30 | id2     (bit 63 set)
//
// a packing, so distinct items always get distinct keys (no hash collisions
// to explain), readable in a dump, and grouped by id1 the way TAO shards by
// id1. It bounds objects to 2^30 and types to 8; larger graphs are refused.
//
// Popularity is not tied to the index: a Zipf rank goes through a keyed
// bijection (KeyScrambler) first, so the hottest items are spread over both
// kinds and the whole id range instead of being the smallest ids.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

namespace gphkv::loadgen {

// A keyed pseudo-random permutation of [0, n): a 4-round Feistel network on
// the smallest even number of bits that covers n, walking the cycle until the
// image falls inside [0, n) (at most 4 steps on average since 2^bits < 4n).
class KeyScrambler {
 public:
  KeyScrambler(uint64_t n, uint64_t seed);
  uint64_t Permute(uint64_t x) const;
  uint64_t n() const { return n_; }

 private:
  uint64_t FeistelOnce(uint64_t x) const;
  uint64_t n_;
  int half_bits_;
  uint64_t half_mask_;
  uint64_t round_keys_[4];
};

struct Association {
  uint64_t id1;
  uint32_t type;
  uint64_t id2;
};

class KeySpace {
 public:
  static constexpr uint64_t kMaxObjects = uint64_t{1} << 30;
  static constexpr uint32_t kAssociationTypes = 8;

  // `items` in total, of which round(items * association_fraction) are associations.
  static absl::StatusOr<KeySpace> Create(uint64_t items, double association_fraction, uint64_t seed);

  uint64_t items() const { return items_; }
  uint64_t objects() const { return objects_; }
  uint64_t associations() const { return items_ - objects_; }

  bool IsAssociation(uint64_t index) const { return index >= objects_; }
  Association AssociationAt(uint64_t index) const;
  // The 64-bit key of the item at `index` (see the packing above).
  uint64_t KeyAt(uint64_t index) const;
  // The item a Zipf rank lands on: rank 0 is the hottest.
  uint64_t IndexOfRank(uint64_t rank) const { return popularity_.Permute(rank); }

  static uint64_t ObjectKey(uint64_t id) { return id; }
  static uint64_t AssociationKey(const Association& a) {
    return (uint64_t{1} << 63) | (uint64_t{a.type} << 60) | (a.id1 << 30) | a.id2;
  }
  static bool KeyIsAssociation(uint64_t key) { return key >> 63; }

 private:
  KeySpace(uint64_t items, uint64_t objects, uint64_t seed);
  uint64_t items_;
  uint64_t objects_;
  KeyScrambler popularity_;  // rank -> index
  uint64_t seed_;            // salts the choice of id2
};

}  // namespace gphkv::loadgen
