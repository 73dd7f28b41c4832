// gphkv-loadgen against bench/null_server (KeyValue with no table: every get
// misses, every put "creates"): the generator runs unchanged, reports zero
// hits as a hit ratio of 0 and not as errors, with and without a load phase.
// Built only when the null_server target exists (tests/loadgen/CMakeLists.txt).
#include "tests/loadgen/e2e_common.h"

namespace gphkv::loadgen::testing {
namespace {

struct NullRun {
  std::string api;
  bool load;
};

void PrintTo(const NullRun& run, std::ostream* os) { *os << "--api=" << run.api << " --load=" << run.load; }

class NullServerE2e : public ::testing::TestWithParam<NullRun> {};

TEST_P(NullServerE2e, ZeroHitsAreAResultNotAnError) {
  const NullRun run = GetParam();
  const std::string name = run.api + (run.load ? "-load" : "-noload");
  const std::string dir = TempDir("null-" + name);
  const std::string address = "127.0.0.1:" + std::to_string(FreePort());
  ChildProcess server({NULL_SERVER_PATH, "--address=" + address, "--threads=2"}, dir + "/null_server.log");
  ASSERT_GT(server.pid(), 0);
  const std::string json = dir + "/report.json";
  const int rc = RunLoadgenBinary(
      dir, "run",
      {"--target=gphkv", "--api=" + run.api, "--address=" + address, "--keys=5000", "--threads=2", "--connections=2",
       "--depth=4", "--warmup=0.2", "--duration=1", std::string("--load=") + (run.load ? "true" : "false"),
       "--write_fraction=0.05", "--server_pid=" + std::to_string(server.pid()), "--json=" + json, "--progress=false",
       "--wait_ready=30", "--check_reads=off"});
  ASSERT_EQ(rc, 0) << ReadFile(dir + "/null_server.log");
  const auto j = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(j["load"]["ran"], run.load);
  EXPECT_EQ(j["load"]["errors"].get<uint64_t>(), 0u);
  const auto& all = j["results"]["overall"];
  EXPECT_GT(all["calls"].get<uint64_t>(), 10u);
  EXPECT_EQ(all["errors"].get<uint64_t>(), 0u) << all["errors_by_status"].dump();
  EXPECT_EQ(all["found"].get<uint64_t>(), j["results"]["by_type"]["put"]["found"].get<uint64_t>());
  EXPECT_EQ(j["results"]["by_type"]["get"]["found"].get<uint64_t>(), 0u);
  EXPECT_DOUBLE_EQ(all["hit_ratio"].get<double>(), 0.0);
  EXPECT_EQ(j["results"]["by_type"]["get"]["value_bytes"].get<uint64_t>(), 0u);
  EXPECT_GT(all["keys_per_s"].get<double>(), 0);
  EXPECT_TRUE(j["results"]["cpu"]["server_cores"].is_number());
}

// The null server acknowledges every put and stores nothing: a broken store
// to the read check, which must say so (every key a thread wrote and then
// read is missing) and fail the run with exit status 4, on every API.
TEST_P(NullServerE2e, TheReadCheckCatchesAStoreThatKeepsNothing) {
  const NullRun run = GetParam();
  const std::string dir = TempDir("null-check-" + run.api + (run.load ? "-load" : "-noload"));
  const std::string address = "127.0.0.1:" + std::to_string(FreePort());
  ChildProcess server({NULL_SERVER_PATH, "--address=" + address, "--threads=2"}, dir + "/null_server.log");
  ASSERT_GT(server.pid(), 0);
  const std::string json = dir + "/report.json";
  const int rc = RunLoadgenBinary(
      dir, "run",
      {"--target=gphkv", "--api=" + run.api, "--address=" + address, "--keys=2000", "--threads=2", "--connections=1",
       "--depth=4", "--warmup=0.2", "--duration=1", std::string("--load=") + (run.load ? "true" : "false"),
       "--write_fraction=0.1", "--json=" + json, "--progress=false", "--wait_ready=30"});
  EXPECT_EQ(rc, 4);
  const auto j = nlohmann::json::parse(ReadFile(json));
  const auto& check = j["results"]["read_check"];
  EXPECT_EQ(check["mode"], run.api == "coalesced" ? "issued" : "completed");
  EXPECT_GT(check["missing"].get<uint64_t>(), 10u) << check.dump();
  EXPECT_EQ(check["violations"], check["missing"]);
  EXPECT_NE(ReadFile(dir + "/run.log").find("did not show their own thread's writes"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(ApisWithAndWithoutLoad, NullServerE2e,
                         ::testing::Values(NullRun{"unary", false}, NullRun{"unary", true}, NullRun{"pipeline", false},
                                           NullRun{"pipeline", true}, NullRun{"coalesced", false}),
                         [](const ::testing::TestParamInfo<NullRun>& p) {
                           return p.param.api + (p.param.load ? "Load" : "NoLoad");
                         });

}  // namespace
}  // namespace gphkv::loadgen::testing
