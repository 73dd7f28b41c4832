// RunOrder: writes go first only when no key is both read and written in the
// batch, and the order of the operations on every key never changes.
#include "server/run_order.h"

#include <map>
#include <memory>
#include <random>

#include "gtest/gtest.h"
#include "server/wire_calls.h"
#include "tests/server/owned_calls.h"

namespace gphkv::server {
namespace {

using Owned = OwnedCall;

std::unique_ptr<Owned> make(OpKind kind, std::vector<uint64_t> keys) {
  auto o = std::make_unique<Owned>();
  switch (kind) {
    case OpKind::kGet:
      o->get.mutable_keys()->Add(keys.begin(), keys.end());
      o->call.op = get_op(o->get, &o->get_out).value();
      break;
    case OpKind::kPut:
      for (uint64_t k : keys) {
        o->put.add_keys(k);
        o->put.add_value_lengths(0);
      }
      o->call.op = put_op(o->put, &o->put_out).value();
      break;
    case OpKind::kDelete:
      o->del.mutable_keys()->Add(keys.begin(), keys.end());
      o->call.op = delete_op(o->del, &o->del_out).value();
      break;
    case OpKind::kShrink: o->call.op = ShrinkOp{nullptr}; break;
  }
  return o;
}

std::vector<uint64_t> keys_of(const Call* c) {
  switch (c->kind()) {
    case OpKind::kGet:
    case OpKind::kPut:
    case OpKind::kDelete: return {c->keys().begin(), c->keys().end()};
    default: return {};
  }
}

// For each key, the calls that touch it, in the order given.
std::map<uint64_t, std::vector<const Call*>> per_key(const std::vector<Call*>& calls) {
  std::map<uint64_t, std::vector<const Call*>> out;
  for (const Call* c : calls) {
    for (uint64_t k : keys_of(c)) out[k].push_back(c);
  }
  return out;
}

TEST(RunOrder, DisjointWritesGoFirstInTheirOrderAndGetsKeepTheirs) {
  std::vector<std::unique_ptr<Owned>> own;
  own.push_back(make(OpKind::kGet, {1, 2}));
  own.push_back(make(OpKind::kPut, {10}));
  own.push_back(make(OpKind::kGet, {3}));
  own.push_back(make(OpKind::kDelete, {11}));
  own.push_back(make(OpKind::kGet, {4}));
  std::vector<Call*> calls;
  for (auto& o : own) calls.push_back(&o->call);
  RunOrder order;
  EXPECT_TRUE(order.writes_first(calls));
  const std::vector<Call*> want = {&own[1]->call, &own[3]->call, &own[0]->call, &own[2]->call, &own[4]->call};
  EXPECT_EQ(calls, want);
}

TEST(RunOrder, AKeyReadAndWrittenInTheBatchKeepsArrivalOrder) {
  for (const bool read_first : {true, false}) {
    std::vector<std::unique_ptr<Owned>> own;
    own.push_back(make(OpKind::kGet, {5}));
    if (read_first) {
      own.push_back(make(OpKind::kGet, {7, 8}));
      own.push_back(make(OpKind::kPut, {8}));
    } else {
      own.push_back(make(OpKind::kPut, {8}));
      own.push_back(make(OpKind::kGet, {7, 8}));
      own.push_back(make(OpKind::kPut, {9}));
    }
    std::vector<Call*> calls;
    for (auto& o : own) calls.push_back(&o->call);
    const std::vector<Call*> before = calls;
    RunOrder order;
    EXPECT_FALSE(order.writes_first(calls)) << read_first;
    EXPECT_EQ(calls, before);
  }
}

TEST(RunOrder, NothingToGainLeavesTheBatchAlone) {
  std::vector<std::unique_ptr<Owned>> own;
  own.push_back(make(OpKind::kPut, {1}));
  own.push_back(make(OpKind::kShrink, {}));
  own.push_back(make(OpKind::kGet, {2}));
  std::vector<Call*> calls;
  for (auto& o : own) calls.push_back(&o->call);
  const std::vector<Call*> before = calls;
  RunOrder order;
  EXPECT_FALSE(order.writes_first(calls));
  EXPECT_EQ(calls, before);
}

TEST(RunOrder, RandomBatchesNeverReorderTheOperationsOfAKey) {
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  RunOrder order;  // reused, as the executor does
  int reordered = 0;
  for (int batch = 0; batch < 2000; ++batch) {
    std::vector<std::unique_ptr<Owned>> own;
    const int n = 1 + static_cast<int>(rng() % 20);
    const uint64_t key_range = 5 + rng() % 200;
    for (int i = 0; i < n; ++i) {
      const int r = static_cast<int>(rng() % 10);
      const OpKind kind = r < 7 ? OpKind::kGet : r < 9 ? OpKind::kPut : OpKind::kDelete;
      std::vector<uint64_t> keys;
      for (int k = 1 + static_cast<int>(rng() % 4); k > 0; --k) keys.push_back(rng() % key_range);
      own.push_back(make(kind, keys));
    }
    std::vector<Call*> calls;
    for (auto& o : own) calls.push_back(&o->call);
    const auto before = per_key(calls);
    const bool moved = order.writes_first(calls);
    reordered += moved;
    ASSERT_EQ(per_key(calls), before) << "seed " << seed << " batch " << batch;
    if (moved) {
      // Writes first, then gets: one stretch each.
      const auto first_get =
          std::find_if(calls.begin(), calls.end(), [](Call* c) { return c->kind() == OpKind::kGet; });
      ASSERT_TRUE(std::all_of(first_get, calls.end(), [](Call* c) { return c->kind() == OpKind::kGet; }))
          << "seed " << seed;
    }
  }
  EXPECT_GT(reordered, 100) << "seed " << seed << ": the test should exercise reordering";
}

}  // namespace
}  // namespace gphkv::server
