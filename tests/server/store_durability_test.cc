// StoreDurability in one process, driven the way the executor drives it:
// runs of put and delete calls applied to a growing store, each batch's
// record committed, a snapshot chunk exported after every batch (so writes,
// deletes and rebuilds land between the chunks of fuzzy snapshots). The
// directory is copied at random moments (what a process crash leaves: the
// files as written) and recovered into a fresh store, which must equal the
// model at that moment; so must the directory after close(). Also: a
// recovery that does not fit --memory, and the record bound on the flags.
#include "server/store_durability.h"

#include <unistd.h>

#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/loadgen/test_seed.h"
#include "tests/server/owned_calls.h"
#include "tests/server/store_fixtures.h"

namespace gphkv::server {
namespace {

namespace fs = std::filesystem;
using Model = StoreModel;

std::string scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / absl::StrCat("gphkv-store-durability-", name, "-", getpid());
  fs::remove_all(dir);
  return dir.string();
}

DataDirConfig config_of(const std::string& dir) {
  DataDirConfig c;
  c.dir = dir;
  c.options.log.fsync = durability::FsyncPolicy::kNever;  // a process crash keeps what was written
  c.options.log.segment_bytes = 16 << 10;
  c.options.snapshot_log_bytes = 64 << 10;  // a snapshot every few dozen batches
  c.options.snapshot_interval_seconds = 0;
  c.options.snapshot_block_bytes = 4 << 10;
  return c;
}

// A fresh store recovered from `dir`.
Model recovered(const std::string& dir) {
  auto store = small_store();
  auto d = StoreDurability::open(config_of(dir), *store, nullptr, nullptr);
  EXPECT_TRUE(d.ok()) << d.status();
  return contents(*store);
}

TEST(StoreDurability, FuzzySnapshotsBetweenBatchesAndCopiesAtAnyMoment) {
  const uint64_t seed = loadgen::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const std::string dir = scratch("fuzzy");
  auto store = small_store();
  auto durable = StoreDurability::open(config_of(dir), *store, nullptr, nullptr);
  ASSERT_TRUE(durable.ok()) << durable.status();
  StoreDurability& d = **durable;
  Model model;
  int copies = 0, copies_mid_export = 0;
  for (int batch = 0; batch < 1000; ++batch) {
    // One batch: a run of puts, then maybe a run of deletes, as the executor applies them.
    std::vector<std::unique_ptr<OwnedCall>> puts;
    for (int c = 1 + static_cast<int>(rng() % 3); c > 0; --c) {
      std::vector<uint64_t> keys;
      std::vector<std::string> values;
      for (int i = 1 + static_cast<int>(rng() % 40); i > 0; --i) {
        keys.push_back(rng() % 20000);
        values.push_back(absl::StrCat(batch, ":", std::string(rng() % 200, 'p')));
      }
      puts.push_back(make_put(keys, values));
    }
    std::vector<Call*> run;
    for (auto& c : puts) run.push_back(&c->call);
    std::vector<absl::Status> statuses;
    store->apply_puts(run, &statuses);
    d.add_puts(run, statuses);
    for (auto& c : puts) {
      for (int i = 0, off = 0; i < c->put.keys_size(); off += c->put.value_lengths(i), ++i) {
        model[c->put.keys(i)] = c->put.values().substr(off, c->put.value_lengths(i));
      }
    }
    if (rng() % 3 == 0) {
      std::vector<uint64_t> keys;
      for (int i = 1 + static_cast<int>(rng() % 30); i > 0; --i) keys.push_back(rng() % 20000);
      auto del = make_del(keys);
      Call* c = &del->call;
      store->apply_deletes({&c, 1}, &statuses);
      d.add_deletes({&c, 1}, statuses);
      for (uint64_t k : keys) model.erase(k);
    }
    ASSERT_TRUE(d.commit().ok());
    d.snapshot_step(*store);
    // Now and then a copy, while no snapshot is finishing: its writer
    // renames and removes files then, and a copy racing that would be no
    // state a crash leaves. Mid-export, the writer waits for the next chunk.
    // The first batch that ends mid-export always copies: how many exports
    // span batches depends on the writer thread's pace, so random copies
    // alone missed every one of them now and then on a loaded machine.
    const bool first_mid_export = d.exporting() && copies_mid_export == 0;
    if (first_mid_export || rng() % 50 == 0 || (d.exporting() && rng() % 30 == 0)) {
      while (!d.exporting() && d.status().state.snapshot_running)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      const bool mid_export = d.exporting();
      const std::string copy = dir + "-copy";
      fs::remove_all(copy);
      fs::copy(dir, copy);
      ASSERT_EQ(recovered(copy), model) << "a copy after batch " << batch << (mid_export ? ", mid-export" : "");
      fs::remove_all(copy);
      ++copies;
      copies_mid_export += mid_export;
    }
  }
  EXPECT_GT(copies_mid_export, 0) << "exports span batches: some copies must land inside one";
  EXPECT_GT(d.status().state.snapshots_taken, 3u);
  EXPECT_GT(copies, 5);
  std::printf("%d copies recovered, %d of them taken mid-export; %lu snapshots; %lu rebuilds\n", copies,
              copies_mid_export, static_cast<unsigned long>(d.status().state.snapshots_taken),
              static_cast<unsigned long>(store->counters().rebuilds));
  d.close(*store);
  durable->reset();
  for (const auto& e : fs::directory_iterator(dir)) {
    EXPECT_FALSE(absl::StartsWith(e.path().filename().string(), "log-")) << "the final snapshot covers the log";
  }
  EXPECT_EQ(recovered(dir), model);
  fs::remove_all(dir);
}

TEST(StoreDurability, RecoveryPastMemoryRefusesToStartNamingTheFlag) {
  const std::string dir = scratch("memory");
  {
    auto store = small_store();
    auto d = StoreDurability::open(config_of(dir), *store, nullptr, nullptr);
    ASSERT_TRUE(d.ok()) << d.status();
    std::vector<uint64_t> keys;
    std::vector<std::string> values;
    for (uint64_t k = 0; k < 3000; ++k) {
      keys.push_back(k);
      values.push_back(std::string(2000, 'x'));
    }
    auto put = make_put(keys, values);
    Call* c = &put->call;
    std::vector<absl::Status> statuses;
    store->apply_puts({&c, 1}, &statuses);
    ASSERT_TRUE(statuses[0].ok()) << statuses[0];
    (*d)->add_puts({&c, 1}, statuses);
    ASSERT_TRUE((*d)->commit().ok());
  }
  auto small = small_store(2 << 20);
  auto d = StoreDurability::open(config_of(dir), *small, nullptr, nullptr);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(d.status().message(), "--memory")) << d.status();
  fs::remove_all(dir);
}

TEST(StoreDurability, ABatchMustFitOneLogRecord) {
  EXPECT_TRUE(check_log_record_bound(uint64_t{1} << 30, 256 << 20, 1 << 20, 250).ok()) << "the defaults fit";
  const absl::Status s = check_log_record_bound(uint64_t{4} << 30, 256 << 20, 1 << 20, 250);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(s.message(), "--max_queue_bytes")) << s;
  // A million keys of 4 KiB each are 4 GiB of key bytes alone.
  const absl::Status long_keys = check_log_record_bound(uint64_t{1} << 30, 256 << 20, 1 << 20, 4096);
  EXPECT_EQ(long_keys.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(long_keys.message(), "--max_key_bytes")) << long_keys;
  EXPECT_TRUE(check_log_record_bound(uint64_t{1} << 30, 256 << 20, 1 << 18, 4096).ok()) << "fewer keys fit";
}

}  // namespace
}  // namespace gphkv::server
