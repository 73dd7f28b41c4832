// The store with byte keys (issue 26) against a model, on both backends:
// random runs of puts, gets and deletes of byte keys (random, binary with
// NUL, 250 bytes long) mixed with uint64 keys, duplicates within a call,
// through table growth; with full 64-bit table keys and with table keys of
// 4 bits, so that byte keys collide with each other and with the uint64 keys
// 0..15 on every few keys. Each answer is checked key by key.
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gphkv/engine/table.h"
#include "gtest/gtest.h"
#include "server/byte_key.h"
#include "server/store.h"
#include "tests/engine/table_checks.h"
#include "tests/server/byte_key_backends.h"
#include "tests/server/byte_key_calls.h"
#include "tests/server/owned_calls.h"

namespace gphkv::server {
namespace {

using Param = ByteKeyBackend;

// hash_bits: the table keys' bits, the calls' (byte_key_calls.h) and the
// store's own (the CUDA get path hashes byte keys on the device).
std::unique_ptr<Store> make_store(engine::Backend backend, uint64_t capacity = 64, uint64_t small_gets_keys = 0,
                                  int hash_bits = 64) {
  StoreOptions o;
  o.byte_key_hash_bits = hash_bits;
  o.gpu_small_gets_keys = small_gets_keys;
  o.backend = backend;
  o.initial_capacity = capacity;
  o.memory_limit_bytes = 256 << 20;
  o.max_value_bytes = 4096 + byte_key::kRecordHeaderBytes + byte_key::kDefaultMaxKeyBytes;
  o.table.cpu_threads = 2;
  auto s = Store::create(o);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

// A run of gets the way the executor runs it: on the CUDA pipeline while the
// store can (its kernels compare the records), else on the host.
std::vector<absl::Status> apply_gets(Store& store, const std::vector<Call*>& run) {
  std::vector<absl::Status> statuses;
  if (!store.can_pipeline_gets()) {
    store.apply_gets(run, &statuses);
    return statuses;
  }
  if (absl::Status s = store.submit_gets(run); !s.ok()) return std::vector<absl::Status>(run.size(), s);
  GetStageTimes times;
  auto answers = store.finish_gets(&times);
  answers->fill(0, answers->calls().size());
  return answers->statuses();
}

// A key of either kind, as the model names it.
struct Key {
  bool bytes = false;
  uint64_t u64 = 0;
  std::string b;
  std::string name() const { return bytes ? "b:" + b : "u:" + std::to_string(u64); }
};

class ByteKeyStore : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    if (GetParam().backend == engine::Backend::kCuda && engine::cuda_device_count() == 0) {
      GTEST_SKIP() << "no CUDA device visible";
    }
    seed_ = engine::testing::test_seed();
    rng_.seed(seed_);
    store_ = make_store(GetParam().backend, 64, GetParam().small_gets_keys, GetParam().hash_bits);
    ASSERT_NE(store_, nullptr);
    // A pool of keys: random printable ones, binary ones with NUL, the longest (250 bytes), "42".
    for (int i = 0; i < 300; ++i) {
      std::string k(1 + rng_() % 40, '\0');
      const bool binary = i % 3 == 0;
      for (char& c : k) c = binary ? static_cast<char>(rng_()) : static_cast<char>('a' + rng_() % 26);
      byte_pool_.push_back(k);
    }
    byte_pool_.push_back(std::string(byte_key::kDefaultMaxKeyBytes, 'L'));
    byte_pool_.push_back(std::string(1, '\0'));
    byte_pool_.push_back("42");
  }

  Key random_key() {
    Key k;
    if (rng_() % 3 == 0) {
      // Small ones meet the 4-bit table keys of byte keys; 42 meets "42" only in name.
      k.u64 = rng_() % 4 == 0 ? 42 : rng_() % 64;
    } else {
      k.bytes = true;
      k.b = byte_pool_[rng_() % byte_pool_.size()];
    }
    return k;
  }
  std::string random_value() {
    std::string v(rng_() % 8 == 0 ? rng_() % 4097 : rng_() % 40, '\0');
    for (char& c : v) c = static_cast<char>(rng_());
    return v;
  }
  // A call's keys, all of one kind (a request carries one kind).
  std::vector<Key> random_keys() {
    const bool bytes = rng_() % 3 != 0;
    std::vector<Key> keys(1 + rng_() % 12);
    for (Key& k : keys) {
      do k = random_key();
      while (k.bytes != bytes);
    }
    return keys;
  }

