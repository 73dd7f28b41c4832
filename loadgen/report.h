// The run's outcome in three forms: JSON (full configuration and results,
// schema "gphkv-loadgen-report" version kReportSchemaVersion), a
// human-readable table, and the live progress line.
//
// JSON schema stability: tests/loadgen/report_json_test.cc pins every field
// name and type. Adding, renaming or retyping a field means bumping
// kReportSchemaVersion and that test together, and saying so in docs/loadgen.md.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loadgen/config.h"
#include "loadgen/cpu_usage.h"
#include "loadgen/read_check.h"
#include "loadgen/run_stats.h"
#include "loadgen/server_stages.h"

namespace gphkv::loadgen {

// 2: config.api, the workload's preset and popularity, config.drive.server_pid
// and results.cpu (the cores each side used).
// 3: config.check_reads and results.read_check (what the gets saw of their
// thread's writes), config.drive.clients and config.drive.connections_total.
// 4: config.drive.server_metrics and results.server_stages.
// 5: config.key_format and config.key_length (--key_format=bytes).
// 6: config.key_length is a string, the keys' length spec (--key_length).
// 7: config.cache_aside and results.fills (--cache_aside: the puts that
// followed the gets' misses).
constexpr int kReportSchemaVersion = 8;

struct Report {
  LoadgenConfig config;
  // The workload as resolved (calibrated exponent, distributions' specs).
  double zipf_exponent = 0;  // 0 with shard popularity
  size_t shards = 0;         // shard popularity's shards; 0 with Zipf
  double expected_hot_share = 0;
  uint64_t objects = 0, associations = 0;
  double mean_read_batch = 0, mean_write_batch = 0;
  double mean_object_value = 0, mean_association_value = 0;
  std::string read_batch_spec, write_batch_spec, object_value_spec, association_value_spec;
  // Environment.
  std::string started_at;  // UTC, ISO 8601
  std::string hostname;
  unsigned cpus = 0;
  std::string version;
  // The load phase.
  bool loaded = false;
  uint64_t load_keys = 0;
  double load_seconds = 0;
  uint64_t load_errors = 0;
  uint64_t load_value_bytes = 0;
  // The run.
  RunStats run;
  std::vector<SeriesPoint> series;
  CpuUsage cpu;                 // over the measured window
  ServerStages server_stages;   // the server's time per call by stage, over the same window
  std::string read_check_mode;  // as resolved: off, completed or issued
  ReadCheckStats read_check;    // the whole run's, warm-up and drain included
};

nlohmann::json ReportToJson(const Report& report);
std::string ReportToTable(const Report& report);
std::string ProgressLine(const SeriesPoint& point);

}  // namespace gphkv::loadgen
