// The gphkv-loadgen binary's flags: a --workload preset, explicit flags over
// it, and the refusals of what cannot run, against the in-process fake gphkv.
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>

#include "tests/loadgen/e2e_common.h"
#include "tests/loadgen/fake_gphkv_server.h"

namespace gphkv::loadgen::testing {
namespace {

class LoadgenCli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = TempDir("cli"); }
  // Runs against the fake: no load phase, 400 calls.
  int Run(const std::string& name, std::vector<std::string> args) {
    for (const char* a : {"--load=false", "--count=400", "--warmup=0", "--threads=1", "--progress=false"}) {
      args.push_back(a);
    }
    args.push_back("--address=" + server_.address());
    return RunLoadgenBinary(dir_, name, args);
  }
  nlohmann::json Json(const std::string& name) { return nlohmann::json::parse(ReadFile(dir_ + "/" + name + ".json")); }
  std::string Log(const std::string& name) { return ReadFile(dir_ + "/" + name + ".log"); }

  FakeGphkvServer server_;
  std::string dir_;
};

TEST_F(LoadgenCli, TaoBenchOPresetIsRecordedWithItsEffectiveSettings) {
  ASSERT_EQ(Run("o", {"--workload=taobench-o", "--json=" + dir_ + "/o.json"}), 0);
  const auto j = Json("o");
  const auto& w = j["config"]["workload"];
  EXPECT_EQ(w["preset"], "taobench-o");
  EXPECT_EQ(w["popularity"], "shards");
  EXPECT_EQ(w["read_batch"], "taobench-o-read");
  EXPECT_EQ(w["object_value"], "158");
  EXPECT_EQ(w["delete_fraction"].get<double>(), 0.0);
  EXPECT_NEAR(w["write_fraction"].get<double>(), 20.0 / 8649.0, 1e-12);
  EXPECT_EQ(j["workload"]["shards"], 50);
  EXPECT_NEAR(j["workload"]["mean_read_batch"].get<double>(), (8387 + 242 * 19.18) / (8387 + 242), 0.01);
}

TEST_F(LoadgenCli, FlagsGivenOverrideThePresetAndOnlyThose) {
  const std::string trace = dir_ + "/over.trace";
  ASSERT_EQ(Run("over", {"--workload=taobench-o", "--read_batch=7", "--popularity=zipf", "--trace=" + trace,
                         "--json=" + dir_ + "/over.json"}),
            0);
  const auto j = Json("over");
  const auto& w = j["config"]["workload"];
  EXPECT_EQ(w["preset"], "taobench-o");
  EXPECT_EQ(w["read_batch"], "7");
  EXPECT_EQ(w["popularity"], "zipf");
  EXPECT_EQ(w["object_value"], "158");  // not given: the preset's
  EXPECT_EQ(j["workload"]["shards"], 0);
  EXPECT_GT(j["workload"]["zipf_exponent"].get<double>(), 0.5);
  // Every get carried 7 keys.
  std::istringstream in(ReadFile(trace));
  int gets = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string thread, op;
    f >> thread >> op;
    if (op != "get") continue;
    ++gets;
    int keys = 0;
    for (uint64_t k; f >> k;) ++keys;
    ASSERT_EQ(keys, 7) << line;
  }
  EXPECT_GT(gets, 390);
}

// A flag given with the preset's own default still wins over another preset.
TEST_F(LoadgenCli, AFlagEqualToTheDefaultPresetsValueStillOverrides) {
  ASSERT_EQ(Run("wf", {"--workload=taobench-o", "--write_fraction=0.002", "--json=" + dir_ + "/wf.json"}), 0);
  EXPECT_DOUBLE_EQ(Json("wf")["config"]["workload"]["write_fraction"].get<double>(), 0.002);
}

TEST_F(LoadgenCli, WhatCannotRunIsRefusedWithTheReason) {
  EXPECT_EQ(Run("bad_workload", {"--workload=taobench-z"}), 2);
  EXPECT_NE(Log("bad_workload").find("unknown --workload 'taobench-z'"), std::string::npos);
  EXPECT_EQ(Run("bad_api", {"--api=batched"}), 1);
  EXPECT_NE(Log("bad_api").find("unknown --api 'batched'"), std::string::npos);
  EXPECT_EQ(Run("bad_popularity", {"--popularity=uniform"}), 1);
  EXPECT_NE(Log("bad_popularity").find("unknown popularity 'uniform'"), std::string::npos);
  EXPECT_EQ(Run("bad_clients", {"--clients=pooled"}), 1);
  EXPECT_NE(Log("bad_clients").find("unknown --clients 'pooled'"), std::string::npos);
  // One client for every thread is gphkv::Client's (--api=coalesced): unary stubs have no such thing.
  EXPECT_EQ(Run("shared_unary", {"--clients=shared", "--api=unary"}), 1);
  EXPECT_NE(Log("shared_unary").find("--clients=shared is for --api=coalesced"), std::string::npos);
  EXPECT_EQ(Run("bad_check", {"--check_reads=always"}), 1);
  EXPECT_NE(Log("bad_check").find("unknown --check_reads 'always'"), std::string::npos);
  // A PID that is not running: its cores could not be reported.
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  EXPECT_EQ(Run("bad_pid", {"--server_pid=" + std::to_string(gone)}), 1);
  EXPECT_NE(Log("bad_pid").find("cannot read /proc/" + std::to_string(gone) + "/stat"), std::string::npos);
}

}  // namespace
}  // namespace gphkv::loadgen::testing
