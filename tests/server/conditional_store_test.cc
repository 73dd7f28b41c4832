// The store's conditional and read-modify-write puts (issue 27) against a
// model, on both backends, with uint64 keys and with byte keys whose table
// keys have 4 bits (so they collide and live in CollidedKeys too): random
// runs that mix plain sets, deletes' aftermath and every conditional mode,
// the same key several times in one run, so each conditional put must see
// the puts before it in its run. Every status, counter and stored value is
// checked; a refused put must change nothing.
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gphkv/engine/table.h"
#include "gtest/gtest.h"
#include "server/conditional_put.h"
#include "server/store.h"
#include "tests/engine/table_checks.h"
#include "tests/server/backend_store_test.h"
#include "tests/server/byte_key_calls.h"
#include "tests/server/item_model.h"
#include "tests/server/owned_calls.h"

namespace gphkv::server {
namespace {

constexpr uint32_t kMaxValueBytes = 32;

struct Param {
  engine::Backend backend;
  bool byte_keys;
};

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::string(info.param.backend == engine::Backend::kCuda ? "Cuda" : "Cpu") +
         (info.param.byte_keys ? "ByteKeys" : "Uint64Keys");
}

class ConditionalStore : public BackendStoreTest<Param> {
 protected:
  void configure(StoreOptions& o) override {
    o.max_value_bytes = kMaxValueBytes + 300;  // room for a byte key's record
    o.max_put_value_bytes = kMaxValueBytes;
    if (GetParam().byte_keys) o.byte_key_hash_bits = 4;  // as the calls' (put, get, del below)
  }

  std::string key_name(int k) const { return GetParam().byte_keys ? "key:" + std::to_string(k) : std::to_string(k); }

  std::unique_ptr<OwnedCall> put(int key, const std::string& value, PutMode mode) {
    auto c = GetParam().byte_keys ? make_byte_put({key_name(key)}, {value}, /*hash_bits=*/4)
                                  : make_put({static_cast<uint64_t>(key)}, {value});
    std::get<PutOp>(c->call.op).mode = mode;
    return c;
  }

  std::string random_value() {
    switch (rng_() % 4) {
      case 0: return std::to_string(rng_() >> (rng_() % 64));  // a counter
      case 1: return std::to_string(rng_() % 10) + "  ";       // one padded as memcached pads
      default: {
        std::string v(rng_() % 17, '\0');
        for (char& c : v) c = static_cast<char>(rng_());
        return v;
      }
    }
  }

  // The model's outcome of one put, applied to the model when it succeeds.
  absl::StatusCode expect_put(int key, PutMode mode, const std::string& operand, std::string* counter) {
    const std::string name = key_name(key);
    auto it = model_.find(name);
    const bool present = it != model_.end();
    switch (mode) {
      case PutMode::kSet: model_[name] = operand; return absl::StatusCode::kOk;
      case PutMode::kAdd:
        if (present) return absl::StatusCode::kAlreadyExists;
        model_[name] = operand;
        return absl::StatusCode::kOk;
      case PutMode::kReplace:
        if (!present) return absl::StatusCode::kNotFound;
        it->second = operand;
        return absl::StatusCode::kOk;
      case PutMode::kAppend:
      case PutMode::kPrepend:
        if (!present) return absl::StatusCode::kNotFound;
        if (it->second.size() + operand.size() > kMaxValueBytes) return absl::StatusCode::kResourceExhausted;
        it->second = mode == PutMode::kAppend ? it->second + operand : operand + it->second;
        return absl::StatusCode::kOk;
      case PutMode::kIncrement:
      case PutMode::kDecrement: {
        if (!present) return absl::StatusCode::kNotFound;
        const std::optional<uint64_t> now = model_counter(it->second);
        if (!now) return absl::StatusCode::kInvalidArgument;
        const uint64_t delta = std::stoull(operand);
        const uint64_t next = mode == PutMode::kIncrement ? *now + delta : (*now > delta ? *now - delta : 0);
        it->second = std::to_string(next);
        *counter = it->second;
        return absl::StatusCode::kOk;
      }
    }
    return absl::StatusCode::kUnknown;
  }

