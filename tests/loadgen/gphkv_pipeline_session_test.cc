// --api=pipeline against the in-process fake gphkv: ops keep their order on
// a stream, each stream carries up to --depth of them and no more, answers
// are matched by id, and an answer with a stranger's id or a server that
// goes away end as counted errors, never as a hang. (Refused operations:
// driver_test.cc, on either API.)
#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "loadgen/gphkv_target.h"
#include "loadgen/loadgen.h"
#include "tests/loadgen/fake_gphkv_server.h"
#include "tests/loadgen/small_config.h"

namespace gphkv::loadgen {
namespace {

using testing::FakeGphkvServer;

// One stream of eight calls, measured from the start.
LoadgenConfig PipelineConfig(const std::string& address) {
  LoadgenConfig c = testing::SmallConfig(address);
  c.api = "pipeline";
  c.drive.connections = 1;
  c.drive.depth = 8;
  c.drive.warmup_s = 0;
  return c;
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);) lines.push_back(line);
  return lines;
}

// One stream, eight ops in flight at a time: the server receives exactly the
// calls the generator issued, in the order it issued them.
TEST(PipelineSession, OpsArriveInIssueOrderOnTheirStream) {
  FakeGphkvServer server;
  LoadgenConfig c = PipelineConfig(server.address());
  c.load = false;
  c.workload.write_fraction = 0.1;  // gets, puts and deletes all ride the stream
  c.drive.count = 3000;
  c.trace_path = ::testing::TempDir() + "/pipeline_order.trace";
  auto r = RunLoadgen(c);
  ASSERT_TRUE(r.ok()) << r.status();
  const OpStats all = r->run.Overall();
  EXPECT_EQ(all.calls, 3000u);
  EXPECT_EQ(all.errors, 0u) << (all.errors_by_status.empty() ? "" : all.errors_by_status.begin()->first);
  EXPECT_GT(r->run.by_type[1].calls + r->run.by_type[2].calls, 100u);
  EXPECT_EQ(server.pipeline_streams(), 1);
  std::vector<std::string> traced;
  for (const std::string& line : Lines(c.trace_path)) traced.push_back(line.substr(line.find(' ') + 1));
  EXPECT_EQ(server.Log(), traced);
}

TEST(PipelineSession, LoadsThenReadsBackWhatItLoaded) {
  FakeGphkvServer server;
  LoadgenConfig c = PipelineConfig(server.address());
  c.drive.threads = 2;
  c.drive.connections = 2;
  c.drive.depth = 4;
  c.drive.count = 2000;
  c.workload.write_fraction = 0;  // every key loaded stays for the read-back
  auto r = RunLoadgen(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->load_keys, c.workload.keys);
  EXPECT_EQ(r->load_errors, 0u);
  EXPECT_EQ(server.stored(), c.workload.keys);
  const OpStats& gets = r->run.by_type[0];
  EXPECT_EQ(r->run.Overall().errors, 0u);
  EXPECT_GT(static_cast<double>(gets.found) / gets.keys, 0.99);
  EXPECT_GT(gets.value_bytes, 0u);
  // A stream per connection per thread, for the load and again for the run.
  EXPECT_EQ(server.pipeline_streams(), 2 * 2 * 2);
}

// While the server holds every answer, each stream has exactly --depth ops
// out: the generator fills the stream and does not overfill it.
TEST(PipelineSession, KeepsDepthOpsInFlightOnEachStreamAndNoMore) {
  using namespace std::chrono;
  for (uint32_t depth : {1u, 3u, 16u}) {
    FakeGphkvServer server;
    LoadgenConfig c = PipelineConfig(server.address());
    c.load = false;
    c.drive.connections = 2;
    c.drive.depth = depth;
    c.drive.duration_s = 1.0;
    const auto from = FakeGphkvServer::Clock::now() + milliseconds(300);
    server.StallBetween(from, from + milliseconds(300));
    auto r = RunLoadgen(c);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->run.Overall().errors, 0u);
    EXPECT_EQ(server.max_pipeline_in_flight(), static_cast<int>(depth)) << "depth " << depth;
  }
}

// Answers carrying ids the generator never sent answer nothing: the ops stay
// out until the drain gives up on them, and count as errors.
TEST(PipelineSession, AnswersWithStrangersIdsLeaveTheirOpsOut) {
  FakeGphkvServer server;
  server.ShiftPipelineIdsBy(uint64_t{1} << 40);
  LoadgenConfig c = PipelineConfig(server.address());
  c.load = false;
  c.drive.connections = 2;
  c.drive.depth = 4;
  c.drive.duration_s = 0.3;
  c.drive.drain_timeout_s = 0.3;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = RunLoadgen(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10);
  const OpStats all = r->run.Overall();
  EXPECT_EQ(all.calls, 8u);  // the 2 x 4 slots, never freed
  EXPECT_EQ(all.errors_by_status.at("DRAIN_TIMEOUT"), 8u);
}

// The server goes away mid-run: the ops its streams carried fail with the
// streams' final status, later ops fail at once, and the run ends on time.
TEST(PipelineSession, AServerThatGoesAwayFailsTheOpsAndTheRunEnds) {
  auto server = std::make_unique<FakeGphkvServer>();
  LoadgenConfig c = PipelineConfig(server->address());
  c.load = false;
  c.drive.connections = 2;
  // The fake's shutdown lets streams run on for its 2 s grace, then cancels them.
  c.drive.duration_s = 3.5;
  c.drive.drain_timeout_s = 1;
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    server.reset();
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto r = RunLoadgen(c);
  killer.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 15);
  const OpStats all = r->run.Overall();
  EXPECT_GT(all.errors, 0u);
  EXPECT_GT(all.calls - all.errors, 100u);  // it worked before
  for (const auto& [status, n] : all.errors_by_status) {
    EXPECT_TRUE(status == "UNAVAILABLE" || status == "CANCELLED" || status == "STREAM_ENDED") << status << " " << n;
  }
}

// Nothing listens: opening the session fails with UNAVAILABLE and the reason,
// before any op could be lost on a stream that never started.
TEST(PipelineSession, NoServerMeansTheSessionDoesNotOpen) {
  const ValuePool values(64);
  auto target = MakeGphkvTarget("127.0.0.1:1", GphkvApi::kPipeline, &values);
  ASSERT_TRUE(target.ok()) << target.status();
  const auto t0 = Clock::now();
  auto session = (*target)->Connect(2);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(session.status().message().find("Pipeline stream 0 did not start: UNAVAILABLE"), absl::string_view::npos)
      << session.status();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 10.5);
}

}  // namespace
}  // namespace gphkv::loadgen
