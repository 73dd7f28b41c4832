// Growth, bursts, the memory cap, and reads while a rebuild runs, checked
// against std::unordered_map after every call, on every backend.
#include "gphkv/engine/elastic_table.h"

#include <limits>
#include <random>
#include <unordered_map>
#include <vector>

#include "gtest/gtest.h"
#include "tests/engine/backend_param.h"
#include "tests/engine/table_checks.h"

namespace gphkv::engine::testing {
namespace {

using Model = std::unordered_map<uint64_t, uint64_t>;

class ElasticTableTest : public BackendTest {
 protected:
  std::unique_ptr<ElasticTable> make_elastic(ElasticOptions o) {
    o.backend = GetParam();
    auto t = ElasticTable::create(o);
    EXPECT_TRUE(t.ok()) << t.status();
    if (!t.ok()) return nullptr;
    (*t)->on_rebuild([this](const RebuildEvent& e) { events_.push_back(e); });
    return std::move(*t);
  }

  // One random batch of puts, erases or finds, checked against the model.
  // force_op: 0 puts, 5 erases, 7 finds; -1 one of them at random.
  void random_batch(ElasticTable& t, Model& model, std::mt19937_64& rng, const std::vector<uint64_t>& pool, size_t n,
                    int force_op = -1) {
    std::vector<uint64_t> keys(n), values(n), got(n);
    std::vector<uint8_t> flags(n);
    std::vector<UpsertOutcome> out(n);
    for (auto& k : keys) k = pool[rng() % pool.size()];
    const int op = force_op >= 0 ? force_op : static_cast<int>(rng() % 10);
    if (op < 5) {
      for (auto& v : values) v = rng();
      ASSERT_TRUE(t.insert_or_assign(keys, values, absl::MakeSpan(out)).ok());
      for (size_t i = 0; i < n; ++i) {
        const bool fresh = model.insert_or_assign(keys[i], values[i]).second;
        ASSERT_EQ(out[i], fresh ? UpsertOutcome::kInserted : UpsertOutcome::kAssigned) << keys[i];
      }
    } else if (op < 7) {
      ASSERT_TRUE(t.erase(keys, absl::MakeSpan(flags)).ok());
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(flags[i], model.erase(keys[i]) ? 1 : 0) << keys[i];
    } else {
      ASSERT_TRUE(t.find(keys, absl::MakeSpan(got), absl::MakeSpan(flags)).ok());
      for (size_t i = 0; i < n; ++i) {
        auto it = model.find(keys[i]);
        ASSERT_EQ(flags[i], it != model.end() ? 1 : 0) << keys[i];
        if (it != model.end()) ASSERT_EQ(got[i], it->second) << keys[i];
      }
    }
    ASSERT_EQ(t.size(), model.size());
  }

  void expect_contents(ElasticTable& t, const Model& model) {
    EXPECT_EQ(check_lookups(t, model), "");
    EXPECT_EQ(t.size(), model.size());
  }