  void run_step() {
    std::vector<std::unique_ptr<OwnedCall>> owned;
    std::vector<absl::StatusCode> want;
    std::vector<std::string> want_counter;
    std::vector<Call*> run;
    const int calls = 1 + static_cast<int>(rng_() % 8);
    for (int c = 0; c < calls; ++c) {
      const int key = static_cast<int>(rng_() % 24);  // few keys: the same key recurs within runs
      const auto mode = static_cast<PutMode>(rng_() % 7);
      std::string operand = (mode == PutMode::kIncrement || mode == PutMode::kDecrement)
                                ? std::to_string(rng_() >> (rng_() % 64))
                                : random_value();
      std::string counter;
      want.push_back(expect_put(key, mode, operand, &counter));
      ++seen_[{mode, want.back()}];
      want_counter.push_back(counter);
      owned.push_back(put(key, operand, mode));
      run.push_back(&owned.back()->call);
    }
    std::vector<absl::Status> statuses;
    store_->apply_puts(run, &statuses);
    ASSERT_EQ(statuses.size(), run.size());
    for (size_t c = 0; c < run.size(); ++c) {
      EXPECT_EQ(statuses[c].code(), want[c]) << "call " << c << ": " << statuses[c];
      if (!want_counter[c].empty() && statuses[c].ok()) {
        EXPECT_EQ(std::to_string(owned[c]->put_out.counter()), want_counter[c]) << "call " << c;
      }
    }
  }

  void check_all() {
    for (int key = 0; key < 24; ++key) {
      auto g = GetParam().byte_keys ? make_byte_get({key_name(key)}, /*hash_bits=*/4)
                                    : make_get({static_cast<uint64_t>(key)});
      std::vector<absl::Status> st;
      store_->apply_gets({&g->call}, &st);
      ASSERT_TRUE(st[0].ok()) << st[0];
      auto it = model_.find(key_name(key));
      ASSERT_EQ(g->get_out.found(0), it != model_.end()) << key_name(key);
      if (it != model_.end()) EXPECT_EQ(g->get_out.values(), it->second) << key_name(key);
    }
  }

  void erase_some() {
    const int key = static_cast<int>(rng_() % 24);
    auto d =
        GetParam().byte_keys ? make_byte_del({key_name(key)}, /*hash_bits=*/4) : make_del({static_cast<uint64_t>(key)});
    std::vector<absl::Status> st;
    store_->apply_deletes({&d->call}, &st);
    ASSERT_TRUE(st[0].ok()) << st[0];
    model_.erase(key_name(key));
  }

  std::map<std::string, std::string> model_;
  std::map<std::pair<PutMode, absl::StatusCode>, int> seen_;  // the outcomes the runs covered
};

TEST_P(ConditionalStore, RandomRunsMatchAModel) {
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed_);
  for (int step = 0; step < 300 && !HasFatalFailure(); ++step) {
    SCOPED_TRACE(::testing::Message() << "step " << step);
    run_step();
    if (rng_() % 4 == 0) erase_some();
    if (step % 25 == 0) check_all();
    ASSERT_EQ(store_->keys(), model_.size());
  }
  check_all();
  // The runs met every rule, or the test proved less than it says.
  for (int m = 1; m <= 6; ++m) EXPECT_GT((seen_[{static_cast<PutMode>(m), absl::StatusCode::kOk}]), 0) << m;
  EXPECT_GT((seen_[{PutMode::kAdd, absl::StatusCode::kAlreadyExists}]), 0);
  EXPECT_GT((seen_[{PutMode::kReplace, absl::StatusCode::kNotFound}]), 0);
  EXPECT_GT((seen_[{PutMode::kIncrement, absl::StatusCode::kInvalidArgument}]), 0);
  EXPECT_GT((seen_[{PutMode::kAppend, absl::StatusCode::kResourceExhausted}]), 0);
}

// A conditional put rewritten by the store is a plain set of what it
// stored: what the log records, and what a caller that looks sees.
TEST_P(ConditionalStore, AnAppliedConditionalPutIsAPlainSetOfItsResult) {
  auto first = put(7, "12", PutMode::kSet);
  std::vector<absl::Status> st;
  store_->apply_puts({&first->call}, &st);
  ASSERT_TRUE(st[0].ok()) << st[0];
  auto incr = put(7, "30", PutMode::kIncrement);
  auto append = put(7, "!", PutMode::kAppend);
  auto add = put(7, "never", PutMode::kAdd);
  store_->apply_puts({&incr->call, &append->call, &add->call}, &st);
  ASSERT_TRUE(st[0].ok()) << st[0];
  ASSERT_TRUE(st[1].ok()) << st[1];
  EXPECT_EQ(st[2].code(), absl::StatusCode::kAlreadyExists) << st[2];
  EXPECT_EQ(incr->put_out.counter(), 42u);
  EXPECT_EQ(incr->call.put().mode, PutMode::kSet);
  EXPECT_EQ(incr->call.put().values, "42");
  EXPECT_EQ(append->call.put().values, "42!");
  EXPECT_EQ(add->call.put().mode, PutMode::kAdd);  // refused: untouched
  EXPECT_EQ(add->call.put().values, "never");
}

INSTANTIATE_TEST_SUITE_P(Backends, ConditionalStore,
                         ::testing::Values(Param{engine::Backend::kCpu, false}, Param{engine::Backend::kCpu, true},
                                           Param{engine::Backend::kCuda, false}, Param{engine::Backend::kCuda, true}),
                         param_name);

}  // namespace
}  // namespace gphkv::server
