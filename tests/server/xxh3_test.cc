// server/xxh3.h (the XXH3-64 the CUDA get path hashes byte keys with),
// compiled here as plain C++, against libxxhash's XXH3_64bits_withSeed:
// every length 0..4096 (each of the specification's paths and their
// boundaries: 0, 1-3, 4-8, 9-16, 17-128, 129-240, longer, with full and
// partial 1024-byte blocks), random bytes at any alignment, all-zero and
// all-0xff bytes, under gphkv's seed, seed 0 and random seeds.
#include "server/xxh3.h"

#include <xxhash.h>

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "server/byte_key.h"
#include "tests/loadgen/test_seed.h"

namespace gphkv::server {
namespace {

constexpr size_t kMaxLength = byte_key::kMaxKeyBytesLimit;

// Hashes data[0, len) both ways under every seed; counts the mismatches in
// *bad, reporting the first few.
void compare(const uint8_t* data, size_t len, const std::vector<uint64_t>& seeds, const char* what, int* bad) {
  for (uint64_t seed : seeds) {
    const uint64_t want = XXH3_64bits_withSeed(data, len, seed);
    const uint64_t got = xxh3::hash64(data, len, seed);
    if (got != want && ++*bad <= 5) {
      ADD_FAILURE() << what << ", length " << len << ", seed " << seed << ": " << got << ", libxxhash " << want;
    }
  }
}

std::vector<uint64_t> seeds_to_try(std::mt19937_64& rng) {
  return {byte_key::kTableKeySeed, 0, rng(), rng() | (uint64_t{1} << 63)};
}

TEST(Xxh3, RandomBytesOfEveryLengthMatchLibxxhash) {
  const uint64_t seed = loadgen::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> buf(kMaxLength + 16);
  int bad = 0;
  for (size_t len = 0; len <= kMaxLength; ++len) {
    // Three contents per length, each at another alignment (the device reads
    // keys packed back to back).
    for (int rep = 0; rep < 3; ++rep) {
      const size_t at = rng() % 8;
      for (size_t i = 0; i < len; ++i) buf[at + i] = static_cast<uint8_t>(rng());
      compare(buf.data() + at, len, seeds_to_try(rng), "random bytes", &bad);
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(Xxh3, ConstantBytesOfEveryLengthMatchLibxxhash) {
  const uint64_t seed = loadgen::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const std::vector<uint8_t> zeros(kMaxLength, 0), ones(kMaxLength, 0xff);
  int bad = 0;
  for (size_t len = 0; len <= kMaxLength; ++len) {
    compare(zeros.data(), len, seeds_to_try(rng), "all-zero bytes", &bad);
    compare(ones.data(), len, seeds_to_try(rng), "all-0xff bytes", &bad);
  }
  EXPECT_EQ(bad, 0);
}

// The table key is the seeded hash with hash_bits kept, as the device makes it.
TEST(Xxh3, TableKeyIsTheSeededHash) {
  const std::string key = "user:42:profile";
  const uint64_t h = xxh3::hash64(key.data(), key.size(), byte_key::kTableKeySeed);
  EXPECT_EQ(byte_key::table_key(key), h);
  EXPECT_EQ(byte_key::table_key(key, 4), byte_key::keep_bits(h, 4));
  EXPECT_EQ(byte_key::keep_bits(h, 4), h & 0xf);
  EXPECT_EQ(byte_key::keep_bits(h, 64), h);
}

}  // namespace
}  // namespace gphkv::server
