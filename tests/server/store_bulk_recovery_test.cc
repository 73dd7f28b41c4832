// Recovery's bulk path (server/bulk_load.h, docs/durability.md): a snapshot
// loaded into a store with a tiny first table gives exactly the model's
// contents with no rebuild, alone and with a log after it; repeated keys in a
// snapshot (the last wins), the keys 0 and the table's sentinel; the --memory
// refusal; damaged snapshots refused, skipped (skip-corrupt) or fallen back
// from onto an older one, through the abandoned bulk load.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gphkv/engine/gph_hash.h"
#include "gphkv/engine/table.h"
#include "gtest/gtest.h"
#include "server/durability/snapshot_writer.h"
#include "server/store_durability.h"
#include "tests/loadgen/test_seed.h"
#include "tests/server/owned_calls.h"
#include "tests/server/store_fixtures.h"

namespace gphkv::server {
namespace {

namespace fs = std::filesystem;
using Model = std::unordered_map<uint64_t, std::string>;
using Pair = std::pair<uint64_t, std::string>;

std::string scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / absl::StrCat("gphkv-bulk-recovery-", name, "-", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

DataDirConfig config_of(const std::string& dir, durability::RecoverMode mode = durability::RecoverMode::kStrict) {
  DataDirConfig c;
  c.dir = dir;
  c.options.log.fsync = durability::FsyncPolicy::kNever;
  c.options.snapshot_interval_seconds = 0;
  c.options.recover = mode;
  return c;
}

StoreModel sorted(const Model& m) { return StoreModel(m.begin(), m.end()); }

// Yields `pairs` in order, `chunk` at a time.
class PairsSource : public durability::PairSource {
 public:
  PairsSource(const std::vector<Pair>& pairs, size_t chunk) : pairs_(pairs), chunk_(chunk) {}
  absl::StatusOr<bool> next(durability::Pairs* out) override {
    if (at_ == pairs_.size()) return false;
    keys_.clear();
    values_.clear();
    for (; at_ < pairs_.size() && keys_.size() < chunk_; ++at_) {
      keys_.push_back(pairs_[at_].first);
      values_.push_back(pairs_[at_].second);
    }
    *out = durability::Pairs{keys_, values_};
    return true;
  }

 private:
  const std::vector<Pair>& pairs_;
  size_t chunk_;
  size_t at_ = 0;
  std::vector<uint64_t> keys_;
  std::vector<std::string_view> values_;
};

std::string random_value(std::mt19937_64& rng, size_t max) {
  std::string v(rng() % (max + 1), '\0');
  for (char& c : v) c = static_cast<char>(rng());
  return v;
}

// `n` pairs over random keys plus 0, 1 and the sentinel; `repeat_percent` of
// them repeat an earlier key with a new value (what a snapshot may hold: the
// last occurrence wins). The model is what the pairs leave.
std::vector<Pair> random_pairs(std::mt19937_64& rng, size_t n, int repeat_percent, Model* model) {
  std::vector<Pair> pairs;
  for (uint64_t k : {uint64_t{0}, uint64_t{1}, engine::gph::kEmptyKey}) pairs.push_back({k, random_value(rng, 40)});
  while (pairs.size() < n) {
    const bool repeat = static_cast<int>(rng() % 100) < repeat_percent;
    const uint64_t key = repeat ? pairs[rng() % pairs.size()].first : rng();
    pairs.push_back({key, random_value(rng, 40)});
  }
  // The special keys once more, late: their last values win.
  for (uint64_t k : {uint64_t{0}, engine::gph::kEmptyKey}) pairs.push_back({k, random_value(rng, 40)});
  for (const Pair& p : pairs) (*model)[p.first] = p.second;
  return pairs;
}

void write_snapshot_of(const std::string& dir, uint64_t sequence, const std::vector<Pair>& pairs,
                       uint64_t block_bytes = 64 << 10) {
  PairsSource source(pairs, 997);
  auto info = durability::write_snapshot(dir, sequence, source, block_bytes);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->header.pairs, pairs.size());
}

// A store as the server makes it, but with a first table for 64 keys: any
// growth through inserts would rebuild many times over.
std::unique_ptr<Store> tiny_first_table(uint64_t memory = 256 << 20) { return small_store(memory, 64); }

// Random runs of puts and deletes through the store and the log, as the
// executor applies them; keys from `keys` (so they hit snapshot keys) or new.
void random_batches(Store& store, StoreDurability& d, std::mt19937_64& rng, const std::vector<Pair>& snapshot,
                    int batches, Model* model) {
  auto pick = [&]() -> uint64_t {
    switch (rng() % 8) {
      case 0: return 0;
      case 1: return engine::gph::kEmptyKey;
      case 2:
      case 3:
      case 4: return snapshot[rng() % snapshot.size()].first;
      default: return rng();
    }
  };
  for (int b = 0; b < batches; ++b) {
    std::vector<uint64_t> keys;
    std::vector<std::string> values;
    for (int i = 1 + static_cast<int>(rng() % 50); i > 0; --i) {
      keys.push_back(pick());
      values.push_back(random_value(rng, 60));
    }
    auto put = make_put(keys, values);
    Call* c = &put->call;
    std::vector<absl::Status> statuses;
    store.apply_puts({&c, 1}, &statuses);
    ASSERT_TRUE(statuses[0].ok()) << statuses[0];
    d.add_puts({&c, 1}, statuses);
    for (size_t i = 0; i < keys.size(); ++i) (*model)[keys[i]] = values[i];
    if (rng() % 2 == 0) {
      std::vector<uint64_t> gone;
      for (int i = 1 + static_cast<int>(rng() % 20); i > 0; --i) gone.push_back(pick());
      auto del = make_del(gone);
      Call* dc = &del->call;
      store.apply_deletes({&dc, 1}, &statuses);
      ASSERT_TRUE(statuses[0].ok()) << statuses[0];
      d.add_deletes({&dc, 1}, statuses);
      for (uint64_t k : gone) model->erase(k);
    }
    ASSERT_TRUE(d.commit().ok());
  }
}

TEST(BulkRecovery, SnapshotThenLogGiveExactlyTheModelWithNoRebuild) {
  const uint64_t seed = loadgen::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const std::string dir = scratch("snapshot-log");
  Model model;
  const std::vector<Pair> pairs = random_pairs(rng, 150000, 5, &model);
  ASSERT_NO_FATAL_FAILURE(write_snapshot_of(dir, 1, pairs));

  // The snapshot alone.
  {
    auto store = tiny_first_table();
    auto d = StoreDurability::open(config_of(dir), *store, nullptr, nullptr);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(store->keys(), model.size());
    EXPECT_EQ(store->counters().rebuilds, 0u) << "one bulk build, no growth";
    EXPECT_EQ(store->table().rebuilds(), 0u);
    EXPECT_FALSE(store->rebuilding());
    EXPECT_LE(store->load_factor(), 0.51) << "sized as a grown table: room for the writes that follow";
    ASSERT_EQ(contents(*store), sorted(model));
    // Then writes after it, logged: the log after the snapshot.
    ASSERT_NO_FATAL_FAILURE(random_batches(*store, **d, rng, pairs, 300, &model));
    ASSERT_EQ(contents(*store), sorted(model));
    // No close(): a crash leaves the snapshot and the log after it.
  }
  // The snapshot and the log.
  auto store = tiny_first_table();
  auto d = StoreDurability::open(config_of(dir), *store, nullptr, nullptr);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->status().state.recovery.snapshot_pairs, pairs.size());
  EXPECT_EQ((*d)->status().state.recovery.log_batches, 300u);
  EXPECT_EQ(store->counters().rebuilds, 0u);
  ASSERT_EQ(contents(*store), sorted(model));
  // The store serves on: more writes, then a final snapshot, recovered again.
  ASSERT_NO_FATAL_FAILURE(random_batches(*store, **d, rng, pairs, 50, &model));
  (*d)->close(*store);
  d->reset();
  auto again = tiny_first_table();
  auto d2 = StoreDurability::open(config_of(dir), *again, nullptr, nullptr);
  ASSERT_TRUE(d2.ok()) << d2.status();
  EXPECT_EQ(again->counters().rebuilds, 0u);
  EXPECT_EQ(contents(*again), sorted(model));
  fs::remove_all(dir);
}

// The server's own snapshot (the final one at shutdown, from the store's
// export): N keys back in a store whose first table holds 64, no rebuild.
TEST(BulkRecovery, TheServersOwnSnapshotComesBackWithoutARebuild) {
  const uint64_t seed = loadgen::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const std::string dir = scratch("own");
  Model model;
  {
    auto store = tiny_first_table();
    auto d = StoreDurability::open(config_of(dir), *store, nullptr, nullptr);
    ASSERT_TRUE(d.ok()) << d.status();
    for (int b = 0; b < 100; ++b) {
      std::vector<uint64_t> keys;
      std::vector<std::string> values;
      for (int i = 0; i < 2000; ++i) {
        keys.push_back(b == 0 && i < 2 ? (i == 0 ? 0 : engine::gph::kEmptyKey) : rng());
        values.push_back(random_value(rng, 24));
      }
      auto put = make_put(keys, values);
      Call* c = &put->call;
      std::vector<absl::Status> statuses;
      store->apply_puts({&c, 1}, &statuses);
      ASSERT_TRUE(statuses[0].ok()) << statuses[0];
      (*d)->add_puts({&c, 1}, statuses);
      ASSERT_TRUE((*d)->commit().ok());
      for (size_t i = 0; i < keys.size(); ++i) model[keys[i]] = values[i];
    }
    EXPECT_GT(store->counters().rebuilds, 3u) << "filling through inserts grows the table";
    (*d)->close(*store);
  }
  auto store = tiny_first_table();
  auto d = StoreDurability::open(config_of(dir), *store, nullptr, nullptr);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->status().state.recovery.log_batches, 0u) << "the final snapshot covers the log";
  EXPECT_EQ(store->counters().rebuilds, 0u);
  EXPECT_EQ(store->keys(), model.size());
  EXPECT_EQ(contents(*store), sorted(model));
  fs::remove_all(dir);
}

