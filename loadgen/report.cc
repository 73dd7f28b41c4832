#include "loadgen/report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gphkv::loadgen {
namespace {

using nlohmann::json;

double PerSecond(double n, double seconds) { return seconds > 0 ? n / seconds : 0.0; }

json LatencyJson(const LatencyHistogram& h) {
  return json{{"count", h.count()},
              {"min_us", h.min() / 1e3},
              {"mean_us", h.mean() / 1e3},
              {"p50_us", h.ValueAtQuantile(0.50) / 1e3},
              {"p90_us", h.ValueAtQuantile(0.90) / 1e3},
              {"p99_us", h.ValueAtQuantile(0.99) / 1e3},
              {"p999_us", h.ValueAtQuantile(0.999) / 1e3},
              {"max_us", h.max() / 1e3}};
}

json OpStatsJson(const OpStats& s, double seconds, bool reads) {
  json errors = json::object();
  for (const auto& [status, n] : s.errors_by_status) errors[status] = n;
  return json{{"calls", s.calls},
              {"keys", s.keys},
              {"found", s.found},
              // Hits are counted for gets only; the ratio is null for writes.
              {"hit_ratio", reads && s.keys ? json(static_cast<double>(s.found) / s.keys) : json(nullptr)},
              {"value_bytes", s.value_bytes},
              {"calls_per_s", PerSecond(s.calls, seconds)},
              {"keys_per_s", PerSecond(s.keys, seconds)},
              {"bytes_per_s", PerSecond(s.value_bytes, seconds)},
              {"errors", s.errors},
              {"errors_by_status", errors},
              {"latency", LatencyJson(s.latency)}};
}

json OptionalJson(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// The cores each side used: CPU seconds over the window's wall seconds.
json CpuJson(const CpuUsage& u) {
  return json{{"wall_s", u.wall_s},
              {"loadgen_cpu_s", u.loadgen_cpu_s},
              {"loadgen_cores", u.loadgen_cores()},
              {"server_pid", u.server_pid},
              {"server_cpu_s", OptionalJson(u.server_cpu_s)},
              {"server_cores", OptionalJson(u.server_cores())}};
}

// The server's stages in the order a call passes them, then any others.
constexpr const char* kStageOrder[] = {"intake", "queue", "execute", "answer_wait", "respond"};

json StagesJson(const ServerStages& s) {
  json stages = json::object();
  for (const auto& [name, m] : s.stages) stages[name] = json{{"calls", m.calls}, {"mean_us", m.mean_s * 1e6}};
  return json{
      {"metrics_address", s.metrics_address}, {"error", s.error ? json(*s.error) : json(nullptr)}, {"stages", stages}};
}

std::string ModeName(DriveOptions::Mode m) { return m == DriveOptions::Mode::kOpen ? "open" : "closed"; }

std::string Us(double ns) {
  const double us = ns / 1e3;
  if (us >= 10000) return absl::StrFormat("%.1fms", us / 1e3);
  if (us >= 1000) return absl::StrFormat("%.2fms", us / 1e3);
  return absl::StrFormat("%.1fus", us);
}

std::string Rate(double v) {
  if (v >= 1e9) return absl::StrFormat("%.2fG", v / 1e9);
  if (v >= 1e6) return absl::StrFormat("%.2fM", v / 1e6);
  if (v >= 1e3) return absl::StrFormat("%.1fk", v / 1e3);
  return absl::StrFormat("%.0f", v);
}

}  // namespace

json ReportToJson(const Report& r) {
  const LoadgenConfig& c = r.config;
  const WorkloadOptions& w = c.workload;
  const DriveOptions& d = c.drive;
  json config{
      {"target", c.target},
      {"address", c.address},
      {"api", c.api},
      {"coalesce_in_flight", c.coalesce_in_flight},
      {"key_format", c.key_format},
      // The byte keys' length spec; uint64 keys are 8 bytes; tao's names 3 to 24.
      {"key_length", c.key_format == "bytes" ? c.key_length
                     : c.key_format == "tao" ? "3-24"
                                             : "8"},
      {"check_reads", c.check_reads},
      {"cache_aside", c.cache_aside},
      {"malloc", c.malloc},
      {"label", c.label},
      {"workload",
       {{"preset", w.preset},
        {"keys", w.keys},
        {"association_fraction", w.association_fraction},
        {"popularity", w.popularity},
        {"zipf_exponent_flag", w.zipf_exponent},
        {"hot_fraction", w.hot_fraction},
        {"hot_share", w.hot_share},
        {"shard_weights", w.shard_weights},
        {"write_fraction", w.write_fraction},
        {"delete_fraction", w.delete_fraction},
        {"read_batch", w.read_batch},
        {"write_batch", w.write_batch},
        {"object_value", w.object_value},
        {"association_value", w.association_value},
        {"seed", w.seed},
        {"key_pool", w.key_pool}}},
      {"drive",
       {{"mode", ModeName(d.mode)},
        {"threads", d.threads},
        {"connections_per_thread", d.connections},
        {"clients", c.clients},
        {"connections_total", c.clients == "shared" ? d.connections : d.connections * d.threads},
        {"depth", d.depth},
        {"rate", d.rate},
        {"arrivals", d.poisson ? "poisson" : "uniform"},
        {"warmup_s", d.warmup_s},
        {"duration_s", d.duration_s},
        {"count", d.count},
        {"drain_timeout_s", d.drain_timeout_s},
        {"spin_us", d.spin_us},
        {"server_pid", d.server_pid},
        {"server_metrics", d.server_metrics}}},
      {"load",
       {{"enabled", c.load},
        {"batch_keys", c.load_batch_keys},
        {"batch_bytes", c.load_batch_bytes},
        {"depth", c.load_depth}}},
  };
  json resolved{{"popularity", w.popularity},
                {"zipf_exponent", r.zipf_exponent},
                {"shards", r.shards},
                {"expected_hot_share", r.expected_hot_share},
                {"objects", r.objects},
                {"associations", r.associations},
                {"read_batch", r.read_batch_spec},
                {"write_batch", r.write_batch_spec},
                {"object_value", r.object_value_spec},
                {"association_value", r.association_value_spec},
                {"mean_read_batch", r.mean_read_batch},
                {"mean_write_batch", r.mean_write_batch},
                {"mean_object_value_bytes", r.mean_object_value},
                {"mean_association_value_bytes", r.mean_association_value}};
  const double secs = r.run.seconds;
  json by_type = json::object();
  for (int t = 0; t < kOpTypes; ++t) {
    by_type[OpTypeName(static_cast<OpType>(t))] = OpStatsJson(r.run.by_type[t], secs, t == 0);
  }
  const OpStats all = r.run.Overall();
  json overall = OpStatsJson(all, secs, false);
  const OpStats& gets = r.run.by_type[0];
  overall["hit_ratio"] = gets.keys ? json(static_cast<double>(gets.found) / gets.keys) : json(nullptr);
  json series = json::array();
  for (const SeriesPoint& p : r.series) {
    series.push_back({{"t_s", p.t_s},
                      {"calls_per_s", p.calls_per_s},
                      {"keys_per_s", p.keys_per_s},
                      {"bytes_per_s", p.bytes_per_s},
                      {"hit_ratio", p.hit_ratio},
                      {"errors", p.errors},
                      {"p50_us", p.p50_us},
                      {"p90_us", p.p90_us},
                      {"p99_us", p.p99_us},
                      {"p999_us", p.p999_us},
                      {"max_us", p.max_us}});
  }
  return json{
      {"schema", "gphkv-loadgen-report"},
      {"schema_version", kReportSchemaVersion},
      {"tool", {{"name", "gphkv-loadgen"}, {"version", r.version}}},
      {"started_at", r.started_at},
      {"host", {{"hostname", r.hostname}, {"cpus", r.cpus}}},
      {"config", config},
      {"workload", resolved},
      {"load",
       {{"ran", r.loaded},
        {"keys", r.load_keys},
        {"seconds", r.load_seconds},
        {"keys_per_s", PerSecond(r.load_keys, r.load_seconds)},
        {"value_bytes", r.load_value_bytes},
        {"errors", r.load_errors}}},
      {"results",
       {{"seconds", secs},
        {"offered_calls_per_s",
         d.mode == DriveOptions::Mode::kOpen ? json(PerSecond(r.run.scheduled, secs)) : json(nullptr)},
        {"scheduled_calls", r.run.scheduled},
        {"dropped_calls", r.run.dropped},
        {"max_backlog", r.run.max_backlog},
        {"send_lag", LatencyJson(r.run.send_lag)},
        {"cpu", CpuJson(r.cpu)},
        {"server_stages", StagesJson(r.server_stages)},
        {"read_check",
         {{"mode", r.read_check_mode},
          {"keys_checked", r.read_check.keys_checked},
          {"violations", r.read_check.violations()},
          {"stale", r.read_check.stale},
          {"missing", r.read_check.missing},
          {"corrupt", r.read_check.corrupt}}},
        {"overall", overall},
        {"by_type", by_type},
        // The fills are not the workload's calls: not in overall nor by_type.
        {"fills", OpStatsJson(r.run.fills, secs, false)}}},
      {"series", series},
  };
}

std::string ReportToTable(const Report& r) {
  const LoadgenConfig& c = r.config;
  const DriveOptions& d = c.drive;
  std::string out;
  absl::StrAppendFormat(&out, "gphkv-loadgen %s: target %s%s at %s%s, %s loop, %u threads x %u connections x depth %u",
                        r.version, c.target, c.target == "gphkv" ? absl::StrCat(" (api ", c.api, ")") : "", c.address,
                        c.tls.on() ? " over TLS" : "", ModeName(d.mode), d.threads, d.connections, d.depth);
  if (c.clients == "shared") absl::StrAppendFormat(&out, " (one shared client: %u connections in all)", d.connections);
  if (d.mode == DriveOptions::Mode::kOpen) absl::StrAppendFormat(&out, ", %s calls/s offered", Rate(d.rate));
  const std::string popularity =
      r.shards > 0 ? absl::StrFormat("%d weighted shards", r.shards) : absl::StrFormat("zipf s=%.4f", r.zipf_exponent);
  absl::StrAppendFormat(&out,
                        "\nworkload %s: %d items (%d objects, %d associations), %s (top %.0f%% -> %.1f%% of draws), "
                        "%.2f%% writes, read batch mean %.1f keys, seed %d\n",
                        c.workload.preset, r.objects + r.associations, r.objects, r.associations, popularity,
                        100 * c.workload.hot_fraction, 100 * r.expected_hot_share, 100 * c.workload.write_fraction,
                        r.mean_read_batch, c.workload.seed);
  if (r.loaded) {
    absl::StrAppendFormat(&out, "load: %d keys in %.2f s (%s keys/s), %d errors\n", r.load_keys, r.load_seconds,
                          Rate(PerSecond(r.load_keys, r.load_seconds)), r.load_errors);
  }
  absl::StrAppendFormat(&out, "run: %.2f s measured after %.1f s warm-up", r.run.seconds, d.warmup_s);
  if (d.mode == DriveOptions::Mode::kOpen) {
    absl::StrAppendFormat(&out, "; latency from intended send time; %d calls never answered", r.run.dropped);
    // The generator's own punctuality: if this is large, the client (not the
    // store) is the bottleneck, and the latencies above include its lag.
    absl::StrAppendFormat(&out, "\nsend lag (actual - intended send): p50 %s, p99 %s, max %s",
                          Us(r.run.send_lag.ValueAtQuantile(0.5)), Us(r.run.send_lag.ValueAtQuantile(0.99)),
                          Us(r.run.send_lag.max()));
  }
  // The generator's own cost beside the store's: a generator near its cores
  // is the limit, not the store.
  absl::StrAppendFormat(&out, "\ncpu: loadgen %.2f cores (%.2f s CPU in %.2f s)", r.cpu.loadgen_cores(),
                        r.cpu.loadgen_cpu_s, r.cpu.wall_s);
  if (r.cpu.server_pid > 0) {
    const auto server = r.cpu.server_cores();
    absl::StrAppendFormat(&out, ", server (pid %d) %s", r.cpu.server_pid,
                          server ? absl::StrFormat("%.2f cores", *server) : "not measured (process gone)");
  }
  // The server's share of a call's time, and where it goes.
  if (!r.server_stages.metrics_address.empty()) {
    if (r.server_stages.error) {
      absl::StrAppendFormat(&out, "\nserver time per call: not measured (%s)", *r.server_stages.error);
    } else {
      out += "\nserver time per call (mean):";
      double total = 0;
      for (const char* name : kStageOrder) {
        auto it = r.server_stages.stages.find(name);
        if (it == r.server_stages.stages.end()) continue;
        absl::StrAppendFormat(&out, " %s %.1f us,", name, it->second.mean_s * 1e6);
        total += it->second.mean_s;
      }
      absl::StrAppendFormat(&out, " in all %.1f us", total * 1e6);
    }
  }
  // What the gets saw of their own thread's writes: a store (or client)
  // that loses or reorders writes shows here, not in the latencies.
  if (r.read_check_mode == "off") {
    out += "\nreads: not checked";
  } else {
    const ReadCheckStats& rc = r.read_check;
    absl::StrAppendFormat(&out, "\nreads checked (%s order): %d keys of the threads' own writes, %d violations",
                          r.read_check_mode, rc.keys_checked, rc.violations());
    if (rc.violations() > 0) {
      absl::StrAppendFormat(&out, " (stale %d, missing %d, corrupt %d)", rc.stale, rc.missing, rc.corrupt);
    }
  }
  out += "\n\n";
  absl::StrAppendFormat(&out, "%-8s %10s %10s %10s %7s %7s %9s %9s %9s %9s %9s\n", "op", "calls/s", "keys/s", "bytes/s",
                        "hit%", "errors", "p50", "p90", "p99", "p99.9", "max");
  auto row = [&](const char* name, const OpStats& s, bool reads) {
    const double secs = r.run.seconds;
    absl::StrAppendFormat(
        &out, "%-8s %10s %10s %10s %7s %7d %9s %9s %9s %9s %9s\n", name, Rate(PerSecond(s.calls, secs)),
        Rate(PerSecond(s.keys, secs)), Rate(PerSecond(s.value_bytes, secs)),
        reads && s.keys ? absl::StrFormat("%.2f", 100.0 * s.found / s.keys) : "-", s.errors,
        Us(s.latency.ValueAtQuantile(0.5)), Us(s.latency.ValueAtQuantile(0.9)), Us(s.latency.ValueAtQuantile(0.99)),
        Us(s.latency.ValueAtQuantile(0.999)), Us(s.latency.max()));
  };
  for (int t = 0; t < kOpTypes; ++t) {
    if (r.run.by_type[t].calls) row(OpTypeName(static_cast<OpType>(t)), r.run.by_type[t], t == 0);
  }
  OpStats all = r.run.Overall();
  row("all", all, false);
  // Cache-aside fills after the workload's total, which leaves them out.
  if (c.cache_aside) row("fill", r.run.fills, false);
  for (const auto& [status, n] : all.errors_by_status) absl::StrAppendFormat(&out, "errors %s: %d\n", status, n);
  for (const auto& [status, n] : r.run.fills.errors_by_status) {
    absl::StrAppendFormat(&out, "fill errors %s: %d\n", status, n);
  }
  return out;
}

std::string ProgressLine(const SeriesPoint& p) {
  return absl::StrFormat("[%6.1fs%s] %9s calls/s %9s keys/s  hit %5.1f%%  p50 %s  p99 %s  p99.9 %s  max %s  errors %d",
                         p.t_s, p.warmup ? " warm-up" : "", Rate(p.calls_per_s), Rate(p.keys_per_s), 100 * p.hit_ratio,
                         Us(p.p50_us * 1e3), Us(p.p99_us * 1e3), Us(p.p999_us * 1e3), Us(p.max_us * 1e3), p.errors);
}

}  // namespace gphkv::loadgen
