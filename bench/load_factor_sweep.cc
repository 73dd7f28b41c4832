// Reachable load factor per (M, R, cells per bucket): random keys are inserted
// in batches of 1/512 of the slots until the first kNoRoom; the load factor at
// that moment, averaged over --reps tables of 2^20 slots. docs/gph.md records
// the output; the engine's defaults come from it.
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/bench_report.h"
#include "gphkv/engine/table.h"

ABSL_FLAG(int, reps, 3, "tables per shape");
ABSL_FLAG(uint64_t, seed, 42, "seed of keys and table seeds");
ABSL_FLAG(std::string, json, "", "write the results as JSON to this file");

using namespace gphkv::engine;

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int reps = absl::GetFlag(FLAGS_reps);
  std::mt19937_64 rng(absl::GetFlag(FLAGS_seed));
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::printf("   M   R  cells/bucket  load factor (mean of %d)\n", reps);
  for (uint32_t m : {8u, 16u, 32u}) {
    for (uint32_t r : {8u, 16u}) {
      for (double cpb : {1.0, 2.0, 4.0, 8.0}) {
        double sum = 0;
        for (int rep = 0; rep < reps; ++rep) {
          TableOptions o;
          o.slots_per_bucket = m;
          o.virtual_buckets = r;
          o.cells_per_bucket = cpb;
          o.num_buckets = (1u << 20) / m;
          o.seed = static_cast<uint32_t>(rng());
          auto table = make_cpu_table(o);
          if (!table.ok()) {
            std::fprintf(stderr, "%s\n", table.status().ToString().c_str());
            return 1;
          }
          const size_t batch = (1u << 20) / 512;
          std::vector<uint64_t> keys(batch);
          std::vector<UpsertOutcome> out(batch);
          for (bool failed = false; !failed;) {
            for (auto& k : keys) k = rng();
            if (!(*table)->insert_or_assign(keys, keys, absl::MakeSpan(out)).ok()) return 1;
            for (auto x : out) failed |= x == UpsertOutcome::kNoRoom;
          }
          sum += (*table)->load_factor();
        }
        std::printf("%4u %3u %13.0f  %.4f\n", m, r, cpb, sum / reps);
        std::fflush(stdout);
        rows.push_back({{"m", m}, {"r", r}, {"cells_per_bucket", cpb}, {"load_factor", sum / reps}});
      }
    }
  }
  const std::string path = absl::GetFlag(FLAGS_json);
  if (!path.empty()) {
    auto record = gphkv::bench::run_record("load_factor_sweep", gphkv::bench::cpu_model(), argc, argv);
    record["results"] = rows;
    if (!gphkv::bench::write_json(path, record)) return 1;
  }
  return 0;
}
