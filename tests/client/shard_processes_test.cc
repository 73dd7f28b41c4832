// Four gphkv-server processes (CPU backend) and one ShardedClient shared by
// concurrent writers and readers, checked against a model: each writer owns
// its keys and reads its own writes exactly; readers read everyone's keys and
// may never see a value older than one acknowledged before their read began
// (nor a key's value under another key). The keys spread evenly (each shard
// within 10% of the mean, and exactly where the router puts them). Then one
// shard is killed mid-run: its keys fail with UNAVAILABLE naming it, the
// other shards keep serving, and afterwards every write acknowledged on a
// live shard, fully or as a listed part of a failed call, reads back.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <random>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gphkv/client/shard_router.h"
#include "gphkv/client/sharded_client.h"
#include "gtest/gtest.h"
#include "tests/client/server_process.h"
#include "tests/loadgen/test_seed.h"

namespace gphkv {
namespace {

using loadgen::testing::TempDir;
using loadgen::testing::TestSeed;

constexpr int kShards = 4;
constexpr int kWriters = 4;
constexpr int kReaders = 4;
constexpr int kKeysPerWriter = 2000;

// "key=K;v=V;" plus padding: a value says which key and version it is.
std::string value_of(uint64_t key, int64_t version, size_t pad) {
  return absl::StrCat("key=", key, ";v=", version, ";", std::string(pad, '.'));
}
bool parse_value(absl::string_view v, uint64_t* key, int64_t* version) {
  std::vector<absl::string_view> parts = absl::StrSplit(v, ';');
  return parts.size() == 3 && absl::ConsumePrefix(&parts[0], "key=") && absl::ConsumePrefix(&parts[1], "v=") &&
         absl::SimpleAtoi(parts[0], key) && absl::SimpleAtoi(parts[1], version);
}

// What the test knows of each key, shared between its writer and the readers.
struct KeyState {
  // The last acknowledged write: its version, negated for a delete; 0 none.
  std::atomic<int64_t> acked{0};
  // Deletes sent and answered so far: a reader's miss is allowed when one
  // was under way at some time during its read.
  std::atomic<uint32_t> deletes_sent{0};
  std::atomic<uint32_t> deletes_answered{0};
  // Set once a write to it failed on the killed shard: its state is unknown.
  std::atomic<bool> lost{false};
};

struct RunState {
  std::vector<uint64_t> keys;  // writer w owns keys[w * kKeysPerWriter ...]
  std::vector<KeyState> state;
  std::atomic<bool> stop{false};
  std::string dead;  // the shard to be killed, chosen before the run
  std::atomic<bool> killed{false};
  std::atomic<int> violations{0};
  std::atomic<uint64_t> ok_calls_after_kill{0}, failed_calls_after_kill{0}, live_only_failures{0};
  uint64_t seed = 0;

