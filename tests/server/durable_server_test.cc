// gphkv-server with --data_dir, killed under a mixed concurrent write load
// and started again on the same directory, round after round; each start is
// checked against what the clients were told (tests/server/durable_model.h):
//
//   - kill -9 (a process crash) under --fsync=always and everysec: every
//     acknowledged write is there (the OS keeps what was written);
//   - a machine crash under everysec, simulated by cutting the log after the
//     batch that Stats last reported on disk (a torn record there, later
//     segments gone): what is lost is a suffix of the writes acknowledged in
//     the last ~2 s before the last Stats plus the time to the kill, never a
//     hole;
//   - the kill while a snapshot is being written, and while a table rebuild
//     runs (a small first table that the load grows);
//   - a disk error (a file size limit): the write that met it is answered
//     UNAVAILABLE, later writes are refused, gets go on, health says
//     NOT_SERVING, and the next start has every acknowledged write.
//
// After the last round a SIGTERM must lose nothing at all. A fresh seed per
// run is printed; GPHKV_TEST_SEED replays it.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/durability/record_format.h"
#include "server/durability/write_batch.h"
#include "tests/loadgen/child_process.h"
#include "tests/loadgen/test_seed.h"
#include "tests/server/data_dir_server.h"
#include "tests/server/durable_model.h"
#include "tests/server/memcache_socket.h"

