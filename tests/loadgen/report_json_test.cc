// The JSON report's schema is a contract with scripts (loadgen-compare.sh,
// dashboards): this test pins every field's path and type. Changing it means
// bumping kReportSchemaVersion and the list below together.
#include "loadgen/report.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace gphkv::loadgen {
namespace {

using nlohmann::json;

const char* TypeOf(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "bool";
    case json::value_t::string: return "string";
    case json::value_t::array: return "array";
    case json::value_t::object: return "object";
    default: return "number";
  }
}

// "a.b.c:type" for every leaf; arrays contribute their first element as "[]".
void Flatten(const json& j, const std::string& path, std::set<std::string>* out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      Flatten(it.value(), path.empty() ? it.key() : path + "." + it.key(), out);
  } else if (j.is_array()) {
    out->insert(path + ":array");
    if (!j.empty()) Flatten(j[0], path + "[]", out);
  } else {
    out->insert(path + ":" + TypeOf(j));
  }
}

Report SampleReport() {
  Report r;
  r.config.drive.mode = DriveOptions::Mode::kOpen;
  r.config.drive.rate = 1000;
  r.version = "0.1.0";
  r.loaded = true;
  r.load_keys = 10;
  r.load_seconds = 1;
  r.run.seconds = 2;
  r.run.scheduled = 3;
  OpStats& gets = r.run.by_type[0];
  gets.calls = 3;
  gets.keys = 30;
  gets.found = 29;
  gets.errors = 1;
  gets.errors_by_status["UNAVAILABLE"] = 1;
  gets.latency.Record(1000);
  r.series.push_back(SeriesPoint{});
  r.cpu.wall_s = 2;
  r.cpu.loadgen_cpu_s = 1;
  r.cpu.server_pid = 42;
  r.cpu.server_cpu_s = 3;
  r.read_check_mode = "issued";
  r.read_check.keys_checked = 7;
  r.read_check.stale = 2;
  return r;
}

