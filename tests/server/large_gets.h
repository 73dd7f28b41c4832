// issue 30's gets, as a test: each thread puts its keys, then sends many
// 1000-key gets at once, which its coalescing client packs into messages
// of up to 16384 keys that a server of several partitions cuts over them.
// Every get's answer must match the thread's model (so the parts' answers
// were merged back in request order, into the right request's slice), and
// a put acknowledged before must be seen; the split calls' and messages'
// stages are observed (split_wait and merge only with several partitions).
// For any backend: on CUDA the pipelined gets' slots are reused while the
// calls are answered.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/server/test_server.h"

namespace gphkv::testing {

// A stage's observations in a metrics page (0 when absent).
inline double stage_count(const std::string& page, const std::string& stage) {
  const std::string name = absl::StrCat("gphkv_call_stage_seconds_count{stage=\"", stage, "\"} ");
  const size_t at = page.find(name);
  return at == std::string::npos ? 0 : std::stod(page.substr(at + name.size()));
}

// `partitions`: the server's (1: nothing is split).
inline void run_large_coalesced_gets(server::Server& server, uint32_t partitions) {
  auto value_for = [](uint64_t key, int version) {
    return absl::StrCat(key, "#", version, std::string((key + version) % 40, '.'));
  };
  constexpr int kThreads = 3, kRounds = 3, kGetsPerRound = 24, kKeysPerGet = 1000, kKeysPerThread = 3000;
  std::atomic<int> failures{0};
  auto fail = [&](const std::string& what) {
    if (failures.fetch_add(1) < 10) ADD_FAILURE() << what;
  };
  const uint32_t seed = std::random_device{}();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto client = connect(server);  // coalescing (the default)
      std::mt19937_64 rng(seed + t);
      std::unordered_map<uint64_t, std::string> model;
      auto key_of = [t](uint64_t i) { return (i * kThreads + t) * 0x9e3779b97f4a7c15ull; };
      for (int round = 0; round < kRounds; ++round) {
        // A new version of a random half of the keys (the rest stay missing in round 0).
        std::vector<uint64_t> keys;
        std::vector<std::string> values;
        for (uint64_t i = 0; i < kKeysPerThread; ++i) {
          if (rng() % 2 != 0) continue;
          keys.push_back(key_of(i));
          values.push_back(value_for(keys.back(), round));
        }
        auto put = client->Put(keys, std::vector<std::string_view>(values.begin(), values.end()));
        if (!put.ok()) return fail(put.status().ToString());
        for (size_t i = 0; i < keys.size(); ++i) model[keys[i]] = values[i];
        // Many gets at once, with repeated keys, answered in any order.
        std::vector<std::vector<uint64_t>> gets(kGetsPerRound);
        std::vector<absl::StatusOr<GetResult>> results(kGetsPerRound, absl::UnknownError("not answered"));
        std::atomic<int> pending{kGetsPerRound};
        std::mutex mu;
        std::condition_variable cv;
        for (int g = 0; g < kGetsPerRound; ++g) {
          for (int i = 0; i < kKeysPerGet; ++i) gets[g].push_back(key_of(rng() % kKeysPerThread));
          client->GetAsync(gets[g], false, [&, g](absl::StatusOr<GetResult> r) {
            results[g] = std::move(r);
            if (pending.fetch_sub(1) == 1) {
              std::lock_guard<std::mutex> lock(mu);
              cv.notify_all();
            }
          });
        }
        {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock, [&] { return pending.load() == 0; });
        }
        for (int g = 0; g < kGetsPerRound; ++g) {
          if (!results[g].ok()) return fail(results[g].status().ToString());
          const GetResult& r = *results[g];
          if (r.size() != gets[g].size()) return fail(absl::StrCat("get ", g, ": ", r.size(), " answers"));
          for (size_t i = 0; i < gets[g].size(); ++i) {
            auto it = model.find(gets[g][i]);
            if (r.found(i) != (it != model.end()) || (r.found(i) && r.value(i) != it->second)) {
              fail(absl::StrCat("thread ", t, " round ", round, " get ", g, " key ", i, ": ",
                                r.found(i) ? std::string(r.value(i)) : "missing"));
            }
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  const std::string page = server.render_metrics();
  EXPECT_GT(stage_count(page, "serialize"), 0) << "no Batches message serialized";
  EXPECT_GT(stage_count(page, "send"), 0) << "no Batches answer written";
  if (partitions == 1) {
    EXPECT_EQ(stage_count(page, "split_wait"), 0);
    EXPECT_EQ(stage_count(page, "merge"), 0);
  } else {
    // Every 1000-key get spans every partition: each message's packed gets were split.
    EXPECT_GT(stage_count(page, "split_wait"), 0);
    EXPECT_EQ(stage_count(page, "merge"), stage_count(page, "split_wait"));
  }
}

}  // namespace gphkv::testing