// The bulk write (ValueHeap::write_bulk: on the device, staged and copied
// asynchronously a run at a time) with values of random sizes, 0 and the
// largest the store takes among them, in blocks of a few values and of many:
// exactly the model comes back, on the CPU and, with a device, on CUDA.
void expect_random_sizes_come_back(engine::Backend backend) {
  const uint64_t seed = loadgen::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  constexpr uint32_t kMaxValue = 256 << 10;
  const std::string dir = scratch(backend == engine::Backend::kCuda ? "sizes-cuda" : "sizes-cpu");
  Model model;
  std::vector<Pair> pairs;
  for (int i = 0; i < 60000; ++i) {
    const uint64_t r = rng() % 1000;
    const size_t len = r < 100 ? 0 : r < 102 ? kMaxValue : r < 110 ? rng() % (kMaxValue + 1) : rng() % 40;
    std::string v(len, '\0');
    for (char& c : v) c = static_cast<char>(rng());
    pairs.push_back({rng() % 5 == 0 && !pairs.empty() ? pairs[rng() % pairs.size()].first : rng(), std::move(v)});
  }
  for (const Pair& p : pairs) model[p.first] = p.second;
  ASSERT_NO_FATAL_FAILURE(write_snapshot_of(dir, 1, pairs, 1 << 20));
  StoreOptions o;
  o.backend = backend;
  o.initial_capacity = 64;
  o.memory_limit_bytes = uint64_t{1} << 30;
  o.max_value_bytes = kMaxValue;
  o.table.cpu_threads = 2;
  auto store = Store::create(o);
  ASSERT_TRUE(store.ok()) << store.status();
  auto d = StoreDurability::open(config_of(dir), **store, nullptr, nullptr);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->status().state.recovery.snapshot_pairs, pairs.size());
  EXPECT_EQ((*store)->counters().rebuilds, 0u);
  EXPECT_EQ(contents(**store), sorted(model));
  fs::remove_all(dir);
}

