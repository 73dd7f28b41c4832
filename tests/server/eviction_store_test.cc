// Eviction at the --memory cap (StoreOptions::evict, issue 27) against a
// model of CLOCK: random puts (far more bytes than the cap), gets and
// deletes of uint64 keys or byte keys, on both backends (on CUDA the gets
// take the pipeline, whose kernels set the access bits). The store tells the
// test each step of its hand (StoreOptions::on_clock_step); the model keeps,
// per stored key, whether it was written or read since the hand last passed
// it, and every verdict must be CLOCK's own: an item used since is kept and
// its bit cleared, one not used since is evicted, a slot of the put being
// admitted or of a key no longer stored is passed over. Every put fits
// (none is refused), the store holds exactly the model's keys with their
// values, the evictions counted are the model's, and a put larger than the
// whole cap is refused without evicting anything.
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/byte_key.h"
#include "server/store.h"
#include "tests/server/backend_store_test.h"
#include "tests/server/byte_key_calls.h"
#include "tests/server/owned_calls.h"

namespace gphkv::server {
namespace {

struct EvictionParam {
  engine::Backend backend;
  bool byte_keys;
};

std::string eviction_param_name(const ::testing::TestParamInfo<EvictionParam>& info) {
  return std::string(info.param.backend == engine::Backend::kCuda ? "Cuda" : "Cpu") +
         (info.param.byte_keys ? "ByteKeys" : "Uint64Keys");
}

class EvictionStore : public BackendStoreTest<EvictionParam> {
 protected:
  static constexpr uint64_t kCap = 4 << 20;
  static constexpr uint32_t kMaxValue = 2048;

  void configure(StoreOptions& o) override {
    o.memory_limit_bytes = kCap;
    o.max_value_bytes = kMaxValue + byte_key::kMaxRecordHeaderBytes + byte_key::kDefaultMaxKeyBytes;
    o.evict = true;
    o.record_evictions = true;  // as with a data directory: each victim's key kept for the log
    o.on_clock_step = [this](const ClockStep& step) { check_step(step); };
  }

  struct ModelKey {
    std::string value;
    bool used = true;  // written or read since the hand last passed
  };

  std::string key_name(int k) const { return absl::StrCat("evict:", k); }
  uint64_t table_key(int k) const {
    return GetParam().byte_keys ? byte_key::table_key(key_name(k)) : static_cast<uint64_t>(k) * 0x9e3779b97f4a7c15ull;
  }

  // CLOCK's rule for each slot the hand passed, then the model follows it.
  void check_step(const ClockStep& step) {
    ASSERT_EQ(step.table_keys.size(), step.verdicts.size());
    ASSERT_EQ(step.table_keys.size(), step.places.size());
    // The hand walks the values last place first (Store::order_by_place):
    // between two stored items it passed one after the other, the place
    // falls, unless a compaction moved one since the pass began.
    bool any = false;
    uint64_t prev = 0;
    for (size_t i = 0; i < step.places.size(); ++i) {
      if (step.verdicts[i] == ClockVerdict::kPassedOver) continue;
      if (any) (step.places[i] <= prev ? in_order_ : out_of_order_) += 1;
      any = true;
      prev = step.places[i];
    }
    for (size_t i = 0; i < step.table_keys.size(); ++i) {
      const uint64_t tk = step.table_keys[i];
      auto at = by_table_key_.find(tk);
      const bool stored = at != by_table_key_.end() && model_.count(at->second) != 0;
      const bool held = held_.count(tk) != 0;
      SCOPED_TRACE(absl::StrCat("table key ", tk, ", seed ", seed_));
      if (!stored || held) {
        EXPECT_EQ(step.verdicts[i], ClockVerdict::kPassedOver);
        continue;
      }
      ModelKey& m = model_[at->second];
      if (m.used) {
        EXPECT_EQ(step.verdicts[i], ClockVerdict::kSecondChance) << "used since the hand passed: kept";
        m.used = false;
      } else {
        EXPECT_EQ(step.verdicts[i], ClockVerdict::kEvicted) << "not used since the hand passed: evicted";
        victims_.push_back(GetParam().byte_keys ? key_name(at->second) : absl::StrCat(tk));
        model_.erase(at->second);
        ++evicted_;
      }
    }
  }

