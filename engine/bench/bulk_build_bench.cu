// Bulk build: the GPU bulk build (engine/cuda/bulk_build.h) of 10^8 and 10^9
// unique pairs, and a burst of writes half of which repeat keys. The variants
// of its steps that lost were measured here until they left the engine
// (engine/cuda/bulk_build.h says which, with their figures).
#include <functional>
#include <string>

#include "engine/bench/key_spaces.cuh"
#include "engine/bench/measurements.h"
#include "engine/bench/sections.h"

namespace gphkv::bench {
namespace {

using engine::BuildStats;
using engine::KeyValue;
using engine::WriteOp;
using engine::cuda::BulkBuildConfig;
using engine::cuda::BulkBuildTimes;

// Median of --reps bulk loads (after a warm-up), CUDA events on the stream
// around each (the build waits on its stream between its phases, so this is
// its wall time), then one more run for the phase breakdown.
void timed_build(Context& c, const std::string& name, uint64_t inputs, CudaTable& table,
                 const std::function<void(BuildStats*, BulkBuildTimes*)>& run) {
  BuildStats st;
  const double ms = median_ms(c.args.reps, c.s, [&] { run(&st, nullptr); });
  Report::Build b;
  b.name = name;
  b.inputs = inputs;
  b.keys = table.size();
  b.load = table.load_factor();
  b.ms = ms;
  b.gkeys = gops(inputs, ms);
  b.rounds = st.parallel_rounds;
  b.cells_serial = st.cells_serial;
  BulkBuildTimes times;
  run(&st, &times);
  b.dedupe_ms = times.dedupe;
  b.group_ms = times.group;
  b.first_mark_ms = times.first_mark;
  b.rounds_ms = times.rounds;
  b.serial_ms = times.serial;
  b.place_ms = times.place;
  std::printf(
      "  bulk build %-44s %llu inputs -> %llu keys (load %.3f): %.2f ms, %.3f G inputs/s, %u rounds, "
      "%llu cells serial, %llu cells moved\n",
      name.c_str(), static_cast<unsigned long long>(inputs), static_cast<unsigned long long>(b.keys), b.load, ms,
      b.gkeys, st.parallel_rounds, static_cast<unsigned long long>(st.cells_serial),
      static_cast<unsigned long long>(st.cells_moved));
  std::printf(
      "    steps (ms, breakdown run): rounds: admit %.2f, choose %.2f, move %.2f, overflow scan %.2f; "
      "place: sort %.2f, slot fill %.2f\n",
      times.round_admit, times.round_choose, times.round_move, times.round_mark, times.place_sort, times.place_fill);
  std::fflush(stdout);
  c.report.builds.push_back(b);
}

void expect_keys(const char* what, uint64_t inputs, uint64_t keys, uint64_t held) {
  if (held == keys) return;
  std::fprintf(stderr, "bulk build of %llu %s holds %llu keys, expected %llu\n",
               static_cast<unsigned long long>(inputs), what, static_cast<unsigned long long>(held),
               static_cast<unsigned long long>(keys));
  std::exit(3);
}

// n unique pairs.
void unique_pairs(Context& c, uint64_t n, const engine::TableOptions& o) {
  KeyValue* d_kv;
  CK(cudaMalloc(&d_kv, n * sizeof(KeyValue)));
  fill_pairs(d_kv, 0, n, c.s);
  {
    auto made = CudaTable::create(o, 0);
    OK(made.status());
    CudaTable& t = **made;
    // The name perf-tables.py reads the headline row by.
    const char* vname = "radix sort by cell (V2, binned)";
    trim_memory_pool();
    // A trial build first: where the scratch does not fit (10^9 pairs, the
    // radix sort's 16 B per pair), say so and go on.
    if (absl::Status trial = t.bulk_load(d_kv, n, nullptr, 0, c.s, nullptr, BulkBuildConfig{}); !trial.ok()) {
      std::printf("  bulk build unique, %s, %llu pairs: skipped: %s\n", vname, static_cast<unsigned long long>(n),
                  trial.ToString().c_str());
      std::fflush(stdout);
    } else {
      BulkBuildConfig config;
      timed_build(c, std::string("unique, ") + vname, n, t, [&](BuildStats* st, BulkBuildTimes* times) {
        config.times = times;
        OK(t.bulk_load(d_kv, n, nullptr, 0, c.s, st, config));
      });
      expect_keys("unique pairs", n, n, t.size());
      if (c.args.bulk_variants) {
        // Records as (key, value) pairs for the placement's random reads,
        // then the default again: interleaved, so drift shows.
        BulkBuildConfig pairs;
        pairs.pair_records = true;
        trim_memory_pool();
        if (absl::Status trial = t.bulk_load(d_kv, n, nullptr, 0, c.s, nullptr, pairs); !trial.ok()) {
          std::printf("  bulk build unique, pair records, %llu pairs: skipped: %s\n",
                      static_cast<unsigned long long>(n), trial.ToString().c_str());
          (void)cudaGetLastError();  // an out-of-memory is not sticky: clear it for the runs after
        } else {
          timed_build(c, "unique, pair records", n, t, [&](BuildStats* st, BulkBuildTimes* times) {
            pairs.times = times;
            OK(t.bulk_load(d_kv, n, nullptr, 0, c.s, st, pairs));
          });
          expect_keys("unique pairs (pair records)", n, n, t.size());
        }
        trim_memory_pool();
        BulkBuildConfig separate;  // the default before pair_records_when_free
        separate.pair_records_when_free = false;
        timed_build(c, "unique, separate records", n, t, [&](BuildStats* st, BulkBuildTimes* times) {
          separate.times = times;
          OK(t.bulk_load(d_kv, n, nullptr, 0, c.s, st, separate));
        });
        expect_keys("unique pairs (separate records)", n, n, t.size());
        trim_memory_pool();
        BulkBuildConfig again;
        timed_build(c, std::string("unique, ") + vname + ", again", n, t, [&](BuildStats* st, BulkBuildTimes* times) {
          again.times = times;
          OK(t.bulk_load(d_kv, n, nullptr, 0, c.s, st, again));
        });
        expect_keys("unique pairs", n, n, t.size());
      }
    }
  }
  CK(cudaFree(d_kv));
  trim_memory_pool();
}

// n writes over n/2 keys: the burst's dedupe (radix sort, unique by key) at full size.
void repeating_writes(Context& c, uint64_t n) {
  WriteOp* d_w;
  CK(cudaMalloc(&d_w, n * sizeof(WriteOp)));
  fill_repeating_writes(d_w, 0, n, c.s);
  engine::TableOptions od = c.args.table_options();
  od.num_buckets = engine::buckets_for_capacity(n / 2, c.args.load, od.slots_per_bucket);
  auto made = CudaTable::create(od, 0);
  OK(made.status());
  CudaTable& t = **made;
  BulkBuildConfig config;
  timed_build(c, "half the writes repeat keys, radix sort by cell (V2, binned)", n, t,
              [&](BuildStats* st, BulkBuildTimes* times) {
                config.times = times;
                OK(t.bulk_load(nullptr, 0, d_w, n, c.s, st, config));
              });
  expect_keys("writes over half as many keys", n, n / 2, t.size());
  made->reset();
  CK(cudaFree(d_w));
  trim_memory_pool();
}

}  // namespace

void bulk_build_section(Context& c) {
  for (size_t si = 0; si < c.args.keys.size(); ++si) {
    const uint64_t n = c.args.keys[si];
    engine::TableOptions o = c.args.table_options();
    o.num_buckets = engine::buckets_for_capacity(n, c.args.load, o.slots_per_bucket);
    const double table_gb =
        (static_cast<double>(o.num_buckets) * o.slots_per_bucket * 16 + o.num_buckets * o.cells_per_bucket) / 1e9;
    // Input pairs, the table, and the build's scratch at its peak (the radix
    // sort's 16 B per pair next to the 16 B records; cell index and lists).
    const double need_gb = n * (16.0 + 16 + 16) / 1e9 + table_gb + o.num_buckets * o.cells_per_bucket * 14 / 1e9;
    size_t free_b = 0, total_b = 0;
    CK(cudaMemGetInfo(&free_b, &total_b));
    std::printf("\n== bulk build, %llu pairs: table %.1f GB, about %.1f GB with input and scratch, %.1f GB free\n",
                static_cast<unsigned long long>(n), table_gb, need_gb, free_b / 1e9);
    if (need_gb > 0.95 * free_b / 1e9) {
      std::printf("  skipped: does not fit\n");
      continue;
    }
    unique_pairs(c, n, o);
    if (si != 0) continue;
    // The writes (24 B each), their dedupe's sort (key and index, twice) and
    // a table of half the size.
    const double repeat_gb = n * (sizeof(WriteOp) + 24.0) / 1e9 + need_gb / 2;
    CK(cudaMemGetInfo(&free_b, &total_b));
    if (repeat_gb > 0.95 * free_b / 1e9) {
      std::printf("  half the writes repeat keys: skipped, about %.1f GB needed, %.1f GB free\n", repeat_gb,
                  free_b / 1e9);
      continue;
    }
    repeating_writes(c, n);
  }
}

}  // namespace gphkv::bench