TEST(BulkRecovery, ValuesOfRandomSizesUpToTheLimitComeBackOnTheCpu) {
  expect_random_sizes_come_back(engine::Backend::kCpu);
}

TEST(BulkRecovery, ValuesOfRandomSizesUpToTheLimitComeBackOnTheDevice) {
  if (engine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible: the device value heap needs one";
  expect_random_sizes_come_back(engine::Backend::kCuda);
}

TEST(BulkRecovery, ASnapshotPastMemoryRefusesToStartNamingTheFlag) {
  std::mt19937_64 rng(loadgen::testing::TestSeed());
  const std::string dir = scratch("memory");
  std::vector<Pair> pairs;
  for (uint64_t k = 0; k < 3000; ++k) pairs.push_back({k, std::string(2000, 'x')});
  ASSERT_NO_FATAL_FAILURE(write_snapshot_of(dir, 1, pairs));
  auto small = small_store(2 << 20, 64);
  auto d = StoreDurability::open(config_of(dir), *small, nullptr, nullptr);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(d.status().message(), "--memory")) << d.status();
  // The same directory fits a store with room for it.
  auto roomy = small_store(64 << 20, 64);
  auto ok = StoreDurability::open(config_of(dir), *roomy, nullptr, nullptr);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(roomy->keys(), 3000u);
  fs::remove_all(dir);
}

