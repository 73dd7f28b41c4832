// The CPU backend's bulk operations on 10^7 keys: insert into an empty table,
// find at 50% hits, erase. Median of --reps timed runs after one warm-up run,
// steady clock; printed as a table and written as JSON.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "bench/bench_report.h"
#include "gphkv/engine/table.h"

ABSL_FLAG(uint64_t, keys, 10'000'000, "keys inserted, then looked up and erased");
ABSL_FLAG(double, load_factor, 0.8, "table sized so that --keys fill it to this load factor");
ABSL_FLAG(int, reps, 5, "timed repetitions per operation (after one warm-up)");
ABSL_FLAG(unsigned, threads, 0, "worker threads (0 = all hardware threads)");
ABSL_FLAG(uint64_t, seed, 1, "seed of the random keys");
ABSL_FLAG(std::string, json, "", "write the results as JSON to this file");

namespace {

using gphkv::engine::UpsertOutcome;
using Clock = std::chrono::steady_clock;

struct Result {
  std::string op;
  std::vector<double> mops;  // one per timed run
};

// One burst size absorbed both ways (median M burst keys/s).
struct Burst {
  double fraction;  // of the resident keys
  uint64_t keys;
  double insert_mops;
  double rebuild_mops;
};

// Runs `setup` then times `body` once per repetition (the first untimed).
Result measure(const std::string& op, uint64_t n, int reps, const std::function<void()>& setup,
               const std::function<void()>& body) {
  Result r{op, {}};
  for (int i = 0; i <= reps; ++i) {
    setup();
    const auto t0 = Clock::now();
    body();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (i > 0) r.mops.push_back(static_cast<double>(n) / s / 1e6);
  }
  return r;
}

void check(const absl::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "cpu_table_bench: %s\n", s.ToString().c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("Benchmarks the GPH table's CPU backend (find, insert, erase).");
  absl::ParseCommandLine(argc, argv);
  const uint64_t n = absl::GetFlag(FLAGS_keys);
  const int reps = absl::GetFlag(FLAGS_reps);

  gphkv::engine::TableOptions options;
  options.num_buckets =
      gphkv::engine::buckets_for_capacity(n, absl::GetFlag(FLAGS_load_factor), options.slots_per_bucket);
  options.cpu_threads = absl::GetFlag(FLAGS_threads);
  auto made = gphkv::engine::make_cpu_table(options);
  check(made.status());
  auto& table = **made;

  std::mt19937_64 rng(absl::GetFlag(FLAGS_seed));
  std::vector<uint64_t> keys(n), values(n), queries(n), got(n);
  for (auto& k : keys) k = rng();
  for (auto& v : values) v = rng();
  // 50% hits: every other query is a stored key, the rest are fresh random keys.
  for (uint64_t i = 0; i < n; ++i) queries[i] = i % 2 ? keys[rng() % n] : rng();
  std::vector<UpsertOutcome> outcomes(n);
  std::vector<uint8_t> flags(n);

  // A large table meets its first full cell at a lower load factor than the
  // 2^20-slot tables of docs/gph.md (more cells, more chances): the keys that
  // found no room are counted and reported, as engine_bench does.
  uint64_t no_room = 0;
  auto fill = [&] {
    check(table.clear());
    check(table.insert_or_assign(keys, values, absl::MakeSpan(outcomes)));
    no_room = static_cast<uint64_t>(std::count(outcomes.begin(), outcomes.end(), UpsertOutcome::kNoRoom));
  };
  std::vector<Result> results;
  results.push_back(measure(
      "insert", n, reps, [&] { check(table.clear()); }, [&] { fill(); }));
  const double lf = table.load_factor();
  results.push_back(measure(
      "find_50pct_hits", n, reps, [] {},
      [&] { check(table.find(queries, absl::MakeSpan(got), absl::MakeSpan(flags))); }));
  results.push_back(measure("erase", n, reps, fill, [&] { check(table.erase(keys, absl::MakeSpan(flags))); }));
  {
    std::vector<gphkv::engine::KeyValue> pairs(n);
    for (uint64_t i = 0; i < n; ++i) pairs[i] = {keys[i], values[i]};
    results.push_back(measure(
        "bulk_build", n, reps, [] {},
        [&] { check(gphkv::engine::bulk_build(gphkv::engine::Backend::kCpu, options, pairs, {}).status()); }));
  }

  // Bursts into a table that already holds half the keys: the insert path
  // (Saturation Fill + Refinement) against a rebuild from the table's pairs
  // plus the burst. The rates are burst keys per second.
  const uint64_t resident = n / 2;
  std::vector<gphkv::engine::KeyValue> live(resident);
  for (uint64_t i = 0; i < resident; ++i) live[i] = {keys[i], values[i]};
  std::vector<Burst> bursts;
  for (double fraction : {0.001, 0.01, 0.1, 0.6}) {
    const uint64_t b = static_cast<uint64_t>(resident * fraction);
    absl::Span<const uint64_t> bk(keys.data() + resident, b), bv(values.data() + resident, b);
    std::vector<gphkv::engine::WriteOp> ops(b);
    for (uint64_t i = 0; i < b; ++i) ops[i] = {bk[i], bv[i], false};
    auto load_resident = [&] {
      check(table.clear());
      check(table.insert_or_assign(absl::MakeSpan(keys.data(), resident), absl::MakeSpan(values.data(), resident),
                                   absl::MakeSpan(outcomes.data(), resident)));
    };
    Result insert_path = measure("burst_insert", b, reps, load_resident,
                                 [&] { check(table.insert_or_assign(bk, bv, absl::MakeSpan(outcomes.data(), b))); });
    Result rebuild_path = measure(
        "burst_rebuild", b, reps, [] {},
        [&] {
          auto exported = table.export_pairs();  // the rebuild starts from the live table
          check(exported.status());
          check(gphkv::engine::bulk_build(gphkv::engine::Backend::kCpu, options, *exported, ops).status());
        });
    bursts.push_back({fraction, b, gphkv::bench::median(insert_path.mops), gphkv::bench::median(rebuild_path.mops)});
  }

  const unsigned threads = options.cpu_threads ? options.cpu_threads : std::thread::hardware_concurrency();
  std::printf("gphkv CPU backend, %s, %u threads, %llu keys, load factor %.3f (M=%u R=%u cells/bucket=%.0f)\n",
              gphkv::bench::cpu_model().c_str(), threads, static_cast<unsigned long long>(n), lf,
              options.slots_per_bucket, options.virtual_buckets, options.cells_per_bucket);
  std::printf("keys that found no room in the last fill: %llu\n", static_cast<unsigned long long>(no_room));
  std::printf("%-18s %12s %12s %12s\n", "operation", "Mops/s med", "min", "max");
  for (const auto& r : results) {
    auto [lo, hi] = std::minmax_element(r.mops.begin(), r.mops.end());
    std::printf("%-18s %12.1f %12.1f %12.1f\n", r.op.c_str(), gphkv::bench::median(r.mops), *lo, *hi);
  }

  std::printf("\nburst into a table of %llu keys   insert path Mkeys/s   rebuild path Mkeys/s   insert/rebuild\n",
              static_cast<unsigned long long>(resident));
  for (const Burst& b : bursts) {
    std::printf("%6.1f%% (%9llu keys)        %12.2f        %12.2f        %8.2fx\n", b.fraction * 100,
                static_cast<unsigned long long>(b.keys), b.insert_mops, b.rebuild_mops, b.insert_mops / b.rebuild_mops);
  }

  const std::string path = absl::GetFlag(FLAGS_json);
  if (!path.empty()) {
    auto record = gphkv::bench::run_record("cpu_table_bench", gphkv::bench::cpu_model(), argc, argv);
    record["threads"] = threads;
    record["keys"] = n;
    record["load_factor"] = lf;
    record["no_room_keys"] = no_room;
    record["slots_per_bucket"] = options.slots_per_bucket;
    record["virtual_buckets"] = options.virtual_buckets;
    record["cells_per_bucket"] = options.cells_per_bucket;
    for (const auto& r : results) {
      record["results"].push_back({{"op", r.op}, {"mops_median", gphkv::bench::median(r.mops)}, {"mops_runs", r.mops}});
    }
    for (const Burst& b : bursts) {
      record["bursts"].push_back({{"fraction", b.fraction},
                                  {"keys", b.keys},
                                  {"insert_path_mkeys_per_s", b.insert_mops},
                                  {"rebuild_path_mkeys_per_s", b.rebuild_mops}});
    }
    if (!gphkv::bench::write_json(path, record)) return 1;
    std::printf("wrote %s\n", path.c_str());
  }
  return 0;
}
