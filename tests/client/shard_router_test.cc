// gphkv::ShardRouter: the hashes pinned (clients of every version must agree
// on a key's shard), keys spread evenly over shards for random and
// adversarial key sets, and adding or removing a shard moves only that
// shard's share. Random keys come from a fresh seed, printed for replay
// (GPHKV_TEST_SEED).
#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gphkv/client/shard_router.h"
#include "gtest/gtest.h"
#include "tests/loadgen/test_seed.h"

namespace gphkv {
namespace {

using loadgen::testing::TestSeed;

std::vector<std::string> pod_names(int n) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back(absl::StrCat("gphkv-", i, ".gphkv-shards.prod.svc.cluster.local:50051"));
  return names;
}

std::vector<std::string> loopback_names(int n) {
  std::vector<std::string> names;  // differing in one character: the hardest case for a weak name hash
  for (int i = 0; i < n; ++i) names.push_back(absl::StrCat("127.0.0.1:5100", i));
  return names;
}

std::vector<uint64_t> random_keys(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> keys(n);
  for (auto& k : keys) k = rng();
  return keys;
}

// Each shard's share is within 10% of the mean.
void expect_even(const ShardRouter& router, const std::vector<uint64_t>& keys, const std::string& what) {
  std::vector<size_t> count(router.shards(), 0);
  for (uint64_t k : keys) ++count[router.shard_of(k)];
  const double mean = static_cast<double>(keys.size()) / router.shards();
  for (size_t s = 0; s < count.size(); ++s) {
    EXPECT_NEAR(count[s], mean, 0.10 * mean) << what << ": shard " << s << " of " << router.shards();
  }
}

// The constants below come from an independent implementation of the same
// definitions (FNV-1a 64, MurmurHash3's fmix64): if one changes, every
// deployed client would route keys to other shards than the servers hold
// them on. Change them only with a plan to re-load every shard.
TEST(ShardRouter, HashesArePinned) {
  EXPECT_EQ(ShardNameHash(""), 0xefd01f60ba992926ULL);
  EXPECT_EQ(ShardNameHash("gphkv-0.gphkv-shards.default.svc.cluster.local:50051"), 0x20015263c697b273ULL);
  EXPECT_EQ(ShardWeight(0, ShardNameHash("a:1")), 0xc73b25426c049352ULL);
  EXPECT_EQ(ShardWeight(~uint64_t{0}, ShardNameHash("b:2")), 0x68d4d258a9f66341ULL);
  const std::vector<std::string> names = {"a:1", "b:2", "c:3"};
  const ShardRouter router(names);
  const std::vector<std::pair<uint64_t, std::string>> owners = {{0, "c:3"},
                                                                {1, "b:2"},
                                                                {2, "b:2"},
                                                                {3, "c:3"},
                                                                {42, "b:2"},
                                                                {uint64_t{1} << 32, "a:1"},
                                                                {~uint64_t{0}, "a:1"},
                                                                {uint64_t{1} << 63, "b:2"}};
  for (const auto& [key, owner] : owners) EXPECT_EQ(names[router.shard_of(key)], owner) << "key " << key;
}

TEST(ShardRouter, TheOrderOfTheNamesDoesNotMatter) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(absl::StrCat("GPHKV_TEST_SEED=", seed));
  std::vector<std::string> names = pod_names(7);
  const ShardRouter router(names);
  std::vector<std::string> shuffled = names;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(seed));
  const ShardRouter other(shuffled);
  for (uint64_t k : random_keys(20000, seed)) ASSERT_EQ(names[router.shard_of(k)], shuffled[other.shard_of(k)]);
}

TEST(ShardRouter, RandomKeysSpreadEvenly) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(absl::StrCat("GPHKV_TEST_SEED=", seed));
  const auto keys = random_keys(200000, seed);
  for (int n : {2, 3, 4, 5, 16}) {
    expect_even(ShardRouter(pod_names(n)), keys, absl::StrCat(n, " pod names"));
    expect_even(ShardRouter(loopback_names(n)), keys, absl::StrCat(n, " loopback names"));
  }
}

