// Which partition (a GPU's store, or one of --partitions CPU stores) holds a
// key. A hash of the key alone, so every front-end thread places a key the
// same way without shared state, and a key stays on its partition for the
// life of a data directory (which is why a directory written with another
// partition count is refused: server/durability/partition_dirs.h).
//
// The hash is splitmix64's finalizer over the key plus a seed of its own.
// It must not be a function of what already chose this server: the sharded
// client picks a key's server by rendezvous over murmur3's fmix64
// (client/shard_router.cc), and the engine's GPH tables hash with fmix32 and
// their own seeds inside the partition. Were the partition hash one of
// those, a shard's keys (all alike in that hash) could crowd onto one GPU,
// and a partition's keys onto few of its table's buckets.
#pragma once

#include <cstdint>

namespace gphkv::server {

class KeyPlacement {
 public:
  explicit KeyPlacement(uint32_t partitions) : partitions_(partitions == 0 ? 1 : partitions) {}

  uint32_t partitions() const { return partitions_; }

  uint32_t partition_of(uint64_t key) const {
    if (partitions_ == 1) return 0;
    // Lemire's multiply-shift maps the 64-bit hash onto [0, partitions)
    // without a division and with a bias below partitions / 2^64.
    return static_cast<uint32_t>((static_cast<unsigned __int128>(mix(key)) * partitions_) >> 64);
  }

 private:
  // splitmix64 (Steele, Lea, Flood 2014): its constants differ from fmix64's.
  static uint64_t mix(uint64_t key) {
    uint64_t z = key + kSeed;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Any odd constant not shared with another hash of the system.
  static constexpr uint64_t kSeed = 0x6a09e667f3bcc909ull;  // sqrt(2)'s fraction bits (SHA-512's H0)

  uint32_t partitions_;
};

}  // namespace gphkv::server
