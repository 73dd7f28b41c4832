// Byte keys through the data directory (issue 26), driven as the executor
// drives StoreDurability: runs of puts and deletes mixing uint64 keys and byte
// keys (binary ones, the longest, and "42" beside the uint64 key 42), each
// batch committed, a fuzzy snapshot's chunk exported between batches. With
// 4-bit table keys every byte key collides with others and with the uint64
// keys 0..15, so CollidedKeys and the records in the table both go through
// the log, the snapshots and recovery. The directory is copied at random
// moments and recovered into a fresh store, which must hold exactly the
// model: by its export (each key once), and by a get of every key. Then
// items with flags, expiry and CAS versions (issue 27) the same way, the
// clock stepping (ItemFieldsAndVersionsComeBack).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gphkv/engine/table.h"
#include "gtest/gtest.h"
#include "server/byte_key.h"
#include "server/snapshot_export.h"
#include "server/store_durability.h"
#include "tests/loadgen/test_seed.h"
#include "tests/server/byte_key_calls.h"
#include "tests/server/owned_calls.h"

namespace gphkv::server {
namespace {

namespace fs = std::filesystem;

// Keys of both kinds by name: "u:<id>" or "b:<bytes>".
using NamedModel = std::map<std::string, std::string>;

std::string u64_name(uint64_t k) { return absl::StrCat("u:", k); }
std::string bytes_name(std::string_view k) { return "b:" + std::string(k); }

struct Param {
  engine::Backend backend;
  int hash_bits;
};

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return absl::StrCat(info.param.backend == engine::Backend::kCuda ? "Cuda" : "Cpu", info.param.hash_bits, "Bits");
}

class ByteKeyDurability : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    if (GetParam().backend == engine::Backend::kCuda && engine::cuda_device_count() == 0) {
      GTEST_SKIP() << "no CUDA device visible";
    }
    seed_ = loadgen::testing::TestSeed();
    dir_ = (fs::temp_directory_path() / absl::StrCat("gphkv-byte-key-durability-", getpid())).string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Store> make_store() const {
    StoreOptions o;
    o.backend = GetParam().backend;
    o.initial_capacity = 64;
    o.memory_limit_bytes = 256 << 20;
    o.max_value_bytes = 4096 + byte_key::kRecordHeaderBytes + byte_key::kMaxKeyBytesLimit;
    o.table.cpu_threads = 2;
    o.byte_key_hash_bits = GetParam().hash_bits;
    o.unix_clock = [clock = clock_] { return clock->load(); };
    auto s = Store::create(o);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }

  static DataDirConfig config_of(const std::string& dir) {
    DataDirConfig c;
    c.dir = dir;
    c.options.log.fsync = durability::FsyncPolicy::kNever;  // a process crash keeps what was written
    c.options.log.segment_bytes = 16 << 10;
    c.options.snapshot_log_bytes = 48 << 10;  // a snapshot every few dozen batches
    c.options.snapshot_interval_seconds = 0;
    c.options.snapshot_block_bytes = 4 << 10;
    return c;
  }

  std::string byte_key(std::mt19937_64& rng) const {
    const uint64_t id = rng() % 300;
    switch (rng() % 20) {
      case 0: return std::string(byte_key::kMaxKeyBytesLimit, static_cast<char>('a' + id % 3));
      case 1:
      case 2: return std::string("\0\xff", 2) + static_cast<char>(id % 8);
      case 3: return std::to_string(id % 64);  // reads as a uint64 key stored beside it
      default: return absl::StrCat("user:", id, ":profile");
    }
  }
  static uint64_t u64_key(std::mt19937_64& rng) { return rng() % 4 == 0 ? rng() % 64 : rng() % 5000; }

  // Every run of pairs the store's snapshot export gives.
  template <typename Fn>
  void for_each_exported(Store& store, Fn&& fn) const {
    auto e = StoreExport::start(store);
    EXPECT_TRUE(e.ok()) << e.status();
    if (!e.ok()) return;
    durability::PairChunk ids, byte_pairs;
    std::vector<std::string_view> values, keys;
    while (!e->done()) {
      EXPECT_TRUE(e->next_chunk(store, &ids, &byte_pairs).ok());
      for (const durability::PairChunk* c : {&ids, &byte_pairs}) fn(c->as_pairs(&values, &keys));
    }
  }