TEST(ReportJson, SchemaIsPinned) {
  const json j = ReportToJson(SampleReport());
  EXPECT_EQ(j["schema"], "gphkv-loadgen-report");
  EXPECT_EQ(j["schema_version"], kReportSchemaVersion);
  EXPECT_EQ(kReportSchemaVersion, 8) << "bump the pinned list below with the version";
  std::set<std::string> got;
  Flatten(j, "", &got);
  const std::string op_fields[] = {"calls:number",           "keys:number",           "found:number",
                                   "value_bytes:number",     "calls_per_s:number",    "keys_per_s:number",
                                   "bytes_per_s:number",     "errors:number",         "errors_by_status:object",
                                   "latency.count:number",   "latency.min_us:number", "latency.mean_us:number",
                                   "latency.p50_us:number",  "latency.p90_us:number", "latency.p99_us:number",
                                   "latency.p999_us:number", "latency.max_us:number"};
  std::set<std::string> want = {"schema:string",
                                "schema_version:number",
                                "tool.name:string",
                                "tool.version:string",
                                "started_at:string",
                                "host.hostname:string",
                                "host.cpus:number",
                                "config.target:string",
                                "config.address:string",
                                "config.api:string",
                                "config.coalesce_in_flight:number",
                                "config.key_format:string",
                                "config.key_length:string",
                                "config.check_reads:string",
                                "config.cache_aside:bool",
                                "config.malloc:string",
                                "config.label:string",
                                "config.workload.preset:string",
                                "config.workload.keys:number",
                                "config.workload.association_fraction:number",
                                "config.workload.popularity:string",
                                "config.workload.zipf_exponent_flag:number",
                                "config.workload.hot_fraction:number",
                                "config.workload.hot_share:number",
                                "config.workload.shard_weights:string",
                                "config.workload.write_fraction:number",
                                "config.workload.delete_fraction:number",
                                "config.workload.read_batch:string",
                                "config.workload.write_batch:string",
                                "config.workload.object_value:string",
                                "config.workload.association_value:string",
                                "config.workload.seed:number",
                                "config.workload.key_pool:number",
                                "config.drive.mode:string",
                                "config.drive.threads:number",
                                "config.drive.connections_per_thread:number",
                                "config.drive.clients:string",
                                "config.drive.connections_total:number",
                                "config.drive.depth:number",
                                "config.drive.rate:number",
                                "config.drive.arrivals:string",
                                "config.drive.warmup_s:number",
                                "config.drive.duration_s:number",
                                "config.drive.count:number",
                                "config.drive.drain_timeout_s:number",
                                "config.drive.spin_us:number",
                                "config.drive.server_pid:number",
                                "config.drive.server_metrics:string",
                                "config.load.enabled:bool",
                                "config.load.batch_keys:number",
                                "config.load.batch_bytes:number",
                                "config.load.depth:number",
                                "workload.popularity:string",
                                "workload.zipf_exponent:number",
                                "workload.shards:number",
                                "workload.expected_hot_share:number",
                                "workload.objects:number",
                                "workload.associations:number",
                                "workload.read_batch:string",
                                "workload.write_batch:string",
                                "workload.object_value:string",
                                "workload.association_value:string",
                                "workload.mean_read_batch:number",
                                "workload.mean_write_batch:number",
                                "workload.mean_object_value_bytes:number",
                                "workload.mean_association_value_bytes:number",
                                "load.ran:bool",
                                "load.keys:number",
                                "load.seconds:number",
                                "load.keys_per_s:number",
                                "load.value_bytes:number",
                                "load.errors:number",
                                "results.seconds:number",
                                "results.offered_calls_per_s:number",
                                "results.scheduled_calls:number",
                                "results.dropped_calls:number",
                                "results.max_backlog:number",
                                "results.send_lag.count:number",
                                "results.send_lag.min_us:number",
                                "results.send_lag.mean_us:number",
                                "results.send_lag.p50_us:number",
                                "results.send_lag.p90_us:number",
                                "results.send_lag.p99_us:number",
                                "results.send_lag.p999_us:number",
                                "results.send_lag.max_us:number",
                                "results.cpu.wall_s:number",
                                "results.cpu.loadgen_cpu_s:number",
                                "results.cpu.loadgen_cores:number",
                                "results.cpu.server_pid:number",
                                "results.cpu.server_cpu_s:number",
                                "results.cpu.server_cores:number",
                                "results.server_stages.metrics_address:string",
                                "results.server_stages.error:null",
                                "results.read_check.mode:string",
                                "results.read_check.keys_checked:number",
                                "results.read_check.violations:number",
                                "results.read_check.stale:number",
                                "results.read_check.missing:number",
                                "results.read_check.corrupt:number",
                                "results.overall.hit_ratio:number",
                                "results.by_type.get.hit_ratio:number",
                                "results.by_type.put.hit_ratio:null",
                                "results.by_type.delete.hit_ratio:null",
                                "results.fills.hit_ratio:null",
                                "series:array",
                                "series[].t_s:number",
                                "series[].calls_per_s:number",
                                "series[].keys_per_s:number",
                                "series[].bytes_per_s:number",
                                "series[].hit_ratio:number",
                                "series[].errors:number",
                                "series[].p50_us:number",
                                "series[].p90_us:number",
                                "series[].p99_us:number",
                                "series[].p999_us:number",
                                "series[].max_us:number",
                                "results.by_type.get.errors_by_status.UNAVAILABLE:number"};
  for (const char* op : {"results.overall.", "results.by_type.get.", "results.by_type.put.", "results.by_type.delete.",
                         "results.fills."}) {
    for (const std::string& f : op_fields) want.insert(op + f);
  }
  // Empty objects flatten to nothing: errors_by_status is present but empty for these.
  for (const char* op : {"results.overall.", "results.by_type.put.", "results.by_type.delete.", "results.fills."}) {
    want.erase(std::string(op) + "errors_by_status:object");
  }
  want.erase("results.by_type.get.errors_by_status:object");
  want.insert("results.overall.errors_by_status.UNAVAILABLE:number");
  for (const auto& f : got) EXPECT_TRUE(want.count(f)) << "unpinned field " << f;
  for (const auto& f : want) EXPECT_TRUE(got.count(f)) << "missing field " << f;
}

