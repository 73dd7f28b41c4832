// Cache-aside (loadgen/cache_aside.h): the fill a get's answer makes, and the
// drivers' fills against the in-process fake gphkv, checked call by call
// against a model of the store.
#include "loadgen/cache_aside.h"

#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "loadgen/config.h"
#include "loadgen/loadgen.h"
#include "tests/loadgen/fake_gphkv_server.h"
#include "tests/loadgen/small_config.h"

namespace gphkv::loadgen {
namespace {

using testing::FakeGphkvServer;
using testing::SmallConfig;

std::shared_ptr<const Workload> MakeWorkload() {
  WorkloadOptions o;
  o.keys = 1000;
  o.key_pool = 0;
  auto w = Workload::Create(o);
  EXPECT_TRUE(w.ok()) << w.status();
  return *w;
}

Op GetOf(std::vector<uint64_t> keys) {
  Op op;
  op.type = OpType::kGet;
  op.keys = std::move(keys);
  op.version = 7;
  return op;
}

OpResult Found(std::vector<uint64_t> keys) {
  OpResult r;
  r.ok = true;
  r.found = static_cast<uint32_t>(keys.size());
  for (uint64_t k : keys) r.seen.push_back(ValueSeen{k, 0, 1, true});
  return r;
}

TEST(CacheAsideFill, PutsEachMissedKeyOnceInTheGetsOrderWithItsLoadValue) {
  auto w = MakeWorkload();
  const KeySpace& ks = w->key_space();
  const uint64_t a = ks.KeyAt(1), b = ks.KeyAt(2), c = ks.KeyAt(3), d = ks.KeyAt(4);
  CacheAsideFill maker(w.get());
  Op fill;
  // d and b asked twice; b found (twice), d missed twice.
  ASSERT_TRUE(maker.Make(GetOf({d, b, a, d, c, b}), Found({b, c, b}), &fill));
  EXPECT_EQ(fill.type, OpType::kPut);
  EXPECT_EQ(fill.keys, (std::vector<uint64_t>{d, a}));
  EXPECT_EQ(fill.value_sizes, (std::vector<uint32_t>{w->ValueSizeOf(d), w->ValueSizeOf(a)}));
  EXPECT_EQ(fill.version, kFillVersion);
  EXPECT_EQ(kFillVersion, 0u);  // the load phase's: the read check accepts it as a fill's
}

TEST(CacheAsideFill, NothingWhenEverythingWasFoundOrTheGetFailed) {
  auto w = MakeWorkload();
  const uint64_t a = w->key_space().KeyAt(1), b = w->key_space().KeyAt(2);
  CacheAsideFill maker(w.get());
  Op fill;
  EXPECT_FALSE(maker.Make(GetOf({a, b, a}), Found({a, b, a}), &fill));
  OpResult failed;
  failed.ok = false;
  failed.error = "UNAVAILABLE";
  EXPECT_FALSE(maker.Make(GetOf({a, b}), failed, &fill));
  Op put = GetOf({a});
  put.type = OpType::kPut;
  EXPECT_FALSE(maker.Make(put, Found({}), &fill));
  // An empty answer of a get: everything missed.
  ASSERT_TRUE(maker.Make(GetOf({b, a}), Found({}), &fill));
  EXPECT_EQ(fill.keys, (std::vector<uint64_t>{b, a}));
}

std::vector<uint64_t> KeysOf(absl::string_view line, std::string* op) {
  std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
  *op = std::string(f[0]);
  std::vector<uint64_t> keys;
  for (size_t i = 1; i < f.size(); ++i) {
    uint64_t k = 0;
    EXPECT_TRUE(absl::SimpleAtoi(f[i], &k)) << line;
    keys.push_back(k);
  }
  return keys;
}

// One thread, one connection, depth 1: the server sees the calls in the
// order the thread makes them, so a model of the store (a set of keys) says
// what each get missed, and the next call must be the put of exactly those.
// (The fake serves unary calls and Pipeline streams; --api=coalesced runs
// against the real server in gphkv_e2e_test.cc.)
class CacheAsideDriver : public ::testing::TestWithParam<std::tuple<std::string, DriveOptions::Mode>> {};

TEST_P(CacheAsideDriver, EveryGetsMissesArePutNextOnItsConnectionAndCountedApart) {
  FakeGphkvServer server;
  LoadgenConfig c = SmallConfig(server.address());
  c.api = std::get<0>(GetParam());
  c.drive.mode = std::get<1>(GetParam());
  c.drive.rate = 2000;
  c.drive.connections = 1;
  c.drive.warmup_s = 0;
  c.drive.count = 1500;
  c.load = false;  // an empty cache: the fills fill it
  c.workload.keys = 3000;
  c.workload.write_fraction = 0.05;  // the model must follow the workload's own puts and deletes too
  c.workload.delete_fraction = 0.5;
  c.cache_aside = true;
  auto r = RunLoadgen(c);
  ASSERT_TRUE(r.ok()) << r.status();

  std::set<uint64_t> stored;
  // puts: the workload's own (a fill is the put right after a get that missed).
  uint64_t fills = 0, fill_keys = 0, gets = 0, get_keys = 0, hits = 0, puts = 0, deletes = 0;
  const std::vector<std::string> log = server.Log();
  for (size_t i = 0; i < log.size(); ++i) {
    std::string op;
    const std::vector<uint64_t> keys = KeysOf(log[i], &op);
    if (op == "put") {
      ++puts;
      stored.insert(keys.begin(), keys.end());
      continue;
    }
    if (op == "delete") {
      ++deletes;
      for (uint64_t k : keys) stored.erase(k);
      continue;
    }
    ASSERT_EQ(op, "get") << log[i];
    ++gets;
    std::vector<uint64_t> missed;
    std::set<uint64_t> once;
    for (uint64_t k : keys) {
      ++get_keys;
      if (stored.count(k)) {
        ++hits;
      } else if (once.insert(k).second) {
        missed.push_back(k);
      }
    }
    if (missed.empty()) continue;
    ASSERT_LT(i + 1, log.size()) << "no fill after the last get";
    std::string next;
    EXPECT_EQ(KeysOf(log[i + 1], &next), missed) << "after " << log[i];
    EXPECT_EQ(next, "put");
    ++fills;
    fill_keys += missed.size();
    stored.insert(missed.begin(), missed.end());
    ++i;
  }
  EXPECT_EQ(gets, r->run.by_type[0].calls);
  EXPECT_EQ(get_keys, r->run.by_type[0].keys);
  EXPECT_EQ(hits, r->run.by_type[0].found);
  EXPECT_EQ(fills, r->run.fills.calls);
  EXPECT_EQ(fill_keys, r->run.fills.keys);
  EXPECT_EQ(r->run.fills.errors, 0u);
  EXPECT_GT(fills, 100u);
  // The workload's puts are its own: the fills are not among them.
  EXPECT_EQ(puts, r->run.by_type[1].calls);
  EXPECT_GT(puts, 0u);
  EXPECT_EQ(deletes, r->run.by_type[2].calls);
  EXPECT_EQ(r->run.Overall().calls, 1500u);
  EXPECT_EQ(r->read_check.violations(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Apis, CacheAsideDriver,
                         ::testing::Combine(::testing::Values("unary", "pipeline"),
                                            ::testing::Values(DriveOptions::Mode::kClosed, DriveOptions::Mode::kOpen)),
                         [](const auto& info) {
                           return std::get<0>(info.param) +
                                  (std::get<1>(info.param) == DriveOptions::Mode::kOpen ? "Open" : "Closed");
                         });

// Without --cache_aside nothing follows a miss.
TEST(CacheAsideDriverOff, AMissIsNotFilled) {
  FakeGphkvServer server;
  LoadgenConfig c = SmallConfig(server.address());
  c.drive.warmup_s = 0;
  c.drive.count = 200;
  c.load = false;
  c.workload.write_fraction = 0;
  auto r = RunLoadgen(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(server.stored(), 0u);
  EXPECT_EQ(r->run.fills.calls, 0u);
  EXPECT_EQ(r->run.by_type[0].found, 0u);
}

}  // namespace
}  // namespace gphkv::loadgen