  std::vector<RebuildEvent> events_;
};

std::vector<uint64_t> key_pool(std::mt19937_64& rng, size_t n) {
  std::vector<uint64_t> pool = {0, 1, gph::kEmptyKey};
  while (pool.size() < n) pool.push_back(rng());
  return pool;
}

TEST_P(ElasticTableTest, GrowsManyTimesOverWithoutLosingAWrite) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  ElasticOptions o;
  o.shape.num_buckets = 4;  // 64 slots: growth starts at once
  auto t = make_elastic(o);
  ASSERT_NE(t, nullptr);
  const auto pool = key_pool(rng, 300000);
  Model model;
  for (int batch = 0; batch < 3000; ++batch) {
    random_batch(*t, model, rng, pool, 1 + rng() % (batch < 100 ? 64 : 2000));
    if (HasFatalFailure()) return;
  }
  ASSERT_TRUE(t->finish_rebuild().ok());
  expect_contents(*t, model);
  // How many rebuilds it took depends on timing (writes that land during a
  // slow build make the next one larger): on a loaded 2-core machine 4, not 5.
  // The growth itself does not: from 4 buckets to thousands.
  EXPECT_GE(t->rebuilds(), 3u) << "the table should have grown many times";
  EXPECT_GE(t->num_buckets(), 1000 * o.shape.num_buckets) << "the table should have grown many times over";
  EXPECT_LE(t->load_factor(), o.max_load_factor + 0.01);
  for (const RebuildEvent& e : events_) {
    EXPECT_TRUE(e.cause == "load_factor" || e.cause == "no_room") << e.cause;
    EXPECT_GT(e.new_buckets, e.old_buckets);
  }
}

TEST_P(ElasticTableTest, ReadsAndWritesDuringARebuildSeeEveryAcknowledgedWrite) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  ElasticOptions o;
  o.shape.num_buckets = buckets_for_capacity(400000, 0.80, o.shape.slots_per_bucket);
  o.rebuild_burst_fraction = 0;  // this test is about the load-factor rebuild
  auto t = make_elastic(o);
  ASSERT_NE(t, nullptr);
  const auto pool = key_pool(rng, 600000);
  Model model;
  // Fill in large batches until one crosses max_load_factor.
  std::vector<uint64_t> keys, values;
  std::vector<UpsertOutcome> out;
  for (uint64_t k : pool) {
    if (t->rebuilding()) break;
    keys.push_back(k);
    values.push_back(k ^ 0x5555);
    if (keys.size() == 10000) {
      // The model first, so that the batch that starts the rebuild is followed
      // at once by the writes below: a device build of these 4*10^5 keys took
      // about as long as updating the model after it did (H100), and a write
      // after the build lands goes to the new table, not the overlay.
      for (size_t i = 0; i < keys.size(); ++i) model[keys[i]] = values[i];
      out.resize(keys.size());
      ASSERT_TRUE(t->insert_or_assign(keys, values, absl::MakeSpan(out)).ok());
      keys.clear();
      values.clear();
    }
  }
  ASSERT_TRUE(t->rebuilding()) << "crossing max_load_factor must start a background rebuild";
  // Small mixed batches while it builds: every answer checked. The first is a
  // write, right after the rebuild started (a device build can finish within
  // a few batches, and a batch after it lands goes to the new table).
  int during = 0;
  while (t->rebuilding() && during < 100000) {
    random_batch(*t, model, rng, pool, 1 + rng() % 32, during == 0 ? 0 : -1);
    if (HasFatalFailure()) return;
    ++during;
  }
  EXPECT_GT(during, 0);
  ASSERT_TRUE(t->finish_rebuild().ok());
  ASSERT_EQ(events_.size(), 1u);
  // The batch that crosses max_load_factor starts the rebuild; at M = 16 one
  // of its keys can meet a full cell first, which starts the same rebuild
  // under the other name.
  EXPECT_TRUE(events_[0].cause == "load_factor" || events_[0].cause == "no_room") << events_[0].cause;
  EXPECT_GT(events_[0].writes_during, 0u);
  for (int i = 0; i < 200; ++i) random_batch(*t, model, rng, pool, 1 + rng() % 500);
  expect_contents(*t, model);
}

TEST_P(ElasticTableTest, LargeBurstGoesThroughARebuild) {
  std::mt19937_64 rng(test_seed());
  ElasticOptions o;
  o.shape.num_buckets = 1024;
  o.rebuild_burst_fraction = 0.5;
  auto t = make_elastic(o);
  ASSERT_NE(t, nullptr);
  const auto pool = key_pool(rng, 50000);
  Model model;
  std::vector<uint64_t> keys(pool.begin(), pool.begin() + 1000), values(1000, 7);
  std::vector<UpsertOutcome> out(keys.size());
  ASSERT_TRUE(t->insert_or_assign(keys, values, absl::MakeSpan(out)).ok());  // too small to be a burst
  for (size_t i = 0; i < keys.size(); ++i) model[keys[i]] = 7;
  ASSERT_TRUE(t->finish_rebuild().ok());
  const uint64_t before = t->rebuilds();
  // A burst of 20x the table, with repeats of existing keys.
  keys.assign(pool.begin() + 500, pool.end());
  values.resize(keys.size());
  for (auto& v : values) v = rng();
  out.resize(keys.size());
  ASSERT_TRUE(t->insert_or_assign(keys, values, absl::MakeSpan(out)).ok());
  for (size_t i = 0; i < keys.size(); ++i) {
    const bool fresh = model.insert_or_assign(keys[i], values[i]).second;
    ASSERT_EQ(out[i], fresh ? UpsertOutcome::kInserted : UpsertOutcome::kAssigned);
  }
  // Reads right away see the burst, built or not.
  for (int i = 0; i < 50; ++i) random_batch(*t, model, rng, pool, 64);
  ASSERT_TRUE(t->finish_rebuild().ok());
  EXPECT_GT(t->rebuilds(), before);
  EXPECT_EQ(events_.back().cause, "burst");
  expect_contents(*t, model);
}

