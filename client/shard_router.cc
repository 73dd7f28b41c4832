#include "gphkv/client/shard_router.h"

#include <xxhash.h>

namespace gphkv {
namespace {

// MurmurHash3's 64-bit finalizer: a bijection in which every input bit
// flips each output bit with probability close to 1/2.
uint64_t fmix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

// The key's own hash, shared by all shards' weights.
uint64_t key_hash(uint64_t key) { return fmix64(key); }

uint64_t weight(uint64_t hashed_key, uint64_t name_hash) { return fmix64(hashed_key ^ name_hash); }

}  // namespace

uint64_t ShardNameHash(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return fmix64(h);
}

uint64_t ShardWeight(uint64_t key, uint64_t name_hash) { return weight(key_hash(key), name_hash); }

uint64_t ShardByteKeyHash(std::string_view key) {
  return XXH3_64bits_withSeed(key.data(), key.size(), kShardByteKeySeed);
}

uint64_t ShardByteKeyWeight(std::string_view key, uint64_t name_hash) {
  return weight(ShardByteKeyHash(key), name_hash);
}

ShardRouter::ShardRouter(const std::vector<std::string>& names) {
  name_hashes_.reserve(names.size());
  for (const std::string& n : names) name_hashes_.push_back(ShardNameHash(n));
}

size_t ShardRouter::shard_of(uint64_t key) const { return shard_of_hash(key_hash(key)); }

size_t ShardRouter::shard_of(std::string_view key) const { return shard_of_hash(ShardByteKeyHash(key)); }

size_t ShardRouter::shard_of_hash(uint64_t k) const {
  size_t best = 0;
  uint64_t best_weight = weight(k, name_hashes_[0]);
  for (size_t i = 1; i < name_hashes_.size(); ++i) {
    const uint64_t w = weight(k, name_hashes_[i]);
    // Ties (1 in 2^64) go to the larger name hash, so that the order of
    // the names never matters.
    if (w > best_weight || (w == best_weight && name_hashes_[i] > name_hashes_[best])) {
      best = i;
      best_weight = w;
    }
  }
  return best;
}

}  // namespace gphkv