  // What the put evicted, as the log gets it (Store::take_evictions): the
  // victims the hand's steps named, byte keys by their bytes.
  void expect_logged_evictions() {
    const Store::EvictedKeys taken = store_->take_evictions();
    std::vector<std::string> logged;
    for (uint64_t id : taken.ids) logged.push_back(absl::StrCat(id));
    logged.insert(logged.end(), taken.byte_keys.begin(), taken.byte_keys.end());
    if (GetParam().byte_keys) {
      EXPECT_TRUE(taken.ids.empty()) << "seed " << seed_;
    } else {
      EXPECT_TRUE(taken.byte_keys.empty()) << "seed " << seed_;
    }
    std::sort(logged.begin(), logged.end());
    std::sort(victims_.begin(), victims_.end());
    EXPECT_EQ(logged, victims_) << "seed " << seed_;
    victims_.clear();
  }

  std::unique_ptr<OwnedCall> put_call(const std::vector<int>& ks, const std::vector<std::string>& values) {
    if (!GetParam().byte_keys) {
      std::vector<uint64_t> keys;
      for (int k : ks) keys.push_back(table_key(k));
      return make_put(keys, values);
    }
    std::vector<std::string> keys;
    for (int k : ks) keys.push_back(key_name(k));
    return make_byte_put(keys, values, 64);
  }

  std::unique_ptr<OwnedCall> get_call(const std::vector<int>& ks) {
    if (!GetParam().byte_keys) {
      std::vector<uint64_t> keys;
      for (int k : ks) keys.push_back(table_key(k));
      return make_get(keys);
    }
    std::vector<std::string> keys;
    for (int k : ks) keys.push_back(key_name(k));
    return make_byte_get(keys, 64);
  }

  absl::Status put(const std::vector<int>& ks, const std::vector<std::string>& values) {
    auto c = put_call(ks, values);
    held_.clear();
    for (int k : ks) held_.insert(table_key(k));
    std::vector<absl::Status> st;
    store_->apply_puts({&c->call}, &st);
    held_.clear();
    expect_logged_evictions();
    if (st[0].ok()) {
      for (size_t i = 0; i < ks.size(); ++i) {
        model_[ks[i]] = ModelKey{values[i], true};
        by_table_key_[table_key(ks[i])] = ks[i];
      }
    }
    return st[0];
  }

  // Gets as the executor runs them (the CUDA pipeline while the store can);
  // checks each against the model, whose hits count as used.
  void get(const std::vector<int>& ks) {
    auto g = get_call(ks);
    std::vector<absl::Status> st;
    if (store_->can_pipeline_gets()) {
      ASSERT_TRUE(store_->submit_gets({&g->call}).ok());
      GetStageTimes times;
      auto answers = store_->finish_gets(&times);
      answers->fill(0, answers->calls().size());
      st = answers->statuses();
    } else {
      store_->apply_gets({&g->call}, &st);
    }
    ASSERT_TRUE(st[0].ok()) << st[0];
    size_t off = 0;
    for (size_t i = 0; i < ks.size(); ++i) {
      auto it = model_.find(ks[i]);
      ASSERT_EQ(g->get_out.found(static_cast<int>(i)), it != model_.end()) << key_name(ks[i]) << ", seed " << seed_;
      if (it == model_.end()) continue;
      const uint32_t n = g->get_out.value_lengths(static_cast<int>(i));
      ASSERT_EQ(g->get_out.values().substr(off, n), it->second.value) << key_name(ks[i]);
      off += n;
      it->second.used = true;
    }
  }

  void del(int k) {
    std::unique_ptr<OwnedCall> c;
    if (GetParam().byte_keys) {
      c = make_byte_del({key_name(k)}, 64);
    } else {
      c = make_del({table_key(k)});
    }
    std::vector<absl::Status> st;
    store_->apply_deletes({&c->call}, &st);
    ASSERT_TRUE(st[0].ok()) << st[0];
    EXPECT_EQ(c->del_out.deleted(0), model_.erase(k) == 1) << key_name(k);
  }

  std::string value_for(int k, size_t len) {
    std::string v = absl::StrCat(k, ":", rng_(), ":");
    v.resize(len, static_cast<char>('a' + k % 26));
    return v;
  }

