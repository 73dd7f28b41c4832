// The store's side of memcached's meta flags (issue 28) against a model, on
// both backends, with byte keys whose table keys have 4 bits (so they
// collide and live in CollidedKeys too): compare-and-delete (DeleteOp::
// compare_cas, md C) in delete runs beside plain deletes, and in put runs
// plain sets beside ma's increments that create a miss (PutOp::vivify),
// take a new expiry (touch) or compare a CAS, and appends that compare one
// (ms MA C). The same key recurs within a run, so each call must see the
// ones before it. Every status, counter, outcome (WriteOutcome) and stored
// item is checked; a refused call must change nothing.
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gphkv/engine/table.h"
#include "gtest/gtest.h"
#include "server/store.h"
#include "tests/server/backend_store_test.h"
#include "tests/server/byte_key_calls.h"
#include "tests/server/item_model.h"

namespace gphkv::server {
namespace {

constexpr uint32_t kNow = 1'700'000'000;  // the store's clock, fixed: nothing expires
constexpr int kKeys = 12;

struct Param {
  engine::Backend backend;
};

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return info.param.backend == engine::Backend::kCuda ? "Cuda" : "Cpu";
}

struct Item {
  std::string value;
  uint64_t cas = 0;
  uint32_t exptime = 0;  // absolute; 0 none
};

// One call of a run and what the model says of it.
struct Planned {
  std::unique_ptr<OwnedCall> owned;
  WriteOutcome outcome;
  absl::StatusCode want = absl::StatusCode::kOk;
  bool want_deleted = false;
  std::optional<uint64_t> want_counter;
  std::optional<WriteOutcome> want_outcome;  // its cas is checked against the record's
};

class MetaStore : public BackendStoreTest<Param> {
 protected:
  void configure(StoreOptions& o) override {
    o.max_value_bytes = 512;
    o.unix_clock = [] { return kNow; };
  }

  static std::string key_name(int k) { return "meta:" + std::to_string(k); }

  // Whether the model knows the CAS the key's item holds: not once a call
  // earlier in the run wrote it (the store gives the CAS as it applies).
  bool knows_cas(const std::string& key) const {
    auto it = model_.find(key);
    return it == model_.end() || it->second.cas != 0;
  }

  // A CAS the key's item holds, or (wrong) one it does not; any number for a miss.
  uint64_t some_cas(const std::string& key, bool right) {
    auto it = model_.find(key);
    if (it == model_.end()) return rng_() % 1000 + 1;
    return right ? it->second.cas : it->second.cas + 1 + rng_() % 5;
  }

  void plan_delete(Planned* p) {
    const std::string key = key_name(static_cast<int>(rng_() % kKeys));
    p->owned = make_byte_del({key}, /*hash_bits=*/4);
    auto it = model_.find(key);
    DeleteOp& del = std::get<DeleteOp>(p->owned->call.op);
    if (rng_() % 3 != 0) {
      const bool right = rng_() % 2 == 0;
      del.compare_cas = true;
      del.cas = some_cas(key, right);
      if (it != model_.end() && !right) {
        p->want = absl::StatusCode::kAborted;
        ++seen_["md C mismatch"];
        return;
      }
      ++seen_[it == model_.end() ? "md C miss" : "md C match"];
    }
    p->want_deleted = it != model_.end();
    if (it != model_.end()) model_.erase(it);
  }

