// The service on the CUDA backend (device value heap, pipelined gets):
// read-your-writes for concurrent clients against each client's model, and
// Stats naming the GPU. Skips without a CUDA device.
#include <atomic>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gphkv/engine/table.h"
#include "tests/server/test_server.h"

namespace gphkv::testing {
namespace {

std::vector<std::string_view> as_views(const std::vector<std::string>& v) {
  return std::vector<std::string_view>(v.begin(), v.end());
}

TEST(CudaService, ReadYourWritesUnderManyConcurrentClients) {
  if (engine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  server::ServerOptions o = test_options();
  o.backend = server::BackendChoice::kCuda;
  o.batcher.max_delay = std::chrono::microseconds(50);
  auto server = start_server(o);
  ASSERT_NE(server, nullptr);
  constexpr int kClients = 16;
  constexpr int kOps = 300;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  const uint64_t seed = std::random_device{}();
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      auto client = connect(*server);
      std::mt19937_64 rng(seed + t);
      std::map<uint64_t, std::string> model;  // this client's keys only
      auto fail = [&](const std::string& what) {
        if (failures.fetch_add(1) < 10) ADD_FAILURE() << "seed " << seed << " client " << t << ": " << what;
      };
      for (int op = 0; op < kOps; ++op) {
        std::vector<uint64_t> keys;
        const int n = 1 + static_cast<int>(rng() % 16);
        for (int i = 0; i < n; ++i) keys.push_back(t + kClients * (rng() % 128));
        const int what = static_cast<int>(rng() % 10);
        if (what < 4) {
          std::vector<std::string> values;
          for (uint64_t k : keys) values.push_back(absl::StrCat(k, "@", op, std::string(rng() % 300, 'v')));
          auto r = client->Put(keys, as_views(values));
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
              fail(absl::StrCat("key ", keys[i], " read '", std::string(r->value(i)), "' after writing '",
                                it->second, "'"));
            }
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  auto stats = connect(*server)->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->backend(), "cuda");
  // The GPU's own name, e.g. "NVIDIA H100 80GB HBM3 (cuda:0)".
  EXPECT_NE(stats->device().find("(cuda:0)"), std::string::npos) << stats->device();
  EXPECT_NE(stats->device().rfind("cuda:0", 0), 0u) << "no device name in " << stats->device();
}

}  // namespace
}  // namespace gphkv::testing
