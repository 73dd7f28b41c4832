// RunOrder: each call goes to the earliest run its keys allow, and what every
// call sees (and the store's state after the batch) is what the arrival
// order gives.
#include "server/run_order.h"

#include <algorithm>
#include <map>
#include <memory>
#include <ostream>
#include <random>
#include <string>

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

std::vector<Call*> calls_of(const std::vector<std::unique_ptr<Owned>>& own) {
  std::vector<Call*> calls;
  for (const auto& o : own) calls.push_back(&o->call);
  return calls;
}

std::vector<uint64_t> keys_of(const Call* c) {
  switch (c->kind()) {
    case OpKind::kGet:
    case OpKind::kPut:
    case OpKind::kDelete: return {c->keys().begin(), c->keys().end()};
    default: return {};
  }
}

// What a client could observe of `calls` run in the order given on a model of
// the store: for each get, the call whose change of each of its keys it
// sees (a write's, a delete's or a touch's; none: null), and the last change
// of every key at the end.
struct Observed {
  std::map<const Call*, std::vector<uint64_t>> seen;
  std::map<uint64_t, uint64_t> final_versions;
  bool operator==(const Observed& o) const { return seen == o.seen && final_versions == o.final_versions; }
};

Observed canonical(const std::vector<Call*>& calls) {
  Observed out;
  std::map<uint64_t, const Call*> last_change;
  for (const Call* c : calls) {
    const bool get = c->kind() == OpKind::kGet;
    std::vector<uint64_t>& seen = out.seen[c];
    for (uint64_t k : keys_of(c)) {
      if (get) seen.push_back(reinterpret_cast<uint64_t>(last_change[k]));
      if (!get || c->get().touch) last_change[k] = c;
    }
  }
  for (const auto& [k, c] : last_change) out.final_versions[k] = reinterpret_cast<uint64_t>(c);
  return out;
}

// The batch as text (failure messages): a kind and the keys of each call.
std::string describe(const std::vector<Call*>& calls) {
  std::string out;
  for (const Call* c : calls) {
    out += c->kind() == OpKind::kGet      ? (c->get().touch ? "T" : "G")
           : c->kind() == OpKind::kPut    ? "P"
           : c->kind() == OpKind::kDelete ? "D"
                                          : "S";
    out += "(";
    for (uint64_t k : keys_of(c)) out += std::to_string(k) + ",";
    out += ") ";
  }
  return out;
}

// The calls of one session, in the order given.
std::vector<Call*> of_session(const std::vector<Call*>& calls, uint64_t session) {
  std::vector<Call*> out;
  for (Call* c : calls) {
    if (c->session == session) out.push_back(c);
  }
  return out;
}

// Runs of consecutive calls of one kind: what the executor applies.
int runs_of(const std::vector<Call*>& calls) {
  int runs = 0;
  for (size_t i = 0; i < calls.size(); ++i) runs += i == 0 || calls[i]->kind() != calls[i - 1]->kind();
  return runs;
}

// One call of a directed case: its kind and keys, its session (0: not
// known), and whether a get touches.
struct Spec {
  OpKind kind;
  std::vector<uint64_t> keys;
  uint64_t session = 0;
  bool touch = false;
};
// A batch in arrival order; whether reorder() changes it and the order it
// leaves (indices into the batch); the runs it then makes, where it matters.
struct Case {
  std::string name;
  std::vector<Spec> batch;
  bool reordered;
  std::vector<size_t> want;
  int runs = -1;
};
// GoogleTest names a failing case by this, not by its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

constexpr OpKind G = OpKind::kGet, P = OpKind::kPut, D = OpKind::kDelete, S = OpKind::kShrink;

const Case kCases[] = {
    {"DisjointWritesGoFirstInTheirOrderAndGetsKeepTheirs",
     {{G, {1, 2}}, {P, {10}}, {G, {3}}, {D, {11}}, {G, {4}}},
     true,
     {1, 3, 0, 2, 4}},
    {"AWriteOfAKeyReadBeforeItStaysAfterTheRead", {{G, {5}}, {G, {7, 8}}, {P, {8}}}, false, {0, 1, 2}},
    {"NothingToGainLeavesTheBatchAlone", {{P, {1}}, {S, {}}, {G, {2}}}, false, {0, 1, 2}},
    // Five runs in arrival order. put 3 goes first; get 1 and get 2 share a
    // run; put 1 follows get 1; the last get 1 follows put 1: four runs.
    {"AKeyReadThenWrittenSplitsOnlyWhatItMust",
     {{G, {1}}, {P, {1}}, {G, {2}}, {P, {3}}, {G, {1}}},
     true,
     {3, 0, 2, 1, 4},
     4},
    // The touch follows the put, the plain get of 1 follows the touch in the
    // same get run (a run keeps arrival order), get 2 and get 9 join it; the
    // last put follows the touch and the get of its key.
    {"ATouchIsOrderedLikeAWriteInTheGetRuns",
     {{G, {9}}, {P, {1}}, {G, {1}, 0, /*touch=*/true}, {G, {1}}, {G, {2}}, {P, {1}}},
     true,
     {1, 0, 2, 3, 4, 5}},
    // Session 1 reads key 1 and then key 2, session 2 writes key 1 between
    // them: the write may go first (one write run, one get run).
    {"CallsOfDifferentSessionsAreConcurrent", {{G, {1}, 1}, {P, {1}, 2}, {G, {2}, 1}}, true, {1, 0, 2}},
    // With the write's session not known, session 1's read of key 1 comes first.
    {"AWriteOfNoKnownSessionFollowsTheReadsBeforeIt", {{G, {1}, 1}, {P, {1}, 0}, {G, {2}, 1}}, true, {0, 2, 1}},
    // One session: its get of key 1 reads before its own write of key 1.
    {"ASessionKeepsItsOwnOrder", {{G, {1}, 7}, {P, {1}, 7}, {G, {1}, 7}}, false, {0, 1, 2}},
};

