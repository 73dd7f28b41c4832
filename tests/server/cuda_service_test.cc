// The service on the CUDA backend (device value heap, pipelined gets):
// read-your-writes for concurrent clients against each client's model, and
// Stats naming the GPU; --gpus (one device, every device, a bad id); issue
// 30's large coalesced gets against a model. Skips
// without a CUDA device (the multi-GPU case without a second one).
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gphkv/engine/table.h"
#include "tests/server/large_gets.h"
#include "tests/server/read_your_writes.h"
#include "tests/server/test_server.h"

namespace gphkv::testing {
namespace {

// The test server's options on the CUDA backend, over `gpus` (every GPU of
// the host when not given).
server::ServerOptions cuda_options(std::optional<std::vector<int>> gpus = std::nullopt) {
  server::ServerOptions o = test_options();
  o.backend = server::BackendChoice::kCuda;
  o.gpus = std::move(gpus);
  return o;
}

TEST(CudaService, ReadYourWritesUnderManyConcurrentClients) {
  if (engine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  server::ServerOptions o = cuda_options();
  o.batcher.max_delay = std::chrono::microseconds(50);
  auto server = start_server(o);
  ASSERT_NE(server, nullptr);
  ReadYourWritesLoad load;
  load.ops = 300;
  load.max_keys = 16;
  load.key_slots = 128;
  load.max_value = 300;
  load.seed = std::random_device{}();
  EXPECT_EQ(run_read_your_writes(*server, load), 0);
  auto stats = connect(*server)->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->backend(), "cuda");
  // The GPU's own name, e.g. "NVIDIA H100 80GB HBM3 (cuda:0)".
  EXPECT_NE(stats->device().find("(cuda:0)"), std::string::npos) << stats->device();
  EXPECT_NE(stats->device().rfind("cuda:0", 0), 0u) << "no device name in " << stats->device();
}

// A read-your-writes load of calls of up to 24 keys (a fresh seed), which
// must see no violation, then the server's Stats.
absl::StatusOr<v1::StatsResponse> stats_after_read_your_writes(server::Server& server) {
  ReadYourWritesLoad load;
  load.max_keys = 24;
  load.seed = std::random_device{}();
  EXPECT_EQ(run_read_your_writes(server, load), 0);
  return connect(server)->Stats();
}

// --gpus=0: the one-GPU server through the partition router, with Stats
// naming the GPU of its one partition.
TEST(CudaService, GpusListOfOneDevice) {
  if (engine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  server::ServerOptions o = cuda_options(std::vector<int>{0});
  auto server = start_server(o);
  ASSERT_NE(server, nullptr);
  auto stats = stats_after_read_your_writes(*server);
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->partitions_size(), 1);
  EXPECT_EQ(stats->partitions(0).gpu(), 0);
  EXPECT_EQ(stats->partitions(0).keys(), stats->keys());
  EXPECT_NE(server->render_metrics().find("gphkv_gpu_table_keys{gpu=\"0\"}"), std::string::npos);
}

TEST(CudaService, UnknownGpuIsRefused) {
  if (engine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  keep_grpc_initialized();
  server::ServerOptions o = cuda_options(std::vector<int>{engine::cuda_device_count()});
  auto s = server::Server::start(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("there is no CUDA device"), absl::string_view::npos) << s.status();
  o.gpus = std::nullopt;
  o.cpu_partitions = 2;
  s = server::Server::start(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("--partitions=2 is for --backend=cpu"), absl::string_view::npos) << s.status();
}

// Every GPU of the host (--gpus=all): keys split over them, answers merged.
TEST(CudaService, EveryGpuOfTheHost) {
  if (engine::cuda_device_count() < 2)
    GTEST_SKIP() << "needs 2 CUDA devices, " << engine::cuda_device_count() << " visible";
  server::ServerOptions o = cuda_options();
  auto server = start_server(o);
  ASSERT_NE(server, nullptr);
  auto stats = stats_after_read_your_writes(*server);
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->partitions_size(), engine::cuda_device_count());
  uint64_t keys = 0;
  for (const auto& p : stats->partitions()) {
    EXPECT_GT(p.keys(), 0u) << "gpu " << p.gpu();
    keys += p.keys();
  }
  EXPECT_EQ(keys, stats->keys());
}

// issue 30's 1000-key gets against the model (tests/server/large_gets.h):
// the pipelined gets' slots go back once filled, while the calls are still
// being answered (merged, serialized, sent), on one GPU and over every GPU.
TEST(CudaService, LargeCoalescedGetsMatchTheModelOnOneGpu) {
  if (engine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  server::ServerOptions o = cuda_options(std::vector<int>{0});
  auto server = start_server(o);
  ASSERT_NE(server, nullptr);
  run_large_coalesced_gets(*server, 1);
}

TEST(CudaService, LargeCoalescedGetsMatchTheModelOverEveryGpu) {
  if (engine::cuda_device_count() < 2)
    GTEST_SKIP() << "needs 2 CUDA devices, " << engine::cuda_device_count() << " visible";
  server::ServerOptions o = cuda_options();
  auto server = start_server(o);
  ASSERT_NE(server, nullptr);
  run_large_coalesced_gets(*server, static_cast<uint32_t>(engine::cuda_device_count()));
}

}  // namespace
}  // namespace gphkv::testing
