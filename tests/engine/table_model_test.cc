// Random operation sequences against std::unordered_map, on every backend.
#include <algorithm>
#include <random>
#include <unordered_map>
#include <vector>

#include "gtest/gtest.h"
#include "tests/engine/backend_param.h"
#include "tests/engine/table_checks.h"

namespace gphkv::engine::testing {
namespace {

using Model = std::unordered_map<uint64_t, uint64_t>;

class TableModelTest : public BackendTest {};

// Keys come from a pool so that finds hit, erases find their key and
// inserts overwrite; the pool holds the adversarial keys too.
std::vector<uint64_t> make_key_pool(std::mt19937_64& rng, size_t n) {
  std::vector<uint64_t> pool = {0, 1, 2, gph::kEmptyKey, gph::kEmptyKey - 1, 1ull << 32, 1ull << 63};
  while (pool.size() < n) pool.push_back(rng());
  return pool;
}

// Applies one batch to the model in order, returning the expected per-key results.
void apply_insert(Model& model, const std::vector<uint64_t>& keys, const std::vector<uint64_t>& values,
                  std::vector<UpsertOutcome>& expect) {
  expect.resize(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    auto [it, inserted] = model.insert_or_assign(keys[i], values[i]);
    expect[i] = inserted ? UpsertOutcome::kInserted : UpsertOutcome::kAssigned;
  }
}

TEST_P(TableModelTest, MillionMixedOperationsMatchTheModel) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const std::vector<uint64_t> pool = make_key_pool(rng, 60000);
  TableOptions options;
  // Sized so the whole pool fits at 60% load: the model test checks
  // semantics, the load-factor test checks how full a table can get.
  options.num_buckets = buckets_for_capacity(pool.size(), 0.6, options.slots_per_bucket);
  options.seed = static_cast<uint32_t>(rng());
  auto table = make(options);
  ASSERT_NE(table, nullptr);

  Model model;
  uint64_t ops = 0;
  std::vector<uint64_t> keys, values, got;
  std::vector<uint8_t> flags;
  std::vector<UpsertOutcome> outcomes, expect;
  std::uniform_int_distribution<int> kind(0, 9);
  // Batch sizes span the single-thread path and the parallel one.
  std::uniform_int_distribution<size_t> size_of(1, 20000);
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
  while (ops < 1000000) {
    const size_t n = size_of(rng) > 15000 ? size_of(rng) : size_of(rng) % 64 + 1;
    keys.resize(n);
    for (auto& k : keys) k = pool[pick(rng)];
    const int op = kind(rng);
    if (op < 4) {  // insert_or_assign, duplicates within the batch included
      values.resize(n);
      for (auto& v : values) v = rng();
      outcomes.assign(n, UpsertOutcome::kNoRoom);
      ASSERT_TRUE(table->insert_or_assign(keys, values, absl::MakeSpan(outcomes)).ok());
      apply_insert(model, keys, values, expect);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(outcomes[i], expect[i]) << "insert of key " << keys[i] << " at batch index " << i;
      }
    } else if (op < 7) {  // find
      got.assign(n, 0);
      flags.assign(n, 2);
      ASSERT_TRUE(table->find(keys, absl::MakeSpan(got), absl::MakeSpan(flags)).ok());
      for (size_t i = 0; i < n; ++i) {
        auto it = model.find(keys[i]);
        ASSERT_EQ(flags[i], it != model.end() ? 1 : 0) << "find of key " << keys[i];
        if (it != model.end()) ASSERT_EQ(got[i], it->second) << "value of key " << keys[i];
      }
    } else {  // erase, duplicates included: only the first occurrence erases
      flags.assign(n, 2);
      ASSERT_TRUE(table->erase(keys, absl::MakeSpan(flags)).ok());
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(flags[i], model.erase(keys[i]) ? 1 : 0) << "erase of key " << keys[i];
      }
    }
    ASSERT_EQ(table->size(), model.size());
    ops += n;
  }
  auto img = table->image();
  ASSERT_TRUE(img.ok()) << img.status();
  EXPECT_EQ(check_invariants(*img, model.size()), "");
  EXPECT_EQ(check_contents(*table, model), "");
}