class RunOrderCase : public ::testing::TestWithParam<Case> {};

TEST_P(RunOrderCase, LeavesTheOrderExpected) {
  const Case& c = GetParam();
  std::vector<std::unique_ptr<Owned>> own;
  bool one_session = true;
  for (const Spec& spec : c.batch) {
    own.push_back(make(spec.kind, spec.keys));
    own.back()->call.session = spec.session;
    if (spec.touch) std::get<GetOp>(own.back()->call.op).touch = true;
    one_session = one_session && spec.session == c.batch.front().session;
  }
  std::vector<Call*> calls = calls_of(own);
  const Observed before = canonical(calls);
  RunOrder order;
  EXPECT_EQ(order.reorder(calls), c.reordered) << describe(calls);
  std::vector<Call*> want;
  for (size_t i : c.want) want.push_back(&own[i]->call);
  EXPECT_EQ(calls, want) << "got " << describe(calls);
  if (c.runs >= 0) EXPECT_EQ(runs_of(calls), c.runs);
  // Within one session every get must see what it saw in arrival order;
  // calls of different sessions are concurrent, so theirs may differ.
  if (one_session) EXPECT_EQ(canonical(calls), before) << describe(calls);
}

INSTANTIATE_TEST_SUITE_P(RunOrder, RunOrderCase, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(RunOrder, RandomBatchesLookTheSameToEveryClientInFewerRuns) {
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  RunOrder order;  // reused, as the executor does
  int reordered = 0, fewer = 0;
  for (int batch = 0; batch < 3000; ++batch) {
    std::vector<std::unique_ptr<Owned>> own;
    const int n = 1 + static_cast<int>(rng() % 30);
    const uint64_t sessions = rng() % 4;
    const uint64_t key_range = 3 + rng() % 200;
    for (int i = 0; i < n; ++i) {
      const int r = static_cast<int>(rng() % 20);
      const OpKind kind = r < 14 ? OpKind::kGet : r < 17 ? OpKind::kPut : r < 19 ? OpKind::kDelete : OpKind::kShrink;
      std::vector<uint64_t> keys;
      if (kind != OpKind::kShrink) {
        for (int k = 1 + static_cast<int>(rng() % 4); k > 0; --k) keys.push_back(rng() % key_range);
      }
      own.push_back(make(kind, keys));
      if (kind == OpKind::kGet && rng() % 8 == 0) std::get<GetOp>(own.back()->call.op).touch = true;
      // Sessions: none known (every key ordered across the batch), or one
      // to three, with now and then a call of no known session among them.
      own.back()->call.session = sessions == 0 || rng() % 40 == 0 ? 0 : 1 + rng() % sessions;
    }
    std::vector<Call*> calls = calls_of(own);
    const bool by_session = std::all_of(calls.begin(), calls.end(), [](const Call* c) { return c->session != 0; });
    const Observed before = by_session ? Observed{} : canonical(calls);
    std::map<uint64_t, Observed> before_by_session;
    if (by_session) {
      for (const Call* c : calls) before_by_session[c->session] = canonical(of_session(calls, c->session));
    }
    const int runs_before = runs_of(calls);
    const std::string was = describe(calls);
    const bool moved = order.reorder(calls);
    reordered += moved;
    if (by_session) {
      // Each session sees what its own order gives; across sessions any
      // order is linearizable (their calls in one batch are concurrent).
      for (const auto& [session, seen] : before_by_session) {
        ASSERT_EQ(canonical(of_session(calls, session)), seen) << "seed " << seed << " batch " << batch;
      }
    } else {
      ASSERT_EQ(canonical(calls), before) << "seed " << seed << " batch " << batch;
    }
    ASSERT_EQ(calls.size(), own.size());
    ASSERT_LE(runs_of(calls), runs_before) << "seed " << seed << " batch " << batch << "\n"
                                           << was << "\n"
                                           << describe(calls);
    fewer += runs_of(calls) < runs_before;
  }
  EXPECT_GT(reordered, 1000) << "seed " << seed << ": the test should exercise reordering";
  EXPECT_GT(fewer, 1000) << "seed " << seed;
}

// A packed get (GetOp::key_sessions, the memcached port's): session 1
// writes key 5 and then reads it in the pack; session 2 reads key 6 in the
// pack and then writes it. Each key keeps its session's order: the pack
// follows put 5 and precedes put 6, three runs as they came. Were the pack
// one session's (say 1's), put 6 of session 2 would move before it.
TEST(RunOrder, APackedGetKeepsEachKeysSessionOrder) {
  for (const bool per_key : {true, false}) {
    std::vector<std::unique_ptr<Owned>> own;
    own.push_back(make(OpKind::kPut, {5}));
    own.back()->call.session = 1;
    own.push_back(make(OpKind::kGet, {5, 6}));
    own.back()->call.session = 1;
    const std::vector<uint64_t> sessions = {1, 2};
    if (per_key) std::get<GetOp>(own.back()->call.op).key_sessions = sessions;
    own.push_back(make(OpKind::kPut, {6}));
    own.back()->call.session = 2;
    std::vector<Call*> calls = calls_of(own);
    RunOrder order;
    if (per_key) {
      EXPECT_FALSE(order.reorder(calls)) << describe(calls);
      EXPECT_EQ(calls, (std::vector<Call*>{&own[0]->call, &own[1]->call, &own[2]->call})) << describe(calls);
    } else {
      EXPECT_TRUE(order.reorder(calls)) << describe(calls);
      EXPECT_EQ(calls, (std::vector<Call*>{&own[0]->call, &own[2]->call, &own[1]->call})) << describe(calls);
    }
  }
}

// What session s could observe of `calls` in the order given: for each of
// its reads of a key (a packed get's keys of s, or every key of its own
// calls), the write of that key by s that it sees; and s's last write of
// every key.
Observed seen_by(const std::vector<Call*>& calls, uint64_t s) {
  Observed out;
  std::map<uint64_t, const Call*> last_change;
  for (const Call* c : calls) {
    const bool get = c->kind() == OpKind::kGet;
    const std::vector<uint64_t> keys = keys_of(c);
    const absl::Span<const uint64_t> sessions = get ? c->get().key_sessions : absl::Span<const uint64_t>();
    std::vector<uint64_t>& seen = out.seen[c];
    for (size_t i = 0; i < keys.size(); ++i) {
      if ((sessions.empty() ? c->session : sessions[i]) != s) continue;
      if (get) seen.push_back(reinterpret_cast<uint64_t>(last_change[keys[i]]));
      if (!get || c->get().touch) last_change[keys[i]] = c;
    }
  }
  for (const auto& [k, c] : last_change) out.final_versions[k] = reinterpret_cast<uint64_t>(c);
  return out;
}

TEST(RunOrder, RandomBatchesWithPackedGetsLookTheSameToEverySession) {
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  RunOrder order;
  int fewer = 0;
  for (int batch = 0; batch < 2000; ++batch) {
    std::vector<std::unique_ptr<Owned>> own;
    std::vector<std::vector<uint64_t>> key_sessions;  // the packs' (their calls view them)
    key_sessions.reserve(30);
    const int n = 1 + static_cast<int>(rng() % 30);
    const uint64_t sessions = 1 + rng() % 4;
    const uint64_t key_range = 3 + rng() % 100;
    for (int i = 0; i < n; ++i) {
      const int r = static_cast<int>(rng() % 20);
      const OpKind kind = r < 14 ? OpKind::kGet : r < 17 ? OpKind::kPut : OpKind::kDelete;
      const bool pack = kind == OpKind::kGet && rng() % 2 == 0;
      std::vector<uint64_t> keys;
      for (int k = (pack ? 2 + static_cast<int>(rng() % 12) : 1 + static_cast<int>(rng() % 4)); k > 0; --k) {
        keys.push_back(rng() % key_range);
      }
      own.push_back(make(kind, keys));
      own.back()->call.session = 1 + rng() % sessions;
      if (pack) {
        key_sessions.emplace_back();
        for (size_t k = 0; k < keys.size(); ++k) key_sessions.back().push_back(1 + rng() % sessions);
        std::get<GetOp>(own.back()->call.op).key_sessions = key_sessions.back();
      } else if (kind == OpKind::kGet && rng() % 8 == 0) {
        std::get<GetOp>(own.back()->call.op).touch = true;
      }
    }
    std::vector<Call*> calls = calls_of(own);
    std::map<uint64_t, Observed> before;
    for (uint64_t s = 1; s <= sessions; ++s) before[s] = seen_by(calls, s);
    const int runs_before = runs_of(calls);
    order.reorder(calls);
    for (const auto& [s, seen] : before) {
      ASSERT_EQ(seen_by(calls, s), seen) << "seed " << seed << " batch " << batch << " session " << s;
    }
    ASSERT_LE(runs_of(calls), runs_before) << "seed " << seed << " batch " << batch;
    fewer += runs_of(calls) < runs_before;
  }
  EXPECT_GT(fewer, 500) << "seed " << seed << ": the test should exercise reordering";
}

}  // namespace
}  // namespace gphkv::server
