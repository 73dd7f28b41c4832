// gphkv-server on a data directory whose files were damaged: a bit flipped
// in the snapshot, the snapshot cut short, a bit flipped in a log record with
// records after it, a log segment missing (a gap), the last record torn.
// --recover=strict must refuse to start with an error that names the file,
// and never crash; --recover=skip-corrupt must start with what is intact;
// a torn last record is cut off with a warning under either. The directory
// is written by one client, one call per batch, so the state a start shows
// must be the state after some prefix of the calls.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/durability/record_format.h"
#include "tests/loadgen/test_seed.h"
#include "tests/server/data_dir_server.h"

namespace gphkv::testing {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kKeys = 64;

std::vector<uint64_t> all_keys() {
  std::vector<uint64_t> k;
  for (uint64_t i = 0; i < kKeys; ++i) k.push_back(i * 7919);
  return k;
}

// A directory written by `calls` puts and deletes, one call per batch, and
// the state after each prefix of them (states[j]: after the first j calls).
struct Written {
  std::string dir;
  std::vector<std::map<uint64_t, Value>> states;
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::vector<std::string> named(const std::string& dir, const std::string& prefix, const std::string& suffix) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (absl::StartsWith(name, prefix) && absl::EndsWith(name, suffix)) out.push_back(dir + "/" + name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint64_t> record_offsets(const std::string& bytes) {
  std::vector<uint64_t> out;
  for (uint64_t off = 0; off < bytes.size();) {
    const auto r = server::durability::read_record(bytes, off);
    if (r.check != server::durability::RecordCheck::kOk) break;
    out.push_back(off);
    off = r.end;
  }
  return out;
}

// `snapshot`: end with SIGTERM (a final snapshot, no log); else with
// SIGKILL before any snapshot (only log segments, several of them).
Written write_dir(const std::string& name, bool snapshot, std::mt19937_64& rng) {
  Written w;
  w.dir = (fs::temp_directory_path() / absl::StrCat("gphkv-damage-", name, "-", getpid())).string();
  fs::remove_all(w.dir);
  ServerProcess server(
      {w.dir, {"--fsync=always", "--log_segment_bytes=4KiB", "--snapshot_interval=0", "--snapshot_log_bytes=0"}});
  EXPECT_TRUE(server.wait_serving()) << server.log();
  auto client = server.client();
  std::map<uint64_t, Value> state;
  for (uint64_t k : all_keys()) state[k] = std::nullopt;
  w.states.push_back(state);
  const std::vector<uint64_t> keys = all_keys();
  for (int call = 0; call < 120; ++call) {
    const uint64_t k = keys[rng() % kKeys];
    if (rng() % 4 == 0) {
      EXPECT_TRUE(client->Delete({k}).ok());
      state[k] = std::nullopt;
    } else {
      const std::string v = absl::StrCat("call ", call, std::string(rng() % 200, 'x'));
      EXPECT_TRUE(client->Put({k}, {v}).ok());
      state[k] = v;
    }
    w.states.push_back(state);
  }
  if (snapshot) {
    EXPECT_EQ(server.terminate(), 0) << server.log();
  } else {
    server.kill9();
  }
  return w;
}

struct Started {
  bool serving = false;
  int exit_status = -1;  // when it did not start
  std::string log;
  std::map<uint64_t, Value> state;
  v1::DataDirStats stats;
};

Started start(const std::string& dir, const std::string& recover) {
  Started s;
  ServerProcess server({dir, {"--recover=" + recover}});
  s.serving = server.wait_serving(30);
  if (s.serving) {
    auto client = server.client();
    std::string error;
    s.state = read_back(*client, all_keys(), &error);
    EXPECT_TRUE(error.empty()) << error;
    auto stats = client->Stats();
    EXPECT_TRUE(stats.ok()) << stats.status();
    if (stats.ok()) s.stats = stats->data_dir();
    server.kill9();
  } else {
    s.exit_status = server.wait_exit(10);
  }
  s.log = server.log();
  return s;
}

// The number of calls whose state `state` is, or -1.
int prefix_of(const Written& w, const std::map<uint64_t, Value>& state) {
  for (int j = static_cast<int>(w.states.size()) - 1; j >= 0; --j) {
    if (w.states[j] == state) return j;
  }
  return -1;
}

std::string copy_of(const Written& w, const std::string& name) {
  const std::string dir = w.dir + "-" + name;
  fs::remove_all(dir);
  fs::copy(w.dir, dir);
  return dir;
}

void flip_bit(const std::string& path, uint64_t from, uint64_t to, std::mt19937_64& rng) {
  std::string bytes = read_all(path);
  const uint64_t at = from + rng() % (std::min<uint64_t>(to, bytes.size()) - from);
  bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));
  write_all(path, bytes);
}

void expect_refused_naming(const Started& s, const std::string& file) {
  EXPECT_FALSE(s.serving);
  EXPECT_EQ(s.exit_status, 2) << s.log;
  EXPECT_TRUE(absl::StrContains(s.log, fs::path(file).filename().string())) << "the error must name " << file << ":\n"
                                                                            << s.log;
  EXPECT_TRUE(absl::StrContains(s.log, "skip-corrupt")) << "the error must say how to start anyway:\n" << s.log;
  EXPECT_FALSE(absl::StrContains(s.log, "Segmentation") || absl::StrContains(s.log, "Aborted")) << s.log;
}

class DataDirDamage : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = loadgen::testing::TestSeed();
    rng_.seed(seed_);
  }
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