// Flips a byte in the middle of the snapshot's blocks.
void damage_middle(const std::string& path) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(0, std::ios::end);
  const std::streamoff at = f.tellg() / 2;
  f.seekg(at);
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5a);
  f.seekp(at);
  f.write(&c, 1);
}

TEST(BulkRecovery, ADamagedSnapshotIsRefusedOrLoadsItsIntactBlocks) {
  const uint64_t seed = loadgen::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const std::string dir = scratch("damaged");
  Model model;
  const std::vector<Pair> pairs = random_pairs(rng, 50000, 0, &model);
  ASSERT_NO_FATAL_FAILURE(write_snapshot_of(dir, 1, pairs, 16 << 10));
  damage_middle(dir + "/" + "snapshot-00000000000000000001.gphkv");
  const std::string copy = dir + "-copy";
  fs::remove_all(copy);
  fs::copy(dir, copy);
  {
    auto store = tiny_first_table();
    auto d = StoreDurability::open(config_of(dir), *store, nullptr, nullptr);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), absl::StatusCode::kDataLoss) << d.status();
    EXPECT_TRUE(absl::StrContains(d.status().message(), "snapshot-00000000000000000001.gphkv")) << d.status();
  }
  auto store = tiny_first_table();
  auto d = StoreDurability::open(config_of(copy, durability::RecoverMode::kSkipCorrupt), *store, nullptr, nullptr);
  ASSERT_TRUE(d.ok()) << d.status();
  // One block (about 16 KiB of pairs) is gone; every pair left is the model's.
  const StoreModel got = contents(*store);
  EXPECT_LT(got.size(), model.size());
  EXPECT_GT(got.size(), model.size() - 2000);
  for (const auto& [k, v] : got) {
    auto it = model.find(k);
    ASSERT_NE(it, model.end()) << k;
    ASSERT_EQ(it->second, v) << k;
  }
  EXPECT_EQ(store->counters().rebuilds, 0u);
  fs::remove_all(dir);
  fs::remove_all(copy);
}

// The newest snapshot damaged, an older one and the whole log after it: the
// bulk load of the newest is abandoned part way (on_reset) and the older one
// is bulk-loaded, then the log replayed.
TEST(BulkRecovery, ADamagedNewestSnapshotFallsBackToTheOlderOneAndItsLog) {
  const uint64_t seed = loadgen::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const std::string dir = scratch("fallback");
  Model model;
  const std::vector<Pair> pairs = random_pairs(rng, 40000, 2, &model);
  ASSERT_NO_FATAL_FAILURE(write_snapshot_of(dir, 1, pairs));
  {
    auto store = tiny_first_table();
    auto d = StoreDurability::open(config_of(dir), *store, nullptr, nullptr);
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_NO_FATAL_FAILURE(random_batches(*store, **d, rng, pairs, 40, &model));
  }
  // Batches 2..41 are in the log; a snapshot of 41 (its pairs the model's), damaged.
  std::vector<Pair> newest(model.begin(), model.end());
  ASSERT_NO_FATAL_FAILURE(write_snapshot_of(dir, 41, newest, 16 << 10));
  damage_middle(dir + "/" + "snapshot-00000000000000000041.gphkv");
  auto store = tiny_first_table();
  auto d = StoreDurability::open(config_of(dir), *store, nullptr, nullptr);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->status().state.recovery.snapshot_sequence, 1u);
  EXPECT_EQ((*d)->status().state.recovery.log_batches, 40u);
  EXPECT_EQ(store->counters().rebuilds, 0u);
  EXPECT_EQ(contents(*store), sorted(model));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gphkv::server