  // ma: an increment or decrement with N, T and C at random.
  void plan_arithmetic(Planned* p, const std::string& key) {
    const bool increment = rng_() % 2 == 0;
    const uint64_t delta = rng_() % 4 == 0 ? rng_() : rng_() % 50;
    p->owned = make_byte_put({key}, {std::to_string(delta)}, /*hash_bits=*/4);
    PutOp& op = std::get<PutOp>(p->owned->call.op);
    op.mode = increment ? PutMode::kIncrement : PutMode::kDecrement;
    op.outcome = &p->outcome;
    op.vivify = rng_() % 2 == 0;
    op.initial = rng_() % 3 == 0 ? rng_() : rng_() % 100;
    op.vivify_exptime = rng_() % 3 == 0 ? 0 : 1 + static_cast<int64_t>(rng_() % 5000);
    op.touch = rng_() % 2 == 0;
    op.touch_exptime = rng_() % 3 == 0 ? 0 : 1 + static_cast<int64_t>(rng_() % 5000);
    op.touch_after_vivify = rng_() % 2 == 0;
    const bool right = rng_() % 2 == 0;
    op.compare_cas = rng_() % 2 == 0 && knows_cas(key);
    op.cas = some_cas(key, right);
    auto it = model_.find(key);
    WriteOutcome want;
    want.now = kNow;
    if (op.touch && op.touch_exptime != 0) want.touch_exptime = kNow + static_cast<uint32_t>(op.touch_exptime);
    if (op.vivify && op.vivify_exptime != 0) want.vivify_exptime = kNow + static_cast<uint32_t>(op.vivify_exptime);
    if (it == model_.end()) {
      if (!op.vivify) {
        p->want = absl::StatusCode::kNotFound;
        ++seen_["ma miss"];
        return;
      }
      want.created = true;
      Item& item = model_[key];
      item.value = std::to_string(op.initial);
      item.exptime = op.touch && op.touch_after_vivify ? want.touch_exptime : want.vivify_exptime;
      p->want_counter = op.initial;
      p->want_outcome = want;
      ++seen_["ma N created"];
      return;
    }
    Item& item = it->second;
    if (op.compare_cas && !right) {
      p->want = absl::StatusCode::kAborted;
      ++seen_["ma C mismatch"];
      return;
    }
    const std::optional<uint64_t> counter = model_counter(item.value);
    if (!counter) {
      p->want = absl::StatusCode::kInvalidArgument;
      ++seen_["ma non-numeric"];
      return;
    }
    const uint64_t now = *counter;
    const uint64_t next = increment ? now + delta : (now > delta ? now - delta : 0);
    want.exptime_before = item.exptime;
    if (op.touch) item.exptime = want.touch_exptime;
    item.value = std::to_string(next);
    item.cas = 0;
    p->want_counter = next;
    p->want_outcome = want;
    ++seen_[op.compare_cas ? "ma C match" : op.touch ? "ma T" : "ma"];
  }

  void plan_put(Planned* p) {
    const std::string key = key_name(static_cast<int>(rng_() % kKeys));
    switch (rng_() % 4) {
      case 0: {  // a plain set: a number, or not
        const std::string value = rng_() % 3 == 0 ? "text" + std::to_string(rng_() % 9) : std::to_string(rng_() % 999);
        p->owned = make_byte_put({key}, {value}, /*hash_bits=*/4);
        model_[key] = Item{value, 0, 0};
        return;
      }
      case 1: {  // an append that compares a CAS
        const bool right = rng_() % 2 == 0;
        p->owned = make_byte_put({key}, {"+"}, /*hash_bits=*/4);
        PutOp& op = std::get<PutOp>(p->owned->call.op);
        op.mode = PutMode::kAppend;
        op.compare_cas = knows_cas(key);
        op.cas = some_cas(key, right);
        auto it = model_.find(key);
        if (it == model_.end()) {
          p->want = absl::StatusCode::kNotFound;
        } else if (op.compare_cas && !right) {
          p->want = absl::StatusCode::kAborted;
          ++seen_["append C mismatch"];
        } else {
          it->second.value += "+";
          it->second.cas = 0;
          if (op.compare_cas) ++seen_["append C match"];
        }
        return;
      }
      default: plan_arithmetic(p, key); return;
    }
  }

  // After a run: each applied call's record took a new CAS, which the model learns.
  void learn_cas(const Planned& p, const absl::Status& status) {
    if (!status.ok() || p.owned->call.kind() != OpKind::kPut) return;
    const PutOp& op = p.owned->call.put();
    std::string key;
    op.byte_keys.for_each([&](size_t, std::string_view k) { key.assign(k); });
    model_.at(key).cas = op.first_cas;
  }

