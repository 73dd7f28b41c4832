// gphkv-loadgen against a real gphkv-server (CPU backend) on 127.0.0.1.
// Built only when the gphkv-server target exists (tests/loadgen/CMakeLists.txt).
#include <chrono>

#include "tests/loadgen/e2e_common.h"

namespace gphkv::loadgen::testing {
namespace {

TEST(GphkvE2e, ShortRunAgainstTheCpuBackend) {
  const std::string dir = TempDir("gphkv");
  const int port = FreePort();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  ChildProcess server({GPHKV_SERVER_PATH, "--listen_address=" + address, "--metrics_address=", "--backend=cpu"},
                      dir + "/server.log");
  ASSERT_GT(server.pid(), 0);
  const std::string json = dir + "/report.json";
  // --wait_ready bounds the wait for the server's first successful Stats call.
  const int rc = RunLoadgenBinary(dir, "run",
                                  {"--target=gphkv", "--address=" + address, "--keys=20000", "--threads=2",
                                   "--connections=2", "--depth=2", "--warmup=0.5", "--duration=1.5",
                                   "--json=" + json, "--progress=false", "--wait_ready=30"});
  if (rc != 0) std::fprintf(stderr, "server log:\n%s\n", ReadFile(dir + "/server.log").c_str());
  ASSERT_EQ(rc, 0);
  ExpectHealthyReport(nlohmann::json::parse(ReadFile(json)), "gphkv", 20000);
}

}  // namespace
}  // namespace gphkv::loadgen::testing