  static std::vector<uint64_t> u64s(const std::vector<Key>& keys) {
    std::vector<uint64_t> out;
    for (const Key& k : keys) out.push_back(k.u64);
    return out;
  }
  static std::vector<std::string> bytes(const std::vector<Key>& keys) {
    std::vector<std::string> out;
    for (const Key& k : keys) out.push_back(k.b);
    return out;
  }

  void run_puts(int calls) {
    std::vector<std::unique_ptr<OwnedCall>> owned;
    std::vector<std::vector<Key>> keys;
    std::vector<std::vector<std::string>> values;
    std::vector<Call*> run;
    for (int c = 0; c < calls; ++c) {
      keys.push_back(random_keys());
      values.emplace_back();
      for (size_t i = 0; i < keys.back().size(); ++i) values.back().push_back(random_value());
      owned.push_back(keys.back()[0].bytes ? make_byte_put(bytes(keys.back()), values.back(), GetParam().hash_bits)
                                           : make_put(u64s(keys.back()), values.back()));
      run.push_back(&owned.back()->call);
    }
    std::vector<absl::Status> statuses;
    store_->apply_puts(run, &statuses);
    for (int c = 0; c < calls; ++c) {
      ASSERT_TRUE(statuses[c].ok()) << statuses[c];
      const auto& created = owned[c]->put_out.created();
      ASSERT_EQ(created.size(), static_cast<int>(keys[c].size()));
      for (size_t i = 0; i < keys[c].size(); ++i) {
        EXPECT_EQ(created[static_cast<int>(i)], model_.count(keys[c][i].name()) == 0) << keys[c][i].name();
      }
      for (size_t i = 0; i < keys[c].size(); ++i) model_[keys[c][i].name()] = values[c][i];
    }
  }

  void run_deletes(int calls) {
    std::vector<std::unique_ptr<OwnedCall>> owned;
    std::vector<std::vector<Key>> keys;
    std::vector<Call*> run;
    for (int c = 0; c < calls; ++c) {
      keys.push_back(random_keys());
      owned.push_back(keys.back()[0].bytes ? make_byte_del(bytes(keys.back()), GetParam().hash_bits)
                                           : make_del(u64s(keys.back())));
      run.push_back(&owned.back()->call);
    }
    std::vector<absl::Status> statuses;
    store_->apply_deletes(run, &statuses);
    for (int c = 0; c < calls; ++c) {
      ASSERT_TRUE(statuses[c].ok()) << statuses[c];
      const auto& deleted = owned[c]->del_out.deleted();
      ASSERT_EQ(deleted.size(), static_cast<int>(keys[c].size()));
      for (size_t i = 0; i < keys[c].size(); ++i) {
        EXPECT_EQ(deleted[static_cast<int>(i)], model_.erase(keys[c][i].name()) == 1) << keys[c][i].name();
      }
    }
  }