  // The store's contents by its snapshot export, each key exactly once.
  NamedModel exported(Store& store) const {
    NamedModel m;
    for_each_exported(store, [&](const durability::Pairs& p) {
      for (size_t i = 0; i < p.size(); ++i) {
        const std::string name = p.has_byte_keys() ? bytes_name(p.byte_keys[i]) : u64_name(p.keys[i]);
        EXPECT_TRUE(m.emplace(name, std::string(p.values[i])).second) << "exported twice: " << name;
      }
    });
    return m;
  }

  // Gets of every key of the model, and of some it lacks, answer as the model says.
  void expect_gets(Store& store, const NamedModel& model) const {
    std::vector<uint64_t> ids;
    std::vector<std::string> bytes;
    for (const auto& [name, value] : model) {
      if (name[0] == 'u') {
        ids.push_back(std::stoull(name.substr(2)));
      } else {
        bytes.push_back(name.substr(2));
      }
    }
    ids.push_back(5000 + 1);          // never stored
    bytes.push_back("never stored");  // likewise
    auto u = make_get(ids);
    auto b = make_byte_get(bytes, GetParam().hash_bits);
    std::vector<absl::Status> st;
    Call* run[] = {&u->call, &b->call};
    store.apply_gets(run, &st);
    ASSERT_TRUE(st[0].ok() && st[1].ok()) << st[0] << " " << st[1];
    size_t off = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      const auto it = model.find(u64_name(ids[i]));
      ASSERT_EQ(u->get_out.found(static_cast<int>(i)), it != model.end()) << u64_name(ids[i]);
      if (it == model.end()) continue;
      EXPECT_EQ(u->get_out.values().substr(off, u->get_out.value_lengths(static_cast<int>(i))), it->second);
      off += u->get_out.value_lengths(static_cast<int>(i));
    }
    off = 0;
    for (size_t i = 0; i < bytes.size(); ++i) {
      const auto it = model.find(bytes_name(bytes[i]));
      ASSERT_EQ(b->get_out.found(static_cast<int>(i)), it != model.end()) << bytes_name(bytes[i]).substr(0, 40);
      if (it == model.end()) continue;
      EXPECT_EQ(b->get_out.values().substr(off, b->get_out.value_lengths(static_cast<int>(i))), it->second);
      off += b->get_out.value_lengths(static_cast<int>(i));
    }
  }

  // A fresh store recovered from `dir`, checked against the model.
  void expect_recovered(const std::string& dir, const NamedModel& model, const std::string& when) const {
    SCOPED_TRACE(when);
    auto store = make_store();
    ASSERT_NE(store, nullptr);
    auto d = StoreDurability::open(config_of(dir), *store, nullptr, nullptr);
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_EQ(exported(*store), model);
    expect_gets(*store, model);
  }

  // Every key's item as the store gives it back, without the expired ones:
  // "value|flags|exptime|cas" (the CAS left out without `with_cas`).
  NamedModel exported_items(Store& store, bool with_cas) const {
    NamedModel m;
    for_each_exported(store, [&](const durability::Pairs& p) {
      for (size_t i = 0; i < p.size() && p.has_byte_keys(); ++i) {
        const byte_key::ItemMeta meta = p.metas.empty() ? byte_key::ItemMeta{} : p.metas[i];
        if (byte_key::is_expired(meta.exptime, clock_->load())) continue;
        m[bytes_name(p.byte_keys[i])] = item_text(p.values[i], meta, with_cas);
      }
    });
    return m;
  }
  static std::string item_text(std::string_view value, const byte_key::ItemMeta& meta, bool with_cas) {
    std::string text(value);
    absl::StrAppend(&text, "|", meta.flags, "|", meta.exptime);
    if (with_cas) absl::StrAppend(&text, "|", meta.cas);
    return text;
  }

  uint64_t seed_ = 0;
  std::string dir_;
  // The stores' clock (unix seconds), stepped by the tests.
  std::shared_ptr<std::atomic<uint32_t>> clock_ = std::make_shared<std::atomic<uint32_t>>(1'800'000'000);
};

