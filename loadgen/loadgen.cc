#include "loadgen/loadgen.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "loadgen/cpu_usage.h"
#include "loadgen/gphkv_target.h"
#include "loadgen/key_format.h"
#include "loadgen/memcached_target.h"
#include "loadgen/plot.h"
#include "loadgen/size_distribution.h"

namespace gphkv::loadgen {

absl::StatusOr<std::unique_ptr<Target>> MakeTarget(const std::string& name, const std::string& address,
                                                   const ValuePool* values, const TargetOptions& options) {
  if (name == "gphkv") {
    auto parsed = ParseGphkvApi(options.api);
    if (!parsed.ok()) return parsed.status();
    return MakeGphkvTarget(address, *parsed, values, options);
  }
  if (options.tls.enabled) return absl::InvalidArgumentError("--tls_* flags are for --target=gphkv");
  if (options.shared_client)
    return absl::InvalidArgumentError("--clients=shared is for --target=gphkv --api=coalesced");
  if (name == "memcached") return MakeMemcachedTarget(address, values, options.inspect_reads);
  return absl::InvalidArgumentError(absl::StrCat("unknown --target '", name, "' (want gphkv or memcached)"));
}

namespace {

class RunSource : public OpSource {
 public:
  RunSource(std::shared_ptr<const Workload> w, uint32_t thread, uint32_t threads, std::vector<std::string>* trace)
      : stream_(std::move(w), thread, threads), trace_(trace) {}
  bool Next(Op* op) override {
    stream_.Next(op);
    if (trace_ != nullptr) {
      std::string line = OpTypeName(op->type);
      for (uint64_t k : op->keys) absl::StrAppend(&line, " ", k);
      trace_->push_back(std::move(line));
    }
    return true;
  }

 private:
  OpStream stream_;
  std::vector<std::string>* trace_;
};

class LoadSource : public OpSource {
 public:
  LoadSource(LoadStream stream) : stream_(std::move(stream)) {}
  bool Next(Op* op) override { return stream_.Next(op); }

 private:
  LoadStream stream_;
};

std::string NowUtc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void PrintProgress(const std::string& phase, const SeriesPoint& p) {
  // A tty gets one line rewritten in place; a log gets a line per interval.
  static const bool tty = isatty(STDERR_FILENO);
  std::fprintf(stderr, tty ? "\r%s %s\033[K" : "%s %s\n", phase.c_str(), ProgressLine(p).c_str());
  std::fflush(stderr);
}

}  // namespace

absl::StatusOr<Report> RunLoadgen(const LoadgenConfig& config) {
  auto workload_or = Workload::Create(config.workload);
  if (!workload_or.ok()) return workload_or.status();
  std::shared_ptr<const Workload> workload = *workload_or;

  Report report;
  report.config = config;
  report.version = "0.1.0";
  report.started_at = NowUtc();
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  report.hostname = host;
  report.cpus = std::thread::hardware_concurrency();
  report.zipf_exponent = workload->exponent();
  report.shards = workload->shards();
  report.config.workload.zipf_exponent = config.workload.zipf_exponent;  // the flag as given
  report.expected_hot_share = workload->expected_hot_share();
  report.objects = workload->key_space().objects();
  report.associations = workload->key_space().associations();
  report.read_batch_spec = workload->read_batch().Spec();
  report.write_batch_spec = workload->write_batch().Spec();
  report.object_value_spec = workload->object_value().Spec();
  report.association_value_spec = workload->association_value().Spec();
  report.mean_read_batch = workload->read_batch().Mean();
  report.mean_write_batch = workload->write_batch().Mean();
  report.mean_object_value = workload->object_value().Mean();
  report.mean_association_value = workload->association_value().Mean();

  // A server PID that cannot be read would leave its column empty: say so now.
  if (config.drive.server_pid > 0) {
    if (auto cpu = ProcessCpuSeconds(config.drive.server_pid); !cpu.ok()) return cpu.status();
  }

  // Only gphkv::Client promises a thread's order from send to effect.
  const ReadCheckMode automatic =
      config.target == "gphkv" && config.api == "coalesced" ? ReadCheckMode::kIssued : ReadCheckMode::kCompleted;
  auto check_mode = ParseReadCheckMode(config.check_reads, automatic);
  if (!check_mode.ok()) return check_mode.status();
  report.read_check_mode = ReadCheckModeName(*check_mode);
  if (config.clients != "per_thread" && config.clients != "shared") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown --clients '", config.clients, "' (want per_thread or shared)"));
  }

