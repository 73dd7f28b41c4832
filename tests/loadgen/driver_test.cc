// The drivers against the in-process fake gphkv: counts, rates, and the
// open-loop schedule's honesty when the server stalls.
#include "loadgen/driver.h"

#include <gtest/gtest.h>

#include "loadgen/config.h"
#include "loadgen/loadgen.h"
#include "tests/loadgen/fake_gphkv_server.h"
#include "tests/loadgen/small_config.h"

namespace gphkv::loadgen {
namespace {

using testing::FakeGphkvServer;
using testing::SmallConfig;

TEST(Driver, ClosedLoopCountMeasuresExactlyThatManyCallsAfterTheLoad) {
  FakeGphkvServer server;
  LoadgenConfig c = SmallConfig(server.address());
  c.drive.threads = 2;
  c.drive.count = 3001;
  auto r = RunLoadgen(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->loaded);
  EXPECT_EQ(r->load_keys, c.workload.keys);
  EXPECT_EQ(r->load_errors, 0u);
  const OpStats all = r->run.Overall();
  EXPECT_EQ(all.calls, 3001u);
  EXPECT_EQ(all.errors, 0u);
  EXPECT_EQ(all.latency.count(), 3001u);
  // Everything was loaded and deletes are rare: reads nearly all hit.
  const OpStats& gets = r->run.by_type[0];
  EXPECT_GT(static_cast<double>(gets.found) / gets.keys, 0.99);
  EXPECT_GT(gets.value_bytes, 0u);
}

TEST(Driver, OpenLoopOffersTheScheduledRate) {
  FakeGphkvServer server;
  LoadgenConfig c = SmallConfig(server.address());
  c.load = false;
  c.drive.mode = DriveOptions::Mode::kOpen;
  c.drive.rate = 1000;
  c.drive.depth = 16;
  c.drive.duration_s = 1.0;
  auto r = RunLoadgen(c);
  ASSERT_TRUE(r.ok()) << r.status();
  // 1000 calls/s for 1 s: exactly 1000 intended sends in the window, give or
  // take the one on its edge; all of them answered.
  EXPECT_NEAR(static_cast<double>(r->run.scheduled), 1000, 2);
  EXPECT_EQ(r->run.Overall().calls, r->run.scheduled);
  EXPECT_EQ(r->run.dropped, 0u);
}

// Per call (unary) or per operation on a stream (pipeline), alike.
class DriverOnEitherApi : public ::testing::TestWithParam<std::string> {};

TEST_P(DriverOnEitherApi, ErrorsAreCountedByStatusAndOpType) {
  FakeGphkvServer server;
  LoadgenConfig c = SmallConfig(server.address());
  c.api = GetParam();
  c.load = false;
  c.workload.write_fraction = 0.3;
  c.workload.delete_fraction = 0.0;
  c.drive.count = 400;
  server.FailPutsWith(8);  // RESOURCE_EXHAUSTED, what a full gphkv answers
  auto r = RunLoadgen(c);
  ASSERT_TRUE(r.ok()) << r.status();
  const OpStats& gets = r->run.by_type[0];
  const OpStats& puts = r->run.by_type[1];
  EXPECT_EQ(gets.errors, 0u);
  EXPECT_GT(puts.calls, 60u);  // ~120 of 400 expected
  EXPECT_EQ(puts.errors, puts.calls);
  ASSERT_EQ(puts.errors_by_status.size(), 1u);
  EXPECT_EQ(puts.errors_by_status.begin()->first, "RESOURCE_EXHAUSTED");
  EXPECT_EQ(puts.latency.count(), puts.calls);  // failed calls keep their latency
  EXPECT_EQ(r->run.Overall().errors_by_status.at("RESOURCE_EXHAUSTED"), puts.calls);
  EXPECT_EQ(r->run.Overall().calls, 400u);  // a pipeline stream stays up through the refusals
}

// The read check end to end: a store that keeps every write passes it on
// either API; one that acknowledges overwrites but keeps the old values is
// caught, by stale reads, and only then.
TEST_P(DriverOnEitherApi, ReadCheckPassesAStoreThatKeepsItsWritesAndCatchesOneThatDoesNot) {
  for (const bool broken : {false, true}) {
    FakeGphkvServer server;
    if (broken) server.KeepFirstValues();
    LoadgenConfig c = SmallConfig(server.address());
    c.api = GetParam();
    c.workload.keys = 2000;  // hot keys are written and read again often
    c.workload.write_fraction = 0.2;
    c.drive.threads = 2;
    c.drive.depth = 4;
    c.drive.count = 3000;
    auto r = RunLoadgen(c);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->read_check_mode, "completed");
    EXPECT_EQ(r->run.Overall().errors, 0u);
    EXPECT_GT(r->read_check.keys_checked, 1000u);
    EXPECT_EQ(r->read_check.missing, 0u);
    EXPECT_EQ(r->read_check.corrupt, 0u);
    if (broken) {
      EXPECT_GT(r->read_check.stale, 10u) << "broken store";
    } else {
      EXPECT_EQ(r->read_check.stale, 0u) << "sound store";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(UnaryAndPipeline, DriverOnEitherApi, ::testing::Values("unary", "pipeline"));

// A server that stops answering: the calls still out when the drain gives
// up are errors that keep the latency they had reached; nothing hangs.
TEST(Driver, CallsStillOutAtTheEndAreErrorsWithTheirLatency) {
  using namespace std::chrono;
  FakeGphkvServer server;
  LoadgenConfig c = SmallConfig(server.address());
  c.load = false;
  c.drive.mode = DriveOptions::Mode::kOpen;
  c.drive.rate = 200;
  c.drive.depth = 4;  // 8 slots: most due calls wait in the backlog
  c.drive.warmup_s = 0;
  c.drive.duration_s = 0.5;
  c.drive.drain_timeout_s = 0.5;
  const auto now = FakeGphkvServer::Clock::now();
  server.StallBetween(now, now + seconds(30));
  const auto t0 = steady_clock::now();
  auto r = RunLoadgen(c);
  const double took_s = duration<double>(steady_clock::now() - t0).count();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LT(took_s, 10);
  const OpStats all = r->run.Overall();
  EXPECT_NEAR(static_cast<double>(r->run.scheduled), 100, 2);
  EXPECT_EQ(all.calls, r->run.scheduled);
  EXPECT_EQ(all.errors, all.calls);
  EXPECT_EQ(r->run.dropped, all.calls);
  EXPECT_EQ(all.errors_by_status.at("DRAIN_TIMEOUT"), 8u);  // the 8 slots in flight
  EXPECT_EQ(all.errors_by_status.at("NOT_SENT"), all.calls - 8);
  // The first call was due at the start and waited through window and drain.
  EXPECT_GT(all.latency.max(), 900'000'000u);
  EXPECT_GT(all.latency.ValueAtQuantile(0.5), 400'000'000u);
}

TEST(Driver, OpenLoopWithSpinKeepsTheScheduleAndRecordsSendLag) {
  FakeGphkvServer server;
  LoadgenConfig c = SmallConfig(server.address());
  c.load = false;
  c.drive.mode = DriveOptions::Mode::kOpen;
  c.drive.rate = 2000;
  c.drive.depth = 16;
  c.drive.duration_s = 0.5;
  c.drive.spin_us = 100;
  auto r = RunLoadgen(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(static_cast<double>(r->run.scheduled), 1000, 2);
  EXPECT_EQ(r->run.send_lag.count(), r->run.Overall().calls);
  // No bound on the lag itself: on a machine shared with other work a
  // spinning thread is descheduled for long stretches (we saw p50 lags from
  // 0.2 us to 158 ms on the 2-core development box), which is why --spin_us
  // is for dedicated clients and why the lag is reported at all.
}

// The point of the open loop: a server that stalls for 300 ms shows it in
// the percentiles, because every call that was due during the stall counts
// from when it was due. The closed loop, run against the same stall, hides
// it behind the few calls that were in flight (coordinated omission).
TEST(Driver, OpenLoopShowsAStallThatTheClosedLoopHides) {
  using namespace std::chrono;
  const auto stall = milliseconds(300);
  auto run = [&](DriveOptions::Mode mode) {
    FakeGphkvServer server;
    LoadgenConfig c = SmallConfig(server.address());
    c.load = false;
    c.drive.mode = mode;
    c.drive.rate = 1000;
    // Open: room for every call due during the stall. Closed: one call per
    // connection, as a closed-loop tool is usually run.
    c.drive.depth = mode == DriveOptions::Mode::kOpen ? 64 : 1;
    c.drive.warmup_s = 0.2;
    c.drive.duration_s = 1.5;
    // The stall begins 0.8 s into the measured window (connect + 20 ms start
    // + 0.2 s warm-up ahead of it).
    const auto from = FakeGphkvServer::Clock::now() + milliseconds(1000);
    server.StallBetween(from, from + stall);
    auto r = RunLoadgen(c);
    EXPECT_TRUE(r.ok()) << r.status();
    return r->run.Overall();
  };
  const OpStats open = run(DriveOptions::Mode::kOpen);
  const OpStats closed = run(DriveOptions::Mode::kClosed);
  const double open_p99_ms = open.latency.ValueAtQuantile(0.99) / 1e6;
  const double open_p90_ms = open.latency.ValueAtQuantile(0.90) / 1e6;
  const double closed_p99_ms = closed.latency.ValueAtQuantile(0.99) / 1e6;
  const double closed_max_ms = closed.latency.max() / 1e6;
  std::printf("open: p90 %.1f ms p99 %.1f ms over %lu calls; closed: p99 %.2f ms max %.1f ms over %lu calls\n",
              open_p90_ms, open_p99_ms, open.calls, closed_p99_ms, closed_max_ms, closed.calls);
  // About 300 of the ~1500 open-loop calls were due during the stall, with
  // latencies spread evenly over 0..300 ms: p99 sits near 290 ms, p90 near
  // 150 ms.
  EXPECT_GT(open_p99_ms, 200);
  EXPECT_GT(open_p90_ms, 50);
  EXPECT_LT(open.latency.max() / 1e6, 1000);
  // The closed loop saw the stall too (its max), yet its p99 does not.
  EXPECT_GT(closed_max_ms, 200);
  EXPECT_LT(closed_p99_ms, open_p99_ms / 5);
}

}  // namespace
}  // namespace gphkv::loadgen
