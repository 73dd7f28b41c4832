// The data directory as the service shows it: Stats and /metrics follow the
// log's batches and the snapshots, a server started on the directory again
// says what recovery found, refused calls and gets append nothing, and a
// server without --data_dir shows none of it.
#include <unistd.h>

#include <filesystem>
#include <regex>

#include "absl/strings/str_cat.h"
#include "tests/server/test_server.h"

namespace gphkv {
namespace {

namespace fs = std::filesystem;
using testing::connect;
using testing::start_server;
using testing::test_options;

std::string scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / absl::StrCat("gphkv-data-dir-service-", name, "-", getpid());
  fs::remove_all(dir);
  return dir.string();
}

server::ServerOptions with_data_dir(const std::string& dir) {
  server::ServerOptions o = test_options();
  o.data_dir.dir = dir;
  o.data_dir.options.log.fsync = server::durability::FsyncPolicy::kAlways;
  o.data_dir.options.snapshot_interval_seconds = 0;
  o.data_dir.options.snapshot_log_bytes = 0;
  return o;
}

// The value of a series without labels on a /metrics page (NaN if absent).
double metric(const std::string& page, const std::string& series) {
  std::smatch m;
  if (!std::regex_search(page, m, std::regex("\n" + series + " ([-0-9.e+]+)\n"))) return std::nan("");
  return std::stod(m[1]);
}

TEST(DataDirService, StatsAndMetricsFollowTheLogSnapshotsAndRecovery) {
  const std::string dir = scratch("follow");
  {
    auto server = start_server(with_data_dir(dir));
    ASSERT_NE(server, nullptr);
    auto client = connect(*server);
    for (uint64_t k = 1; k <= 3; ++k) {
      ASSERT_TRUE(client->Put(std::vector<uint64_t>{k}, std::vector<std::string_view>{"value"}).ok());
    }
    auto stats = client->Stats();
    ASSERT_TRUE(stats.ok()) << stats.status();
    ASSERT_TRUE(stats->has_data_dir());
    const v1::DataDirStats& d = stats->data_dir();
    EXPECT_EQ(d.dir(), dir);
    EXPECT_EQ(d.fsync(), "always");
    EXPECT_EQ(d.last_sequence(), 3u) << "one batch per sequential call";
    EXPECT_EQ(d.durable_sequence(), 3u) << "always: synced before the answer";
    EXPECT_GT(d.log_bytes(), 0u);
    EXPECT_EQ(d.log_segments(), 1u);
    EXPECT_EQ(d.snapshot_sequence(), 0u);
    EXPECT_EQ(d.snapshot_age_seconds(), -1);
    EXPECT_TRUE(d.log_error().empty());
    const std::string page = server->render_metrics();
    EXPECT_EQ(metric(page, "gphkv_log_bytes"), static_cast<double>(d.log_bytes())) << page;
    EXPECT_GT(metric(page, "gphkv_log_written_bytes_total"), 0);
    EXPECT_GE(metric(page, "gphkv_log_fsync_seconds_count"), 3);
    EXPECT_EQ(metric(page, "gphkv_snapshot_age_seconds"), -1);
    EXPECT_NE(page.find("gphkv_snapshots_total{result=\"ok\"} 0\n"), std::string::npos) << page;
    server->shutdown();  // the final snapshot
  }
  auto server = start_server(with_data_dir(dir));
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  auto got = client->Get(std::vector<uint64_t>{1, 2, 3, 4});
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->found(0) && got->found(1) && got->found(2) && !got->found(3));
  auto stats = client->Stats();
  ASSERT_TRUE(stats.ok());
  const v1::DataDirStats& d = stats->data_dir();
  EXPECT_EQ(d.recovered_keys(), 3u);
  EXPECT_EQ(d.recovered_snapshot_pairs(), 3u);
  EXPECT_EQ(d.recovered_batches(), 0u) << "the final snapshot covered the whole log";
  EXPECT_EQ(d.snapshot_sequence(), 3u);
  EXPECT_GE(d.snapshot_age_seconds(), 0);
  EXPECT_EQ(d.log_segments(), 0u);
  EXPECT_EQ(d.last_sequence(), 3u) << "sequence numbers go on from the snapshot";
  const std::string page = server->render_metrics();
  EXPECT_GE(metric(page, "gphkv_snapshot_age_seconds"), 0) << page;
  EXPECT_GT(metric(page, "gphkv_snapshot_bytes"), 0);
  EXPECT_GE(metric(page, "gphkv_recovery_seconds"), 0);
  server->shutdown();
  fs::remove_all(dir);
}

TEST(DataDirService, RefusedCallsAndGetsAppendNothing) {
  const std::string dir = scratch("refused");
  server::ServerOptions o = with_data_dir(dir);
  o.store.memory_limit_bytes = 8 << 20;
  auto server = start_server(o);
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  ASSERT_TRUE(client->Put(std::vector<uint64_t>{1}, std::vector<std::string_view>{"kept"}).ok());
  const std::string big(900 << 10, 'x');
  std::vector<uint64_t> keys;
  std::vector<std::string_view> values;
  for (uint64_t k = 100; k < 120; ++k) {
    keys.push_back(k);
    values.push_back(big);
  }
  auto refused = client->Put(keys, values);  // 18 MB past an 8 MiB cap
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  ASSERT_TRUE(client->Get(std::vector<uint64_t>{1, 100}).ok());
  auto stats = client->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->data_dir().last_sequence(), 1u) << "only the accepted put was logged";
  server->shutdown();
  fs::remove_all(dir);
}

TEST(DataDirService, WithoutADataDirNothingShowsIt) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  auto stats = connect(*server)->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_FALSE(stats->has_data_dir());
  EXPECT_EQ(server->render_metrics().find("gphkv_log_"), std::string::npos);
}

TEST(DataDirService, AQueueBoundPastOneLogRecordIsRefused) {
  testing::keep_grpc_initialized();
  server::ServerOptions o = with_data_dir(scratch("bound"));
  o.batcher.max_queue_bytes = uint64_t{5} << 30;
  auto s = server::Server::start(o);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << s.status();
}

}  // namespace
}  // namespace gphkv
