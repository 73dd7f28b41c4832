// A small CPU store and its whole contents, for the tests that drive the
// store directly (store_test, store_pairs_test, store_durability_test).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/store.h"

namespace gphkv::server {

using StoreModel = std::map<uint64_t, std::string>;

// A CPU store with a first table of `capacity` keys that grows.
inline std::unique_ptr<Store> small_store(uint64_t memory = 64 << 20, uint64_t capacity = 64) {
  StoreOptions o;
  o.initial_capacity = capacity;
  o.memory_limit_bytes = memory;
  o.max_value_bytes = 4096;
  o.table.cpu_threads = 2;
  auto s = Store::create(o);
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

// Every pair the store holds (a rebuild in flight finished first), read
// back through stored_keys and read_pairs.
inline StoreModel contents(Store& store) {
  EXPECT_TRUE(store.finish_rebuild().ok());
  // A buffer holding stale keys: stored_keys must clear it first.
  std::vector<uint64_t> keys(2, 77);
  const absl::Status listed = store.stored_keys(&keys);
  EXPECT_TRUE(listed.ok()) << listed;
  durability::PairChunk ids, byte_pairs;
  EXPECT_TRUE(store.read_pairs(keys, &ids, &byte_pairs).ok());
  EXPECT_TRUE(byte_pairs.empty()) << "a store of uint64 keys only";
  StoreModel m;
  size_t off = 0;
  for (size_t i = 0; i < ids.keys.size(); ++i) {
    m[ids.keys[i]] = ids.bytes.substr(off, ids.lengths[i]);
    off += ids.lengths[i];
  }
  EXPECT_EQ(off, ids.bytes.size());
  return m;
}

}  // namespace gphkv::server
