// The HashGraph-style bulk build against a model: base pairs plus a burst of
// puts and erases (repeats included), on every backend.
#include <random>
#include <unordered_map>
#include <vector>

#include "gtest/gtest.h"
#include "tests/engine/backend_param.h"
#include "tests/engine/table_checks.h"

namespace gphkv::engine::testing {
namespace {

using Model = std::unordered_map<uint64_t, uint64_t>;

class BulkBuildTest : public BackendTest {
 protected:
  // Builds, skipping where the backend cannot take a bulk-built table yet.
  std::unique_ptr<Table> build(const TableOptions& o, const std::vector<KeyValue>& base,
                               const std::vector<WriteOp>& burst, BuildStats* stats) {
    auto t = bulk_build(GetParam(), o, base, burst, stats);
    if (!t.ok() && t.status().code() == absl::StatusCode::kUnimplemented) {
      ADD_FAILURE() << "bulk build is not available on this backend: " << t.status();
      return nullptr;
    }
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? std::move(*t) : nullptr;
  }
};

// A random base of distinct keys and a burst that overwrites some, erases
// some (some twice, some erased then put again) and adds new ones.
void make_input(std::mt19937_64& rng, size_t base_n, size_t burst_n, std::vector<KeyValue>* base,
                std::vector<WriteOp>* burst, Model* model) {
  for (size_t i = 0; i < base_n; ++i) {
    const uint64_t k = rng();
    if (model->emplace(k, i).second) base->push_back({k, i});
  }
  std::uniform_int_distribution<int> kind(0, 9);
  for (size_t i = 0; i < burst_n; ++i) {
    const bool old = !base->empty() && kind(rng) < 6;
    const uint64_t k = old ? (*base)[rng() % base->size()].key : rng();
    const bool erase = kind(rng) < 3;
    const uint64_t v = rng();
    burst->push_back({k, v, erase});
    if (erase)
      model->erase(k);
    else
      (*model)[k] = v;
  }
}

void expect_matches(Table& t, const Model& model) {
  auto img = t.image();
  ASSERT_TRUE(img.ok()) << img.status();
  EXPECT_EQ(check_invariants(*img, model.size()), "");
  EXPECT_EQ(check_contents(t, model), "");
  EXPECT_EQ(t.size(), model.size());
  EXPECT_EQ(check_lookups(t, model), "");
}

TEST_P(BulkBuildTest, BasePlusBurstMatchesTheModel) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  for (auto [base_n, burst_n] :
       {std::pair<size_t, size_t>{0, 0}, {1000, 0}, {0, 1000}, {3000, 3000}, {400000, 200000}}) {
    std::vector<KeyValue> base;
    std::vector<WriteOp> burst;
    Model model;
    make_input(rng, base_n, burst_n, &base, &burst, &model);
    TableOptions o;
    o.num_buckets = buckets_for_capacity(std::max<size_t>(model.size(), 1), 0.8, o.slots_per_bucket);
    o.seed = static_cast<uint32_t>(rng());
    BuildStats stats;
    auto t = build(o, base, burst, &stats);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(stats.keys, model.size());
    EXPECT_EQ(stats.input_pairs, base.size() + burst.size());
    expect_matches(*t, model);
  }
}

TEST_P(BulkBuildTest, SentinelAndRepeatsFollowTheLastWrite) {
  std::vector<KeyValue> base = {{gph::kEmptyKey, 1}, {0, 2}, {5, 3}};
  std::vector<WriteOp> burst = {
      {gph::kEmptyKey, 0, true},
      {gph::kEmptyKey, 9, false},  // erased, then put again
      {0, 0, true},                // erased for good
      {5, 4, false},
      {5, 6, false},  // last put wins
      {7, 1, true},
      {7, 8, false},  // erase of an absent key, then put
      {11, 1, false},
      {11, 0, true},  // put, then erased
  };
  TableOptions o;
  o.num_buckets = 64;
  auto t = build(o, base, burst, nullptr);
  ASSERT_NE(t, nullptr);
  expect_matches(*t, Model{{gph::kEmptyKey, 9}, {5, 6}, {7, 8}});
}

TEST_P(BulkBuildTest, BuiltTableTakesIncrementalWrites) {
  std::mt19937_64 rng(test_seed());
  std::vector<KeyValue> base;
  std::vector<WriteOp> burst;
  Model model;
  make_input(rng, 50000, 0, &base, &burst, &model);
  TableOptions o;
  o.num_buckets = buckets_for_capacity(80000, 0.8, o.slots_per_bucket);
  auto t = build(o, base, burst, nullptr);
  ASSERT_NE(t, nullptr);
  std::vector<uint64_t> keys(20000), values(20000);
  for (auto& k : keys) k = rng();
  for (auto& v : values) v = rng();
  std::vector<UpsertOutcome> out(keys.size());
  ASSERT_TRUE(t->insert_or_assign(keys, values, absl::MakeSpan(out)).ok());
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_NE(out[i], UpsertOutcome::kNoRoom);
    model[keys[i]] = values[i];
  }
  std::vector<uint64_t> gone(base.size() / 2);
  for (size_t i = 0; i < gone.size(); ++i) gone[i] = base[i].key, model.erase(base[i].key);
  std::vector<uint8_t> erased(gone.size());
  ASSERT_TRUE(t->erase(gone, absl::MakeSpan(erased)).ok());
  expect_matches(*t, model);
}

TEST_P(BulkBuildTest, ReachesTheIncrementalLoadFactor) {
  // The bulk path chooses every cell with the whole input in view, so it
  // must reach at least what one-at-a-time insertion reaches (0.87 at the
  // default shape; the floor is LoadFactorTest's business).
  std::mt19937_64 rng(test_seed());
  std::vector<KeyValue> base;
  std::vector<WriteOp> burst;
  Model model;
  make_input(rng, 850000, 0, &base, &burst, &model);
  TableOptions o;
  o.num_buckets = (1u << 20) / o.slots_per_bucket;  // 2^20 slots: load factor 0.81 after dedupe of random keys
  BuildStats stats;
  auto t = build(o, base, burst, &stats);
  ASSERT_NE(t, nullptr);
  EXPECT_GE(t->load_factor(), 0.80);
  expect_matches(*t, model);
}

TEST_P(BulkBuildTest, TooManyKeysIsResourceExhausted) {
  std::vector<KeyValue> base;
  for (uint64_t k = 0; k < 2000; ++k) base.push_back({k, k});
  TableOptions o;
  o.num_buckets = 100;  // 800 slots (M = 8)
  auto t = bulk_build(GetParam(), o, base, {}, nullptr);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted) << t.status();
  EXPECT_NE(t.status().message().find("grow"), std::string::npos) << t.status();
}

GPHKV_INSTANTIATE_BACKENDS(BulkBuildTest);

}  // namespace
}  // namespace gphkv::engine::testing