  std::map<int, ModelKey> model_;
  std::unordered_map<uint64_t, int> by_table_key_;
  absl::flat_hash_set<uint64_t> held_;
  uint64_t evicted_ = 0;
  uint64_t in_order_ = 0, out_of_order_ = 0;  // consecutive items the hand passed, by their places
  std::vector<std::string> victims_;          // the hand's victims since the last put, as the log names them
};

TEST_P(EvictionStore, EveryPutFitsAndTheHandFollowsClock) {
  // About 30 MB of puts into a 4 MiB cap, over 40,000 keys: a hot tenth
  // read often, the rest now and then.
  constexpr int kKeys = 40000;
  uint64_t bytes_put = 0;
  for (int op = 0; op < 30000 && !HasFailure(); ++op) {
    const int hot = static_cast<int>(rng_() % (kKeys / 10));
    const int any = static_cast<int>(rng_() % kKeys);
    switch (rng_() % 10) {
      case 0:
      case 1:
      case 2:
      case 3: {
        // One to four keys in one call, values of 16 to 2048 bytes.
        std::vector<int> ks;
        std::vector<std::string> vs;
        const int n = 1 + static_cast<int>(rng_() % 4);
        for (int i = 0; i < n; ++i) {
          const int k = rng_() % 3 == 0 ? hot : static_cast<int>(rng_() % kKeys);
          if (std::find(ks.begin(), ks.end(), k) != ks.end()) continue;
          ks.push_back(k);
          vs.push_back(value_for(k, 16 + rng_() % (kMaxValue - 15)));
          bytes_put += vs.back().size();
        }
        const absl::Status s = put(ks, vs);
        ASSERT_TRUE(s.ok()) << "a put at the cap evicts instead of failing: " << s << ", seed " << seed_;
        break;
      }
      case 4: del(any); break;
      default: get({hot, any, static_cast<int>(rng_() % (kKeys / 10))}); break;
    }
  }
  EXPECT_GT(bytes_put, 6 * kCap) << "the puts went far past the cap";
  EXPECT_GT(evicted_, 1000u) << "seed " << seed_;
  EXPECT_EQ(store_->counters().evictions, evicted_);
  // Walked in the table's slot order, about half the pairs would be in order.
  EXPECT_GT(in_order_, 9 * out_of_order_) << "the hand walks the values by place, last first; seed " << seed_;
  EXPECT_EQ(store_->keys(), model_.size());
  EXPECT_LE(store_->table_bytes() + store_->value_heap_bytes(), kCap);
  // Every key read back: exactly the model's, with their values.
  std::vector<int> all;
  for (int k = 0; k < kKeys; ++k) all.push_back(k);
  for (size_t at = 0; at < all.size(); at += 1000) {
    get(std::vector<int>(all.begin() + static_cast<long>(at), all.begin() + static_cast<long>(at + 1000)));
  }
}

TEST_P(EvictionStore, APutLargerThanTheCapEvictsNothing) {
  std::vector<int> ks;
  std::vector<std::string> vs;
  for (int k = 0; k < 1000; ++k) {
    ks.push_back(k);
    vs.push_back(value_for(k, 1000));
  }
  ASSERT_TRUE(put(ks, vs).ok());
  // 3000 values of 2 KiB in one call: 6 MB, past the 4 MiB cap whole.
  std::vector<int> big;
  std::vector<std::string> bv;
  for (int k = 1000; k < 4000; ++k) {
    big.push_back(k);
    bv.push_back(value_for(k, kMaxValue));
  }
  const absl::Status s = put(big, bv);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(store_->counters().evictions, 0u) << "nothing evicted for a put that can never fit";
  EXPECT_EQ(store_->keys(), 1000u);
  get(ks);
}

INSTANTIATE_TEST_SUITE_P(Backends, EvictionStore,
                         ::testing::Values(EvictionParam{engine::Backend::kCpu, false},
                                           EvictionParam{engine::Backend::kCpu, true},
                                           EvictionParam{engine::Backend::kCuda, false},
                                           EvictionParam{engine::Backend::kCuda, true}),
                         eviction_param_name);

}  // namespace
}  // namespace gphkv::server