  void fail(const std::string& what) {
    if (violations.fetch_add(1) < 10) ADD_FAILURE() << "seed " << seed << ": " << what;
  }
};

// A failed call must be the killed shard's doing: UNAVAILABLE, naming it, its
// account listing it alone. Returns the account.
ShardedCallFailure check_failure(RunState& run, const absl::Status& s, const char* op) {
  auto f = ShardedCallFailureOf(s);
  if (!run.killed.load()) {
    run.fail(absl::StrCat(op, " failed before any shard was killed: ", s.ToString()));
  } else if (!f || f->failed.size() != 1 || f->failed[0].shard != run.dead ||
             s.code() != absl::StatusCode::kUnavailable ||
             s.message().find("shard " + run.dead + " failed") == std::string_view::npos) {
    run.fail(absl::StrCat(op, ": a failure that is not the killed shard's UNAVAILABLE: ", s.ToString()));
  }
  return f.value_or(ShardedCallFailure{});
}

// Which of a write's `n` keys were applied: all when it succeeded, else
// those its account lists (after checking the failure is the killed shard's).
std::vector<bool> applied_keys(RunState& run, const absl::Status& s, size_t n, const char* op) {
  std::vector<bool> applied(n, s.ok());
  if (!s.ok()) {
    for (uint32_t i : check_failure(run, s, op).applied) applied[i] = true;
  }
  return applied;
}

void writer(RunState& run, ShardedClient& client, const ShardRouter& router, const std::vector<std::string>& names,
            int w) {
  std::mt19937_64 rng(run.seed + w);
  const size_t first = static_cast<size_t>(w) * kKeysPerWriter;
  std::vector<int64_t> version(kKeysPerWriter, 1);  // the load wrote version 1 of every key
  std::map<uint64_t, std::string> mine;             // exact model of this writer's keys (lost ones dropped)
  for (size_t i = first; i < first + kKeysPerWriter; ++i) mine[run.keys[i]] = value_of(run.keys[i], 1, 8);
  while (!run.stop.load()) {
    std::vector<size_t> picked(1 + rng() % 12);
    for (auto& i : picked) i = first + rng() % kKeysPerWriter;
    std::vector<uint64_t> keys;
    bool touches_dead = false;
    for (size_t i : picked) {
      keys.push_back(run.keys[i]);
      touches_dead |= names[router.shard_of(run.keys[i])] == run.dead;
    }
    const int what = static_cast<int>(rng() % 10);
    absl::Status status;
    if (what < 5) {  // put
      std::vector<std::string> values;
      std::vector<int64_t> versions;
      for (size_t i : picked) {
        versions.push_back(++version[i - first]);
        values.push_back(value_of(run.keys[i], versions.back(), rng() % 64));
      }
      status = client.Put(keys, std::vector<std::string_view>(values.begin(), values.end())).status();
      const std::vector<bool> applied = applied_keys(run, status, keys.size(), "put");
      for (size_t j = 0; j < keys.size(); ++j) {
        KeyState& st = run.state[picked[j]];
        if (applied[j]) {
          st.acked.store(versions[j]);
          mine[keys[j]] = values[j];
        } else {
          st.lost.store(true);
          mine.erase(keys[j]);
        }
      }
    } else if (what < 7) {  // delete
      std::vector<int64_t> versions;
      for (size_t i : picked) {
        versions.push_back(++version[i - first]);
        run.state[i].deletes_sent.fetch_add(1);
      }
      status = client.Delete(keys).status();
      const std::vector<bool> applied = applied_keys(run, status, keys.size(), "delete");
      for (size_t j = 0; j < keys.size(); ++j) {
        KeyState& st = run.state[picked[j]];
        if (applied[j]) {
          st.acked.store(-versions[j]);
        } else {
          st.lost.store(true);
        }
        mine.erase(keys[j]);
      }
      // After the acknowledgement is recorded: a reader that sees the count
      // sees the delete in `acked` too (it reads them in the other order).
      for (size_t i : picked) run.state[i].deletes_answered.fetch_add(1);
    } else {  // read my writes
      auto r = client.Get(keys);
      status = r.status();
      if (!r.ok()) {
        check_failure(run, r.status(), "get");
      } else {
        for (size_t j = 0; j < keys.size(); ++j) {
          if (run.state[picked[j]].lost.load()) continue;
          auto it = mine.find(keys[j]);
          if (r->found(j) != (it != mine.end()) || (r->found(j) && r->value(j) != it->second)) {
            run.fail(absl::StrCat("writer ", w, " key ", keys[j], " read ",
                                  r->found(j) ? std::string(r->value(j)) : "(nothing)", " after writing ",
                                  it == mine.end() ? "(deleted)" : it->second));
          }
        }
      }
    }
    if (run.killed.load()) {
      (status.ok() ? run.ok_calls_after_kill : run.failed_calls_after_kill).fetch_add(1);
      if (!status.ok() && !touches_dead) run.live_only_failures.fetch_add(1);
    }
  }
}

void reader(RunState& run, ShardedClient& client, int r_index) {
  std::mt19937_64 rng(run.seed + 1000 + r_index);
  std::vector<int64_t> seen(run.keys.size(), 0);  // the newest version this reader saw, per key
  while (!run.stop.load()) {
    std::vector<size_t> picked(1 + rng() % 24);
    for (auto& i : picked) i = rng() % run.keys.size();
    std::vector<uint64_t> keys;
    std::vector<int64_t> acked_before;
    std::vector<uint32_t> answered_before;
    for (size_t i : picked) {
      keys.push_back(run.keys[i]);
      answered_before.push_back(run.state[i].deletes_answered.load());
      acked_before.push_back(run.state[i].acked.load());
    }
    auto r = client.Get(keys);
    if (!r.ok()) {
      check_failure(run, r.status(), "reader's get");
      continue;
    }
    for (size_t j = 0; j < keys.size(); ++j) {
      const KeyState& st = run.state[picked[j]];
      if (st.lost.load()) continue;
      if (!r->found(j)) {
        const bool may_miss = acked_before[j] <= 0 || st.deletes_sent.load() > answered_before[j];
        if (!may_miss)
          run.fail(absl::StrCat("key ", keys[j], " missing after version ", acked_before[j], " was acknowledged"));
        continue;
      }
      uint64_t key = 0;
      int64_t version = 0;
      if (!parse_value(absl::string_view(r->value(j).data(), r->value(j).size()), &key, &version) || key != keys[j]) {
        run.fail(absl::StrCat("key ", keys[j], " answered with '", std::string(r->value(j).substr(0, 40)), "'"));
        continue;
      }
      // At least the acknowledged put, or a put after the acknowledged delete.
      const int64_t oldest = acked_before[j] > 0 ? acked_before[j] : -acked_before[j] + 1;
      if (version < oldest) {
        run.fail(absl::StrCat("key ", keys[j], " read version ", version, " after ", acked_before[j],
                              " was acknowledged (negative: a delete)"));
      }
      if (version < seen[picked[j]]) {
        run.fail(absl::StrCat("key ", keys[j], " went back from version ", seen[picked[j]], " to ", version));
      }
      seen[picked[j]] = std::max(seen[picked[j]], version);
    }
  }
}

TEST(ShardProcesses, ConcurrentWritersAndReadersAcrossFourShardsAndOneKilled) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(absl::StrCat("GPHKV_TEST_SEED=", seed));
  const std::string dir = TempDir("shard-processes");
  std::vector<std::unique_ptr<testing::ServerProcess>> servers;
  std::vector<std::string> addresses;
  for (int i = 0; i < kShards; ++i) {
    // Each on a loopback address of its own: once the victim is killed, its
    // port may go to another test's server (ctest runs tests side by side),
    // which must not answer the client in its place.
    servers.push_back(std::make_unique<testing::ServerProcess>(
        absl::StrCat(dir, "/server", i, ".log"),
        std::vector<std::string>{absl::StrCat("--listen_address=", testing::UnsharedLoopbackHost(), ":0")}));
    ASSERT_TRUE(servers.back()->WaitServing()) << servers.back()->log();
    addresses.push_back(servers.back()->address());
  }
  ClientOptions o;
  o.timeout = std::chrono::milliseconds(5000);
  o.max_attempts = 2;
  auto connected = ShardedClient::Connect(absl::StrJoin(addresses, ","), o);
  ASSERT_TRUE(connected.ok()) << connected.status();
  ShardedClient& client = **connected;
  const std::vector<std::string> names = client.shard_names();
  ASSERT_EQ(names, addresses);
  const ShardRouter router(names);