TEST_P(ElasticTableTest, MemoryCapRefusesABatchAndChangesNothing) {
  std::mt19937_64 rng(test_seed());
  ElasticOptions o;
  o.shape.num_buckets = 64;
  auto probe = ElasticTable::create(o);
  ASSERT_TRUE(probe.ok());
  o.max_table_bytes = (*probe)->bytes_for(2048);  // room for ~26k keys at 0.8
  auto t = make_elastic(o);
  ASSERT_NE(t, nullptr);
  Model model;
  absl::Status refused;
  for (int batch = 0; batch < 100 && refused.ok(); ++batch) {
    std::vector<uint64_t> keys(1000), values(1000);
    for (auto& k : keys) k = rng();
    for (auto& v : values) v = rng();
    std::vector<UpsertOutcome> out(keys.size());
    refused = t->insert_or_assign(keys, values, absl::MakeSpan(out));
    if (refused.ok()) {
      for (size_t i = 0; i < keys.size(); ++i) model[keys[i]] = values[i];
    }
    EXPECT_LE(t->table_bytes(), o.max_table_bytes);
  }
  ASSERT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_NE(refused.message().find("cap"), std::string::npos) << refused;
  ASSERT_TRUE(t->finish_rebuild().ok());
  expect_contents(*t, model);
  // Overwrites of stored keys still go through at the cap.
  std::vector<uint64_t> keys, values;
  for (auto& [k, v] : model) {
    keys.push_back(k);
    values.push_back(v + 1);
    if (keys.size() == 100) break;
  }
  std::vector<UpsertOutcome> out(keys.size());
  ASSERT_TRUE(t->insert_or_assign(keys, values, absl::MakeSpan(out)).ok());
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(out[i], UpsertOutcome::kAssigned);
    model[keys[i]] = values[i];
  }
  expect_contents(*t, model);
}

TEST_P(ElasticTableTest, BytesToHoldIsTheCapThatAdmitsThoseKeys) {
  ElasticOptions o;
  o.shape.num_buckets = 64;
  auto t = make_elastic(o);
  ASSERT_NE(t, nullptr);
  const double per_bucket = o.shape.slots_per_bucket * 2.0 * sizeof(uint64_t) + o.shape.cells_per_bucket;
  for (uint64_t keys :
       {uint64_t{0}, uint64_t{1}, uint64_t{12}, uint64_t{13}, uint64_t{1000}, uint64_t{123457}, uint64_t{50'000'000}}) {
    const uint64_t bytes = t->bytes_to_hold(keys);
    EXPECT_GE(t->key_limit_under(bytes), keys) << keys;
    // Within one bucket of the smallest such cap.
    if (bytes > 2 * per_bucket) EXPECT_LT(t->key_limit_under(bytes - 2 * per_bucket), keys) << keys;
  }
  EXPECT_EQ(t->key_limit_under(0), std::numeric_limits<uint64_t>::max());
}

