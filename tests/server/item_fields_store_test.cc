// Byte keys' item fields (issue 27): client flags and expiry, against a
// model, on both backends, with 64-bit table keys and with 4-bit ones (keys
// collide and live in CollidedKeys too). The store's clock is the test's,
// stepped a second or two at a time, so items expire at their boundary
// second without sleeping: at exptime - 1 an item is there, at exptime it is
// a miss for gets, add stores over it, replace, append and incr refuse, a
// delete frees it but answers not deleted. An expired item keeps its slot
// (keys() counts it) until it is overwritten or deleted. Flags come back
// with every hit; append, prepend, incr and decr keep the item's flags and
// expiry. The first half of each run stores no flags, so a CUDA store serves
// its gets on the get pipeline, whose kernel checks the expiry; the second
// half does, and its gets take the host's path.
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

class ItemFieldsStore : public ItemStoreTest {
 protected:
  std::string key(int k) const { return "item:" + std::to_string(k); }
  bool alive(const ModelItem& m) const { return !(m.exptime != 0 && m.exptime <= now_); }
  const ModelItem* live(int k) const {
    auto it = model_.find(k);
    return it != model_.end() && alive(it->second) ? &it->second : nullptr;
  }

  // A run of gets as the executor runs it: on the CUDA pipeline while the
  // store can, else on the host.
  std::vector<absl::Status> apply_gets(const std::vector<Call*>& run) {
    std::vector<absl::Status> statuses;
    if (!store_->can_pipeline_gets()) {
      store_->apply_gets(run, &statuses);
      return statuses;
    }
    ++pipelined_;
    if (absl::Status s = store_->submit_gets(run); !s.ok()) return std::vector<absl::Status>(run.size(), s);
    GetStageTimes times;
    auto answers = store_->finish_gets(&times);
    answers->fill(0, answers->calls().size());
    return answers->statuses();
  }

  int64_t random_exptime() {
    switch (rng_() % 6) {
      case 0:
      case 1: return 0;
      case 2: return 1 + static_cast<int64_t>(rng_() % 4);                 // relative
      case 3: return static_cast<int64_t>(now_) + rng_() % 6 - 1;          // absolute, maybe past
      case 4: return rng_() % 8 == 0 ? -1 : 30 * 24 * 3600;                // expired at once, or 30 days
      default: return static_cast<int64_t>(now_) + 30 * 24 * 3600 + 1000;  // far ahead
    }
  }

  void check_get(const std::vector<int>& keys) {
    std::vector<std::string> names;
    for (int k : keys) names.push_back(key(k));
    auto c = make_byte_get(names, GetParam().hash_bits);
    std::vector<byte_key::ItemMeta> items;
    std::get<GetOp>(c->call.op).items = &items;
    const std::vector<absl::Status> st = apply_gets({&c->call});
    ASSERT_TRUE(st[0].ok()) << st[0];
    const v1::GetResponse& r = c->get_out;
    ASSERT_EQ(r.found_size(), static_cast<int>(keys.size()));
    size_t off = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      const ModelItem* m = live(keys[i]);
      ASSERT_EQ(r.found(static_cast<int>(i)), m != nullptr)
          << "key " << keys[i] << " at " << now_ << ", seed " << seed_;
      if (m == nullptr) continue;
      const std::string got = r.values().substr(off, r.value_lengths(static_cast<int>(i)));
      off += got.size();
      EXPECT_EQ(got, m->value) << "key " << keys[i] << ", seed " << seed_;
      // The pipeline leaves the items empty: it serves only while every item's flags are 0.
      const uint32_t flags = items.empty() ? 0 : items[i].flags;
      EXPECT_EQ(flags, m->flags) << "key " << keys[i] << ", seed " << seed_;
      if (!items.empty()) EXPECT_EQ(items[i].exptime, m->exptime) << "key " << keys[i];
    }
  }

  // One write of `mode` to key k, checked against the model and applied to it.
  void write(int k, PutMode mode, bool with_flags) {
    std::string value;
    if (mode == PutMode::kIncrement || mode == PutMode::kDecrement) {
      value = std::to_string(rng_() % 100);
    } else {
      value = rng_() % 3 == 0 ? std::to_string(rng_() % 1000) : std::string(rng_() % 20, 'a' + rng_() % 26);
    }
    const uint32_t flags = with_flags && rng_() % 2 ? static_cast<uint32_t>(rng_()) : 0;
    const int64_t exptime = random_exptime();
    auto c = make_byte_put({key(k)}, {value}, GetParam().hash_bits);
    PutOp& op = std::get<PutOp>(c->call.op);
    op.mode = mode;
    op.flags = flags;
    op.exptime = exptime;
    std::vector<absl::Status> st;
    store_->apply_puts({&c->call}, &st);

    const ModelItem* held = live(k);
    const ModelItem fresh{value, flags, model_exptime(exptime, now_)};
    const ModelWrite w = model_write(mode, held, fresh, /*unique=*/0, kMaxValue);
    ASSERT_EQ(st[0].code(), w.code) << put_mode_name(mode) << " of key " << k << " at " << now_ << ": " << st[0]
                                    << ", seed " << seed_;
    if (w.after) model_[k] = *w.after;
  }

  void del(int k) {
    auto c = make_byte_del({key(k)}, GetParam().hash_bits);
    std::vector<absl::Status> st;
    store_->apply_deletes({&c->call}, &st);
    ASSERT_TRUE(st[0].ok()) << st[0];
    EXPECT_EQ(c->del_out.deleted(0), live(k) != nullptr) << "key " << k << " at " << now_ << ", seed " << seed_;
    model_.erase(k);
  }

  int pipelined_ = 0;
};

