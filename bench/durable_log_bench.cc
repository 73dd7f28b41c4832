// The data directory's costs, for the lead to weigh against the executor's
// batch time on the device:
//
//  - append: batches of --batch_keys puts of --value_bytes each appended
//    with each --fsync policy, for --seconds each, against encoding the
//    batch alone (what the executor pays with no log): batches/s, MB/s and
//    the append latency's p50/p99/p999.
//  - restart: a snapshot of --restart_keys pairs written, then DataDir::open
//    reading it back into a sink that only counts (the floor under a
//    restart: the store's loading comes on top).
//
// The directory (--dir) should be on the disk the server's --data_dir will
// use; each run works in a fresh subdirectory and removes it.
#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_split.h"
#include "bench/bench_report.h"
#include "server/durability/data_dir.h"

ABSL_FLAG(std::string, dir, "/tmp", "where the benchmark's data directories are made (the disk under test)");
ABSL_FLAG(std::string, sections, "append,restart", "append, restart");
ABSL_FLAG(std::string, policies, "none,never,everysec,always", "none = encode the batch, no log");
ABSL_FLAG(uint32_t, batch_keys, 1024, "puts per batch (the executor's write run)");
ABSL_FLAG(uint32_t, value_bytes, 100, "bytes per value");
ABSL_FLAG(double, seconds, 5, "how long each policy appends");
ABSL_FLAG(uint64_t, restart_keys, 10'000'000, "pairs in the restart section's snapshot");
ABSL_FLAG(std::string, json, "", "write the results as JSON to this file");

namespace {

namespace durability = gphkv::server::durability;
using Clock = std::chrono::steady_clock;

void check(const absl::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "durable_log_bench: %s\n", s.ToString().c_str());
    std::exit(1);
  }
}

// A scratch data directory under --dir.
std::string fresh_dir(const std::string& name) {
  const std::string path = absl::GetFlag(FLAGS_dir) + "/durable_log_bench-" + name;
  std::filesystem::remove_all(path);
  return path;
}

class CountingSink : public durability::RecoverySink {
 public:
  absl::Status on_puts(const durability::Pairs& p) override {
    pairs += p.size();
    return absl::OkStatus();
  }
  absl::Status on_deletes(absl::Span<const uint64_t> keys) override {
    deletes += keys.size();
    return absl::OkStatus();
  }
  absl::Status on_byte_deletes(absl::Span<const std::string_view> keys) override {
    deletes += keys.size();
    return absl::OkStatus();
  }
  absl::Status on_flush(const durability::FlushMark&) override {
    ++flushes;
    return absl::OkStatus();
  }
  absl::Status on_reset() override { return absl::OkStatus(); }
  uint64_t pairs = 0, deletes = 0, flushes = 0;
};

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(i), v.end());
  return v[i];
}

nlohmann::ordered_json run_append(const std::string& policy) {
  const uint32_t n = absl::GetFlag(FLAGS_batch_keys), vb = absl::GetFlag(FLAGS_value_bytes);
  // Like a PutRequest: keys, lengths, the values concatenated.
  std::mt19937_64 rng(1);
  std::vector<uint64_t> keys(n);
  std::vector<uint32_t> lengths(n, vb);
  std::string values(static_cast<size_t>(n) * vb, '\0');
  for (char& c : values) c = static_cast<char>(rng());

  std::unique_ptr<durability::DataDir> dir;
  CountingSink sink;
  const std::string path = fresh_dir(policy);
  if (policy != "none") {
    durability::DataDirOptions o;
    o.log.fsync = *durability::parse_fsync_policy(policy);
    auto opened = durability::DataDir::open(path, o, sink);
    check(opened.status());
    dir = std::move(*opened);
  }
  std::vector<double> latency;
  durability::WriteBatch batch;
  const auto t0 = Clock::now();
  const auto end =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(absl::GetFlag(FLAGS_seconds)));
  uint64_t batches = 0, bytes = 0;
  for (auto now = t0; now < end; ++batches) {
    for (auto& k : keys) k = rng();
    const auto a = Clock::now();
    batch.clear();
    batch.add_puts(keys, lengths, values);
    if (dir) check(dir->append(batch).status());
    now = Clock::now();
    latency.push_back(std::chrono::duration<double, std::micro>(now - a).count());
    bytes += batch.payload().size();
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  nlohmann::ordered_json r;
  r["policy"] = policy;
  r["batch_keys"] = n;
  r["value_bytes"] = vb;
  r["batches"] = batches;
  r["batches_per_s"] = static_cast<double>(batches) / secs;
  r["keys_per_s"] = static_cast<double>(batches) * n / secs;
  r["mb_per_s"] = static_cast<double>(bytes) / secs / 1e6;
  r["append_us_p50"] = percentile(latency, 0.50);
  r["append_us_p99"] = percentile(latency, 0.99);
  r["append_us_p999"] = percentile(latency, 0.999);
  // The slowest append: a segment's rotation when it waits for the disk.
  r["append_us_max"] = latency.empty() ? 0.0 : *std::max_element(latency.begin(), latency.end());
  if (dir) {
    const durability::DataDirState st = dir->state();
    r["fsyncs"] = st.log.fsyncs;
    r["syncs_fell_behind"] = st.log.syncs_fell_behind;
  }
  std::printf(
      "%-9s %8u keys x %5u B  %10.0f batches/s  %12.0f keys/s  %8.1f MB/s  append p50 %8.1f us  p99 %8.1f us  p999 "
      "%8.1f us  max %8.1f us\n",
      policy.c_str(), n, vb, r["batches_per_s"].get<double>(), r["keys_per_s"].get<double>(),
      r["mb_per_s"].get<double>(), r["append_us_p50"].get<double>(), r["append_us_p99"].get<double>(),
      r["append_us_p999"].get<double>(), r["append_us_max"].get<double>());
  dir.reset();
  std::filesystem::remove_all(path);
  return r;
}

