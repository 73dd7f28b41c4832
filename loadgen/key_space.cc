#include "loadgen/key_space.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "loadgen/rng.h"

namespace gphkv::loadgen {

KeyScrambler::KeyScrambler(uint64_t n, uint64_t seed) : n_(std::max<uint64_t>(n, 1)) {
  int bits = 2;
  while (bits < 64 && (uint64_t{1} << bits) < n_) bits += 2;
  half_bits_ = bits / 2;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
  for (int r = 0; r < 4; ++r) round_keys_[r] = Mix64(seed * 4 + r + 0x5ca1ab1eULL);
}

uint64_t KeyScrambler::FeistelOnce(uint64_t x) const {
  uint64_t left = x >> half_bits_, right = x & half_mask_;
  for (uint64_t key : round_keys_) {
    const uint64_t next = left ^ (Mix64(right ^ key) & half_mask_);
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

uint64_t KeyScrambler::Permute(uint64_t x) const {
  if (n_ <= 1) return 0;
  // Cycle walking keeps the permutation a bijection of [0, n): iterating a
  // permutation of the larger domain from a point inside [0, n) returns to
  // [0, n) before it could revisit x.
  do {
    x = FeistelOnce(x);
  } while (x >= n_);
  return x;
}

KeySpace::KeySpace(uint64_t items, uint64_t objects, uint64_t seed)
    : items_(items),
      objects_(objects),
      popularity_(items, Mix64(seed ^ 0x706f70ULL)),
      seed_(Mix64(seed ^ 0x6e6569ULL)) {}

absl::StatusOr<KeySpace> KeySpace::Create(uint64_t items, double association_fraction, uint64_t seed) {
  if (items < 2) return absl::InvalidArgumentError("the key space needs at least 2 items");
  if (!(association_fraction >= 0.0 && association_fraction < 1.0)) {
    return absl::InvalidArgumentError("association fraction must be in [0, 1)");
  }
  uint64_t associations = static_cast<uint64_t>(std::llround(static_cast<double>(items) * association_fraction));
  uint64_t objects = items - associations;
  if (objects < 2 && associations > 0) {
    return absl::InvalidArgumentError("associations need at least 2 objects to connect");
  }
  if (objects > kMaxObjects) {
    return absl::InvalidArgumentError(absl::StrFormat("%d objects exceed the key packing's 2^30 object ids", objects));
  }
  // Each object has at most (objects - 1) other objects times 8 types to link to.
  if (associations > (objects - 1) * kAssociationTypes) {
    return absl::InvalidArgumentError("too many associations for the number of objects");
  }
  return KeySpace(items, objects, seed);
}

Association KeySpace::AssociationAt(uint64_t index) const {
  // Association j is the `slot`-th edge of object id1 = j mod objects. Slot s
  // has type s mod 8 and hop h = s/8 in [0, objects-1); it links to
  // id2 = id1 + 1 + ((c + h) mod (objects-1)) mod objects, c a hash of id1.
  // For one id1 distinct hops give distinct id2, never id1 itself, so
  // (id1, type, id2) is distinct for distinct j, and id2 looks random.
  const uint64_t j = index - objects_;
  const uint64_t id1 = j % objects_;
  const uint64_t slot = j / objects_;
  const uint32_t type = static_cast<uint32_t>(slot % kAssociationTypes);
  const uint64_t hop = slot / kAssociationTypes;
  const uint64_t c = Mix64(id1 ^ seed_);
  const uint64_t offset = 1 + (c % (objects_ - 1) + hop) % (objects_ - 1);
  const uint64_t id2 = (id1 + offset) % objects_;
  return {id1, type, id2};
}

uint64_t KeySpace::KeyAt(uint64_t index) const {
  if (!IsAssociation(index)) return ObjectKey(index);
  return AssociationKey(AssociationAt(index));
}

}  // namespace gphkv::loadgen
