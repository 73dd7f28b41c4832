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

}  // namespace
}  // namespace gphkv
