// A server of several partitions (--partitions on the CPU backend: the code
// path of --gpus, with a CPU store per partition) driven through
// gphkv::Client: concurrent writers and readers checked against models, the
// keys' spread over the partitions, Stats' totals against their parts, the
// per-partition metrics, the flags it refuses, and a data directory written
// with another partition count.
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/server/large_gets.h"
#include "tests/server/read_your_writes.h"
#include "tests/server/test_server.h"

namespace gphkv::testing {
namespace {

server::ServerOptions partitioned(uint32_t partitions) {
  server::ServerOptions o = test_options();
  o.cpu_partitions = partitions;
  return o;
}

// A value that names its key and version, so a value merged into another
// key's place is caught.
std::string value_for(uint64_t key, int version) {
  return absl::StrCat(key, "#", version, std::string((key + version) % 40, '.'));
}

TEST(PartitionedService, ReadYourWritesUnderManyConcurrentClients) {
  auto server = start_server(partitioned(4));
  ASSERT_NE(server, nullptr);
  ReadYourWritesLoad load;
  load.max_keys = 24;  // calls that span every partition, with repeated keys
  load.seed = std::random_device{}();
  EXPECT_EQ(run_read_your_writes(*server, load), 0);
}

// Writers own disjoint keys and check their own reads; readers read every
// key at once and check that whatever they find is a value of that key; at
// the end one read of everything matches the writers' models merged.
TEST(PartitionedService, ConcurrentWritersAndReadersMatchTheModel) {
  auto server = start_server(partitioned(4));
  ASSERT_NE(server, nullptr);
  constexpr int kWriters = 6, kReaders = 3, kKeysPerWriter = 400, kRounds = 60;
  std::vector<std::unordered_map<uint64_t, std::string>> models(kWriters);
  std::atomic<int> failures{0};
  std::atomic<bool> writing{true};
  auto fail = [&](const std::string& what) {
    if (failures.fetch_add(1) < 10) ADD_FAILURE() << what;
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      ClientOptions options;
      options.coalesce.enabled = w % 2 == 0;  // unary calls and coalesced Batches messages
      auto client = connect(*server, options);
      std::mt19937_64 rng(w);
      auto& model = models[w];
      for (int round = 0; round < kRounds; ++round) {
        std::vector<uint64_t> keys;
        for (int i = 0; i < 32; ++i) keys.push_back(1 + w + kWriters * (rng() % kKeysPerWriter));
        if (round % 5 == 4) {
          auto r = client->Delete(keys);
          if (!r.ok()) return fail(r.status().ToString());
          for (size_t i = 0; i < keys.size(); ++i) {
            if ((*r)[i] != (model.erase(keys[i]) == 1)) fail(absl::StrCat("delete of ", keys[i]));
          }
          continue;
        }
        std::vector<std::string> values;
        for (uint64_t k : keys) values.push_back(value_for(k, round));
        auto put = client->Put(keys, std::vector<std::string_view>(values.begin(), values.end()));
        if (!put.ok()) return fail(put.status().ToString());
        for (size_t i = 0; i < keys.size(); ++i) model[keys[i]] = values[i];
        auto got = client->Get(keys);
        if (!got.ok()) return fail(got.status().ToString());
        for (size_t i = 0; i < keys.size(); ++i) {
          if (!got->found(i) || got->value(i) != model[keys[i]]) {
            fail(absl::StrCat("writer ", w, " read ", keys[i], " as '", std::string(got->value(i)), "'"));
          }
        }
      }
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&] {
      auto client = connect(*server);
      std::vector<uint64_t> all;
      for (uint64_t k = 1; k <= kWriters * kKeysPerWriter; ++k) all.push_back(k);
      while (writing.load()) {
        auto got = client->Get(all);
        if (!got.ok()) return fail(got.status().ToString());
        for (size_t i = 0; i < all.size(); ++i) {
          if (got->found(i) && got->value(i).rfind(absl::StrCat(all[i], "#"), 0) != 0) {
            fail(absl::StrCat("key ", all[i], " holds '", std::string(got->value(i)), "'"));
          }
        }
      }
    });
  }
  for (int w = 0; w < kWriters; ++w) threads[w].join();
  writing = false;
  for (size_t t = kWriters; t < threads.size(); ++t) threads[t].join();
  EXPECT_EQ(failures.load(), 0);