TEST(ReportJson, NumbersAreTheMeasuredOnes) {
  const json j = ReportToJson(SampleReport());
  EXPECT_EQ(j["results"]["by_type"]["get"]["calls"], 3);
  EXPECT_DOUBLE_EQ(j["results"]["by_type"]["get"]["calls_per_s"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["results"]["overall"]["hit_ratio"].get<double>(), 29.0 / 30.0);
  EXPECT_DOUBLE_EQ(j["results"]["offered_calls_per_s"].get<double>(), 1.5);
  EXPECT_EQ(j["results"]["overall"]["errors_by_status"]["UNAVAILABLE"], 1);
  EXPECT_NEAR(j["results"]["overall"]["latency"]["p50_us"].get<double>(), 1.0, 0.01);
  EXPECT_DOUBLE_EQ(j["results"]["cpu"]["loadgen_cores"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["results"]["cpu"]["server_cores"].get<double>(), 1.5);
  EXPECT_EQ(j["results"]["read_check"]["violations"], 2);
  EXPECT_EQ(j["results"]["read_check"]["stale"], 2);
  EXPECT_EQ(j["config"]["drive"]["connections_total"], 1);  // 1 thread x 1 connection
}

// Cache-aside fills are reported apart: not in overall, not among the puts.
TEST(ReportJson, FillsAreApartFromTheWorkloadsCalls) {
  Report r = SampleReport();
  r.config.cache_aside = true;
  r.run.fills.calls = 2;
  r.run.fills.keys = 5;
  const json j = ReportToJson(r);
  EXPECT_EQ(j["config"]["cache_aside"], true);
  EXPECT_EQ(j["results"]["fills"]["calls"], 2);
  EXPECT_EQ(j["results"]["fills"]["keys"], 5);
  EXPECT_EQ(j["results"]["overall"]["calls"], 3);
  EXPECT_EQ(j["results"]["by_type"]["put"]["calls"], 0);
  EXPECT_DOUBLE_EQ(j["results"]["overall"]["hit_ratio"].get<double>(), 29.0 / 30.0);
  EXPECT_NE(ReportToTable(r).find("\nfill "), std::string::npos);
  r.config.cache_aside = false;
  EXPECT_EQ(ReportToTable(r).find("\nfill "), std::string::npos);
}

// No server PID, or a server that went away: its figures are null, not 0.
TEST(ReportJson, ServerCoresAreNullWhenNotMeasured) {
  Report r = SampleReport();
  r.cpu.server_pid = 0;
  r.cpu.server_cpu_s.reset();
  const json j = ReportToJson(r);
  EXPECT_TRUE(j["results"]["cpu"]["server_cores"].is_null());
  EXPECT_TRUE(j["results"]["cpu"]["server_cpu_s"].is_null());
  EXPECT_EQ(ReportToTable(r).find("server (pid"), std::string::npos);
  r.cpu.server_pid = 42;
  EXPECT_NE(ReportToTable(r).find("server (pid 42) not measured"), std::string::npos);
}

TEST(ReportTable, NamesEveryOpTypeThatRanAndTheErrors) {
  const std::string t = ReportToTable(SampleReport());
  EXPECT_NE(t.find("get"), std::string::npos);
  EXPECT_NE(t.find("all"), std::string::npos);
  EXPECT_NE(t.find("errors UNAVAILABLE: 1"), std::string::npos);
  EXPECT_EQ(t.find("delete "), std::string::npos);  // no deletes ran
  EXPECT_NE(t.find("cpu: loadgen 0.50 cores (1.00 s CPU in 2.00 s), server (pid 42) 1.50 cores"), std::string::npos)
      << t;
  EXPECT_NE(t.find("reads checked (issued order): 7 keys of the threads' own writes, 2 violations (stale 2, missing "
                   "0, corrupt 0)"),
            std::string::npos)
      << t;
}

}  // namespace
}  // namespace gphkv::loadgen