  void run_step() {
    const bool deletes = rng_() % 3 == 0;
    std::vector<Planned> planned(1 + rng_() % 6);
    std::vector<Call*> run;
    for (Planned& p : planned) {
      if (deletes) {
        plan_delete(&p);
      } else {
        plan_put(&p);
      }
      run.push_back(&p.owned->call);
    }
    std::vector<absl::Status> statuses;
    if (deletes) {
      store_->apply_deletes(run, &statuses);
    } else {
      store_->apply_puts(run, &statuses);
    }
    ASSERT_EQ(statuses.size(), run.size());
    for (size_t c = 0; c < planned.size(); ++c) {
      const Planned& p = planned[c];
      SCOPED_TRACE(::testing::Message() << "call " << c);
      ASSERT_EQ(statuses[c].code(), p.want) << statuses[c];
      if (deletes && p.want == absl::StatusCode::kOk) EXPECT_EQ(p.owned->del_out.deleted(0), p.want_deleted);
      if (p.want_counter) EXPECT_EQ(p.owned->put_out.counter(), *p.want_counter);
      if (p.want_outcome) {
        EXPECT_EQ(p.outcome.created, p.want_outcome->created);
        EXPECT_EQ(p.outcome.exptime_before, p.want_outcome->exptime_before);
        EXPECT_EQ(p.outcome.touch_exptime, p.want_outcome->touch_exptime);
        EXPECT_EQ(p.outcome.vivify_exptime, p.want_outcome->vivify_exptime);
        EXPECT_EQ(p.outcome.now, kNow);
        EXPECT_EQ(p.outcome.cas, p.owned->call.put().first_cas);
        EXPECT_NE(p.outcome.cas, 0u);
      }
      learn_cas(p, statuses[c]);
    }
  }

  // Every key's value, expiry and CAS as the model has them.
  void check_all() {
    for (int k = 0; k < kKeys; ++k) {
      const std::string key = key_name(k);
      auto g = make_byte_get({key}, /*hash_bits=*/4);
      std::vector<byte_key::ItemMeta> items;
      GetOp& get = std::get<GetOp>(g->call.op);
      get.items = &items;
      get.needs_cas = true;
      std::vector<absl::Status> st;
      store_->apply_gets({&g->call}, &st);
      ASSERT_TRUE(st[0].ok()) << st[0];
      auto it = model_.find(key);
      ASSERT_EQ(g->get_out.found(0), it != model_.end()) << key;
      if (it == model_.end()) continue;
      EXPECT_EQ(g->get_out.values(), it->second.value) << key;
      ASSERT_EQ(items.size(), 1u);
      EXPECT_EQ(items[0].cas, it->second.cas) << key;
      EXPECT_EQ(items[0].exptime, it->second.exptime) << key;
    }
  }

  std::map<std::string, Item> model_;
  std::map<std::string, int> seen_;  // the outcomes the runs covered
};

TEST_P(MetaStore, RandomRunsMatchAModel) {
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed_);
  for (int step = 0; step < 400 && !HasFatalFailure(); ++step) {
    SCOPED_TRACE(::testing::Message() << "step " << step);
    run_step();
    if (step % 20 == 0) check_all();
    ASSERT_EQ(store_->keys(), model_.size());
  }
  check_all();
  // The runs met every rule, or the test proved less than it says.
  for (const char* rule : {"md C mismatch", "md C miss", "md C match", "ma miss", "ma N created", "ma C mismatch",
                           "ma non-numeric", "ma C match", "ma T", "ma", "append C mismatch", "append C match"}) {
    EXPECT_GT(seen_[rule], 0) << rule;
  }
}

// Two ma N of one absent key in one run: the first creates it with the
// initial number, the second increments that (one read per call, in order).
TEST_P(MetaStore, TwoVivifiesInARunCreateOnceAndIncrementOnce) {
  std::vector<std::unique_ptr<OwnedCall>> owned;
  WriteOutcome outcomes[2];
  std::vector<Call*> run;
  for (WriteOutcome& outcome : outcomes) {
    owned.push_back(make_byte_put({"counter"}, {"5"}));
    PutOp& op = std::get<PutOp>(owned.back()->call.op);
    op.mode = PutMode::kIncrement;
    op.vivify = true;
    op.initial = 10;
    op.outcome = &outcome;
    run.push_back(&owned.back()->call);
  }
  std::vector<absl::Status> st;
  store_->apply_puts(run, &st);
  ASSERT_TRUE(st[0].ok()) << st[0];
  ASSERT_TRUE(st[1].ok()) << st[1];
  EXPECT_TRUE(outcomes[0].created);
  EXPECT_FALSE(outcomes[1].created);
  EXPECT_EQ(owned[0]->put_out.counter(), 10u);
  EXPECT_EQ(owned[1]->put_out.counter(), 15u);
  EXPECT_LT(outcomes[0].cas, outcomes[1].cas);
}

INSTANTIATE_TEST_SUITE_P(Backends, MetaStore,
                         ::testing::Values(Param{engine::Backend::kCpu}, Param{engine::Backend::kCuda}), param_name);

}  // namespace
}  // namespace gphkv::server