TEST_F(DataDirDamage, ASnapshotWithAFlippedBitOrCutShort) {
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed_);
  const Written w = write_dir("snapshot", /*snapshot=*/true, rng_);
  ASSERT_EQ(named(w.dir, "snapshot-", ".gphkv").size(), 1u);
  ASSERT_TRUE(named(w.dir, "log-", ".gphkv").empty()) << "the final snapshot covers the log";
  {
    const std::string dir = copy_of(w, "whole");
    const Started whole = start(dir, "strict");
    ASSERT_TRUE(whole.serving) << whole.log;
    EXPECT_EQ(whole.state, w.states.back());
    fs::remove_all(dir);
  }
  for (const char* damage : {"flip", "cut"}) {
    SCOPED_TRACE(damage);
    const std::string dir = copy_of(w, damage);
    const std::string snap = named(dir, "snapshot-", ".gphkv").front();
    if (std::string(damage) == "flip") {
      flip_bit(snap, 0, fs::file_size(snap), rng_);
    } else {
      fs::resize_file(snap, 8 + rng_() % (fs::file_size(snap) - 8));
    }
    expect_refused_naming(start(dir, "strict"), snap);
    const Started skipped = start(dir, "skip-corrupt");
    ASSERT_TRUE(skipped.serving) << skipped.log;
    EXPECT_GT(skipped.stats.recovery_dropped_size(), 0) << skipped.log;
    // Pairs of damaged blocks are gone; every key that is there has its value.
    for (const auto& [k, v] : skipped.state) {
      if (v) EXPECT_EQ(v, w.states.back().at(k)) << "key " << k;
    }
    fs::remove_all(dir);
  }
  fs::remove_all(w.dir);
}

TEST_F(DataDirDamage, TheLogFlippedCutShortOrWithAGap) {
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed_);
  const Written w = write_dir("log", /*snapshot=*/false, rng_);
  const int calls = static_cast<int>(w.states.size()) - 1;
  ASSERT_GE(named(w.dir, "log-", ".gphkv").size(), 3u) << "small segments: several of them";
  {
    const std::string dir = copy_of(w, "whole");
    const Started whole = start(dir, "strict");
    ASSERT_TRUE(whole.serving) << whole.log;
    EXPECT_EQ(whole.state, w.states.back()) << "kill -9 after acknowledged calls loses nothing";
    fs::remove_all(dir);
  }
  {
    SCOPED_TRACE("a flipped bit in a record with records after it");
    const std::string dir = copy_of(w, "flip");
    const std::string seg = named(dir, "log-", ".gphkv").front();
    const std::vector<uint64_t> offsets = record_offsets(read_all(seg));
    ASSERT_GE(offsets.size(), 3u);
    const size_t r = rng_() % (offsets.size() - 1);  // never the segment's last record
    flip_bit(seg, offsets[r], offsets[r + 1], rng_);
    expect_refused_naming(start(dir, "strict"), seg);
    const Started skipped = start(dir, "skip-corrupt");
    ASSERT_TRUE(skipped.serving) << skipped.log;
    const int j = prefix_of(w, skipped.state);
    EXPECT_GE(j, 0) << "skip-corrupt keeps a prefix of the calls";
    EXPECT_LT(j, calls) << "the batches from the damaged one on are dropped";
    EXPECT_GT(skipped.stats.recovery_dropped_size(), 0);
    fs::remove_all(dir);
  }
  {
    SCOPED_TRACE("a missing segment: a gap");
    const std::string dir = copy_of(w, "gap");
    const std::vector<std::string> segs = named(dir, "log-", ".gphkv");
    const std::string gone = segs[1 + rng_() % (segs.size() - 2)];
    fs::remove(gone);
    const Started strict = start(dir, "strict");
    EXPECT_FALSE(strict.serving);
    EXPECT_EQ(strict.exit_status, 2) << strict.log;
    EXPECT_TRUE(absl::StrContains(strict.log, "skip-corrupt")) << strict.log;
    const Started skipped = start(dir, "skip-corrupt");
    ASSERT_TRUE(skipped.serving) << skipped.log;
    const int j = prefix_of(w, skipped.state);
    EXPECT_GE(j, 0) << "skip-corrupt stops before the gap";
    EXPECT_LT(j, calls);
    fs::remove_all(dir);
  }
  for (const char* recover : {"strict", "skip-corrupt"}) {
    SCOPED_TRACE(absl::StrCat("the last record torn, ", recover));
    const std::string dir = copy_of(w, absl::StrCat("torn-", recover));
    const std::string seg = named(dir, "log-", ".gphkv").back();
    const std::vector<uint64_t> offsets = record_offsets(read_all(seg));
    fs::resize_file(seg, offsets.back() + 1 + rng_() % (fs::file_size(seg) - offsets.back() - 1));
    const Started s = start(dir, recover);
    ASSERT_TRUE(s.serving) << s.log;
    EXPECT_EQ(s.state, w.states[calls - 1]) << "exactly the last batch is cut";
    EXPECT_GT(s.stats.torn_bytes_cut(), 0u);
    EXPECT_TRUE(absl::StrContains(s.log, "torn")) << s.log;
    fs::remove_all(dir);
  }
  fs::remove_all(w.dir);
}

}  // namespace
}  // namespace gphkv::testing