  std::unordered_map<uint64_t, std::string> all_model;
  for (const auto& m : models) all_model.insert(m.begin(), m.end());
  std::vector<uint64_t> all;
  for (uint64_t k = 1; k <= kWriters * kKeysPerWriter; ++k) all.push_back(k);
  auto got = connect(*server)->Get(all);
  ASSERT_TRUE(got.ok()) << got.status();
  for (size_t i = 0; i < all.size(); ++i) {
    auto it = all_model.find(all[i]);
    ASSERT_EQ(got->found(i), it != all_model.end()) << all[i];
    if (it != all_model.end()) EXPECT_EQ(got->value(i), it->second) << all[i];
  }
  auto stats = connect(*server)->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->keys(), all_model.size());
}

// issue 30's gets over one, two and four CPU partitions (tests/server/large_gets.h).
TEST(PartitionedService, LargeCoalescedGetsMatchTheModelOnOneAndSeveralPartitions) {
  for (uint32_t partitions : {1u, 2u, 4u}) {
    SCOPED_TRACE(absl::StrCat(partitions, " partitions"));
    auto server = start_server(partitioned(partitions));
    ASSERT_NE(server, nullptr);
    run_large_coalesced_gets(*server, partitions);
  }
}

TEST(PartitionedService, KeysSpreadEvenlyAndStatsTotalTheParts) {
  auto server = start_server(partitioned(4));
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  constexpr uint64_t kKeys = 20000;
  for (uint64_t first = 0; first < kKeys; first += 1000) {
    std::vector<uint64_t> keys;
    std::vector<std::string> values;
    for (uint64_t k = first; k < first + 1000; ++k) {
      keys.push_back(k);
      values.push_back(value_for(k, 0));
    }
    auto put = client->Put(keys, std::vector<std::string_view>(values.begin(), values.end()));
    ASSERT_TRUE(put.ok()) << put.status();
  }
  auto stats = client->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->partitions_size(), 4);
  EXPECT_EQ(stats->keys(), kKeys);
  uint64_t keys = 0, table_bytes = 0, heap_bytes = 0, limit = 0, batches = 0, batched_keys = 0;
  double max_load = 0;
  for (int p = 0; p < 4; ++p) {
    const v1::PartitionStats& part = stats->partitions(p);
    EXPECT_EQ(part.partition(), static_cast<uint32_t>(p));
    EXPECT_EQ(part.gpu(), -1) << "the CPU backend has no GPU";
    EXPECT_NEAR(static_cast<double>(part.keys()), kKeys / 4.0, kKeys / 40.0) << "partition " << p;
    keys += part.keys();
    table_bytes += part.table_bytes();
    heap_bytes += part.value_heap_bytes();
    limit += part.memory_limit_bytes();
    batches += part.batches();
    batched_keys += part.batched_keys();
    max_load = std::max(max_load, part.load_factor());
  }
  EXPECT_EQ(stats->keys(), keys);
  EXPECT_EQ(stats->table_bytes(), table_bytes);
  EXPECT_EQ(stats->value_heap_bytes(), heap_bytes);
  EXPECT_EQ(stats->memory_limit_bytes(), limit);
  EXPECT_EQ(stats->batches(), batches);
  EXPECT_EQ(stats->batched_keys(), batched_keys);
  EXPECT_DOUBLE_EQ(stats->load_factor(), max_load);
  // --memory is the server's: the partitions share it.
  EXPECT_EQ(limit, test_options().store.memory_limit_bytes);

  // The metrics: a gphkv_gpu_* series per partition, the old names in total.
  const std::string page = server->render_metrics();
  EXPECT_NE(page.find(absl::StrCat("\ngphkv_table_keys ", kKeys, "\n")), std::string::npos) << page;
  for (int p = 0; p < 4; ++p) {
    EXPECT_NE(page.find(absl::StrCat("gphkv_gpu_table_keys{gpu=\"", p, "\"} ", stats->partitions(p).keys(), "\n")),
              std::string::npos)
        << page;
  }
  // Shrink goes to every partition and answers with the server's figures.
  auto shrink = client->Shrink();
  ASSERT_TRUE(shrink.ok()) << shrink.status();
  EXPECT_EQ(shrink->keys(), kKeys);
}