TEST_P(TableModelTest, EraseThenReinsert) {
  std::mt19937_64 rng(test_seed());
  TableOptions options;
  options.num_buckets = buckets_for_capacity(50000, 0.7, options.slots_per_bucket);
  auto table = make(options);
  ASSERT_NE(table, nullptr);
  std::vector<uint64_t> keys(50000), values(50000);
  for (auto& k : keys) k = rng();
  for (int round = 0; round < 3; ++round) {
    for (auto& v : values) v = rng();
    std::vector<UpsertOutcome> out(keys.size());
    ASSERT_TRUE(table->insert_or_assign(keys, values, absl::MakeSpan(out)).ok());
    for (auto o : out) ASSERT_EQ(o, UpsertOutcome::kInserted);
    std::vector<uint64_t> got(keys.size());
    std::vector<uint8_t> found(keys.size());
    ASSERT_TRUE(table->find(keys, absl::MakeSpan(got), absl::MakeSpan(found)).ok());
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(found[i], 1);
      ASSERT_EQ(got[i], values[i]);
    }
    std::vector<uint8_t> erased(keys.size());
    ASSERT_TRUE(table->erase(keys, absl::MakeSpan(erased)).ok());
    for (auto e : erased) ASSERT_EQ(e, 1);
    EXPECT_EQ(table->size(), 0u);
    ASSERT_TRUE(table->find(keys, absl::MakeSpan(got), absl::MakeSpan(found)).ok());
    for (auto f : found) ASSERT_EQ(f, 0);
  }
}

TEST_P(TableModelTest, ClearEmptiesEverything) {
  TableOptions options;
  options.num_buckets = 1024;
  auto table = make(options);
  ASSERT_NE(table, nullptr);
  std::vector<uint64_t> keys = {0, 1, gph::kEmptyKey, 42};
  std::vector<uint64_t> values = {10, 11, 12, 13};
  std::vector<UpsertOutcome> out(keys.size());
  ASSERT_TRUE(table->insert_or_assign(keys, values, absl::MakeSpan(out)).ok());
  EXPECT_EQ(table->size(), 4u);
  ASSERT_TRUE(table->clear().ok());
  EXPECT_EQ(table->size(), 0u);
  auto img = table->image();
  ASSERT_TRUE(img.ok());
  EXPECT_EQ(check_invariants(*img, 0), "");
  for (uint8_t c : img->cells) ASSERT_EQ(c, 0);
  std::vector<uint64_t> got(keys.size());
  std::vector<uint8_t> found(keys.size());
  ASSERT_TRUE(table->find(keys, absl::MakeSpan(got), absl::MakeSpan(found)).ok());
  for (auto f : found) EXPECT_EQ(f, 0);
}

TEST_P(TableModelTest, MismatchedSpansAreInvalidArgument) {
  TableOptions options;
  options.num_buckets = 64;
  auto table = make(options);
  ASSERT_NE(table, nullptr);
  std::vector<uint64_t> keys(4, 7), values(3);
  std::vector<uint8_t> flags(4);
  std::vector<UpsertOutcome> out(4);
  EXPECT_EQ(table->find(keys, absl::MakeSpan(values), absl::MakeSpan(flags)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(table->insert_or_assign(keys, values, absl::MakeSpan(out)).code(), absl::StatusCode::kInvalidArgument);
  std::vector<uint8_t> short_flags(2);
  EXPECT_EQ(table->erase(keys, absl::MakeSpan(short_flags)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(table->size(), 0u);
}

GPHKV_INSTANTIATE_BACKENDS(TableModelTest);

}  // namespace
}  // namespace gphkv::engine::testing
