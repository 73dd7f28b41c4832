// Byte keys' CAS versions, touch and flush_all (issue 27, the memcached
// port's cas, touch, gat, gats and flush_all), against a model, on both
// backends, with 64-bit table keys and with 4-bit ones (keys collide and
// live in CollidedKeys too). The store's clock is the test's.
//
// The model holds each item's value, flags, absolute expiry and CAS. It
// learns a write's CAS from the store (a get right after it) and holds the
// store to the rules: every write gives a CAS above every earlier one (so
// unique and never 0); a refused write, a touch and a read leave it as it
// was; cas stores only with the item's own CAS (EXISTS otherwise, NOT_FOUND
// when absent or expired); touch sets the expiry and keeps value, flags and
// CAS; gat returns the item as found and touches it; flush_all makes every
// item written before it a miss, at once or once the clock reaches its
// delay (a later flush replaces a pending one). Flushed and expired items
// keep their slots until overwritten or deleted, as keys() shows.
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gphkv/engine/table.h"
#include "gtest/gtest.h"
#include "server/byte_key.h"
#include "server/conditional_put.h"
#include "server/store.h"
#include "tests/engine/table_checks.h"
#include "tests/server/byte_key_backends.h"
#include "tests/server/byte_key_calls.h"
#include "tests/server/item_model.h"
#include "tests/server/item_store_test.h"
#include "tests/server/owned_calls.h"

namespace gphkv::server {
namespace {

using Param = ByteKeyBackend;

class ItemVersionsStore : public ItemStoreTest {
 protected:
  std::string key(int k) const { return "v:" + std::to_string(k); }
  // A delayed flush takes effect at the first operation at or after its time.
  void tick_flush() {
    if (flush_at_ != 0 && now_ >= flush_at_) {
      for (auto& [k, m] : model_) m.flushed = true;
      flush_at_ = 0;
    }
  }
  const ModelItem* live(int k) const {
    auto it = model_.find(k);
    if (it == model_.end() || it->second.flushed) return nullptr;
    const ModelItem& m = it->second;
    return m.exptime != 0 && m.exptime <= now_ ? nullptr : &m;
  }

  // A get (or gat, with `touch`) of `keys`, checked against the model; a
  // gat's items take the new expiry after.
  void check_get(const std::vector<int>& keys, std::optional<int64_t> touch = std::nullopt) {
    tick_flush();
    std::vector<std::string> names;
    for (int k : keys) names.push_back(key(k));
    auto c = make_byte_get(names, GetParam().hash_bits);
    std::vector<byte_key::ItemMeta> items;
    GetOp& op = std::get<GetOp>(c->call.op);
    op.items = &items;
    op.needs_cas = true;
    if (touch) {
      op.touch = true;
      op.touch_exptime = *touch;
    }
    ASSERT_FALSE(store_->can_pipeline_gets({&c->call})) << "gets with CAS take the host's path";
    std::vector<absl::Status> st;
    store_->apply_gets({&c->call}, &st);
    ASSERT_TRUE(st[0].ok()) << st[0];
    const v1::GetResponse& r = c->get_out;
    ASSERT_EQ(r.found_size(), static_cast<int>(keys.size()));
    ASSERT_EQ(items.size(), keys.size());
    size_t off = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      const ModelItem* m = live(keys[i]);
      ASSERT_EQ(r.found(static_cast<int>(i)), m != nullptr)
          << "key " << keys[i] << " at " << now_ << ", seed " << seed_;
      if (m == nullptr) continue;
      const std::string got = r.values().substr(off, r.value_lengths(static_cast<int>(i)));
      off += got.size();
      EXPECT_EQ(got, m->value) << "key " << keys[i] << ", seed " << seed_;
      EXPECT_EQ(items[i].flags, m->flags) << "key " << keys[i] << ", seed " << seed_;
      EXPECT_EQ(items[i].cas, m->cas) << "key " << keys[i] << ", seed " << seed_;
      // A gat answers the item as found: its expiry before the touch.
      EXPECT_EQ(items[i].exptime, m->exptime) << "key " << keys[i] << ", seed " << seed_;
    }
    if (!touch) return;
    const uint32_t at = model_exptime(*touch, now_);
    for (int k : keys) {
      if (live(k) != nullptr) model_[k].exptime = at;
    }
  }

  // The CAS the store gave key k's item now (0: a miss).
  uint64_t stored_cas(int k) {
    auto c = make_byte_get({key(k)}, GetParam().hash_bits);
    std::vector<byte_key::ItemMeta> items;
    std::get<GetOp>(c->call.op).items = &items;
    std::get<GetOp>(c->call.op).needs_cas = true;
    std::vector<absl::Status> st;
    store_->apply_gets({&c->call}, &st);
    EXPECT_TRUE(st[0].ok()) << st[0];
    return c->get_out.found(0) ? items[0].cas : 0;
  }