  void run_gets(int calls) {
    std::vector<std::unique_ptr<OwnedCall>> owned;
    std::vector<std::vector<Key>> keys;
    std::vector<bool> exists_only;
    std::vector<Call*> run;
    for (int c = 0; c < calls; ++c) {
      keys.push_back(random_keys());
      exists_only.push_back(rng_() % 5 == 0);
      owned.push_back(keys.back()[0].bytes ? make_byte_get(bytes(keys.back()), GetParam().hash_bits, exists_only.back())
                                           : make_get(u64s(keys.back()), exists_only.back()));
      run.push_back(&owned.back()->call);
    }
    std::vector<absl::Status> statuses = apply_gets(*store_, run);
    for (int c = 0; c < calls; ++c) {
      ASSERT_TRUE(statuses[c].ok()) << statuses[c];
      const v1::GetResponse& r = owned[c]->get_out;
      ASSERT_EQ(r.found_size(), static_cast<int>(keys[c].size()));
      size_t off = 0;
      for (size_t i = 0; i < keys[c].size(); ++i) {
        const int k = static_cast<int>(i);
        auto it = model_.find(keys[c][i].name());
        ASSERT_EQ(r.found(k), it != model_.end()) << keys[c][i].name();
        if (it == model_.end() || exists_only[c]) continue;
        ASSERT_EQ(r.value_lengths(k), it->second.size()) << keys[c][i].name();
        EXPECT_EQ(r.values().substr(off, r.value_lengths(k)), it->second) << keys[c][i].name();
        off += r.value_lengths(k);
      }
      EXPECT_EQ(off, r.values().size());
    }
  }

  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  std::unique_ptr<Store> store_;
  std::vector<std::string> byte_pool_;
  std::map<std::string, std::string> model_;
};

TEST_P(ByteKeyStore, RandomRunsMatchAModel) {
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed_);
  for (int step = 0; step < 400 && !HasFatalFailure(); ++step) {
    const int calls = 1 + static_cast<int>(rng_() % 4);
    const int kind = static_cast<int>(rng_() % 5);
    SCOPED_TRACE(::testing::Message() << "step " << step << " kind " << kind << " calls " << calls);
    switch (kind) {
      case 0:
      case 1: run_puts(calls); break;
      case 2: run_deletes(calls); break;
      default: run_gets(calls); break;
    }
    ASSERT_EQ(store_->keys(), model_.size()) << "step " << step;
  }
  ASSERT_TRUE(store_->finish_rebuild().ok());
  run_gets(4);
  if (GetParam().hash_bits < 64) EXPECT_GT(store_->collided_keys(), 0u) << "the 4-bit table keys collided nowhere";
}

INSTANTIATE_TEST_SUITE_P(Backends, ByteKeyStore,
                         ::testing::Values(Param{engine::Backend::kCpu, 64}, Param{engine::Backend::kCpu, 4},
                                           Param{engine::Backend::kCuda, 64}, Param{engine::Backend::kCuda, 4},
                                           Param{engine::Backend::kCuda, 64, 256}, Param{engine::Backend::kCuda, 4, 8}),
                         byte_key_backend_name);

TEST(ByteKeyStoreAliasing, AUint64KeyEqualToAByteKeysTableKeyIsAnotherKey) {
  for (engine::Backend backend : {engine::Backend::kCpu, engine::Backend::kCuda}) {
    if (backend == engine::Backend::kCuda && engine::cuda_device_count() == 0) continue;
    SCOPED_TRACE(engine::backend_name(backend));
    auto store = make_store(backend);
    ASSERT_NE(store, nullptr);
    const uint64_t k = byte_key::table_key("user:42:profile");
    std::vector<absl::Status> st;
    auto put_bytes = make_byte_put({"user:42:profile"}, {"hello"});
    store->apply_puts({&put_bytes->call}, &st);
    ASSERT_TRUE(st[0].ok()) << st[0];
    // The uint64 key k meets the byte key's record: not its own, so a miss, on every get path.
    auto get_k = make_get({k});
    st = apply_gets(*store, {&get_k->call});
    ASSERT_TRUE(st[0].ok()) << st[0];
    ASSERT_EQ(get_k->get_out.found_size(), 1);
    EXPECT_FALSE(get_k->get_out.found(0));
    // Stored beside it, the uint64 key waits in CollidedKeys; both are found.
    auto put_k = make_put({k}, {"plain"});
    store->apply_puts({&put_k->call}, &st);
    ASSERT_TRUE(st[0].ok()) << st[0];
    EXPECT_TRUE(put_k->put_out.created(0));
    EXPECT_EQ(store->keys(), 2u);
    EXPECT_EQ(store->collided_keys(), 1u);
    EXPECT_FALSE(store->can_pipeline_gets()) << "gets take the host path while a key collided";
    auto get_both = make_get({k});
    store->apply_gets({&get_both->call}, &st);
    EXPECT_EQ(get_both->get_out.values(), "plain");
    auto get_bytes = make_byte_get({"user:42:profile"});
    store->apply_gets({&get_bytes->call}, &st);
    EXPECT_EQ(get_bytes->get_out.values(), "hello");
    // Deleting the byte key leaves the uint64 key, still found where it waits.
    auto del = make_byte_del({"user:42:profile"});
    store->apply_deletes({&del->call}, &st);
    EXPECT_TRUE(del->del_out.deleted(0));
    auto again = make_get({k});
    store->apply_gets({&again->call}, &st);
    EXPECT_EQ(again->get_out.values(), "plain");
    EXPECT_EQ(store->keys(), 1u);
  }
}