TEST(PartitionedService, OnePartitionServerReportsItsOnePartition) {
  auto server = start_server(test_options());
  ASSERT_NE(server, nullptr);
  auto stats = connect(*server)->Stats();
  ASSERT_TRUE(stats.ok());
  ASSERT_EQ(stats->partitions_size(), 1);
  EXPECT_EQ(stats->partitions(0).memory_limit_bytes(), stats->memory_limit_bytes());
}

TEST(PartitionedService, BadPartitionOptionsAreRefused) {
  keep_grpc_initialized();
  server::ServerOptions none = partitioned(0);
  auto s = server::Server::start(none);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("--partitions must be in [1, "), absl::string_view::npos) << s.status();

  server::ServerOptions gpus_on_cpu = test_options();
  gpus_on_cpu.gpus = std::vector<int>{0};
  s = server::Server::start(gpus_on_cpu);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("--gpus lists CUDA devices, but the backend is cpu"), absl::string_view::npos)
      << s.status();
}

class PartitionedDataDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("gphkv-partitions-", ::getpid(), "-",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  server::ServerOptions options(uint32_t partitions) const {
    server::ServerOptions o = partitioned(partitions);
    o.data_dir.dir = dir_.string();
    return o;
  }

  absl::Status start_with(uint32_t partitions) {
    keep_grpc_initialized();
    auto s = server::Server::start(options(partitions));
    return s.status();
  }

  std::filesystem::path dir_;
};

TEST_F(PartitionedDataDir, KeepsEachPartitionInItsFolderAndRefusesAnotherCount) {
  std::vector<uint64_t> keys;
  std::vector<std::string> values;
  for (uint64_t k = 0; k < 500; ++k) {
    keys.push_back(k);
    values.push_back(value_for(k, 1));
  }
  {
    auto server = start_server(options(3));
    ASSERT_NE(server, nullptr);
    auto put = connect(*server)->Put(keys, std::vector<std::string_view>(values.begin(), values.end()));
    ASSERT_TRUE(put.ok()) << put.status();
  }
  for (int k = 0; k < 3; ++k) {
    EXPECT_TRUE(std::filesystem::is_directory(dir_ / absl::StrCat("partition-", k))) << k;
  }
  for (uint32_t other : {1u, 2u, 4u}) {
    const absl::Status s = start_with(other);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << other << ": " << s;
    EXPECT_NE(s.message().find("written by a server of 3 partitions"), absl::string_view::npos) << s;
  }
  // The same count finds every key again.
  auto server = start_server(options(3));
  ASSERT_NE(server, nullptr);
  auto got = connect(*server)->Get(keys);
  ASSERT_TRUE(got.ok()) << got.status();
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(got->found(i)) << keys[i];
    EXPECT_EQ(got->value(i), values[i]);
  }
  auto stats = connect(*server)->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->data_dir().dir(), dir_.string());
  EXPECT_EQ(stats->data_dir().recovered_keys(), keys.size());
  ASSERT_EQ(stats->partitions_size(), 3);
  EXPECT_EQ(stats->partitions(1).data_dir().dir(), (dir_ / "partition-1").string());
}

TEST_F(PartitionedDataDir, OnePartitionLayoutIsTheOldOneAndRefusesSeveral) {
  {
    auto server = start_server(options(1));
    ASSERT_NE(server, nullptr);
    const std::string v = "kept";
    ASSERT_TRUE(connect(*server)->Put({7}, {std::string_view(v)}).ok());
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "partition-0")) << "one partition writes DIR itself";
  EXPECT_FALSE(std::filesystem::exists(dir_ / "PARTITIONS"));
  const absl::Status s = start_with(2);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("written by a server of one partition"), absl::string_view::npos) << s;
  auto server = start_server(options(1));
  ASSERT_NE(server, nullptr);
  auto got = connect(*server)->Get({7});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->value(0), "kept");
}

}  // namespace
}  // namespace gphkv::testing
