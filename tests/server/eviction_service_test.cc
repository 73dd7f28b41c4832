// --eviction=lru over the wire (issue 27): a cache at its --memory cap takes
// every put, through gRPC and through the memcached port, by evicting; Stats
// and memcached's `stats` count the evictions, and every key is either
// evicted or read back with its value (each key written once: stored +
// evicted = written). Without eviction the same writes meet
// RESOURCE_EXHAUSTED (memcached's SERVER_ERROR) and nothing is evicted;
// --eviction=lru with --data_dir is refused at start.
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/loadgen/test_seed.h"
#include "tests/server/memcache_socket.h"
#include "tests/server/test_server.h"

namespace gphkv {
namespace {

constexpr uint64_t kCap = 8 << 20;
constexpr int kKeys = 6000;
constexpr size_t kValueBytes = 3000;  // 18 MB written in all: over twice the cap

server::ServerOptions cache_options(bool evict) {
  server::ServerOptions o = testing::memcached_test_options(/*max_value_bytes=*/4096);
  o.store.memory_limit_bytes = kCap;
  o.store.evict = evict;
  return o;
}

std::string key_of(int k) { return absl::StrCat("cache:", k); }
std::string value_of(int k, uint64_t seed) {
  std::string v = absl::StrCat(k, ":", seed, ":");
  v.resize(kValueBytes, static_cast<char>('a' + k % 26));
  return v;
}

// The value of `name` in memcached's `stats`, or -1.
int64_t stat(testing::MemcacheSocket& mc, const std::string& name) {
  if (!mc.send("stats\r\n")) return -1;
  std::string out;
  while (out.find("END\r\n") == std::string::npos) {
    const std::string more = mc.read_available(std::chrono::milliseconds(500));
    if (more.empty()) break;
    out += more;
  }
  const std::string line = absl::StrCat("STAT ", name, " ");
  const size_t at = out.find(line);
  if (at == std::string::npos) return -1;
  return std::stoll(out.substr(at + line.size()));
}

TEST(EvictionService, ACacheAtItsCapTakesEveryPutAndCountsWhatItEvicted) {
  const uint64_t seed = loadgen::testing::TestSeed();
  auto server = testing::start_server(cache_options(true));
  ASSERT_NE(server, nullptr);
  auto client = testing::connect(*server);
  testing::MemcacheSocket mc(server->memcached_port());
  ASSERT_TRUE(mc.connected());
  // Half over gRPC (ten keys a call), half as memcached sets.
  for (int k = 0; k < kKeys / 2; k += 10) {
    std::vector<std::string> keys, values;
    for (int j = k; j < k + 10; ++j) {
      keys.push_back(key_of(j));
      values.push_back(value_of(j, seed));
    }
    std::vector<std::string_view> kv(keys.begin(), keys.end()), vv(values.begin(), values.end());
    auto put = client->Put(kv, vv);
    ASSERT_TRUE(put.ok()) << "key " << k << ": " << put.status();
  }
  for (int k = kKeys / 2; k < kKeys; ++k) {
    const std::string v = value_of(k, seed);
    ASSERT_EQ(mc.round_trip(absl::StrCat("set ", key_of(k), " 0 0 ", v.size(), "\r\n", v, "\r\n"), "STORED\r\n"),
              "STORED\r\n")
        << "key " << k;
  }
  auto stats = client->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GT(stats->evictions(), 0u);
  EXPECT_LT(stats->keys(), static_cast<uint64_t>(kKeys));
  EXPECT_EQ(stats->keys() + stats->evictions(), static_cast<uint64_t>(kKeys)) << "each key written once";
  EXPECT_LE(stats->table_bytes() + stats->value_heap_bytes(), kCap);
  EXPECT_EQ(stat(mc, "evictions"), static_cast<int64_t>(stats->evictions()));
  EXPECT_EQ(stat(mc, "curr_items"), static_cast<int64_t>(stats->keys()));
  EXPECT_EQ(stat(mc, "limit_maxbytes"), static_cast<int64_t>(kCap));
  // Every key read back: found with its value, or evicted.
  uint64_t found = 0;
  for (int k = 0; k < kKeys; k += 100) {
    std::vector<std::string> keys;
    for (int j = k; j < k + 100; ++j) keys.push_back(key_of(j));
    std::vector<std::string_view> kv(keys.begin(), keys.end());
    auto got = client->Get(kv);
    ASSERT_TRUE(got.ok()) << got.status();
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!got->found(i)) continue;
      ++found;
      EXPECT_EQ(got->value(i), value_of(k + static_cast<int>(i), seed)) << keys[i];
    }
  }
  EXPECT_EQ(found, stats->keys());
  // The newest keys are the ones kept: none of the last 100 written was evicted.
  std::vector<std::string> last;
  for (int j = kKeys - 100; j < kKeys; ++j) last.push_back(key_of(j));
  std::vector<std::string_view> lv(last.begin(), last.end());
  auto newest = client->Get(lv);
  ASSERT_TRUE(newest.ok());
  for (size_t i = 0; i < last.size(); ++i) EXPECT_TRUE(newest->found(i)) << last[i];
}

TEST(EvictionService, WithoutEvictionTheCapRefusesPutsAndEvictsNothing) {
  const uint64_t seed = loadgen::testing::TestSeed();
  auto server = testing::start_server(cache_options(false));
  ASSERT_NE(server, nullptr);
  auto client = testing::connect(*server);
  int refused = 0;
  for (int k = 0; k < kKeys && refused == 0; ++k) {
    const std::string key = key_of(k), value = value_of(k, seed);
    const std::vector<std::string_view> kv{key}, vv{value};
    auto put = client->Put(kv, vv);
    if (!put.ok()) {
      EXPECT_EQ(put.status().code(), absl::StatusCode::kResourceExhausted) << put.status();
      ++refused;
    }
  }
  EXPECT_EQ(refused, 1) << "the cap was reached";
  testing::MemcacheSocket mc(server->memcached_port());
  const std::string v = value_of(0, seed);
  ASSERT_TRUE(mc.send(absl::StrCat("set more 0 0 ", v.size(), "\r\n", v, "\r\n")));
  EXPECT_EQ(mc.read_available(std::chrono::seconds(2)).rfind("SERVER_ERROR out of memory storing object", 0), 0u);
  auto stats = client->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->evictions(), 0u);
  EXPECT_EQ(stat(mc, "evictions"), 0);
}

TEST(EvictionService, EvictionWithADataDirectoryIsRefusedAtStart) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / absl::StrCat("gphkv-eviction-", getpid());
  fs::remove_all(dir);
  server::ServerOptions o = cache_options(true);
  o.data_dir.dir = dir.string();
  testing::keep_grpc_initialized();
  auto s = server::Server::start(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("--eviction=lru with --data_dir"), std::string::npos) << s.status();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gphkv