  // One write of `mode` to key k, checked against the model and applied to it.
  void write(int k, PutMode mode) {
    tick_flush();
    std::string value;
    if (mode == PutMode::kIncrement || mode == PutMode::kDecrement) {
      value = std::to_string(rng_() % 100);
    } else {
      value = rng_() % 3 == 0 ? std::to_string(rng_() % 1000) : std::string(rng_() % 20, 'a' + rng_() % 26);
    }
    const uint32_t flags = rng_() % 2 ? static_cast<uint32_t>(rng_()) : 0;
    const int64_t exptime = rng_() % 3 == 0 ? 1 + static_cast<int64_t>(rng_() % 4) : 0;
    const ModelItem* held = live(k);
    uint64_t unique = 0;
    if (mode == PutMode::kCompareAndSet) {
      // The item's own CAS, a stale or made-up one, or 0.
      switch (rng_() % 4) {
        case 0:
        case 1: unique = held ? held->cas : max_cas_; break;
        case 2: unique = max_cas_ - rng_() % 3; break;
        default: unique = rng_() % 2 ? 0 : max_cas_ + 1 + rng_() % 5; break;
      }
    }
    auto c = make_byte_put({key(k)}, {value}, GetParam().hash_bits);
    PutOp& op = std::get<PutOp>(c->call.op);
    op.mode = mode;
    op.flags = flags;
    op.exptime = exptime;
    op.cas = unique;
    std::vector<absl::Status> st;
    store_->apply_puts({&c->call}, &st);

    const ModelItem fresh{value, flags, model_exptime(exptime, now_), 0, false};
    const ModelWrite w = model_write(mode, held, fresh, unique, kMaxValue);
    std::optional<ModelItem> after = w.after;
    ASSERT_EQ(st[0].code(), w.code) << put_mode_name(mode) << " of key " << k << " at " << now_ << ": " << st[0]
                                    << ", seed " << seed_;
    if (!after) return;
    // A new version, above every earlier one.
    after->cas = stored_cas(k);
    if (after->exptime != 0 && after->exptime <= now_) {
      ASSERT_EQ(after->cas, 0u);  // stored expired: a miss
    } else {
      ASSERT_GT(after->cas, max_cas_) << put_mode_name(mode) << " of key " << k << ", seed " << seed_;
      max_cas_ = after->cas;
    }
    model_[k] = *after;
  }

  void touch(int k) {
    tick_flush();
    const int64_t exptime = rng_() % 4 == 0 ? 0 : (rng_() % 8 == 0 ? -1 : 1 + static_cast<int64_t>(rng_() % 4));
    auto c = make_byte_get({key(k)}, GetParam().hash_bits);
    GetOp& op = std::get<GetOp>(c->call.op);
    op.touch = true;
    op.touch_exptime = exptime;
    std::vector<absl::Status> st;
    store_->apply_gets({&c->call}, &st);
    ASSERT_TRUE(st[0].ok()) << st[0];
    const bool there = live(k) != nullptr;
    ASSERT_EQ(c->get_out.found(0), there) << "touch of key " << k << " at " << now_ << ", seed " << seed_;
    if (there) model_[k].exptime = model_exptime(exptime, now_);
  }

  void flush() {
    tick_flush();
    const int64_t delay = rng_() % 2 ? 0 : (rng_() % 4 == 0 ? -1 : 1 + static_cast<int64_t>(rng_() % 3));
    auto c = make_byte_put({}, {}, GetParam().hash_bits);
    PutOp& op = std::get<PutOp>(c->call.op);
    op.mode = PutMode::kFlush;
    op.exptime = delay;
    std::vector<absl::Status> st;
    store_->apply_puts({&c->call}, &st);
    ASSERT_TRUE(st[0].ok()) << st[0];
    if (delay <= 0) {
      for (auto& [k, m] : model_) m.flushed = true;
      flush_at_ = 0;
    } else {
      flush_at_ = now_ + static_cast<uint32_t>(delay);
    }
  }

  void del(int k) {
    tick_flush();
    auto c = make_byte_del({key(k)}, GetParam().hash_bits);
    std::vector<absl::Status> st;
    store_->apply_deletes({&c->call}, &st);
    ASSERT_TRUE(st[0].ok()) << st[0];
    EXPECT_EQ(c->del_out.deleted(0), live(k) != nullptr) << "key " << k << " at " << now_ << ", seed " << seed_;
    model_.erase(k);
  }

