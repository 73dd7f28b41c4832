// gphkv-loadgen against a real memcached (Debian's), started here on
// 127.0.0.1; skipped with the reason when memcached is not installed.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/loadgen/e2e_common.h"
#include "tests/loadgen/fake_gphkv_server.h"

namespace gphkv::loadgen::testing {
namespace {

class MemcachedE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_ = FindExecutable("memcached");
    if (bin_.empty())
      GTEST_SKIP() << "memcached is not installed (apt-get install memcached; scripts/deps/loadgen.txt)";
    dir_ = TempDir("memcached");
    if (!started_by_test_) Start({});
  }
  void Start(const std::vector<std::string>& extra) {
    port_ = FreePort();
    std::vector<std::string> argv = {bin_, "-l",  "127.0.0.1", "-p", std::to_string(port_), "-U", "0",
                                     "-m", "256", "-t",        "1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    if (geteuid() == 0) {  // memcached refuses to run as root without -u
      argv.push_back("-u");
      argv.push_back("nobody");
    }
    server_ = std::make_unique<ChildProcess>(argv, dir_ + "/memcached.log");
    ASSERT_GT(server_->pid(), 0);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  bool started_by_test_ = false;  // set by a test's constructor to start memcached itself
  std::string bin_;
  std::string dir_;
  int port_ = 0;
  std::unique_ptr<ChildProcess> server_;
};

// --cache_aside over memcached: a fill is a set. An empty memcached, one
// call at a time: the first pass fills every key it missed (each once), the
// second pass of the same stream finds them all and fills nothing.
TEST_F(MemcachedE2e, CacheAsideFillsEveryMissWithASet) {
  const std::vector<std::string> args = {
      "--target=memcached", "--address=" + address(), "--keys=5000",    "--load=false", "--cache_aside",
      "--threads=1",        "--connections=1",        "--depth=1",      "--warmup=0",   "--count=1000",
      "--write_fraction=0", "--progress=false",       "--wait_ready=10"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), args.begin(), args.end());
    return more;
  };
  ASSERT_EQ(RunLoadgenBinary(dir_, "first", with({"--json=" + dir_ + "/first.json"})), 0);
  ASSERT_EQ(RunLoadgenBinary(dir_, "second", with({"--json=" + dir_ + "/second.json"})), 0);
  const auto first = nlohmann::json::parse(ReadFile(dir_ + "/first.json"));
  const auto second = nlohmann::json::parse(ReadFile(dir_ + "/second.json"));
  const auto& gets = first["results"]["by_type"]["get"];
  const uint64_t missed = gets["keys"].get<uint64_t>() - gets["found"].get<uint64_t>();
  const uint64_t filled = first["results"]["fills"]["keys"].get<uint64_t>();
  EXPECT_GT(filled, 300u);
  // A key asked twice in one get is missed twice and filled once.
  EXPECT_LE(filled, missed);
  EXPECT_GT(filled, missed * 9 / 10);
  EXPECT_EQ(first["results"]["fills"]["errors"].get<uint64_t>(), 0u);
  EXPECT_EQ(first["results"]["by_type"]["put"]["calls"].get<uint64_t>(), 0u);
  EXPECT_EQ(second["results"]["by_type"]["get"]["found"], second["results"]["by_type"]["get"]["keys"]);
  EXPECT_EQ(second["results"]["fills"]["calls"].get<uint64_t>(), 0u);
}

TEST_F(MemcachedE2e, ShortRunLoadsReadsAndReports) {
  const std::string json = dir_ + "/report.json", plot = dir_ + "/plot.svg";
  ASSERT_EQ(RunLoadgenBinary(dir_, "run",
                             {"--target=memcached", "--address=" + address(), "--keys=20000", "--threads=2",
                              "--connections=2", "--depth=2", "--warmup=0.5", "--duration=1.5", "--json=" + json,
                              "--plot=" + plot, "--progress=false", "--wait_ready=10"}),
            0);
  const auto j = nlohmann::json::parse(ReadFile(json));
  ExpectHealthyReport(j, "memcached", 20000);
  // Values came back: bytes per key near the documented mean value size
  // (objects ~330 B and associations ~83 B, half each).
  const auto& gets = j["results"]["by_type"]["get"];
  const double bytes_per_hit = gets["value_bytes"].get<double>() / gets["found"].get<double>();
  EXPECT_GT(bytes_per_hit, 50);
  EXPECT_LT(bytes_per_hit, 1000);
  if (!FindExecutable("gnuplot").empty()) {
    EXPECT_NE(ReadFile(plot).find("<svg"), std::string::npos);
  }
}