// Yields `total` pairs of generated keys and values in chunks.
class GeneratedPairs : public durability::PairSource {
 public:
  GeneratedPairs(uint64_t total, uint32_t value_bytes) : total_(total), value_(value_bytes, 'v') {}
  absl::StatusOr<bool> next(durability::Pairs* out) override {
    if (given_ == total_) return false;
    const uint64_t n = std::min<uint64_t>(65536, total_ - given_);
    keys_.resize(n);
    values_.assign(n, value_);
    for (uint64_t i = 0; i < n; ++i) keys_[i] = (given_ + i) * 0x9E3779B97F4A7C15ull;
    given_ += n;
    *out = durability::Pairs{keys_, values_};
    return true;
  }

 private:
  uint64_t total_, given_ = 0;
  std::string value_;
  std::vector<uint64_t> keys_;
  std::vector<std::string_view> values_;
};

nlohmann::ordered_json run_restart() {
  const uint64_t n = absl::GetFlag(FLAGS_restart_keys);
  const uint32_t vb = absl::GetFlag(FLAGS_value_bytes);
  const std::string path = fresh_dir("restart");
  nlohmann::ordered_json r;
  r["keys"] = n;
  r["value_bytes"] = vb;
  {
    CountingSink sink;
    auto dir = durability::DataDir::open(path, durability::DataDirOptions{}, sink);
    check(dir.status());
    GeneratedPairs source(n, vb);
    const auto t0 = Clock::now();
    check((*dir)->snapshot(source));
    r["snapshot_seconds"] = std::chrono::duration<double>(Clock::now() - t0).count();
    r["snapshot_bytes"] = (*dir)->state().snapshot_bytes;
  }
  // The page cache would hide the disk: drop this file's pages first.
  for (const auto& e : std::filesystem::directory_iterator(path)) {
    if (FILE* f = std::fopen(e.path().c_str(), "r")) {
      posix_fadvise(fileno(f), 0, 0, POSIX_FADV_DONTNEED);
      std::fclose(f);
    }
  }
  CountingSink sink;
  const auto t0 = Clock::now();
  auto dir = durability::DataDir::open(path, durability::DataDirOptions{}, sink);
  check(dir.status());
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  r["recover_seconds"] = secs;
  r["recover_pairs"] = sink.pairs;
  r["recover_gb_per_s"] = r["snapshot_bytes"].get<double>() / secs / 1e9;
  std::printf("restart   %llu keys x %u B: snapshot written in %.2f s (%.2f GB), read back in %.2f s (%.2f GB/s)\n",
              static_cast<unsigned long long>(n), vb, r["snapshot_seconds"].get<double>(),
              r["snapshot_bytes"].get<double>() / 1e9, secs, r["recover_gb_per_s"].get<double>());
  dir->reset();
  std::filesystem::remove_all(path);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("Measures the data directory: log appends per fsync policy, and a restart's read.");
  absl::ParseCommandLine(argc, argv);
  auto record = gphkv::bench::run_record("durable_log_bench", gphkv::bench::cpu_model(), argc, argv);
  record["dir"] = absl::GetFlag(FLAGS_dir);
  const std::vector<std::string> sections = absl::StrSplit(absl::GetFlag(FLAGS_sections), ',');
  for (const std::string& section : sections) {
    if (section == "append") {
      for (const std::string& policy : std::vector<std::string>(absl::StrSplit(absl::GetFlag(FLAGS_policies), ','))) {
        record["append"].push_back(run_append(policy));
      }
    } else if (section == "restart") {
      record["restart"] = run_restart();
    } else {
      std::fprintf(stderr, "durable_log_bench: unknown section '%s'\n", section.c_str());
      return 2;
    }
  }
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    if (!gphkv::bench::write_json(path, record)) return 1;
  }
  return 0;
}