  uint64_t max_cas_ = 0;
  uint32_t flush_at_ = 0;
};

TEST_P(ItemVersionsStore, MatchesModelThroughCasTouchAndFlush) {
  constexpr int kKeys = 30;
  constexpr int kSteps = 3000;
  const PutMode modes[] = {PutMode::kSet,           PutMode::kSet,           PutMode::kAdd,    PutMode::kReplace,
                           PutMode::kCompareAndSet, PutMode::kCompareAndSet, PutMode::kAppend, PutMode::kPrepend,
                           PutMode::kIncrement,     PutMode::kDecrement};
  int flushes = 0;
  for (int step = 0; step < kSteps; ++step) {
    const int k = static_cast<int>(rng_() % kKeys);
    const uint64_t r = rng_() % 100;
    if (r < 45) {
      ASSERT_NO_FATAL_FAILURE(write(k, modes[rng_() % 10]));
    } else if (r < 75) {
      std::vector<int> keys(1 + rng_() % 5);
      for (int& x : keys) x = static_cast<int>(rng_() % kKeys);
      std::optional<int64_t> gat;
      if (rng_() % 4 == 0) gat = rng_() % 6 == 0 ? -1 : static_cast<int64_t>(rng_() % 4);
      ASSERT_NO_FATAL_FAILURE(check_get(keys, gat));
    } else if (r < 85) {
      ASSERT_NO_FATAL_FAILURE(touch(k));
    } else if (r < 90) {
      ASSERT_NO_FATAL_FAILURE(del(k));
    } else if (r < 91) {
      ASSERT_NO_FATAL_FAILURE(flush());
      ++flushes;
    } else {
      now_ += static_cast<uint32_t>(rng_() % 3);
    }
    ASSERT_EQ(store_->keys(), model_.size()) << "step " << step << ", seed " << seed_;
  }
  EXPECT_GT(flushes, 0);
  EXPECT_GT(max_cas_, 0u);
}

TEST_P(ItemVersionsStore, TouchKeepsTheCasAndACasRaceHasOneWinner) {
  auto set = [&](const std::string& v, PutMode mode, uint64_t unique) {
    auto c = make_byte_put({"k"}, {v}, GetParam().hash_bits);
    std::get<PutOp>(c->call.op).mode = mode;
    std::get<PutOp>(c->call.op).cas = unique;
    return c;
  };
  auto one = set("a", PutMode::kSet, 0);
  std::vector<absl::Status> st;
  store_->apply_puts({&one->call}, &st);
  ASSERT_TRUE(st[0].ok());
  auto cas_of = [&] {
    auto c = make_byte_get({"k"}, GetParam().hash_bits);
    std::vector<byte_key::ItemMeta> items;
    std::get<GetOp>(c->call.op).items = &items;
    std::get<GetOp>(c->call.op).needs_cas = true;
    store_->apply_gets({&c->call}, &st);
    return c->get_out.found(0) ? items[0].cas : 0;
  };
  const uint64_t first = cas_of();
  ASSERT_NE(first, 0u);
  // touch: the expiry changes, the CAS does not.
  auto t = make_byte_get({"k"}, GetParam().hash_bits);
  std::get<GetOp>(t->call.op).touch = true;
  std::get<GetOp>(t->call.op).touch_exptime = 5;
  store_->apply_gets({&t->call}, &st);
  ASSERT_TRUE(st[0].ok() && t->get_out.found(0));
  EXPECT_EQ(cas_of(), first);
  // Two cas with the same unique in one run, as two connections' in one
  // batch: the first stores, the second finds a new version.
  auto a = set("from a", PutMode::kCompareAndSet, first);
  auto b = set("from b", PutMode::kCompareAndSet, first);
  store_->apply_puts({&a->call, &b->call}, &st);
  EXPECT_TRUE(st[0].ok()) << st[0];
  EXPECT_EQ(st[1].code(), absl::StatusCode::kAborted) << st[1];
  EXPECT_GT(cas_of(), first);
  // cas stores the item with its own exptime (0 here), not the touched one.
  now_ += 6;
  EXPECT_NE(cas_of(), 0u) << "cas stored its own exptime (0), not the touched one";
}

INSTANTIATE_TEST_SUITE_P(Backends, ItemVersionsStore,
                         ::testing::Values(Param{engine::Backend::kCpu, 64}, Param{engine::Backend::kCpu, 4},
                                           Param{engine::Backend::kCuda, 64}, Param{engine::Backend::kCuda, 4},
                                           Param{engine::Backend::kCuda, 64, 256},
                                           Param{engine::Backend::kCuda, 4, 256}),
                         byte_key_backend_name);

}  // namespace
}  // namespace gphkv::server