TEST_P(ItemFieldsStore, MatchesModelThroughExpiry) {
  constexpr int kKeys = 40;
  constexpr int kSteps = 3000;
  const PutMode modes[] = {PutMode::kSet,    PutMode::kSet,     PutMode::kAdd,       PutMode::kReplace,
                           PutMode::kAppend, PutMode::kPrepend, PutMode::kIncrement, PutMode::kDecrement};
  for (int step = 0; step < kSteps; ++step) {
    const bool with_flags = step >= kSteps / 2;
    const int k = static_cast<int>(rng_() % kKeys);
    const uint64_t r = rng_() % 100;
    if (r < 45) {
      ASSERT_NO_FATAL_FAILURE(write(k, modes[rng_() % 8], with_flags));
    } else if (r < 80) {
      std::vector<int> keys(1 + rng_() % 6);
      for (int& x : keys) x = static_cast<int>(rng_() % kKeys);
      ASSERT_NO_FATAL_FAILURE(check_get(keys));
    } else if (r < 88) {
      ASSERT_NO_FATAL_FAILURE(del(k));
    } else {
      now_ += static_cast<uint32_t>(rng_() % 3);
    }
    // Expired items hold their slots until overwritten or deleted.
    ASSERT_EQ(store_->keys(), model_.size()) << "step " << step << ", seed " << seed_;
  }
  // Everything expires; deleting gives each slot back.
  now_ += 31 * 24 * 3600 + 2000;
  std::vector<int> all;
  for (int k = 0; k < kKeys; ++k) all.push_back(k);
  ASSERT_NO_FATAL_FAILURE(check_get(all));
  for (int k = 0; k < kKeys; ++k) ASSERT_NO_FATAL_FAILURE(del(k));
  EXPECT_EQ(store_->keys(), 0u);
  if (GetParam().backend == engine::Backend::kCuda && GetParam().hash_bits == 64) EXPECT_GT(pipelined_, 0);
}

TEST_P(ItemFieldsStore, ExpiresAtTheBoundarySecond) {
  // A relative exptime of 10 at T: there at T + 9, gone at T + 10.
  auto put = [&](const std::string& value, uint32_t flags, int64_t exptime, PutMode mode = PutMode::kSet) {
    auto c = make_byte_put({"edge"}, {value}, GetParam().hash_bits);
    PutOp& op = std::get<PutOp>(c->call.op);
    op.flags = flags;
    op.exptime = exptime;
    op.mode = mode;
    std::vector<absl::Status> st;
    store_->apply_puts({&c->call}, &st);
    return st[0];
  };
  auto found = [&] {
    auto c = make_byte_get({"edge"}, GetParam().hash_bits);
    EXPECT_TRUE(apply_gets({&c->call})[0].ok());
    return c->get_out.found(0);
  };
  ASSERT_TRUE(put("v", 0, 10).ok());
  now_ += 9;
  EXPECT_TRUE(found());
  EXPECT_EQ(put("w", 0, 0, PutMode::kAdd).code(), absl::StatusCode::kAlreadyExists);
  now_ += 1;
  EXPECT_FALSE(found());
  EXPECT_EQ(put("w", 0, 0, PutMode::kReplace).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(put("1", 0, 0, PutMode::kAppend).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->keys(), 1u);  // expired, not yet given back
  // add stores over the expired item, in its slot.
  ASSERT_TRUE(put("5", 7, 0, PutMode::kAdd).ok());
  EXPECT_TRUE(found());
  EXPECT_EQ(store_->keys(), 1u);
  // An absolute exptime one second ahead: gone the next second.
  ASSERT_TRUE(put("6", 7, now_ + 1 + 0ll).ok());
  EXPECT_TRUE(found());
  ++now_;
  EXPECT_FALSE(found());
  // Negative: expired at once.
  ASSERT_TRUE(put("7", 0, -1).ok());
  EXPECT_FALSE(found());
}

INSTANTIATE_TEST_SUITE_P(Backends, ItemFieldsStore,
                         ::testing::Values(Param{engine::Backend::kCpu, 64}, Param{engine::Backend::kCpu, 4},
                                           Param{engine::Backend::kCuda, 64}, Param{engine::Backend::kCuda, 4},
                                           Param{engine::Backend::kCuda, 64, 256},
                                           Param{engine::Backend::kCuda, 4, 256}),
                         byte_key_backend_name);

}  // namespace
}  // namespace gphkv::server
