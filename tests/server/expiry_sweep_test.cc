// The expiry sweep (Store::sweep_step, issue 27) against a model: a pass
// deletes exactly the byte-key items that expired or that a flush_all hid,
// leaves every other item (and every uint64 key) as it was, gives their
// memory back, starts again only after its interval, never runs with an
// interval of 0, and keeps an item written again after the pass listed its
// slot. On both backends, with 64- and 4-bit table keys (the collided keys
// are swept at a pass's start).
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/store.h"
#include "tests/server/byte_key_calls.h"
#include "tests/server/item_store_test.h"
#include "tests/server/owned_calls.h"

namespace gphkv::server {
namespace {

class ExpirySweep : public ItemStoreTest {
 protected:
  std::string key(int k) const { return absl::StrCat("sweep:", k); }

  void put(const std::vector<int>& ks, int64_t exptime, PutMode mode = PutMode::kSet) {
    std::vector<std::string> keys, values;
    for (int k : ks) {
      keys.push_back(key(k));
      values.push_back(absl::StrCat("value of ", k));
      if (mode == PutMode::kSet) model_[k] = ModelItem{values.back(), 0, model_exptime(exptime, now_)};
    }
    auto c = make_byte_put(keys, values, GetParam().hash_bits);
    std::get<PutOp>(c->call.op).exptime = exptime;
    std::get<PutOp>(c->call.op).mode = mode;
    std::vector<absl::Status> st;
    store_->apply_puts({&c->call}, &st);
    ASSERT_TRUE(st[0].ok()) << st[0];
  }

  // Runs sweep steps until the pass ends; how many steps it took.
  int sweep_pass() {
    int steps = 0;
    EXPECT_TRUE(store_->sweep_wanted());
    do {
      const absl::Status s = store_->sweep_step();
      EXPECT_TRUE(s.ok()) << s;
      ++steps;
    } while (store_->sweeping() && steps < 1000);
    return steps;
  }

  // The model's items that a get finds now.
  size_t live_items() const {
    size_t n = 0;
    for (const auto& [k, m] : model_) n += !m.flushed && !(m.exptime != 0 && m.exptime <= now_);
    return n;
  }

  // Every model key read back: the live ones with their values, the others missing.
  void expect_gets() {
    std::vector<std::string> keys;
    std::vector<const ModelItem*> want;
    for (const auto& [k, m] : model_) {
      keys.push_back(key(k));
      want.push_back(!m.flushed && !(m.exptime != 0 && m.exptime <= now_) ? &m : nullptr);
    }
    auto g = make_byte_get(keys, GetParam().hash_bits);
    std::vector<absl::Status> st;
    store_->apply_gets({&g->call}, &st);
    ASSERT_TRUE(st[0].ok()) << st[0];
    size_t off = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(g->get_out.found(static_cast<int>(i)), want[i] != nullptr) << keys[i] << ", seed " << seed_;
      if (!want[i]) continue;
      const uint32_t n = g->get_out.value_lengths(static_cast<int>(i));
      EXPECT_EQ(g->get_out.values().substr(off, n), want[i]->value) << keys[i];
      off += n;
    }
  }
};

TEST_P(ExpirySweep, DeletesWhatExpiredOrWasFlushedAndNothingElse) {
  // Three kinds of item in random order: never expiring, expiring in 1-3 s,
  // expiring in an hour; plus uint64 keys, which never expire.
  constexpr int kItems = 9000;  // more than one step's slots
  std::vector<int> never, soon, later;
  for (int k = 0; k < kItems; ++k) {
    switch (rng_() % 3) {
      case 0: never.push_back(k); break;
      case 1: soon.push_back(k); break;
      default: later.push_back(k); break;
    }
  }
  put(never, 0);
  put(soon, 1 + static_cast<int64_t>(rng_() % 3));
  put(later, 3600);
  auto ids = make_put({1, 2, 3}, {"a", "b", "c"});
  std::vector<absl::Status> st;
  store_->apply_puts({&ids->call}, &st);
  ASSERT_TRUE(st[0].ok());
  const uint64_t used_before = store_->value_bytes_used();

  // Nothing has expired yet: a pass deletes nothing.
  sweep_pass();
  EXPECT_EQ(store_->counters().items_swept, 0u);
  EXPECT_EQ(store_->keys(), kItems + 3u);
  EXPECT_FALSE(store_->sweep_wanted()) << "the next pass waits for its interval";

  // The soon ones expire; the pass after the interval deletes them alone.
  now_ += 10;
  // One expired item is written again (no expiry) between the listing of
  // the slots and the step that reads it: it must stay.
  ASSERT_TRUE(store_->sweep_wanted());
  ASSERT_TRUE(store_->sweep_step().ok());  // lists the slots, reads the first chunk
  const int rewritten = soon.back();
  put({rewritten}, 0);
  while (store_->sweeping()) ASSERT_TRUE(store_->sweep_step().ok());
  EXPECT_EQ(store_->keys(), live_items() + 3) << "seed " << seed_;
  // The rewritten key's expired item was swept if its slot came in the
  // first step, before the rewrite, and overwritten otherwise.
  EXPECT_GE(store_->counters().items_swept, soon.size() - 1);
  EXPECT_LE(store_->counters().items_swept, soon.size());
  EXPECT_LT(store_->value_bytes_used(), used_before) << "the swept items' memory came back";
  expect_gets();

  // A flush hides every byte-key item written before it; the next pass deletes them.
  const uint64_t swept_before = store_->counters().items_swept;
  const uint64_t byte_items = store_->keys() - 3;
  put({}, 0, PutMode::kFlush);
  for (auto& [k, m] : model_) m.flushed = true;
  now_ += 10;
  sweep_pass();
  EXPECT_EQ(store_->keys(), 3u) << "only the uint64 keys stay; seed " << seed_;
  EXPECT_EQ(store_->counters().items_swept - swept_before, byte_items) << "each item deleted once";
  expect_gets();
  auto back = make_get({1, 2, 3});
  store_->apply_gets({&back->call}, &st);
  ASSERT_TRUE(st[0].ok());
  EXPECT_EQ(back->get_out.values(), "abc");
}

TEST_P(ExpirySweep, AnIntervalOfZeroNeverSweeps) {
  StoreOptions o;
  o.backend = GetParam().backend;
  o.initial_capacity = 64;
  o.memory_limit_bytes = 64 << 20;
  o.table.cpu_threads = 2;
  o.unix_clock = [this] { return now_; };
  o.sweep_interval_seconds = 0;
  auto s = Store::create(o);
  ASSERT_TRUE(s.ok()) << s.status();
  store_ = std::move(*s);
  put({1, 2, 3}, 1);
  now_ += 100;
  EXPECT_FALSE(store_->sweep_wanted());
  EXPECT_EQ(store_->keys(), 3u) << "expired items keep their slots until written or deleted";
  expect_gets();
}

INSTANTIATE_TEST_SUITE_P(Backends, ExpirySweep,
                         ::testing::Values(ByteKeyBackend{engine::Backend::kCpu, 64},
                                           ByteKeyBackend{engine::Backend::kCpu, 4},
                                           ByteKeyBackend{engine::Backend::kCuda, 64},
                                           ByteKeyBackend{engine::Backend::kCuda, 4}),
                         byte_key_backend_name);

}  // namespace
}  // namespace gphkv::server
