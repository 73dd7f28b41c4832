// The store's pair operations (what recovery restores and snapshots read)
// against a model: runs of pairs with repeated keys, erases, clears, through
// growth and with a rebuild in flight; the --memory cap refusing a run whole.
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/store.h"
#include "tests/loadgen/test_seed.h"
#include "tests/server/store_fixtures.h"

namespace gphkv::server {
namespace {

using Model = StoreModel;

TEST(StorePairs, PutsErasesAndClearsMatchAModelThroughGrowth) {
  const uint64_t seed = loadgen::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  auto store = small_store(64 << 20, 64);
  Model model;
  const uint64_t key_space = 30000;  // far past the first table: rebuilds, some in the background
  auto key = [&] {
    const uint64_t k = rng() % key_space;
    return k == 1 ? UINT64_MAX : k;  // 0 and the table's sentinel too
  };
  for (int round = 0; round < 200; ++round) {
    const uint64_t dice = rng() % 100;
    if (dice < 70) {
      std::vector<uint64_t> keys;
      std::vector<std::string> values;
      const int n = 1 + static_cast<int>(rng() % 400);
      for (int i = 0; i < n; ++i) {
        keys.push_back(key());
        values.push_back(std::to_string(round) + ":" + std::string(rng() % 300, static_cast<char>('a' + i % 26)));
      }
      if (n > 1) keys[n - 1] = keys[0];  // repeated within the run: the last wins
      std::vector<std::string_view> views(values.begin(), values.end());
      ASSERT_TRUE(store->put_pairs(keys, views).ok());
      for (int i = 0; i < n; ++i) model[keys[i]] = values[i];
    } else if (dice < 97) {
      std::vector<uint64_t> keys;
      for (int i = 1 + static_cast<int>(rng() % 300); i > 0; --i) keys.push_back(key());
      ASSERT_TRUE(store->erase_keys(keys).ok());
      for (uint64_t k : keys) model.erase(k);
    } else {
      ASSERT_TRUE(store->clear().ok());
      model.clear();
    }
    ASSERT_EQ(store->keys(), model.size());
    if (store->rebuilding()) {
      // The key list waits for a rebuild; reads do not.
      std::vector<uint64_t> listed;
      EXPECT_EQ(store->stored_keys(&listed).code(), absl::StatusCode::kFailedPrecondition);
      durability::PairChunk found, byte_pairs;
      std::vector<uint64_t> probe;
      for (const auto& [k, v] : model) probe.push_back(k);
      ASSERT_TRUE(store->read_pairs(probe, &found, &byte_pairs).ok());
      EXPECT_EQ(found.keys.size(), model.size()) << "a read during a rebuild sees its overlay";
    }
    if (round % 20 == 19) ASSERT_EQ(contents(*store), model) << "round " << round;
  }
  EXPECT_EQ(contents(*store), model);
  EXPECT_GT(store->counters().rebuilds, 2u);
}

TEST(StorePairs, ARunPastMemoryIsRefusedWhole) {
  auto store = small_store(4 << 20, 1024);
  ASSERT_TRUE(store->put_pairs({1, 2}, {"one", "two"}).ok());
  std::vector<uint64_t> keys;
  std::vector<std::string> values;
  for (uint64_t k = 10; k < 2010; ++k) {
    keys.push_back(k);
    values.push_back(std::string(4000, 'v'));  // 8 MB in all, over the 4 MiB cap
  }
  std::vector<std::string_view> views(values.begin(), values.end());
  const absl::Status s = store->put_pairs(keys, views);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(contents(*store), (Model{{1, "one"}, {2, "two"}})) << "nothing of the refused run stays";
}

}  // namespace
}  // namespace gphkv::server