// Keys an application hands out are rarely random: counters, ids with a
// shard or type in the high bits, aligned offsets.
TEST(ShardRouter, StructuredKeysSpreadEvenly) {
  const size_t n = 100000;
  std::map<std::string, std::vector<uint64_t>> sets;
  for (uint64_t i = 0; i < n; ++i) {
    sets["sequential"].push_back(i);
    sets["high bits only"].push_back(i << 40);
    sets["4 KiB aligned"].push_back(i * 4096);
    sets["top bit and counter"].push_back((uint64_t{1} << 63) | i);
    sets["near the top"].push_back(~uint64_t{0} - i);
  }
  for (const auto& [what, keys] : sets) {
    expect_even(ShardRouter(loopback_names(4)), keys, what);
    expect_even(ShardRouter(pod_names(3)), keys, what);
  }
}

TEST(ShardRouter, AddingAShardMovesOnlyTheKeysItWins) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(absl::StrCat("GPHKV_TEST_SEED=", seed));
  const auto keys = random_keys(200000, seed);
  const std::vector<std::string> before = pod_names(4);
  const std::vector<std::string> after = pod_names(5);  // gphkv-4 joins
  const ShardRouter old_router(before), new_router(after);
  size_t moved = 0;
  for (uint64_t k : keys) {
    const std::string& was = before[old_router.shard_of(k)];
    const std::string& now = after[new_router.shard_of(k)];
    if (was == now) continue;
    ++moved;
    ASSERT_EQ(now, after.back()) << "key " << k << " moved from " << was << " to an old shard";
  }
  const double share = static_cast<double>(keys.size()) / after.size();
  EXPECT_NEAR(moved, share, 0.10 * share);
}

TEST(ShardRouter, RemovingAShardMovesOnlyItsKeysSpreadOverTheRest) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(absl::StrCat("GPHKV_TEST_SEED=", seed));
  const auto keys = random_keys(200000, seed);
  const std::vector<std::string> before = loopback_names(4);
  std::vector<std::string> after = before;
  const std::string gone = after[1];
  after.erase(after.begin() + 1);
  const ShardRouter old_router(before), new_router(after);
  std::map<std::string, size_t> received;
  size_t moved = 0;
  for (uint64_t k : keys) {
    const std::string& was = before[old_router.shard_of(k)];
    const std::string& now = after[new_router.shard_of(k)];
    if (was != gone) {
      ASSERT_EQ(was, now) << "key " << k << " of a remaining shard moved";
      continue;
    }
    ++moved;
    ++received[now];
  }
  ASSERT_EQ(received.size(), after.size());
  for (const auto& [shard, n] : received) EXPECT_NEAR(n, moved / 3.0, 0.10 * moved / 3.0) << shard;
}

TEST(ShardRouter, OneShardHoldsEverything) {
  const ShardRouter router({"only:1"});
  for (uint64_t k : random_keys(1000, TestSeed())) EXPECT_EQ(router.shard_of(k), 0u);
}

// Byte keys: XXH3-64 with the router's seed, pinned the same way (from a C
// program on libxxhash beside the definitions, whose XXH3 of "" with seed 0
// is the specification's 0x2d06800538d394c2).
TEST(ShardRouter, ByteKeyHashesArePinned) {
  EXPECT_EQ(ShardByteKeyHash("user:42:profile"), 0xf5a514d977324b7fULL);
  EXPECT_EQ(ShardByteKeyHash(std::string_view("\0", 1)), 0xfec22ca62525b574ULL);
  EXPECT_EQ(ShardByteKeyHash("42"), 0x743b37c3ef5e8456ULL);
  EXPECT_EQ(ShardByteKeyHash(std::string(250, 'k')), 0x7ae774ec1ff56b3cULL);
  EXPECT_EQ(ShardByteKeyWeight("user:42:profile", ShardNameHash("a:1")), 0x089a711ebe8ec2e2ULL);
}

