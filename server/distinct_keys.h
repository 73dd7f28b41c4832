// The distinct keys of a run of calls, in order of first occurrence, and the
// index of each: a put or delete run looks each key up in the table once.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace gphkv::server {

struct DistinctKeys {
  absl::flat_hash_map<uint64_t, uint32_t> index;
  std::vector<uint64_t> keys;

  // The key's index, adding it when it is new.
  uint32_t add(uint64_t key) {
    auto [it, inserted] = index.try_emplace(key, static_cast<uint32_t>(keys.size()));
    if (inserted) keys.push_back(key);
    return it->second;
  }
  // The index of a key added before.
  uint32_t at(uint64_t key) const { return index.find(key)->second; }
  size_t size() const { return keys.size(); }
};

}  // namespace gphkv::server
