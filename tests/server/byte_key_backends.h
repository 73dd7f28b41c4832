// The parameter of the store tests of byte keys that run on both backends
// (byte_key_store_test.cc, item_fields_store_test.cc): the backend, the
// table keys' bits (below 64 the keys collide on purpose) and, on CUDA, the
// small get path's batch limit.
#pragma once

#include <cstdint>
#include <string>

#include "gphkv/engine/table.h"
#include "gtest/gtest.h"

namespace gphkv::server {

struct ByteKeyBackend {
  engine::Backend backend;
  int hash_bits;
  // CUDA: get batches of at most this many keys take the small path (one
  // kernel matching the records, with their expiry, scanning the lengths and
  // gathering into pinned memory).
  uint64_t small_gets_keys = 0;
};

// "CpuHashBits64", "CudaHashBits4Small256", ...
inline std::string byte_key_backend_name(const ::testing::TestParamInfo<ByteKeyBackend>& info) {
  return std::string(info.param.backend == engine::Backend::kCuda ? "Cuda" : "Cpu") + "HashBits" +
         std::to_string(info.param.hash_bits) +
         (info.param.small_gets_keys > 0 ? "Small" + std::to_string(info.param.small_gets_keys) : "");
}

}  // namespace gphkv::server