TEST(ByteKeyStoreAliasing, AByteKeyMeetingAnotherKeysRecordMissesOnEveryGetPath) {
  for (engine::Backend backend : {engine::Backend::kCpu, engine::Backend::kCuda}) {
    if (backend == engine::Backend::kCuda && engine::cuda_device_count() == 0) continue;
    SCOPED_TRACE(engine::backend_name(backend));
    auto store = make_store(backend, 64, 0, /*hash_bits=*/0);
    ASSERT_NE(store, nullptr);
    // Two keys with one table key (0 bits of hash): the second waits in CollidedKeys.
    std::vector<absl::Status> st;
    auto put = make_byte_put({"first", "second"}, {"1", "2"}, /*hash_bits=*/0);
    store->apply_puts({&put->call}, &st);
    ASSERT_TRUE(st[0].ok()) << st[0];
    EXPECT_EQ(store->collided_keys(), 1u);
    auto del = make_byte_del({"second"}, 0);
    store->apply_deletes({&del->call}, &st);
    EXPECT_TRUE(del->del_out.deleted(0));
    EXPECT_EQ(store->collided_keys(), 0u);
    // "second" now meets "first"'s record in the table (on the pipeline, on CUDA).
    auto get = make_byte_get({"second", "first", "second"}, 0);
    st = apply_gets(*store, {&get->call});
    ASSERT_TRUE(st[0].ok()) << st[0];
    ASSERT_EQ(get->get_out.found_size(), 3);
    EXPECT_FALSE(get->get_out.found(0));
    EXPECT_TRUE(get->get_out.found(1));
    EXPECT_FALSE(get->get_out.found(2));
    EXPECT_EQ(get->get_out.values(), "1");
  }
}

// The data directory's pair paths (recovery, snapshots) take a store that
// holds byte keys: the key list names the record's slot, read_pairs splits
// the record into its key and value, and uint64 pairs still go in beside.
TEST(ByteKeyStoreAliasing, TheDataDirectorysPairPathsCarryByteKeys) {
  auto store = make_store(engine::Backend::kCpu);
  std::vector<absl::Status> st;
  auto put = make_byte_put({"k", "42"}, {"v", "bytes"});
  store->apply_puts({&put->call}, &st);
  ASSERT_TRUE(st[0].ok());
  const std::vector<uint64_t> keys = {1, 42};
  const std::vector<std::string_view> values = {"one", "u64"};
  ASSERT_TRUE(store->put_pairs(keys, values).ok());
  std::vector<uint64_t> listed;
  ASSERT_TRUE(store->stored_keys(&listed).ok());
  EXPECT_EQ(listed.size(), 4u);
  durability::PairChunk ids, byte_pairs;
  ASSERT_TRUE(store->read_pairs(listed, &ids, &byte_pairs).ok());
  std::map<uint64_t, std::string> got_ids;
  std::map<std::string, std::string> got_bytes;
  std::vector<std::string_view> v, k;
  durability::Pairs p = ids.as_pairs(&v, &k);
  for (size_t i = 0; i < p.size(); ++i) got_ids[p.keys[i]] = std::string(p.values[i]);
  p = byte_pairs.as_pairs(&v, &k);
  for (size_t i = 0; i < p.size(); ++i) got_bytes[std::string(p.byte_keys[i])] = std::string(p.values[i]);
  EXPECT_EQ(got_ids, (std::map<uint64_t, std::string>{{1, "one"}, {42, "u64"}}));
  EXPECT_EQ(got_bytes, (std::map<std::string, std::string>{{"k", "v"}, {"42", "bytes"}}));
  const std::vector<std::string_view> gone = {"k"};
  ASSERT_TRUE(store->erase_byte_keys(gone).ok());
  ASSERT_TRUE(store->erase_keys(std::vector<uint64_t>{1}).ok());
  EXPECT_EQ(store->keys(), 2u);
  ASSERT_TRUE(store->clear().ok());
  EXPECT_EQ(store->keys(), 0u);
}

}  // namespace
}  // namespace gphkv::server
