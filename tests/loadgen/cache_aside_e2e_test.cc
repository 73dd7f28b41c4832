// gphkv-loadgen --cache_aside against a real gphkv-server (CPU backend, room
// for every key), and bench/lru_hit_ratio on the trace of that run: one
// thread, one call at a time, so the trace is the order the server saw and
// an LRU as big as the key space must count the server's hits exactly.
#include <set>
#include <sstream>

#include "tests/loadgen/e2e_common.h"

namespace gphkv::loadgen::testing {
namespace {

// The distinct keys of a trace's lines.
std::set<uint64_t> TracedKeys(const std::string& trace) {
  std::set<uint64_t> keys;
  std::istringstream in(ReadFile(trace));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string thread, op;
    fields >> thread >> op;
    for (uint64_t k; fields >> k;) keys.insert(k);
  }
  return keys;
}

nlohmann::json RunSimulator(const std::string& dir, const std::string& trace, uint64_t items,
                            const std::string& policy) {
  const std::string out = dir + "/" + policy + ".json";
  ChildProcess sim(
      {LRU_HIT_RATIO_PATH, "--trace=" + trace, "--items=" + std::to_string(items), "--policy=" + policy, "--json"},
      out);
  EXPECT_EQ(sim.Wait(60), 0) << ReadFile(out);
  return nlohmann::json::parse(ReadFile(out));
}

class CacheAsideE2e : public ::testing::TestWithParam<std::string> {};

// An empty server: every key the run asks is missed once and filled; a
// second pass of the same stream then finds everything and fills nothing;
// and the simulator, as big as the key space, counts the first pass's hits.
TEST_P(CacheAsideE2e, EveryMissIsFilledASecondPassHitsAndExactLruAgrees) {
  const std::string api = GetParam();
  const std::string dir = TempDir("cache-aside-" + api);
  const std::string address = "127.0.0.1:" + std::to_string(FreePort());
  ChildProcess server({GPHKV_SERVER_PATH, "--listen_address=" + address, "--metrics_address=", "--backend=cpu"},
                      dir + "/server.log");
  ASSERT_GT(server.pid(), 0);
  const uint64_t keys = 5000;
  const std::vector<std::string> args = {
      "--target=gphkv",   "--api=" + api,   "--address=" + address, "--keys=" + std::to_string(keys),
      "--load=false",     "--cache_aside",  "--threads=1",          "--connections=1",
      "--depth=1",        "--warmup=0",     "--count=1500",         "--write_fraction=0",
      "--progress=false", "--wait_ready=30"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), args.begin(), args.end());
    return more;
  };
  const std::string trace = dir + "/trace.txt";
  ASSERT_EQ(RunLoadgenBinary(dir, "first", with({"--trace=" + trace, "--json=" + dir + "/first.json"})), 0);
  ASSERT_EQ(RunLoadgenBinary(dir, "second", with({"--json=" + dir + "/second.json"})), 0);
  const auto first = nlohmann::json::parse(ReadFile(dir + "/first.json"));
  const auto second = nlohmann::json::parse(ReadFile(dir + "/second.json"));
  EXPECT_EQ(first["config"]["cache_aside"], true);

  const auto& gets = first["results"]["by_type"]["get"];
  const auto& fills = first["results"]["fills"];
  const uint64_t distinct = TracedKeys(trace).size();
  ASSERT_GT(distinct, 500u);
  EXPECT_EQ(fills["keys"].get<uint64_t>(), distinct) << "each key missed once, then filled";
  EXPECT_EQ(fills["errors"].get<uint64_t>(), 0u);
  EXPECT_EQ(first["results"]["by_type"]["put"]["calls"].get<uint64_t>(), 0u) << "fills are not the workload's puts";
  EXPECT_EQ(first["results"]["overall"]["calls"].get<uint64_t>(), 1500u);
  EXPECT_LT(gets["found"].get<uint64_t>(), gets["keys"].get<uint64_t>());

  EXPECT_EQ(second["results"]["by_type"]["get"]["found"], second["results"]["by_type"]["get"]["keys"]);
  EXPECT_EQ(second["results"]["fills"]["calls"].get<uint64_t>(), 0u);

  for (const char* policy : {"lru", "clock"}) {
    const auto sim = RunSimulator(dir, trace, keys, policy);
    EXPECT_EQ(sim["get_keys"], gets["keys"]) << policy;
    EXPECT_EQ(sim["hits"], gets["found"]) << policy;
    EXPECT_EQ(sim["fills"], fills["keys"]) << policy;
    EXPECT_EQ(sim["evictions"].get<uint64_t>(), 0u) << policy;
  }
}

// With the workload's own puts and deletes in the stream, an LRU with room
// for every key still counts exactly the hits the server gave.
TEST_P(CacheAsideE2e, WithWritesAndDeletesExactLruStillCountsTheServersHits) {
  const std::string api = GetParam();
  const std::string dir = TempDir("cache-aside-writes-" + api);
  const std::string address = "127.0.0.1:" + std::to_string(FreePort());
  ChildProcess server({GPHKV_SERVER_PATH, "--listen_address=" + address, "--metrics_address=", "--backend=cpu"},
                      dir + "/server.log");
  ASSERT_GT(server.pid(), 0);
  const std::string trace = dir + "/trace.txt", json = dir + "/run.json";
  ASSERT_EQ(RunLoadgenBinary(dir, "run",
                             {"--target=gphkv", "--api=" + api, "--address=" + address, "--keys=3000", "--load=false",
                              "--cache_aside", "--threads=1", "--connections=1", "--depth=1", "--warmup=0",
                              "--count=2000", "--write_fraction=0.05", "--delete_fraction=0.5", "--trace=" + trace,
                              "--json=" + json, "--progress=false", "--wait_ready=30"}),
            0);
  const auto j = nlohmann::json::parse(ReadFile(json));
  const auto& gets = j["results"]["by_type"]["get"];
  EXPECT_GT(j["results"]["by_type"]["put"]["calls"].get<uint64_t>(), 0u);
  EXPECT_GT(j["results"]["by_type"]["delete"]["calls"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["results"]["read_check"]["violations"].get<uint64_t>(), 0u) << j["results"]["read_check"].dump();
  const auto sim = RunSimulator(dir, trace, 3000, "lru");
  EXPECT_EQ(sim["get_keys"], gets["keys"]);
  EXPECT_EQ(sim["hits"], gets["found"]);
  EXPECT_EQ(sim["fills"], j["results"]["fills"]["keys"]);
}

INSTANTIATE_TEST_SUITE_P(EveryApi, CacheAsideE2e, ::testing::Values("unary", "pipeline", "coalesced"));

}  // namespace
}  // namespace gphkv::loadgen::testing
