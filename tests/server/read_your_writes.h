// Concurrent clients doing random put/delete/get batches over loopback, each
// checking every answer against a model of its own keys (keys interleave
// across clients, t + clients * i, so batches mix them). Used by the CPU and
// CUDA service tests.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/server/test_server.h"

namespace gphkv::testing {

struct ReadYourWritesLoad {
  int clients = 16;
  int ops = 150;            // calls per client
  int max_keys = 8;         // keys per call: 1 .. max_keys
  uint64_t key_slots = 64;  // keys per client
  int max_value = 100;      // padding bytes after "key@op"
  uint64_t seed = 0;        // client t seeds its generator with seed + t
};

// Runs the load; returns the number of wrong answers (each also reported
// with ADD_FAILURE, the first ten).
inline int run_read_your_writes(const server::Server& server, const ReadYourWritesLoad& load) {
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < load.clients; ++t) {
    threads.emplace_back([&, t] {
      auto client = connect(server);
      std::mt19937_64 rng(load.seed + t);
      std::map<uint64_t, std::string> model;  // this client's keys only
      auto fail = [&](const std::string& what) {
        if (failures.fetch_add(1) < 10) ADD_FAILURE() << "seed " << load.seed << " client " << t << ": " << what;
      };
      for (int op = 0; op < load.ops; ++op) {
        std::vector<uint64_t> keys;
        const int n = 1 + static_cast<int>(rng() % load.max_keys);
        for (int i = 0; i < n; ++i) keys.push_back(t + load.clients * (rng() % load.key_slots));
        const int what = static_cast<int>(rng() % 10);
        if (what < 4) {
          std::vector<std::string> values;
          for (uint64_t k : keys) values.push_back(absl::StrCat(k, "@", op, std::string(rng() % load.max_value, '.')));
          auto r = client->Put(keys, std::vector<std::string_view>(values.begin(), values.end()));
          if (!r.ok()) return fail(r.status().ToString());
          for (size_t i = 0; i < keys.size(); ++i) model[keys[i]] = values[i];
        } else if (what < 5) {
          auto r = client->Delete(keys);
          if (!r.ok()) return fail(r.status().ToString());
          for (size_t i = 0; i < keys.size(); ++i) {
            const bool expected = model.erase(keys[i]) == 1;
            if ((*r)[i] != expected) fail(absl::StrCat("delete of ", keys[i], " said ", (*r)[i]));
          }
        } else {
          auto r = client->Get(keys);
          if (!r.ok()) return fail(r.status().ToString());
          for (size_t i = 0; i < keys.size(); ++i) {
            auto it = model.find(keys[i]);
            if (r->found(i) != (it != model.end())) {
              fail(absl::StrCat("key ", keys[i], " found=", r->found(i)));
            } else if (it != model.end() && r->value(i) != it->second) {
              fail(absl::StrCat("key ", keys[i], " read '", std::string(r->value(i)), "' after writing '", it->second,
                                "'"));
            }
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  return failures.load();
}

}  // namespace gphkv::testing