  RunState run;
  run.seed = seed;
  std::mt19937_64 rng(seed);
  run.keys.resize(kWriters * kKeysPerWriter);
  for (auto& k : run.keys) k = rng();
  run.state = std::vector<KeyState>(run.keys.size());
  const int victim = static_cast<int>(seed % kShards);
  run.dead = names[victim];

  // Every key written once (version 1), in calls spanning shards; then the spread.
  for (size_t i = 0; i < run.keys.size(); i += 100) {
    std::vector<uint64_t> keys(run.keys.begin() + i, run.keys.begin() + i + 100);
    std::vector<std::string> values;
    for (uint64_t k : keys) values.push_back(value_of(k, 1, 8));
    ASSERT_TRUE(client.Put(keys, std::vector<std::string_view>(values.begin(), values.end())).ok());
  }
  for (auto& st : run.state) st.acked.store(1);
  std::vector<uint64_t> expected(kShards, 0);
  for (uint64_t k : run.keys) ++expected[router.shard_of(k)];
  const double mean = static_cast<double>(run.keys.size()) / kShards;
  const auto stats = client.Stats();
  for (int s = 0; s < kShards; ++s) {
    ASSERT_TRUE(stats[s].answer.ok()) << stats[s].shard;
    EXPECT_EQ(stats[s].answer->keys(), expected[s]) << stats[s].shard << " holds other keys than the router gives it";
    EXPECT_NEAR(static_cast<double>(stats[s].answer->keys()), mean, 0.10 * mean) << stats[s].shard;
  }

  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) threads.emplace_back([&, w] { writer(run, client, router, names, w); });
  for (int r = 0; r < kReaders; ++r) threads.emplace_back([&, r] { reader(run, client, r); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  run.killed.store(true);
  servers[victim]->Crash();
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  run.stop.store(true);
  for (auto& t : threads) t.join();

  std::printf("after the kill of %s: %llu calls answered, %llu failed (all touching it)\n", run.dead.c_str(),
              static_cast<unsigned long long>(run.ok_calls_after_kill.load()),
              static_cast<unsigned long long>(run.failed_calls_after_kill.load()));
  EXPECT_EQ(run.violations.load(), 0);
  EXPECT_GT(run.ok_calls_after_kill.load(), 0u) << "the live shards must keep serving";
  EXPECT_GT(run.failed_calls_after_kill.load(), 0u) << "calls touching the killed shard must fail";
  EXPECT_EQ(run.live_only_failures.load(), 0u) << "a call that touched only live shards failed";

  // Nothing acknowledged on a live shard is lost (read back in calls of
  // up to 500 keys of live shards); the dead shard's keys fail naming it.
  std::vector<size_t> live, dead;
  for (size_t i = 0; i < run.keys.size(); ++i)
    (names[router.shard_of(run.keys[i])] == run.dead ? dead : live).push_back(i);
  ASSERT_FALSE(dead.empty());
  auto lost = client.Get(std::vector<uint64_t>{run.keys[dead[0]], run.keys[dead[1]]});
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(lost.status().message().find("shard " + run.dead), std::string_view::npos) << lost.status();
  for (size_t from = 0; from < live.size(); from += 500) {
    std::vector<size_t> batch(live.begin() + from, live.begin() + std::min(live.size(), from + 500));
    std::vector<uint64_t> keys;
    for (size_t i : batch) keys.push_back(run.keys[i]);
    auto r = client.Get(keys);
    ASSERT_TRUE(r.ok()) << r.status();
    for (size_t j = 0; j < batch.size(); ++j) {
      const KeyState& st = run.state[batch[j]];
      ASSERT_FALSE(st.lost.load()) << "key " << keys[j] << " of a live shard was reported failed";
      const int64_t acked = st.acked.load();
      if (acked < 0) {
        EXPECT_FALSE(r->found(j)) << "key " << keys[j] << " deleted at version " << -acked << " reads back";
        continue;
      }
      uint64_t key = 0;
      int64_t version = -1;
      ASSERT_TRUE(r->found(j)) << "key " << keys[j] << " acknowledged at version " << acked << " is gone";
      ASSERT_TRUE(parse_value(absl::string_view(r->value(j).data(), r->value(j).size()), &key, &version));
      EXPECT_EQ(key, keys[j]);
      EXPECT_EQ(version, acked) << "key " << keys[j];
    }
  }
}

}  // namespace
}  // namespace gphkv