TEST_P(ByteKeyDurability, TheLogSnapshotsAndRecoveryKeepBothKindsOfKey) {
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed_);
  std::mt19937_64 rng(seed_);
  auto store = make_store();
  ASSERT_NE(store, nullptr);
  auto durable = StoreDurability::open(config_of(dir_), *store, nullptr, nullptr);
  ASSERT_TRUE(durable.ok()) << durable.status();
  StoreDurability& d = **durable;
  NamedModel model;
  int copies = 0;
  uint64_t most_collided = 0;
  for (int batch = 0; batch < 300; ++batch) {
    std::vector<std::unique_ptr<OwnedCall>> puts;
    for (int c = 1 + static_cast<int>(rng() % 3); c > 0; --c) {
      const bool bytes = rng() % 2 == 0;
      std::vector<uint64_t> ids;
      std::vector<std::string> keys, values;
      for (int i = 1 + static_cast<int>(rng() % 20); i > 0; --i) {
        values.push_back(absl::StrCat(batch, ":", std::string(rng() % 100, 'v')));
        if (bytes) {
          keys.push_back(byte_key(rng));
          model[bytes_name(keys.back())] = values.back();
        } else {
          ids.push_back(u64_key(rng));
          model[u64_name(ids.back())] = values.back();
        }
      }
      puts.push_back(bytes ? make_byte_put(keys, values, GetParam().hash_bits) : make_put(ids, values));
    }
    std::vector<Call*> run;
    for (auto& c : puts) run.push_back(&c->call);
    std::vector<absl::Status> statuses;
    store->apply_puts(run, &statuses);
    for (const absl::Status& s : statuses) ASSERT_TRUE(s.ok()) << s;
    d.add_puts(run, statuses);
    if (rng() % 3 == 0) {
      std::vector<uint64_t> ids;
      std::vector<std::string> keys;
      for (int i = 1 + static_cast<int>(rng() % 15); i > 0; --i) {
        keys.push_back(byte_key(rng));
        model.erase(bytes_name(keys.back()));
        ids.push_back(u64_key(rng));
        model.erase(u64_name(ids.back()));
      }
      auto by_bytes = make_byte_del(keys, GetParam().hash_bits);
      auto by_id = make_del(ids);
      Call* dels[] = {&by_bytes->call, &by_id->call};
      store->apply_deletes(dels, &statuses);
      ASSERT_TRUE(statuses[0].ok() && statuses[1].ok());
      d.add_deletes(dels, statuses);
    }
    ASSERT_TRUE(d.commit().ok());
    d.snapshot_step(*store);
    most_collided = std::max(most_collided, store->collided_keys());
    if (batch % 30 == 29 || (d.exporting() && rng() % 25 == 0)) {
      while (!d.exporting() && d.status().state.snapshot_running) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      const std::string copy = dir_ + "-copy";
      fs::remove_all(copy);
      fs::copy(dir_, copy);
      expect_recovered(copy, model, absl::StrCat("a copy after batch ", batch));
      fs::remove_all(copy);
      ++copies;
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  EXPECT_EQ(exported(*store), model) << "the serving store's own export";
  EXPECT_GT(d.status().state.snapshots_taken, 2u);
  EXPECT_GE(copies, 10);
  if (GetParam().hash_bits < 64) EXPECT_GT(most_collided, 0u) << "the 4-bit table keys collided nowhere";
  d.close(*store);
  durable->reset();
  expect_recovered(dir_, model, "after close (its final snapshot)");
}

// Items with flags and expiry (issue 27) through the log, fuzzy snapshots and
// crash copies, the clock stepping: a recovered store holds every live item
// with its value, flags, absolute expiry and CAS version exactly as the
// serving store does, drops what expired (an item put expired at once over
// a live one included: its key ends absent), and gives later writes higher
// versions than every one it brought back.
TEST_P(ByteKeyDurability, ItemFieldsAndVersionsComeBack) {
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed_);
  std::mt19937_64 rng(seed_);
  auto store = make_store();
  ASSERT_NE(store, nullptr);
  auto durable = StoreDurability::open(config_of(dir_), *store, nullptr, nullptr);
  ASSERT_TRUE(durable.ok()) << durable.status();
  StoreDurability& d = **durable;
  struct Item {
    std::string value;
    uint32_t flags = 0, exptime = 0;  // exptime absolute
  };
  std::map<std::string, Item> items;
  const auto live_model = [&] {
    NamedModel m;
    for (const auto& [key, it] : items) {
      if (!byte_key::is_expired(it.exptime, clock_->load())) {
        m[bytes_name(key)] = item_text(it.value, byte_key::ItemMeta{it.flags, it.exptime, 0}, false);
      }
    }
    return m;
  };
  int copies = 0, expired_seen = 0;
  for (int batch = 0; batch < 250; ++batch) {
    if (rng() % 4 == 0) clock_->fetch_add(static_cast<uint32_t>(rng() % 3));
    std::vector<std::unique_ptr<OwnedCall>> puts;
    for (int c = 1 + static_cast<int>(rng() % 3); c > 0; --c) {
      std::vector<std::string> keys, values;
      for (int i = 1 + static_cast<int>(rng() % 12); i > 0; --i) {
        keys.push_back(byte_key(rng));
        values.push_back(absl::StrCat(batch, ":", std::string(rng() % 60, 'v')));
      }
      puts.push_back(make_byte_put(keys, values, GetParam().hash_bits));
      PutOp& op = std::get<PutOp>(puts.back()->call.op);
      op.flags = rng() % 2 == 0 ? 0 : static_cast<uint32_t>(rng());
      const int64_t choices[] = {0, 0, 1, 2, 5, -1, int64_t{clock_->load()} + 1000};
      op.exptime = choices[rng() % 7];
      const uint32_t at = byte_key::absolute_exptime(op.exptime, clock_->load());
      for (size_t i = 0; i < keys.size(); ++i) items[keys[i]] = Item{values[i], op.flags, at};
    }
    std::vector<Call*> run;
    for (auto& c : puts) run.push_back(&c->call);
    std::vector<absl::Status> statuses;
    store->apply_puts(run, &statuses);
    for (const absl::Status& s : statuses) ASSERT_TRUE(s.ok()) << s;
    d.add_puts(run, statuses);
    if (rng() % 4 == 0) {
      std::vector<std::string> keys;
      for (int i = 1 + static_cast<int>(rng() % 8); i > 0; --i) {
        keys.push_back(byte_key(rng));
        items.erase(keys.back());
      }
      auto del = make_byte_del(keys, GetParam().hash_bits);
      Call* dels[] = {&del->call};
      store->apply_deletes(dels, &statuses);
      ASSERT_TRUE(statuses[0].ok());
      d.add_deletes(dels, statuses);
    }
    ASSERT_TRUE(d.commit().ok());
    d.snapshot_step(*store);
    const NamedModel model = live_model();
    if (batch % 25 == 24 || (d.exporting() && rng() % 20 == 0)) {
      while (!d.exporting() && d.status().state.snapshot_running) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      const std::string copy = dir_ + "-copy";
      fs::remove_all(copy);
      fs::copy(dir_, copy);
      SCOPED_TRACE(absl::StrCat("a copy after batch ", batch));
      auto recovered = make_store();
      ASSERT_NE(recovered, nullptr);
      auto rd = StoreDurability::open(config_of(copy), *recovered, nullptr, nullptr);
      ASSERT_TRUE(rd.ok()) << rd.status();
      ASSERT_EQ(exported_items(*recovered, false), model);
      ASSERT_EQ(exported_items(*recovered, true), exported_items(*store, true)) << "the same CAS versions";
      expired_seen += static_cast<int>(items.size() - model.size());
      rd->reset();
      fs::remove_all(copy);
      ++copies;
    }
  }
  EXPECT_GE(copies, 10);
  EXPECT_GT(expired_seen, 0) << "some items had expired at a copy";
  d.close(*store);
  durable->reset();
  auto recovered = make_store();
  ASSERT_NE(recovered, nullptr);
  auto rd = StoreDurability::open(config_of(dir_), *recovered, nullptr, nullptr);
  ASSERT_TRUE(rd.ok()) << rd.status();
  ASSERT_EQ(exported_items(*recovered, true), exported_items(*store, true)) << "after close (its final snapshot)";
  // A write after recovery takes a version above every one brought back.
  uint64_t highest = 0;
  for_each_exported(*recovered, [&](const durability::Pairs& p) {
    for (const byte_key::ItemMeta& m : p.metas) highest = std::max(highest, m.cas);
  });
  ASSERT_GT(highest, 0u);
  auto put = make_byte_put({"written after recovery"}, {"v"}, GetParam().hash_bits);
  Call* after[] = {&put->call};
  std::vector<absl::Status> statuses;
  recovered->apply_puts(after, &statuses);
  ASSERT_TRUE(statuses[0].ok()) << statuses[0];
  EXPECT_GT(std::get<PutOp>(put->call.op).first_cas, highest);
}

