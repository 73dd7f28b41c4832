// cuda::launch_table_keys (server/cuda/table_keys_kernel.h): the device's
// table keys of one batch holding a random key of every length 1..4096
// (every XXH3 path, partial and full blocks), with uint64 keys (empty byte
// ranges) among them, equal byte_key::table_key's on the host (libxxhash),
// under 64 and 4 hash bits. Needs a CUDA device; skips without.
#include "server/cuda/table_keys_kernel.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "gphkv/engine/table.h"
#include "gtest/gtest.h"
#include "server/byte_key.h"
#include "tests/loadgen/test_seed.h"

namespace gphkv::server {
namespace {

// A device buffer freed at scope exit.
struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t bytes) { EXPECT_EQ(cudaMalloc(&p, bytes == 0 ? 1 : bytes), cudaSuccess); }
  ~DeviceBuffer() { cudaFree(p); }
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

TEST(DeviceTableKeys, EveryLengthMatchesTheHost) {
  if (engine::cuda_device_count() == 0) {
    GTEST_SKIP() << "no CUDA device visible: the table-key kernel runs on one";
  }
  const uint64_t seed = loadgen::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  // Key lengths 1..4096 shuffled, a uint64 key (no bytes) after every 100th.
  std::vector<uint32_t> lengths;
  for (uint32_t len = 1; len <= byte_key::kMaxKeyBytesLimit; ++len) {
    lengths.push_back(len);
    if (len % 100 == 0) lengths.push_back(0);
  }
  std::shuffle(lengths.begin(), lengths.end(), rng);
  const uint64_t n = lengths.size();
  std::string bytes;
  std::vector<uint32_t> offsets{0};
  std::vector<uint64_t> given(n);
  for (uint64_t i = 0; i < n; ++i) {
    for (uint32_t j = 0; j < lengths[i]; ++j) bytes.push_back(static_cast<char>(rng()));
    offsets.push_back(static_cast<uint32_t>(bytes.size()));
    given[i] = rng();
  }
  DeviceBuffer d_offsets(4 * (n + 1)), d_bytes(bytes.size()), d_keys(8 * n);
  ASSERT_EQ(cudaMemcpy(d_offsets.p, offsets.data(), 4 * (n + 1), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_bytes.p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  for (int hash_bits : {64, 4}) {
    SCOPED_TRACE(::testing::Message() << "hash_bits " << hash_bits);
    // In place, as the get path's large batches hash: the uint64 keys sit
    // in the output already.
    ASSERT_EQ(cudaMemcpy(d_keys.p, given.data(), 8 * n, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cuda::launch_table_keys(d_offsets.as<uint32_t>(), d_bytes.as<char>(), d_keys.as<uint64_t>(), n, hash_bits,
                                      d_keys.as<uint64_t>(), nullptr),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<uint64_t> got(n);
    ASSERT_EQ(cudaMemcpy(got.data(), d_keys.p, 8 * n, cudaMemcpyDeviceToHost), cudaSuccess);
    int bad = 0;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t want =
          lengths[i] == 0 ? given[i]
                          : byte_key::table_key(std::string_view(bytes).substr(offsets[i], lengths[i]), hash_bits);
      if (got[i] != want && ++bad <= 5) {
        ADD_FAILURE() << "key " << i << " of " << lengths[i] << " bytes: device " << got[i] << ", host " << want;
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

// A batch of byte keys alone reads nothing of `given` (the get path passes
// it only with uint64 keys in the batch).
TEST(DeviceTableKeys, ByteKeysAloneNeedNoGivenKeys) {
  if (engine::cuda_device_count() == 0) {
    GTEST_SKIP() << "no CUDA device visible: the table-key kernel runs on one";
  }
  const std::string bytes = "abcuser:42:profile";
  const std::vector<uint32_t> offsets{0, 3, 18};
  DeviceBuffer d_offsets(4 * 3), d_bytes(bytes.size()), d_keys(8 * 2);
  ASSERT_EQ(cudaMemcpy(d_offsets.p, offsets.data(), 4 * 3, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_bytes.p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cuda::launch_table_keys(d_offsets.as<uint32_t>(), d_bytes.as<char>(), nullptr, 2, 64, d_keys.as<uint64_t>(),
                                    nullptr),
            cudaSuccess);
  uint64_t got[2] = {};
  ASSERT_EQ(cudaMemcpy(got, d_keys.p, sizeof(got), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(got[0], byte_key::table_key("abc"));
  EXPECT_EQ(got[1], byte_key::table_key("user:42:profile"));
}

}  // namespace
}  // namespace gphkv::server
