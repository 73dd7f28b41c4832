// Keys chosen to hurt: the sentinel, zero, keys that all share one cell,
// repeated keys within a batch.
#include <random>
#include <unordered_map>
#include <vector>

#include "gtest/gtest.h"
#include "tests/engine/backend_param.h"
#include "tests/engine/table_checks.h"

namespace gphkv::engine::testing {
namespace {

class TableAdversarialTest : public BackendTest {};

TEST_P(TableAdversarialTest, ZeroOneMaxAndTheSentinelAreOrdinaryKeys) {
  TableOptions options;
  options.num_buckets = 256;
  auto table = make(options);
  ASSERT_NE(table, nullptr);
  const std::vector<uint64_t> keys = {0, 1, UINT64_MAX, gph::kEmptyKey - 1, 1ull << 63};
  static_assert(UINT64_MAX == gph::kEmptyKey, "the sentinel is UINT64_MAX");
  std::vector<uint64_t> values = {100, 101, 102, 103, 104};
  std::vector<UpsertOutcome> out(keys.size());
  ASSERT_TRUE(table->insert_or_assign(keys, values, absl::MakeSpan(out)).ok());
  for (auto o : out) EXPECT_EQ(o, UpsertOutcome::kInserted);
  EXPECT_EQ(table->size(), keys.size());

  std::vector<uint64_t> got(keys.size());
  std::vector<uint8_t> found(keys.size());
  ASSERT_TRUE(table->find(keys, absl::MakeSpan(got), absl::MakeSpan(found)).ok());
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(found[i], 1) << keys[i];
    EXPECT_EQ(got[i], values[i]) << keys[i];
  }
  auto img = table->image();
  ASSERT_TRUE(img.ok());
  EXPECT_TRUE(img->has_empty_key);
  EXPECT_EQ(img->empty_key_value, 102u);
  EXPECT_EQ(check_invariants(*img, keys.size()), "");

  // Overwrite and erase the sentinel like any key.
  std::vector<uint64_t> one = {gph::kEmptyKey}, v = {7};
  std::vector<UpsertOutcome> o1(1);
  ASSERT_TRUE(table->insert_or_assign(one, v, absl::MakeSpan(o1)).ok());
  EXPECT_EQ(o1[0], UpsertOutcome::kAssigned);
  std::vector<uint8_t> erased(2);
  std::vector<uint64_t> twice = {gph::kEmptyKey, gph::kEmptyKey};
  ASSERT_TRUE(table->erase(twice, absl::MakeSpan(erased)).ok());
  EXPECT_EQ(erased[0], 1);
  EXPECT_EQ(erased[1], 0);
  EXPECT_EQ(table->size(), keys.size() - 1);
  ASSERT_TRUE(table->find(keys, absl::MakeSpan(got), absl::MakeSpan(found)).ok());
  EXPECT_EQ(found[2], 0);
  EXPECT_EQ(found[0], 1);
}

TEST_P(TableAdversarialTest, RepeatedKeyInOneBatchEndsWithTheLastValue) {
  TableOptions options;
  options.num_buckets = 4096;
  auto table = make(options);
  ASSERT_NE(table, nullptr);
  // Large enough to take the parallel path; every key appears 4 times.
  std::vector<uint64_t> keys, values;
  std::unordered_map<uint64_t, uint64_t> last;
  std::mt19937_64 rng(test_seed());
  for (int rep = 0; rep < 4; ++rep) {
    for (uint64_t k = 0; k < 5000; ++k) {
      keys.push_back(k * 7919 + 3);
      values.push_back(rng());
      last[keys.back()] = values.back();
    }
  }
  keys.push_back(gph::kEmptyKey);
  values.push_back(1);
  keys.push_back(gph::kEmptyKey);
  values.push_back(2);
  last[gph::kEmptyKey] = 2;
  std::vector<UpsertOutcome> out(keys.size());
  ASSERT_TRUE(table->insert_or_assign(keys, values, absl::MakeSpan(out)).ok());
  for (size_t i = 0; i < keys.size(); ++i) {
    const bool first = i < 5000 || i == keys.size() - 2;
    EXPECT_EQ(out[i], first ? UpsertOutcome::kInserted : UpsertOutcome::kAssigned) << i;
  }
  EXPECT_EQ(table->size(), last.size());
  EXPECT_EQ(check_contents(*table, last), "");
}

// Keys that all fall into cell 0: the worst case for Extended Move.
std::vector<uint64_t> keys_of_one_cell(const gph::Geometry& g, size_t n, uint64_t start) {
  std::vector<uint64_t> keys;
  for (uint64_t k = start; keys.size() < n; ++k) {
    if (gph::cell_of(g, k) == 0) keys.push_back(k);
  }
  return keys;
}

TEST_P(TableAdversarialTest, OneCellOverflowsCleanlyWithNoRoom) {
  TableOptions options;
  options.num_buckets = 64;  // 256 cells: 1 key in 256 lands in cell 0
  auto table = make(options);
  ASSERT_NE(table, nullptr);
  const gph::Geometry& g = table->geometry();
  const uint32_t cap = g.virtual_buckets * g.slots_per_bucket;
  const std::vector<uint64_t> keys = keys_of_one_cell(g, cap + 1, test_seed() % 1000000);

  // One at a time until the cell cannot take another key.
  std::unordered_map<uint64_t, uint64_t> model;
  size_t failed_at = keys.size();
  for (size_t i = 0; i < keys.size(); ++i) {
    std::vector<uint64_t> k = {keys[i]}, v = {i + 1000};
    std::vector<UpsertOutcome> out(1);
    ASSERT_TRUE(table->insert_or_assign(k, v, absl::MakeSpan(out)).ok());
    if (out[0] == UpsertOutcome::kNoRoom) {
      failed_at = i;
      break;
    }
    ASSERT_EQ(out[0], UpsertOutcome::kInserted);
    model[keys[i]] = i + 1000;
  }
  // R*M + 1 keys of one cell can never fit; most cells fail well before.
  ASSERT_LT(failed_at, keys.size());
  EXPECT_GE(failed_at, g.slots_per_bucket) << "a cell holds at least one bucket's worth";
  // The failed insert changed nothing: every earlier key is intact.
  EXPECT_EQ(table->size(), model.size());
  EXPECT_EQ(check_contents(*table, model), "");
  auto img = table->image();
  ASSERT_TRUE(img.ok());
  EXPECT_EQ(check_invariants(*img, model.size()), "");
  std::vector<uint64_t> k = {keys[failed_at]}, got(1);
  std::vector<uint8_t> found(1);
  ASSERT_TRUE(table->find(k, absl::MakeSpan(got), absl::MakeSpan(found)).ok());
  EXPECT_EQ(found[0], 0);
  // Overwriting a key already in the full cell still works.
  std::vector<uint64_t> again = {keys[0]}, v = {5};
  std::vector<UpsertOutcome> out(1);
  ASSERT_TRUE(table->insert_or_assign(again, v, absl::MakeSpan(out)).ok());
  EXPECT_EQ(out[0], UpsertOutcome::kAssigned);
}

TEST_P(TableAdversarialTest, ABatchOfOneCellsKeysKeepsTheOthersIntact) {
  // The same keys in one batch: some land, the rest get kNoRoom, nothing is lost.
  TableOptions options;
  options.num_buckets = 64;
  auto table = make(options);
  ASSERT_NE(table, nullptr);
  const gph::Geometry& g = table->geometry();
  std::vector<uint64_t> keys = keys_of_one_cell(g, g.virtual_buckets * g.slots_per_bucket + 8, 17);
  std::vector<uint64_t> values(keys.begin(), keys.end());
  std::vector<UpsertOutcome> out(keys.size());
  ASSERT_TRUE(table->insert_or_assign(keys, values, absl::MakeSpan(out)).ok());
  std::unordered_map<uint64_t, uint64_t> model;
  size_t no_room = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (out[i] == UpsertOutcome::kNoRoom) {
      ++no_room;
    } else {
      ASSERT_EQ(out[i], UpsertOutcome::kInserted);
      model[keys[i]] = values[i];
    }
  }
  EXPECT_GE(no_room, 8u);
  EXPECT_EQ(check_contents(*table, model), "");
  auto img = table->image();
  ASSERT_TRUE(img.ok());
  EXPECT_EQ(check_invariants(*img, model.size()), "");
}

