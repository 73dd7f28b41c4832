// The load generator's reading of the server's stage histograms
// (loadgen/server_stages.h): a page's sums and counts, and the means between
// two scrapes.
#include "loadgen/server_stages.h"

#include <gtest/gtest.h>

namespace gphkv::loadgen {
namespace {

constexpr char kPage[] =
    "# HELP gphkv_call_stage_seconds Every call's time\n"
    "# TYPE gphkv_call_stage_seconds histogram\n"
    "gphkv_call_stage_seconds_count{stage=\"execute\"} 10\n"
    "gphkv_call_stage_seconds_sum{stage=\"execute\"} 0.002\n"
    "gphkv_call_stage_seconds_bucket{stage=\"execute\",le=\"1e-06\"} 0\n"
    "gphkv_call_stage_seconds_count{stage=\"respond\"} 10\n"
    "gphkv_call_stage_seconds_sum{stage=\"respond\"} 1e-4\n"
    "gphkv_queue_wait_seconds_count 10\n"
    "gphkv_queue_wait_seconds_sum 0.0005\n"
    "gphkv_queue_wait_seconds_bucket{le=\"+Inf\"} 10\n"
    "gphkv_get_stage_seconds_count{stage=\"slot\"} 4\n"
    "gphkv_get_stage_seconds_sum{stage=\"slot\"} 0.008\n"
    "gphkv_get_stage_seconds_bucket{stage=\"slot\",le=\"+Inf\"} 4\n"
    "gphkv_request_duration_seconds_sum{op=\"get\"} 9\n";

TEST(ServerStages, ReadsTheStageSumsAndCountsOfAPage) {
  const StageSample s = ParseStageSample(kPage);
  ASSERT_EQ(s.sum_count.size(), 4u);
  EXPECT_DOUBLE_EQ(s.sum_count.at("execute").first, 0.002);
  EXPECT_DOUBLE_EQ(s.sum_count.at("execute").second, 10);
  EXPECT_DOUBLE_EQ(s.sum_count.at("respond").first, 1e-4);
  EXPECT_DOUBLE_EQ(s.sum_count.at("queue").first, 0.0005);
  EXPECT_DOUBLE_EQ(s.sum_count.at("queue").second, 10);
  // A pipelined get batch's stage, apart from the calls' of the same name.
  EXPECT_DOUBLE_EQ(s.sum_count.at("batch_slot").first, 0.008);
  EXPECT_DOUBLE_EQ(s.sum_count.at("batch_slot").second, 4);
}

TEST(ServerStages, MeansAreOfTheCallsBetweenTwoScrapes) {
  StageSample from, to;
  from.sum_count["execute"] = {1.0, 100};
  to.sum_count["execute"] = {1.5, 150};
  to.sum_count["intake"] = {0.01, 4};  // a stage first seen in the second scrape
  from.sum_count["respond"] = {2.0, 10};
  to.sum_count["respond"] = {2.0, 10};  // no call in between
  const auto m = StagesBetween(from, to);
  EXPECT_DOUBLE_EQ(m.at("execute").calls, 50);
  EXPECT_DOUBLE_EQ(m.at("execute").mean_s, 0.01);
  EXPECT_DOUBLE_EQ(m.at("intake").mean_s, 0.0025);
  EXPECT_DOUBLE_EQ(m.at("respond").calls, 0);
  EXPECT_DOUBLE_EQ(m.at("respond").mean_s, 0);
}

TEST(ServerStages, AnUnreachableEndpointIsAnError) {
  EXPECT_FALSE(ScrapeMetrics("127.0.0.1:1", 0.5).ok());
  EXPECT_FALSE(ScrapeMetrics("no-port-here", 0.5).ok());
}

}  // namespace
}  // namespace gphkv::loadgen
