// ServiceMetrics: the names, labels and bucket bounds the dashboard, the
// alert rules and docs/service.md rely on, and what record_request moves.
#include "server/service_metrics.h"

#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "gtest/gtest.h"

namespace gphkv::server {
namespace {

using Labels = std::map<std::string, std::string>;

std::map<std::string, prometheus::MetricFamily> families(const ServiceMetrics& m) {
  std::map<std::string, prometheus::MetricFamily> out;
  for (auto& f : m.registry()->Collect()) out[f.name] = f;
  return out;
}

Labels labels_of(const prometheus::ClientMetric& c) {
  Labels out;
  for (const auto& l : c.label) out[l.name] = l.value;
  return out;
}

// The series of `family` with exactly these labels, or nullptr.
const prometheus::ClientMetric* series(const prometheus::MetricFamily& family, const Labels& labels) {
  for (const auto& c : family.metric) {
    if (labels_of(c) == labels) return &c;
  }
  return nullptr;
}

std::vector<double> upper_bounds(const prometheus::ClientMetric& c) {
  std::vector<double> out;
  for (const auto& b : c.histogram.bucket) out.push_back(b.upper_bound);
  return out;
}

// start, 2*start, 4*start, ... (count of them), then +Inf.
std::vector<double> doubling(double start, int count) {
  std::vector<double> out;
  for (int i = 0; i < count; ++i, start *= 2) out.push_back(start);
  out.push_back(std::numeric_limits<double>::infinity());
  return out;
}

TEST(ServiceMetrics, ExportsTheFamiliesDeployRelies) {
  ServiceMetrics m;
  m.set_build_info("1.2.3", "cpu", "Some CPU");
  const std::map<std::string, prometheus::MetricType> want = {
      {"gphkv_requests_total", prometheus::MetricType::Counter},
      {"gphkv_keys_total", prometheus::MetricType::Counter},
      {"gphkv_request_duration_seconds", prometheus::MetricType::Histogram},
      {"gphkv_batch_keys", prometheus::MetricType::Histogram},
      {"gphkv_batch_calls", prometheus::MetricType::Histogram},
      {"gphkv_queue_wait_seconds", prometheus::MetricType::Histogram},
      {"gphkv_call_stage_seconds", prometheus::MetricType::Histogram},
      {"gphkv_device_seconds", prometheus::MetricType::Histogram},
      {"gphkv_get_stage_seconds", prometheus::MetricType::Histogram},
      {"gphkv_put_stage_seconds", prometheus::MetricType::Histogram},
      {"gphkv_table_keys", prometheus::MetricType::Gauge},
      {"gphkv_collided_keys", prometheus::MetricType::Gauge},
      {"gphkv_table_load_factor", prometheus::MetricType::Gauge},
      {"gphkv_table_bytes", prometheus::MetricType::Gauge},
      {"gphkv_value_heap_bytes", prometheus::MetricType::Gauge},
      {"gphkv_memory_limit_bytes", prometheus::MetricType::Gauge},
      {"gphkv_queue_keys", prometheus::MetricType::Gauge},
      {"gphkv_rebuilds_total", prometheus::MetricType::Counter},
      {"gphkv_insert_relocations_total", prometheus::MetricType::Counter},
      {"gphkv_items_swept_total", prometheus::MetricType::Counter},
      {"gphkv_evictions_total", prometheus::MetricType::Counter},
      {"gphkv_build_info", prometheus::MetricType::Gauge},
  };
  const auto got = families(m);
  std::map<std::string, prometheus::MetricType> types;
  for (const auto& [name, f] : got) types[name] = f.type;
  EXPECT_EQ(types, want);

  const auto* info =
      series(got.at("gphkv_build_info"), {{"version", "1.2.3"}, {"backend", "cpu"}, {"device", "Some CPU"}});
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->gauge.value, 1.0);
  for (const char* cause : {"load_factor", "no_room", "burst", "shrink"}) {
    const auto* r = series(got.at("gphkv_rebuilds_total"), {{"cause", cause}});
    ASSERT_NE(r, nullptr) << cause << " is exported at 0 from the start";
    EXPECT_EQ(r->counter.value, 0.0);
  }
}

TEST(ServiceMetrics, HistogramsKeepTheirLabelsAndBuckets) {
  ServiceMetrics m;
  const auto got = families(m);
  for (const char* op : {"get", "put", "delete", "pipeline", "stats", "shrink", "batches"}) {
    const auto* d = series(got.at("gphkv_request_duration_seconds"), {{"op", op}});
    ASSERT_NE(d, nullptr) << op;
    EXPECT_EQ(upper_bounds(*d), doubling(10e-6, 20)) << op;  // 10 us .. 5.24 s
  }
  for (const char* op : {"get", "put", "delete"}) {
    const auto* d = series(got.at("gphkv_device_seconds"), {{"op", op}});
    ASSERT_NE(d, nullptr) << op;
    EXPECT_EQ(upper_bounds(*d), doubling(1e-6, 24)) << op;  // 1 us .. 8.4 s
  }
  EXPECT_EQ(got.at("gphkv_device_seconds").metric.size(), 3u);
  for (int st = 0; st < kNumGetStages; ++st) {
    const auto* s = series(got.at("gphkv_get_stage_seconds"), {{"stage", get_stage_name(st)}});
    ASSERT_NE(s, nullptr) << get_stage_name(st);
    EXPECT_EQ(upper_bounds(*s), doubling(1e-6, 24));
  }
  for (int st = 0; st < kNumPutStages; ++st) {
    const auto* s = series(got.at("gphkv_put_stage_seconds"), {{"stage", put_stage_name(st)}});
    ASSERT_NE(s, nullptr) << put_stage_name(st);
    EXPECT_EQ(upper_bounds(*s), doubling(1e-6, 24));
  }
  EXPECT_EQ(got.at("gphkv_put_stage_seconds").metric.size(), static_cast<size_t>(kNumPutStages));
  EXPECT_EQ(upper_bounds(*series(got.at("gphkv_batch_keys"), {})), doubling(1, 20));
  EXPECT_EQ(upper_bounds(*series(got.at("gphkv_batch_calls"), {})), doubling(1, 14));
  EXPECT_EQ(upper_bounds(*series(got.at("gphkv_queue_wait_seconds"), {})), doubling(1e-6, 24));
  for (int st = 0; st < kNumCallStages; ++st) {
    const auto* s = series(got.at("gphkv_call_stage_seconds"), {{"stage", call_stage_name(st)}});
    ASSERT_NE(s, nullptr) << call_stage_name(st);
    EXPECT_EQ(upper_bounds(*s), doubling(1e-6, 24));
  }
  EXPECT_EQ(got.at("gphkv_call_stage_seconds").metric.size(), static_cast<size_t>(kNumCallStages));
}

// A tally adds its calls to the histograms at once, each in the bucket a
// single observation would have put it in.
TEST(CallStageTally, AddsWhatSingleObservationsWould) {
  ServiceMetrics tallied, observed;
  CallStageTally tally;
  const double samples[] = {0, 1e-6, 1.5e-6, 3e-3, 0.25, 100};
  for (double v : samples) {
    tally.add(kCallRespond, v);
    tally.add(kCallIntake, v / 2);
    observed.call_stage_seconds[kCallRespond]->Observe(v);
    observed.call_stage_seconds[kCallIntake]->Observe(v / 2);
  }
  tally.flush(&tallied.call_stage_seconds);
  tally.flush(&tallied.call_stage_seconds);  // nothing left: adds nothing
  for (int st : {kCallIntake, kCallRespond, kCallExecute}) {
    const auto a = tallied.call_stage_seconds[st]->Collect().histogram;
    const auto b = observed.call_stage_seconds[st]->Collect().histogram;
    EXPECT_EQ(a.sample_count, b.sample_count) << call_stage_name(st);
    EXPECT_DOUBLE_EQ(a.sample_sum, b.sample_sum) << call_stage_name(st);
    ASSERT_EQ(a.bucket.size(), b.bucket.size());
    for (size_t i = 0; i < a.bucket.size(); ++i) {
      EXPECT_EQ(a.bucket[i].cumulative_count, b.bucket[i].cumulative_count) << call_stage_name(st) << " bucket " << i;
    }
  }
  EXPECT_EQ(tallied.call_stage_seconds[kCallRespond]->Collect().histogram.sample_count, 6u);
}

TEST(ServiceMetrics, RecordRequestCountsByOpAndCode) {
  ServiceMetrics m;
  m.record_request(OpLabel::kPut, absl::StatusCode::kOk, 3, 10e-6);
  m.record_request(OpLabel::kGet, absl::StatusCode::kOk, 2, 0.001);
  m.record_request(OpLabel::kGet, absl::StatusCode::kInvalidArgument, 70000, 0.5);
  m.record_request(OpLabel::kGet, static_cast<absl::StatusCode>(99), 1, 0);  // not a gRPC code
  const auto got = families(m);
  const auto& requests = got.at("gphkv_requests_total");
  const auto& keys = got.at("gphkv_keys_total");
  EXPECT_EQ(series(requests, {{"op", "put"}, {"code", "OK"}})->counter.value, 1);
  EXPECT_EQ(series(keys, {{"op", "put"}, {"code", "OK"}})->counter.value, 3);
  EXPECT_EQ(series(requests, {{"op", "get"}, {"code", "INVALID_ARGUMENT"}})->counter.value, 1);
  EXPECT_EQ(series(keys, {{"op", "get"}, {"code", "INVALID_ARGUMENT"}})->counter.value, 70000);
  EXPECT_EQ(series(requests, {{"op", "get"}, {"code", "UNKNOWN"}})->counter.value, 1);
  // Every op's OK series is there from the start; other codes once moved.
  EXPECT_EQ(series(requests, {{"op", "shrink"}, {"code", "OK"}})->counter.value, 0);
  EXPECT_EQ(series(requests, {{"op", "put"}, {"code", "INTERNAL"}}), nullptr);
  EXPECT_EQ(requests.metric.size(), static_cast<size_t>(OpLabel::kCount) + 2);

  // A bound is inclusive (le): 10 us lands in the first bucket.
  const auto& put = series(got.at("gphkv_request_duration_seconds"), {{"op", "put"}})->histogram;
  EXPECT_EQ(put.sample_count, 1u);
  EXPECT_EQ(put.bucket.front().cumulative_count, 1u);
  const auto& get = series(got.at("gphkv_request_duration_seconds"), {{"op", "get"}})->histogram;
  EXPECT_EQ(get.sample_count, 3u);
  EXPECT_DOUBLE_EQ(get.sample_sum, 0.501);
}

TEST(ServiceMetrics, RendersTheTextFormat) {
  ServiceMetrics m;
  m.record_request(OpLabel::kPut, absl::StatusCode::kOk, 3, 0.002);
  m.table_load_factor->Set(0.5);
  m.set_build_info("1.2.3", "cuda", "GPU \"X\"");
  const std::string text = m.render();
  for (const char* line : {
           "# TYPE gphkv_requests_total counter\n",
           "gphkv_requests_total{code=\"OK\",op=\"put\"} 1\n",
           "gphkv_keys_total{code=\"OK\",op=\"put\"} 3\n",
           "# TYPE gphkv_request_duration_seconds histogram\n",
           "gphkv_request_duration_seconds_bucket{op=\"put\",le=\"0.00128\"} 0\n",
           "gphkv_request_duration_seconds_bucket{op=\"put\",le=\"0.00256\"} 1\n",
           "gphkv_request_duration_seconds_bucket{op=\"put\",le=\"+Inf\"} 1\n",
           "gphkv_request_duration_seconds_count{op=\"put\"} 1\n",
           "gphkv_table_load_factor 0.5\n",
           "gphkv_build_info{backend=\"cuda\",device=\"GPU \\\"X\\\"\",version=\"1.2.3\"} 1\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line << "in\n" << text;
  }
}

}  // namespace
}  // namespace gphkv::server