// Batches full of repeats into a nearly full table, so that Refinement refuses
// some keys while other keys' moves make room: every occurrence after a
// refused one is refused too (the key is not stored), every occurrence after a
// stored one is kAssigned, and the table holds exactly the stored keys with
// the last value written. ElasticTable counts on it: it keeps a refused key
// aside for the next table, and a repeat stored meanwhile would be counted
// twice and lose its last value.
TEST_P(TableAdversarialTest, RepeatsOfARefusedKeyAreRefusedToo) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  uint64_t refused_seen = 0;
  for (int round = 0; round < 200; ++round) {
    TableOptions options;
    options.num_buckets = 8;  // 128 slots at M = 16: Refinement at once
    options.seed = static_cast<uint32_t>(rng());
    auto table = make(options);
    ASSERT_NE(table, nullptr);
    std::unordered_map<uint64_t, uint64_t> model;
    std::vector<uint64_t> pool(150);
    for (auto& k : pool) k = rng();
    for (int batch = 0; batch < 6; ++batch) {
      std::vector<uint64_t> keys(120), values(120);
      for (size_t i = 0; i < keys.size(); ++i) {
        keys[i] = pool[rng() % pool.size()];
        values[i] = rng();
      }
      std::vector<UpsertOutcome> out(keys.size(), UpsertOutcome::kNoRoom);
      ASSERT_TRUE(table->insert_or_assign(keys, values, absl::MakeSpan(out)).ok());
      std::unordered_map<uint64_t, UpsertOutcome> first;  // each key's first outcome in this batch
      for (size_t i = 0; i < keys.size(); ++i) {
        auto [it, fresh] = first.try_emplace(keys[i], out[i]);
        if (fresh) {
          const bool stored_before = model.count(keys[i]) != 0;
          if (out[i] == UpsertOutcome::kNoRoom) {
            ASSERT_FALSE(stored_before) << "stored key " << keys[i] << " refused";
            ++refused_seen;
          } else {
            ASSERT_EQ(out[i], stored_before ? UpsertOutcome::kAssigned : UpsertOutcome::kInserted) << keys[i];
          }
        } else if (it->second == UpsertOutcome::kNoRoom) {
          ASSERT_EQ(out[i], UpsertOutcome::kNoRoom) << "a repeat of refused key " << keys[i] << " at " << i;
        } else {
          ASSERT_EQ(out[i], UpsertOutcome::kAssigned) << "a repeat of stored key " << keys[i] << " at " << i;
        }
        if (it->second != UpsertOutcome::kNoRoom) model[keys[i]] = values[i];
      }
      ASSERT_EQ(check_contents(*table, model), "") << "round " << round << " batch " << batch;
    }
  }
  EXPECT_GT(refused_seen, 0u) << "no key was refused: the test did not reach Refinement's limits";
}

GPHKV_INSTANTIATE_BACKENDS(TableAdversarialTest);

}  // namespace
}  // namespace gphkv::engine::testing