// A snapshot of more items than one export chunk holds (StoreExport::kChunkKeys):
// every item comes back with its own flags, expiry and version, whichever
// chunk carried it (a chunk's fields once stayed behind into the next).
TEST_P(ByteKeyDurability, ItemFieldsOfManyChunksComeBack) {
  auto store = make_store();
  ASSERT_NE(store, nullptr);
  {
    auto durable = StoreDurability::open(config_of(dir_), *store, nullptr, nullptr);
    ASSERT_TRUE(durable.ok()) << durable.status();
    std::vector<std::unique_ptr<OwnedCall>> puts;
    for (int i = 0; i < 3 * static_cast<int>(StoreExport::kChunkKeys); ++i) {
      puts.push_back(make_byte_put({absl::StrCat("chunked:", i)}, {absl::StrCat(i)}, GetParam().hash_bits));
      std::get<PutOp>(puts.back()->call.op).flags = static_cast<uint32_t>(i);
      std::get<PutOp>(puts.back()->call.op).exptime = i % 2 == 0 ? 0 : int64_t{clock_->load()} + 100000 + i;
    }
    std::vector<Call*> run;
    for (auto& c : puts) run.push_back(&c->call);
    std::vector<absl::Status> statuses;
    store->apply_puts(run, &statuses);
    for (const absl::Status& s : statuses) ASSERT_TRUE(s.ok()) << s;
    (*durable)->add_puts(run, statuses);
    ASSERT_TRUE((*durable)->commit().ok());
    (*durable)->close(*store);  // the final snapshot: every item, through several chunks
  }
  auto recovered = make_store();
  ASSERT_NE(recovered, nullptr);
  auto rd = StoreDurability::open(config_of(dir_), *recovered, nullptr, nullptr);
  ASSERT_TRUE(rd.ok()) << rd.status();
  const NamedModel items = exported_items(*recovered, true);
  ASSERT_EQ(items.size(), 3 * StoreExport::kChunkKeys);
  EXPECT_EQ(items, exported_items(*store, true));
  for (const auto& [name, text] : items) {
    const std::string i = name.substr(std::string("b:chunked:").size());
    ASSERT_EQ(text.substr(0, i.size() + 1 + i.size() + 1), absl::StrCat(i, "|", i, "|")) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, ByteKeyDurability,
                         ::testing::Values(Param{engine::Backend::kCpu, 64}, Param{engine::Backend::kCpu, 4},
                                           Param{engine::Backend::kCuda, 64}, Param{engine::Backend::kCuda, 4}),
                         param_name);

}  // namespace
}  // namespace gphkv::server
