// The service on the CUDA backend (device value heap, pipelined gets):
// read-your-writes for concurrent clients against each client's model, and
// Stats naming the GPU. Skips without a CUDA device.
#include <random>
#include <string>

#include "gphkv/engine/table.h"
#include "tests/server/read_your_writes.h"
#include "tests/server/test_server.h"

namespace gphkv::testing {
namespace {

TEST(CudaService, ReadYourWritesUnderManyConcurrentClients) {
  if (engine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  server::ServerOptions o = test_options();
  o.backend = server::BackendChoice::kCuda;
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

}  // namespace
}  // namespace gphkv::testing