TEST_F(MemcachedE2e, OpenLoopRunAtAModestRate) {
  const std::string json = dir_ + "/open.json";
  ASSERT_EQ(RunLoadgenBinary(
                dir_, "open",
                {"--target=memcached", "--address=" + address(), "--keys=20000", "--mode=open", "--rate=500",
                 "--threads=2", "--depth=8", "--warmup=0.3", "--duration=1", "--json=" + json, "--progress=false"}),
            0);
  const auto j = nlohmann::json::parse(ReadFile(json));
  ExpectHealthyReport(j, "memcached", 20000);
  EXPECT_NEAR(j["results"]["scheduled_calls"].get<double>(), 500, 3);
  EXPECT_EQ(j["results"]["dropped_calls"], 0);
}

// The same seed gives memcached and gphkv the same calls with the same keys:
// the traces of both runs are identical, and the gphkv server received
// exactly the traced calls.
TEST_F(MemcachedE2e, SameSeedSameKeyStreamForBothTargets) {
  const std::vector<std::string> common = {"--keys=5000",     "--threads=2", "--connections=1", "--depth=1",
                                           "--warmup=0",      "--count=400", "--seed=77",       "--write_fraction=0.05",
                                           "--progress=false"};
  auto args = [&](const std::string& target, const std::string& address, const std::string& trace) {
    std::vector<std::string> a = common;
    a.push_back("--target=" + target);
    a.push_back("--address=" + address);
    a.push_back("--trace=" + trace);
    return a;
  };
  ASSERT_EQ(RunLoadgenBinary(dir_, "mc", args("memcached", address(), dir_ + "/mc.trace")), 0);
  FakeGphkvServer gphkv;
  ASSERT_EQ(RunLoadgenBinary(dir_, "gk", args("gphkv", gphkv.address(), dir_ + "/gk.trace")), 0);
  const std::string mc = ReadFile(dir_ + "/mc.trace"), gk = ReadFile(dir_ + "/gk.trace");
  EXPECT_EQ(std::count(mc.begin(), mc.end(), '\n'), 400);
  EXPECT_EQ(mc, gk);
  // What the gphkv server saw after the load phase's puts, as a multiset
  // (two threads interleave), equals the trace without its thread column.
  std::vector<std::string> received = gphkv.Log();
  received.erase(received.begin(), received.begin() + (received.size() - 400));
  std::vector<std::string> traced;
  std::istringstream in(gk);
  for (std::string line; std::getline(in, line);) traced.push_back(line.substr(line.find(' ') + 1));
  std::sort(received.begin(), received.end());
  std::sort(traced.begin(), traced.end());
  EXPECT_EQ(received, traced);
}

// memcached refuses items above its -I limit with SERVER_ERROR: with a 1 KiB
// limit a few percent of the objects (p90 757 B, p99 2.4 KiB) cannot be
// stored, the load phase must say so by status, and the tool must fail.
class MemcachedTinyItems : public MemcachedE2e {
 protected:
  MemcachedTinyItems() { started_by_test_ = true; }
};

TEST_F(MemcachedTinyItems, RefusedSetsAreErrorsByStatusAndFailTheLoad) {
  Start({"-I", "1k", "-o", "slab_chunk_max=1024"});
  const int rc = RunLoadgenBinary(dir_, "tiny",
                                  {"--target=memcached", "--address=" + address(), "--keys=5000", "--duration=0.5",
                                   "--warmup=0", "--progress=false"});
  EXPECT_EQ(rc, 1);
  const std::string log = ReadFile(dir_ + "/tiny.log");
  EXPECT_NE(log.find("the load phase failed: SERVER_ERROR="), std::string::npos) << log;
}

}  // namespace
}  // namespace gphkv::loadgen::testing
