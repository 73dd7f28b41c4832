// Which shard holds a key: rendezvous (highest-random-weight) hashing over
// the shards' names. Every key scores every shard, weight(key, name), and
// goes to the highest score. So the owner depends only on the key and the
// set of names (not their order, not the client), and adding a shard moves
// only the keys it now wins, about 1/N of them, all to it; removing one
// moves only its own keys, spread over the others.
//
// Byte keys (docs/byte-keys.md) are scored the same way; only the key's own
// hash differs: XXH3-64 of the key's bytes with a seed of the router's own
// (ShardByteKeyHash), where a uint64 key's is the MurmurHash3 finalizer of
// the key. So a byte key's shard depends on its bytes alone, and the byte
// key "42" and the uint64 key 42 are placed independently (two keys).
// XXH3's output is frozen by its specification (xxHash 0.8.0 and later).
//
// The hashes are fixed forever (tests/client/shard_router_test.cc pins
// them): clients of different versions must agree on every key's shard.
// A key costs one hash plus one per shard (a few ns each).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gphkv {

class ShardRouter {
 public:
  // `names`: the shards, e.g. "gphkv-0.gphkv-shards.prod.svc.cluster.local:50051";
  // at least one.
  explicit ShardRouter(const std::vector<std::string>& names);

  // Index into `names` of the shard that holds `key`.
  size_t shard_of(uint64_t key) const;
  size_t shard_of(std::string_view key) const;
  size_t shards() const { return name_hashes_.size(); }

 private:
  // The shard of a key whose own hash is `key_hash`.
  size_t shard_of_hash(uint64_t key_hash) const;
  std::vector<uint64_t> name_hashes_;
};

// The hashes the router is made of (exposed for its tests):
// a shard name's hash (FNV-1a, then the MurmurHash3 finalizer), and the
// weight of a key for a shard (the finalizer of the key's own finalized hash
// xor the name's).
uint64_t ShardNameHash(std::string_view name);
uint64_t ShardWeight(uint64_t key, uint64_t name_hash);
// A byte key's own hash, in place of the uint64 key's finalizer: XXH3-64
// with seed kShardByteKeySeed, "gphkv sh" in ASCII. It is not the server's
// table-key seed (server/byte_key.cc), so the byte keys one shard wins are
// still spread evenly over its table. The weight is fmix64(hash ^ name_hash).
constexpr uint64_t kShardByteKeySeed = 0x6770686b76207368ULL;  // "gphkv sh"
uint64_t ShardByteKeyHash(std::string_view key);
uint64_t ShardByteKeyWeight(std::string_view key, uint64_t name_hash);

}  // namespace gphkv