std::vector<std::string> random_byte_keys(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> keys(n);
  for (auto& k : keys) {
    k.resize(1 + rng() % 250);
    for (char& c : k) c = static_cast<char>(rng());
  }
  return keys;
}

// The shard of a byte key is the highest weight's, whatever the names' order.
TEST(ShardRouter, AByteKeyGoesToItsHighestWeightInAnyNameOrder) {
  const uint64_t seed = TestSeed();
  const std::vector<std::string> names = pod_names(5);
  std::vector<std::string> reversed(names.rbegin(), names.rend());
  const ShardRouter router(names), router_reversed(reversed);
  for (const std::string& key : random_byte_keys(2000, seed)) {
    size_t best = 0;
    for (size_t i = 1; i < names.size(); ++i) {
      if (ShardByteKeyWeight(key, ShardNameHash(names[i])) > ShardByteKeyWeight(key, ShardNameHash(names[best]))) {
        best = i;
      }
    }
    ASSERT_EQ(router.shard_of(std::string_view(key)), best) << "seed " << seed;
    ASSERT_EQ(names.size() - 1 - router_reversed.shard_of(std::string_view(key)), best) << "seed " << seed;
  }
}

// Random byte keys and the keys of one application's shape ("user:N:profile",
// differing in a few digits) spread within 10% of the mean.
TEST(ShardRouter, ByteKeysSpreadEvenly) {
  const uint64_t seed = TestSeed();
  for (int n : {2, 3, 8}) {
    const ShardRouter router(loopback_names(n));
    std::vector<std::vector<std::string>> sets = {random_byte_keys(40000, seed)};
    sets.emplace_back();
    for (int i = 0; i < 40000; ++i) sets.back().push_back(absl::StrCat("user:", i, ":profile"));
    for (const auto& keys : sets) {
      std::vector<size_t> count(router.shards(), 0);
      for (const std::string& k : keys) ++count[router.shard_of(std::string_view(k))];
      const double mean = static_cast<double>(keys.size()) / n;
      for (int s = 0; s < n; ++s) EXPECT_NEAR(count[s], mean, 0.10 * mean) << n << " shards, seed " << seed;
    }
  }
}

// A fourth shard takes about a quarter of the byte keys, all from the others,
// and every other key stays where it was.
TEST(ShardRouter, AddingAShardMovesOnlyTheByteKeysItWins) {
  const uint64_t seed = TestSeed();
  const ShardRouter three(pod_names(3)), four(pod_names(4));
  size_t moved = 0;
  const std::vector<std::string> keys = random_byte_keys(40000, seed);
  for (const std::string& k : keys) {
    const size_t before = three.shard_of(std::string_view(k)), after = four.shard_of(std::string_view(k));
    if (before != after) {
      ASSERT_EQ(after, 3u) << "a key moved between two old shards; seed " << seed;
      ++moved;
    }
  }
  EXPECT_NEAR(static_cast<double>(moved), keys.size() / 4.0, 0.10 * keys.size() / 4.0) << "seed " << seed;
}

// The byte key "42" and the uint64 key 42 are placed independently: over
// many such pairs, as often apart as two unrelated keys.
TEST(ShardRouter, AByteKeyOfDigitsIsPlacedApartFromItsNumber) {
  const ShardRouter router(pod_names(4));
  int same = 0;
  constexpr int kPairs = 20000;
  for (uint64_t k = 0; k < kPairs; ++k)
    same += router.shard_of(k) == router.shard_of(std::string_view(absl::StrCat(k)));
  EXPECT_NEAR(same, kPairs / 4.0, 0.10 * kPairs / 4.0);
}

}  // namespace
}  // namespace gphkv
