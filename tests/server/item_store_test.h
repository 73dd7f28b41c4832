// The fixture of the store tests of byte-key items (item_fields_store_test,
// item_versions_store_test): a store of small items (values up to
// kMaxValue bytes) on the parameter's backend whose clock is now_, and the
// model of its items by key number.
#pragma once

#include <cstdint>
#include <map>

#include "server/byte_key.h"
#include "tests/server/backend_store_test.h"
#include "tests/server/byte_key_backends.h"
#include "tests/server/item_model.h"

namespace gphkv::server {

class ItemStoreTest : public BackendStoreTest<ByteKeyBackend> {
 protected:
  static constexpr uint32_t kStart = 1'800'000'000;  // a unix time past 30 days, as a server's is
  static constexpr uint32_t kMaxValue = 64;

  void configure(StoreOptions& o) override {
    o.max_value_bytes = kMaxValue + byte_key::kMaxRecordHeaderBytes + byte_key::kDefaultMaxKeyBytes;
    o.max_put_value_bytes = kMaxValue;
    o.unix_clock = [this] { return now_; };
    o.gpu_small_gets_keys = GetParam().small_gets_keys;
    o.byte_key_hash_bits = GetParam().hash_bits;  // the store's own table keys (a sweep's deletes) as the calls'
  }

  uint32_t now_ = kStart;
  // Expired (and flushed) items stay until overwritten or deleted, as in the store.
  std::map<int, ModelItem> model_;
};

}  // namespace gphkv::server