TEST_P(ElasticTableTest, MovingTheCapMovesTheKeyLimit) {
  std::mt19937_64 rng(test_seed());
  ElasticOptions o;
  o.shape.num_buckets = 64;
  auto t = make_elastic(o);
  ASSERT_NE(t, nullptr);
  // A cap that holds 3000 keys: a batch of 4000 is refused, nothing changed.
  t->set_max_table_bytes(t->bytes_to_hold(3000));
  EXPECT_EQ(t->max_table_bytes(), t->bytes_to_hold(3000));
  EXPECT_GE(t->key_limit(), 3000u);
  const auto pool = key_pool(rng, 4000);
  std::vector<uint64_t> values(pool.size(), 7);
  std::vector<UpsertOutcome> out(pool.size());
  EXPECT_EQ(t->insert_or_assign(pool, values, absl::MakeSpan(out)).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(t->size(), 0u);
  // Raised to what 4000 keys need, the same batch goes through, and every
  // table stays under the cap.
  t->set_max_table_bytes(t->bytes_to_hold(4000));
  ASSERT_TRUE(t->insert_or_assign(pool, values, absl::MakeSpan(out)).ok());
  EXPECT_LE(t->table_bytes(), t->max_table_bytes());
  ASSERT_TRUE(t->finish_rebuild().ok());
  EXPECT_LE(t->table_bytes(), t->max_table_bytes());
  Model model;
  for (uint64_t k : pool) model[k] = 7;
  expect_contents(*t, model);
}

TEST_P(ElasticTableTest, ShrinkToFitKeepsEveryKey) {
  std::mt19937_64 rng(test_seed());
  ElasticOptions o;
  o.shape.num_buckets = 16;
  auto t = make_elastic(o);
  ASSERT_NE(t, nullptr);
  const auto pool = key_pool(rng, 100000);
  std::vector<uint64_t> values(pool.size(), 3);
  std::vector<UpsertOutcome> out(pool.size());
  ASSERT_TRUE(t->insert_or_assign(pool, values, absl::MakeSpan(out)).ok());
  ASSERT_TRUE(t->finish_rebuild().ok());
  const uint64_t big = t->num_buckets();
  std::vector<uint64_t> gone(pool.begin(), pool.begin() + 95000);
  std::vector<uint8_t> erased(gone.size());
  ASSERT_TRUE(t->erase(gone, absl::MakeSpan(erased)).ok());
  ASSERT_TRUE(t->shrink_to_fit().ok());
  ASSERT_TRUE(t->finish_rebuild().ok());
  EXPECT_LT(t->num_buckets(), big / 4);
  EXPECT_EQ(events_.back().cause, "shrink");
  Model model;
  for (size_t i = 95000; i < pool.size(); ++i) model[pool[i]] = 3;
  expect_contents(*t, model);
}

TEST_P(ElasticTableTest, LoadFillsAnEmptyTableInOneBuildWithNoRebuild) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  ElasticOptions o;
  o.shape.num_buckets = 4;  // far too small: inserts would grow it many times
  auto t = make_elastic(o);
  ASSERT_NE(t, nullptr);
  // 200k writes over 150k keys (0 and the sentinel among them): repeats,
  // whose last write wins, and some erases.
  const auto pool = key_pool(rng, 150000);
  std::vector<WriteOp> writes;
  Model model;
  for (int i = 0; i < 200000; ++i) {
    const size_t at = i < 3 ? i : rng() % pool.size();
    const uint64_t key = pool[at];
    const bool erase = at >= 3 && rng() % 20 == 0;  // 0, 1 and the sentinel stay
    writes.push_back({key, rng(), erase});
    if (erase) {
      model.erase(key);
    } else {
      model[key] = writes.back().value;
    }
  }
  ASSERT_TRUE(model.count(0) && model.count(gph::kEmptyKey));
  BuildStats stats;
  ASSERT_TRUE(t->load(writes, &stats).ok());
  EXPECT_FALSE(t->rebuilding());
  EXPECT_EQ(t->rebuilds(), 0u);
  EXPECT_TRUE(events_.empty());
  EXPECT_EQ(stats.keys, model.size());
  expect_contents(*t, model);
  // Sized as a grown table: at most rebuild_load_factor full, so writes go on without a rebuild.
  EXPECT_LE(t->load_factor(), o.rebuild_load_factor + 0.01);
  for (int i = 0; i < 50; ++i) random_batch(*t, model, rng, pool, 1 + rng() % 500);
  expect_contents(*t, model);
  // Only into an empty table.
  EXPECT_EQ(t->load(writes).code(), absl::StatusCode::kFailedPrecondition);
  expect_contents(*t, model);
}

TEST_P(ElasticTableTest, LoadPastTheCapIsRefusedAndChangesNothing) {
  std::mt19937_64 rng(test_seed());
  ElasticOptions o;
  o.shape.num_buckets = 64;
  auto t = make_elastic(o);
  ASSERT_NE(t, nullptr);
  t->set_max_table_bytes(t->bytes_to_hold(3000));
  std::vector<WriteOp> writes;
  for (int i = 0; i < 4000; ++i) writes.push_back({rng(), rng(), false});
  const absl::Status refused = t->load(writes);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_EQ(t->size(), 0u);
  EXPECT_EQ(t->num_buckets(), 64u);
  // At the cap that holds them, the largest table under it takes them all.
  t->set_max_table_bytes(t->bytes_to_hold(4000));
  ASSERT_TRUE(t->load(writes).ok());
  EXPECT_LE(t->table_bytes(), t->max_table_bytes());
  Model model;
  for (const WriteOp& w : writes) model[w.key] = w.value;
  expect_contents(*t, model);
}

TEST_P(ElasticTableTest, BurstThresholdDefaultsToTheBackendsMeasuredValue) {
  auto t = make_elastic(ElasticOptions{});
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->rebuild_burst_fraction(),
            GetParam() == Backend::kCuda ? kCudaRebuildBurstFraction : kCpuRebuildBurstFraction);
  ElasticOptions o;
  o.rebuild_burst_fraction = 0.25;  // an explicit value stays
  auto u = make_elastic(o);
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->rebuild_burst_fraction(), 0.25);
}

GPHKV_INSTANTIATE_BACKENDS(ElasticTableTest);

}  // namespace
}  // namespace gphkv::engine::testing
