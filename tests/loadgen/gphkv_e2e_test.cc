// gphkv-loadgen against a real gphkv-server (CPU backend) on 127.0.0.1, once
// per client path (--api). Built only when the gphkv-server target exists
// (tests/loadgen/CMakeLists.txt).
#include <chrono>

#include "tests/loadgen/e2e_common.h"

namespace gphkv::loadgen::testing {
namespace {

class GphkvE2e : public ::testing::TestWithParam<std::string> {};

TEST_P(GphkvE2e, ShortRunAgainstTheCpuBackend) {
  const std::string api = GetParam();
  const std::string dir = TempDir("gphkv-" + api);
  const int port = FreePort();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  const std::string metrics = "127.0.0.1:" + std::to_string(FreePort());
  ChildProcess server(
      {GPHKV_SERVER_PATH, "--listen_address=" + address, "--metrics_address=" + metrics, "--backend=cpu"},
      dir + "/server.log");
  ASSERT_GT(server.pid(), 0);
  const std::string json = dir + "/report.json";
  // --wait_ready bounds the wait for the server's first successful Stats call.
  const int rc = RunLoadgenBinary(
      dir, "run",
      {"--target=gphkv", "--api=" + api, "--address=" + address, "--keys=20000", "--threads=2", "--connections=2",
       "--depth=2", "--warmup=0.5", "--duration=1.5", "--server_pid=" + std::to_string(server.pid()), "--json=" + json,
       "--progress=false", "--wait_ready=30", "--server_metrics=" + metrics});
  if (rc != 0) std::fprintf(stderr, "server log:\n%s\n", ReadFile(dir + "/server.log").c_str());
  ASSERT_EQ(rc, 0);
  const auto j = nlohmann::json::parse(ReadFile(json));
  ExpectHealthyReport(j, "gphkv", 20000);
  EXPECT_EQ(j["config"]["api"], api);
  // Both sides worked, so both used some CPU in the window.
  EXPECT_GT(j["results"]["cpu"]["server_cores"].get<double>(), 0.0);
  EXPECT_GT(j["results"]["cpu"]["loadgen_cores"].get<double>(), 0.0);
  // The server's own account of the window's calls, stage by stage.
  const auto& stages = j["results"]["server_stages"];
  EXPECT_TRUE(stages["error"].is_null()) << stages.dump();
  for (const char* stage : {"intake", "queue", "execute", "answer_wait", "respond"}) {
    ASSERT_TRUE(stages["stages"].contains(stage)) << stage << " " << stages.dump();
    EXPECT_GT(stages["stages"][stage]["calls"].get<double>(), 0.0) << stage;
    EXPECT_GE(stages["stages"][stage]["mean_us"].get<double>(), 0.0) << stage;
  }
  EXPECT_GT(stages["stages"]["execute"]["mean_us"].get<double>(), 0.0);
}

INSTANTIATE_TEST_SUITE_P(EveryApi, GphkvE2e, ::testing::Values("unary", "pipeline", "coalesced"));

// The application server's shape (issue 25): many threads over one shared
// gphkv::Client, in either loop; its reads checked in issued order.
class GphkvSharedClientE2e : public ::testing::TestWithParam<std::string> {};

TEST_P(GphkvSharedClientE2e, ManyThreadsOverOneClient) {
  const std::string mode = GetParam();
  const std::string dir = TempDir("gphkv-shared-" + mode);
  const std::string address = "127.0.0.1:" + std::to_string(FreePort());
  ChildProcess server({GPHKV_SERVER_PATH, "--listen_address=" + address, "--metrics_address=", "--backend=cpu"},
                      dir + "/server.log");
  ASSERT_GT(server.pid(), 0);
  const std::string json = dir + "/report.json";
  // Writes without deletes: every read still hits (ExpectHealthyReport), and the check has writes to check.
  std::vector<std::string> args = {
      "--target=gphkv",        "--api=coalesced",     "--clients=shared", "--address=" + address, "--keys=20000",
      "--threads=16",          "--connections=2",     "--depth=4",        "--warmup=0.5",         "--duration=1.5",
      "--write_fraction=0.05", "--delete_fraction=0", "--key_pool=4096",  "--json=" + json,       "--progress=false",
      "--wait_ready=30",       "--mode=" + mode};
  if (mode == "open") args.push_back("--rate=2000");
  const int rc = RunLoadgenBinary(dir, "run", args);
  if (rc != 0) std::fprintf(stderr, "server log:\n%s\n", ReadFile(dir + "/server.log").c_str());
  ASSERT_EQ(rc, 0);
  const auto j = nlohmann::json::parse(ReadFile(json));
  ExpectHealthyReport(j, "gphkv", 20000);
  EXPECT_EQ(j["config"]["drive"]["clients"], "shared");
  EXPECT_EQ(j["config"]["drive"]["threads"], 16);
  EXPECT_EQ(j["config"]["drive"]["connections_total"], 2);
  EXPECT_EQ(j["results"]["read_check"]["mode"], "issued");
  if (mode == "open") EXPECT_EQ(j["results"]["dropped_calls"], 0);
}

INSTANTIATE_TEST_SUITE_P(BothLoops, GphkvSharedClientE2e, ::testing::Values("closed", "open"));

// --key_format=bytes|tao (issue 26): the same workload as byte keys, its
// reads checked, through the coalescing client, the unary stubs and the Pipeline stream.
struct ByteKeysRun {
  std::string format, api;
};
void PrintTo(const ByteKeysRun& r, std::ostream* os) { *os << r.format << " over " << r.api; }

class GphkvByteKeysE2e : public ::testing::TestWithParam<ByteKeysRun> {};

TEST_P(GphkvByteKeysE2e, ALoadOfByteKeysIsServedAndChecked) {
  const std::string dir = TempDir("gphkv-byte-keys");
  const std::string address = "127.0.0.1:" + std::to_string(FreePort());
  ChildProcess server({GPHKV_SERVER_PATH, "--listen_address=" + address, "--metrics_address=", "--backend=cpu"},
                      dir + "/server.log");
  ASSERT_GT(server.pid(), 0);
  const std::string json = dir + "/report.json";
  const int rc =
      RunLoadgenBinary(dir, "run",
                       {"--target=gphkv", "--api=" + GetParam().api, "--key_format=" + GetParam().format,
                        "--key_length=12-20", "--address=" + address, "--keys=20000", "--threads=2", "--connections=2",
                        "--depth=4", "--warmup=0.5", "--duration=1.5", "--write_fraction=0.05", "--delete_fraction=0",
                        "--json=" + json, "--progress=false", "--wait_ready=30"});
  if (rc != 0) std::fprintf(stderr, "server log:\n%s\n", ReadFile(dir + "/server.log").c_str());
  ASSERT_EQ(rc, 0);
  const auto j = nlohmann::json::parse(ReadFile(json));
  ExpectHealthyReport(j, "gphkv", 20000);
  EXPECT_EQ(j["config"]["key_format"], GetParam().format);
  EXPECT_EQ(j["config"]["key_length"], GetParam().format == "bytes" ? "12-20" : "3-24");
  EXPECT_GT(j["results"]["read_check"]["keys_checked"].get<double>(), 0.0) << j["results"]["read_check"].dump();
  EXPECT_EQ(j["results"]["read_check"]["violations"], 0);
}

INSTANTIATE_TEST_SUITE_P(Formats, GphkvByteKeysE2e,
                         ::testing::Values(ByteKeysRun{"bytes", "coalesced"}, ByteKeysRun{"tao", "coalesced"},
                                           ByteKeysRun{"bytes", "unary"}, ByteKeysRun{"tao", "unary"},
                                           ByteKeysRun{"bytes", "pipeline"}),
                         [](const ::testing::TestParamInfo<ByteKeysRun>& info) {
                           return info.param.format + "_" + info.param.api;
                         });

}  // namespace
}  // namespace gphkv::loadgen::testing