  const ValuePool values(std::max(workload->object_value().Max(), workload->association_value().Max()));
  auto tls = LoadTlsFiles(config.tls);
  if (!tls.ok()) return tls.status();
  TargetOptions target_options;
  target_options.api = config.api;
  target_options.tls = *tls;
  target_options.coalesce_in_flight = config.coalesce_in_flight;
  target_options.shared_client = config.clients == "shared";
  // Cache-aside needs to know which keys a get found, and so reads them back.
  target_options.inspect_reads = *check_mode != ReadCheckMode::kOff || config.cache_aside;
  auto key_format = ParseKeyFormat(config.key_format);
  if (!key_format.ok()) return key_format.status();
  if (*key_format != KeyFormat::kU64) {
    if (config.target != "gphkv") {
      return absl::InvalidArgumentError(absl::StrCat("--key_format=", KeyFormatName(*key_format),
                                                     " is for --target=gphkv (memcached's keys are text already)"));
    }
    if (*key_format == KeyFormat::kTao) {
      target_options.byte_keys.emplace(0, KeyFormat::kTao);
    } else {
      auto lengths = ParseSizeDistribution(config.key_length);
      if (!lengths.ok()) return absl::InvalidArgumentError(absl::StrCat("--key_length: ", lengths.status().message()));
      const uint32_t shortest = (*lengths)->Quantile(0), longest = (*lengths)->Max();
      if (shortest < ByteKeyNames::kMinLength || longest > ByteKeyNames::kMaxLength) {
        return absl::InvalidArgumentError(absl::StrCat("--key_length=", config.key_length, " gives lengths ", shortest,
                                                       " to ", longest, "; keys take ", ByteKeyNames::kMinLength,
                                                       " to ", ByteKeyNames::kMaxLength, " bytes"));
      }
      target_options.byte_keys.emplace(std::shared_ptr<const SizeDistribution>(std::move(*lengths)));
    }
  }
  auto target_or = MakeTarget(config.target, config.address, &values, target_options);
  if (!target_or.ok()) return target_or.status();
  Target& target = **target_or;
  if (auto st = target.WaitReady(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                    std::chrono::duration<double>(config.wait_ready_s)));
      !st.ok()) {
    return st;
  }

  if (config.load) {
    DriveOptions lo = config.drive;
    lo.mode = DriveOptions::Mode::kClosed;
    lo.depth = config.load_depth;
    lo.warmup_s = 0;
    lo.count = 0;
    lo.duration_s = 1e9;  // the sources' end ends the load, not the clock
    const uint64_t n = workload->key_space().items();
    const uint32_t threads = lo.threads;
    const auto t0 = Clock::now();
    auto loaded = Drive(
        target, lo,
        [&](uint32_t t) {
          const uint64_t begin = n * t / threads, end = n * (t + 1) / threads;
          return std::make_unique<LoadSource>(
              LoadStream(workload, begin, end, config.load_batch_keys, config.load_batch_bytes));
        },
        config.interval_s,
        [&](const SeriesPoint& p) {
          if (config.progress) PrintProgress("load", p);
        });
    if (!loaded.ok()) return loaded.status();
    if (config.progress) std::fprintf(stderr, "\n");
    const OpStats all = loaded->stats.Overall();
    report.loaded = true;
    report.load_keys = all.keys;
    report.load_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    report.load_errors = all.errors + loaded->stats.dropped;
    report.load_value_bytes = all.value_bytes;
    if (all.errors > 0) {
      std::string why;
      for (const auto& [status, count] : all.errors_by_status) absl::StrAppend(&why, " ", status, "=", count);
      return absl::UnavailableError(absl::StrCat("the load phase failed:", why));
    }
  }

  std::vector<std::vector<std::string>> traces(config.drive.threads);
  const bool tracing = !config.trace_path.empty();
  const uint32_t threads = config.drive.threads;
  std::function<std::unique_ptr<ReadChecker>(uint32_t)> make_checker;
  if (*check_mode != ReadCheckMode::kOff) {
    make_checker = [&](uint32_t t) {
      ReadCheckOptions o;
      o.mode = *check_mode;
      o.thread = t;
      o.threads = threads;
      o.loaded = config.load;
      // A cache may evict anything: memcached, and any store run as a cache.
      o.misses_allowed = config.target == "memcached" || config.cache_aside;
      o.fills_allowed = config.cache_aside;
      return std::make_unique<ReadChecker>(o, workload.get());
    };
  }
  DriveOptions run_options = config.drive;
  if (config.cache_aside) run_options.cache_aside = workload.get();
  auto run = Drive(
      target, run_options,
      [&](uint32_t t) { return std::make_unique<RunSource>(workload, t, threads, tracing ? &traces[t] : nullptr); },
      config.interval_s,
      [&](const SeriesPoint& p) {
        if (config.progress) PrintProgress("run ", p);
      },
      make_checker);
  if (!run.ok()) return run.status();
  if (config.progress) std::fprintf(stderr, "\n");
  report.run = std::move(run->stats);
  report.series = std::move(run->series);
  report.cpu = run->cpu;
  report.server_stages = run->server_stages;
  report.read_check = run->read_check;

  if (tracing) {
    std::ofstream f(config.trace_path);
    if (!f) return absl::UnavailableError(absl::StrCat("cannot write ", config.trace_path));
    for (size_t t = 0; t < traces.size(); ++t) {
      for (const std::string& line : traces[t]) f << t << " " << line << "\n";
    }
  }
  return report;
}

absl::Status WriteOutputs(const Report& report) {
  const LoadgenConfig& c = report.config;
  if (!c.json_path.empty()) {
    std::ofstream f(c.json_path);
    if (!f) return absl::UnavailableError(absl::StrCat("cannot write ", c.json_path));
    f << ReportToJson(report).dump(2) << "\n";
  }
  if (!c.plot_path.empty()) {
    std::string title = absl::StrFormat("gphkv-loadgen: %s, %s loop, %u threads%s", c.target,
                                        c.drive.mode == DriveOptions::Mode::kOpen ? "open" : "closed", c.drive.threads,
                                        c.label.empty() ? "" : absl::StrCat(", ", c.label));
    return WritePlot(report.series, c.plot_path, title);
  }
  return absl::OkStatus();
}

}  // namespace gphkv::loadgen