namespace gphkv::testing {
namespace {

namespace fs = std::filesystem;

enum class KillAt { kRandom, kInSnapshot, kInRebuild };

struct Plan {
  std::string fsync = "always";
  KillAt kill_at = KillAt::kRandom;
  // everysec: cut the log as a machine crash could before restarting.
  bool machine_crash = false;
  double load_seconds_min = 0.3, load_seconds_max = 1.2;
  int rounds = 3;
  // Pairs of keys the clients never touch, put before the first round: a
  // snapshot of the clients' few keys is a file that lives a few
  // milliseconds; with this ballast it lives tens of them, long enough to be
  // seen and killed in.
  uint64_t ballast_keys = 0;
  LoadOptions load;
  std::vector<std::string> flags;
};

std::string fresh_dir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  const fs::path dir = fs::path(base ? base : "/tmp") / absl::StrCat("gphkv-durable-", name, "-", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// The batch number in a durability file name ("log-000..0042.gphkv" -> 42).
uint64_t sequence_of(const std::string& name) { return std::stoull(name.substr(name.find('-') + 1, 20)); }

std::vector<std::string> files(const std::string& dir, const std::string& prefix, const std::string& suffix) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (absl::StartsWith(name, prefix) && absl::EndsWith(name, suffix)) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// What a machine crash leaves of the log when the disk holds batches up to
// `durable` (and the newest snapshot, whose batches were synced before it
// became durable): the next batch's record torn at a random byte, every
// later record and segment gone. Returns the batches lost.
uint64_t lose_unsynced_batches(const std::string& dir, uint64_t durable, std::mt19937_64& rng) {
  const std::vector<std::string> snapshots = files(dir, "snapshot-", ".gphkv");
  const uint64_t keep = std::max(durable, snapshots.empty() ? 0 : sequence_of(snapshots.back()));
  uint64_t lost = 0;
  bool cut = false;
  for (const std::string& name : files(dir, "log-", ".gphkv")) {
    const std::string path = dir + "/" + name;
    std::ifstream in(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (uint64_t offset = 0; offset < bytes.size();) {
      const server::durability::RecordAt r = server::durability::read_record(bytes, offset);
      if (r.check != server::durability::RecordCheck::kOk) break;  // a torn tail of its own
      if (server::durability::batch_sequence(r.payload) > keep) {
        ++lost;
        if (!cut) {
          fs::resize_file(path, offset + rng() % (r.end - offset));
          cut = true;
        }
      }
      offset = r.end;
    }
    if (cut && sequence_of(name) > keep + 1) fs::remove(path);
  }
  return lost;
}

// `keys` pairs of 2000 bytes under random keys with the top bit set (the
// clients' scrambled keys meet one with a chance of about keys * 2^-50).
void put_ballast(Client& client, uint64_t keys, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0xba11a57);
  const std::string value(2000, 'b');
  for (uint64_t done = 0; done < keys;) {
    std::vector<uint64_t> batch;
    for (; batch.size() < 100 && done < keys; ++done) batch.push_back(rng() | (uint64_t{1} << 63));
    const std::vector<std::string_view> values(batch.size(), value);
    auto r = client.Put(batch, values);
    ASSERT_TRUE(r.ok()) << r.status();
  }
}

void run_rounds(const std::string& name, const Plan& plan) {
  const uint64_t seed = loadgen::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed ^ std::hash<std::string>()(name));
  const std::string dir = fresh_dir(name);
  std::vector<std::string> flags = plan.flags;
  flags.push_back("--fsync=" + plan.fsync);

  std::map<uint64_t, Value> state;  // verified after the last start
  auto history = std::make_unique<WriteHistory>();
  double kill_time = 0, loss_window = 0;
  int landed = 0;  // kills that hit the moment the plan aims at
  // Rounds go on past plan.rounds until two kills landed in the moment aimed
  // at (at most three times as many rounds).
  auto done = [&](int round) {
    return round >= plan.rounds && (plan.kill_at == KillAt::kRandom || landed >= 2 || round >= 3 * plan.rounds);
  };
  for (int round = 0;; ++round) {
    SCOPED_TRACE(::testing::Message() << name << " round " << round);
    ServerProcess server({dir, flags});
    ASSERT_TRUE(server.wait_serving()) << server.log();
    auto client = server.client();
    if (round == 0) put_ballast(*client, plan.ballast_keys, seed);
    if (round > 0) {
      std::string error;
      const auto keys = [&] {
        std::vector<uint64_t> k;
        for (const auto& [key, v] : history->initial()) k.push_back(key);
        return k;
      }();
      state = read_back(*client, keys, &error, plan.load.byte_keys);
      ASSERT_TRUE(error.empty()) << error;
      const CheckResult r = check_recovered(*history, state, kill_time, loss_window);
      std::printf("%s round %d: restarted on the data dir: %s\n", name.c_str(), round, r.summary().c_str());
      EXPECT_TRUE(r.ok) << ::testing::PrintToString(r.failures) << "\n" << server.log();
      if (!r.ok) return;
    }
    if (done(round)) {
      // A clean stop (the final snapshot) loses nothing.
      ASSERT_EQ(server.terminate(), 0) << server.log();
      ServerProcess again({dir, flags});
      ASSERT_TRUE(again.wait_serving()) << again.log();
      std::string error;
      std::vector<uint64_t> keys;
      for (const auto& [key, v] : state) keys.push_back(key);
      EXPECT_EQ(read_back(*again.client(), keys, &error, plan.load.byte_keys), state) << error;
      EXPECT_TRUE(files(dir, "log-", ".gphkv").empty()) << "the final snapshot covers the whole log";
      break;
    }

    history = std::make_unique<WriteHistory>();
    for (const auto& [key, v] : state) history->set_initial(key, v);
    LoadOptions load = plan.load;
    load.seed = seed + static_cast<uint64_t>(round);
    if (!load.grow) {
      for (int c = 0; c < load.clients; ++c) {
        for (uint64_t j = 0; j < load.keys_per_client; ++j)
          history->set_initial(load_key(load, c, j), state[load_key(load, c, j)]);
      }
    }
    WriteLoad writes(server.address(), load, history.get());
    const double started = now_seconds();
    const double run_for = plan.load_seconds_min + std::uniform_real_distribution<double>(
                                                       0, plan.load_seconds_max - plan.load_seconds_min)(rng);
    // Poll until the moment comes: the time is up, or (aiming at a snapshot
    // or a rebuild) one is seen running after the load has warmed up. A
    // snapshot is seen by its file (*.tmp) in the directory, looked for here
    // without an RPC: on a busy machine a Stats round trip can outlast the
    // file's last moments, and the kill would land after the snapshot.
    double polled_at = started;
    uint64_t durable = 0;
    bool hit = false;
    for (;;) {
      const double now = now_seconds();
      if (now - started >= (plan.kill_at == KillAt::kRandom ? run_for : 20.0)) break;
      const bool warm = now - started >= plan.load_seconds_min;
      if (plan.kill_at == KillAt::kInSnapshot) {
        if (warm && !files(dir, "snapshot-", ".tmp").empty()) {
          hit = true;
          break;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        continue;
      }
      auto stats = client->Stats();
      ASSERT_TRUE(stats.ok()) << stats.status() << server.log();
      polled_at = now;
      durable = stats->data_dir().durable_sequence();
      if (warm && plan.kill_at == KillAt::kInRebuild && stats->rebuilding()) {
        hit = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(plan.kill_at == KillAt::kRandom ? 50 : 1));
    }
    kill_time = now_seconds();
    server.kill9();
    writes.stop();
    EXPECT_EQ(writes.stale_reads(), 0u) << writes.first_stale_read();
    if (plan.kill_at == KillAt::kInSnapshot) hit = !files(dir, "snapshot-", ".tmp").empty();
    landed += hit;
    loss_window = 0;  // a process crash loses nothing acknowledged
    uint64_t cut = 0;
    if (plan.machine_crash) {
      cut = lose_unsynced_batches(dir, durable, rng);
      // What everysec promises: batches wait at most 2 s for a sync while
      // writes come (docs/durability.md); durable was read at polled_at.
      // One more second for an fdatasync on a busy machine.
      loss_window = (kill_time - polled_at) + 2.0 + 1.0;
    }
    std::printf(
        "%s round %d: killed after %.2f s, %lu calls acknowledged%s%s\n", name.c_str(), round, kill_time - started,
        static_cast<unsigned long>(writes.acknowledged_calls()),
        plan.kill_at == KillAt::kRandom ? "" : (hit ? ", inside the moment aimed at" : ", NOT inside the moment"),
        plan.machine_crash ? absl::StrCat(", a machine crash cut ", cut, " batches after batch ", durable).c_str()
                           : "");
    ASSERT_GT(writes.acknowledged_calls(), 0u) << server.log();
  }
  if (plan.kill_at != KillAt::kRandom) {
    EXPECT_GE(landed, 2) << "kills that landed inside a "
                         << (plan.kill_at == KillAt::kInSnapshot ? "snapshot" : "rebuild");
  }
  fs::remove_all(dir);
}

TEST(DurableServer, KillUnderLoadAlways) {
  Plan p;
  p.fsync = "always";
  p.flags = {"--log_segment_bytes=64KiB"};
  run_rounds("always", p);
}

// The same with byte keys (issue 26): the log and snapshots carry their bytes.
TEST(DurableServer, KillUnderLoadWithByteKeys) {
  Plan p;
  p.fsync = "always";
  p.flags = {"--log_segment_bytes=64KiB", "--snapshot_log_bytes=256KiB"};
  p.load.byte_keys = true;
  run_rounds("byte_keys", p);
}

TEST(DurableServer, KillUnderLoadEverysec) {
  Plan p;
  p.fsync = "everysec";
  p.flags = {"--log_segment_bytes=64KiB"};
  run_rounds("everysec", p);
}

TEST(DurableServer, MachineCrashUnderEverysecLosesASuffix) {
  Plan p;
  p.fsync = "everysec";
  p.machine_crash = true;
  p.rounds = 2;
  // Longer than the loss window, so a log that never synced would lose
  // writes older than it.
  p.load_seconds_min = 4.0;
  p.load_seconds_max = 5.0;
  // One segment: only the background sync makes batches durable.
  p.flags = {"--log_segment_bytes=1GiB"};
  run_rounds("machine_crash", p);
}

TEST(DurableServer, KillWhileASnapshotIsWritten) {
  Plan p;
  p.fsync = "everysec";
  p.kill_at = KillAt::kInSnapshot;
  p.ballast_keys = 10000;  // 20 MB
  p.load.keys_per_client = 6000;
  p.load.max_value_bytes = 4000;
  p.flags = {"--snapshot_log_bytes=512KiB", "--log_segment_bytes=64KiB"};
  run_rounds("in_snapshot", p);
}

TEST(DurableServer, KillWhileATableRebuildRuns) {
  Plan p;
  p.fsync = "never";  // the growth comes fastest without a sync per batch
  p.kill_at = KillAt::kInRebuild;
  p.load.grow = true;
  p.load.keys_per_client = 60000;
  p.load.max_value_bytes = 200;
  // Snapshots too, so a key list waits for a rebuild and exports overlap them.
  p.flags = {"--snapshot_log_bytes=1MiB", "--log_segment_bytes=256KiB"};
  run_rounds("in_rebuild", p);
}

TEST(DurableServer, ADiskErrorRefusesWritesAndTheNextStartHasEveryAcknowledgedOne) {
  const std::string dir = fresh_dir("disk_error");
  WriteHistory history;
  std::vector<uint64_t> keys;
  {
    ServerProcess server({dir, {"--fsync=always"}, /*file_size_limit=*/64 << 10});
    ASSERT_TRUE(server.wait_serving()) << server.log();
    auto client = server.client();
    absl::Status failed;
    for (uint64_t k = 1; k < 1000 && failed.ok(); ++k) {
      const std::string value(1000, static_cast<char>('a' + k % 26));
      const double sent = now_seconds();
      auto r = client->Put({k}, {value});
      history.record(k, value, sent, now_seconds(), r.ok());
      keys.push_back(k);
      failed = r.status();
    }
    ASSERT_EQ(failed.code(), absl::StatusCode::kUnavailable) << failed << server.log();
    EXPECT_TRUE(absl::StrContains(failed.message(), "applied but not logged")) << failed;
    auto refused = client->Put({5000}, {"later"});
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_TRUE(absl::StrContains(refused.status().message(), "writes are refused")) << refused.status();
    auto got = client->Get({1});
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(got->found(0)) << "gets go on";
    EXPECT_FALSE(client->Health().ok()) << "health must say NOT_SERVING";
    auto stats = client->Stats();
    ASSERT_TRUE(stats.ok());
    EXPECT_FALSE(stats->data_dir().log_error().empty());
    EXPECT_EQ(server.terminate(), 0) << server.log();
    EXPECT_TRUE(absl::StrContains(server.log(), "no final snapshot: the log failed")) << server.log();
  }
  ServerProcess server({dir, {"--fsync=always"}});
  ASSERT_TRUE(server.wait_serving()) << server.log();
  std::string error;
  const auto state = read_back(*server.client(), keys, &error);
  ASSERT_TRUE(error.empty()) << error;
  const CheckResult r = check_recovered(history, state, now_seconds(), 0);
  EXPECT_TRUE(r.ok) << ::testing::PrintToString(r.failures) << server.log();
  std::printf("disk error: restarted: %s\n", r.summary().c_str());
  fs::remove_all(dir);
}

// A touch rewrites its items with their new expiry: logged before it is
// answered, so a kill -9 right after it keeps the new expiry (an item touched
// to expire at once stays gone) with the item's value, flags and version.
TEST(DurableServer, ATouchOutlivesAKill) {
  const std::string dir = fresh_dir("touch");
  const std::vector<std::string_view> kept{"kept"}, touched{"touched"}, expired{"expired"};
  v1::GetResponse before, kept_before;
  double touched_at = 0;
  {
    ServerProcess server({dir, {"--fsync=always"}});
    ASSERT_TRUE(server.wait_serving()) << server.log();
    auto client = server.client();
    WriteOptions w;
    w.flags = 7;
    w.exptime = 1000;
    for (std::string_view key : {"kept", "touched", "expired"}) {
      ASSERT_TRUE(client->Write(key, "value of " + std::string(key), w).ok());
    }
    auto items = client->GetItems(touched);
    ASSERT_TRUE(items.ok()) << items.status();
    before = *items;
    auto kept_items = client->GetItems(kept);
    ASSERT_TRUE(kept_items.ok()) << kept_items.status();
    kept_before = *kept_items;
    touched_at = now_seconds();
    auto t = client->Touch(touched, 100000);
    ASSERT_TRUE(t.ok()) << t.status();
    ASSERT_TRUE(t->found(0));
    ASSERT_TRUE(client->Touch(expired, -1).ok());
    auto gone = client->Get(expired);
    ASSERT_TRUE(gone.ok());
    EXPECT_FALSE(gone->found(0));
    server.kill9();
  }
  ServerProcess server({dir, {"--fsync=always"}});
  ASSERT_TRUE(server.wait_serving()) << server.log();
  auto client = server.client();
  auto after = client->GetItems(touched);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_TRUE(after->found(0)) << server.log();
  EXPECT_EQ(after->values(), "value of touched");
  EXPECT_EQ(after->flags(0), 7u);
  EXPECT_EQ(after->cas(0), before.cas(0)) << "a touch keeps the version";
  EXPECT_GE(after->exptime(0), static_cast<uint32_t>(touched_at) + 100000 - 1);
  EXPECT_NE(after->exptime(0), before.exptime(0)) << "the touch's expiry, not the write's";
  auto gone = client->Get(expired);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->found(0)) << "touched to expire at once: a restart must not bring it back";
  auto still = client->GetItems(kept);
  ASSERT_TRUE(still.ok());
  EXPECT_TRUE(still->found(0));
  EXPECT_EQ(still->exptime(0), kept_before.exptime(0)) << "an item not touched keeps its own";
  EXPECT_EQ(still->cas(0), kept_before.cas(0));
  fs::remove_all(dir);
}

// flush_all through the memcached port: its mark is logged before the
// flush is answered, so after a kill -9 right after it the items it hid stay
// gone and those written after it stay; a delayed one still pending comes
// back pending (its time is a day off: the items are there).
TEST(DurableServer, AFlushAllOutlivesAKill) {
  const std::string dir = fresh_dir("flush");
  const int port = loadgen::testing::FreePort();
  const std::vector<std::string> flags{"--fsync=always", absl::StrCat("--memcached_address=127.0.0.1:", port)};
  const std::string stored = "STORED\r\n", ok = "OK\r\n";
  {
    ServerProcess server({dir, flags});
    ASSERT_TRUE(server.wait_serving()) << server.log();
    MemcacheSocket s(port);
    ASSERT_TRUE(s.connected()) << server.log();
    EXPECT_EQ(s.round_trip("set before 0 0 1\r\nb\r\n", stored), stored);
    EXPECT_EQ(s.round_trip("flush_all\r\n", ok), ok);
    EXPECT_EQ(s.round_trip("set after 0 0 1\r\na\r\n", stored), stored);
    EXPECT_EQ(s.round_trip("flush_all 86400\r\n", ok), ok);
    server.kill9();
  }
  ServerProcess server({dir, flags});
  ASSERT_TRUE(server.wait_serving()) << server.log();
  MemcacheSocket s(port);
  ASSERT_TRUE(s.connected()) << server.log();
  const std::string want = "VALUE after 0 1\r\na\r\nEND\r\n";
  EXPECT_EQ(s.round_trip("get before after\r\n", want), want) << server.log();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gphkv::testing
