// engine_bench: the GPH CUDA table against the device's random-gather ceiling
// and a bucketed linear-probing baseline, in one run. Prints a table and
// writes JSON (docs/gpu.md says how to run it on the device machine).
//
//   engine_bench [--keys=1e8,1e9] [--reps=7] [--load=0.8] [--sweep] [--json=PATH]
//                [--sections=table,build,burst,rebuild_lookup]
//
// Sections: table (finds, inserts and erases against the ceiling and the
// baseline, per size), build (the GPU bulk build, per size), burst (a burst
// of 0.1% .. 100% of the table absorbed by the insert kernel and by a
// rebuild, at the first size), rebuild_lookup (lookups on one stream while a
// rebuild runs on another, against idle, at the first size).
//
// Every figure is the median of --reps timed runs (CUDA events) after a
// warm-up run, in G operations per second.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench/cuda_check.h"
#include "bench/engine_bench_kernels.cuh"
#include "bench/engine_bench_report.h"
#include "engine/cuda/cuda_table.h"

#ifndef GPHKV_GIT_COMMIT
#define GPHKV_GIT_COMMIT "unknown"
#endif

namespace gphkv::bench {
namespace {

using engine::BuildStats;
using engine::KeyValue;
using engine::TableOptions;
using engine::UpsertOutcome;
using engine::WriteOp;
using engine::cuda::BulkBuildConfig;
using engine::cuda::BulkGrouping;
using engine::cuda::BulkOverflowScan;
using engine::cuda::BulkPlacement;
using engine::cuda::CudaTable;
using engine::cuda::LookupShape;

#define OK(x)                                                                                     \
  do {                                                                                            \
    absl::Status s_ = (x);                                                                        \
    if (!s_.ok()) {                                                                               \
      std::fprintf(stderr, "%s at %s:%d\n", s_.ToString().c_str(), __FILE__, __LINE__);           \
      std::exit(2);                                                                               \
    }                                                                                             \
  } while (0)

struct Args {
  std::vector<uint64_t> keys = {100000000ull, 1000000000ull};
  int reps = 7;
  double load = 0.8;
  bool sweep = false;
  std::string json;
  std::string sections = "table,build,burst,rebuild_lookup";
  bool has(const char* section) const { return ("," + sections + ",").find(std::string(",") + section + ",") != std::string::npos; }
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto val = [&](const char* name) -> const char* {
      const std::string p = std::string("--") + name + "=";
      return s.rfind(p, 0) == 0 ? s.c_str() + p.size() : nullptr;
    };
    if (const char* v = val("keys")) {
      a.keys.clear();
      std::string list = v;
      size_t at = 0;
      while (at <= list.size()) {
        size_t end = list.find(',', at);
        if (end == std::string::npos) end = list.size();
        a.keys.push_back(static_cast<uint64_t>(std::stod(list.substr(at, end - at))));
        at = end + 1;
      }
    } else if (const char* v = val("reps")) {
      a.reps = std::max(1, std::atoi(v));
    } else if (const char* v = val("load")) {
      a.load = std::atof(v);
    } else if (const char* v = val("json")) {
      a.json = v;
    } else if (const char* v = val("sections")) {
      a.sections = v;
    } else if (s == "--sweep") {
      a.sweep = true;
    } else {
      std::fprintf(stderr, "usage: engine_bench [--keys=1e8,1e9] [--reps=7] [--load=0.8] [--sweep] [--json=PATH] "
                           "[--sections=table,build,burst,rebuild_lookup]\n");
      std::exit(1);
    }
  }
  return a;
}

// Median of `reps` timings of `body` (after one untimed warm-up) in ms.
double median_ms(int reps, cudaStream_t s, const std::function<void()>& body,
                 const std::function<void()>& between = nullptr) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> t;
  for (int r = 0; r <= reps; ++r) {
    if (between) between();
    CK(cudaEventRecord(a, s));
    body();
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    if (r > 0) t.push_back(ms);  // r == 0 is the warm-up
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double gops(uint64_t n, double ms) { return static_cast<double>(n) / (ms * 1e-3) / 1e9; }

// ---- inputs of the bulk-build sections ----

__global__ void make_pairs(KeyValue* kv, uint64_t first, uint64_t n) {
  const uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (i < n) kv[i] = KeyValue{bench_key(first + i), mix64(first + i) ^ 0x5555};
}

// n puts of new keys first + i.
__global__ void make_writes(WriteOp* w, uint64_t first, uint64_t n) {
  const uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (i < n) w[i] = WriteOp{bench_key(first + i), mix64(first + i) ^ 0x5555, false};
}

// n puts over n/2 distinct keys: the first half writes each once, the second
// half repeats them (each write a random key of the first half).
__global__ void make_dup_writes(WriteOp* w, uint64_t first, uint64_t n) {
  const uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const uint64_t half = n / 2 == 0 ? 1 : n / 2;
  if (i < n) w[i] = WriteOp{bench_key(first + (i < half ? i : mix64(i) % half)), mix64(i), false};
}

__global__ void split_writes(const WriteOp* w, uint64_t n, uint64_t* keys, uint64_t* values) {
  const uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    keys[i] = w[i].key;
    values[i] = w[i].value;
  }
}

unsigned blocks_for(uint64_t n) { return static_cast<unsigned>((n + 255) / 256); }

double host_ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct Bench {
  Args args;
  cudaStream_t s;
  int sms = 0;
  Report report;
  uint64_t last_no_room = 0;

  // The random-gather ceiling over `bytes` of memory: G=4 threads read one
  // 128-byte block (16 keys) per query, as the lookup does.
  double ceiling(uint64_t bytes, uint64_t nq, int value_every, const uint64_t* values, uint64_t nvalues) {
    int4* buf;
    unsigned long long* sink;
    CK(cudaMalloc(&buf, bytes));
    CK(cudaMalloc(&sink, 8));
    CK(cudaMemsetAsync(buf, 1, bytes, s));
    const uint64_t nb = bytes / 128;
    uint32_t seed = 1;
    const double ms = median_ms(args.reps, s, [&] {
      gather_ceiling<4, 128><<<sms * 8, 512, 0, s>>>(buf, nb, nq, seed++, values, nvalues, value_every, sink);
      CK(cudaGetLastError());
    });
    CK(cudaFree(buf));
    CK(cudaFree(sink));
    return gops(nq, ms);
  }

  static void print_stats(const char* what, const engine::cuda::RefinementStats& a,
                          const engine::cuda::RefinementStats& b) {
    std::printf("  refinement during %s: %llu transactions, %llu attempts, %llu wait-die deaths, %llu direct, "
                "%llu moves, %llu mapping loads\n",
                what, b.transactions - a.transactions, b.attempts - a.attempts, b.deaths - a.deaths,
                b.direct - a.direct, b.moves - a.moves, b.mappings - a.mappings);
  }

  // Fills `table` with keys [0, n) in 10 batches; returns G inserts/s (median of builds).
  double build(CudaTable& table, uint64_t n, int builds, uint64_t* dk, uint64_t* dv, UpsertOutcome* doc) {
    const uint64_t batch = (n + 9) / 10;
    std::vector<double> rates;
    for (int b = 0; b < builds; ++b) {
      OK(table.clear());
      const engine::cuda::RefinementStats before = table.refinement_stats();
      float total = 0;
      cudaEvent_t e0, e1;
      CK(cudaEventCreate(&e0));
      CK(cudaEventCreate(&e1));
      for (uint64_t first = 0; first < n; first += batch) {
        const uint64_t m = std::min(batch, n - first);
        make_keys<<<(m + 255) / 256, 256, 0, s>>>(dk, dv, first, m);
        CK(cudaGetLastError());
        CK(cudaEventRecord(e0, s));
        OK(table.insert_or_assign_async(dk, dv, m, doc, s));
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        total += ms;
        // Batch by batch, the first build: the early batches show sort + Saturation
        // Fill alone, the late ones add the Refinement of a filling table.
        if (b == 0) std::printf("  build batch to load %.2f: %.2f ms (%.2f G/s)\n",
                                static_cast<double>(first + m) / table.geometry().num_slots(), ms, gops(m, ms));
      }
      CK(cudaEventDestroy(e0));
      CK(cudaEventDestroy(e1));
      OK(table.synchronize(s));
      // Keys answered kNoRoom (a cell no (Φ, Δ) fits) are left out, as the API says.
      last_no_room = n - table.size();
      if (last_no_room > n / 10000) {
        std::fprintf(stderr, "build: %llu of %llu keys got kNoRoom\n", static_cast<unsigned long long>(last_no_room),
                     static_cast<unsigned long long>(n));
        std::exit(3);
      }
      if (b == 0) {
        std::printf("  build: %llu of %llu keys got kNoRoom\n", static_cast<unsigned long long>(last_no_room),
                    static_cast<unsigned long long>(n));
        print_stats("the build", before, table.refinement_stats());
      }
      rates.push_back(gops(n, total));
    }
    std::sort(rates.begin(), rates.end());
    return rates[rates.size() / 2];
  }

  // Runs one find configuration; checks the hit count; returns G finds/s.
  double find(CudaTable& table, uint64_t n_keys, uint64_t nq, int hit_pct, bool zipf, uint64_t* dq,
              uint64_t* dout, uint8_t* dfound, unsigned long long* dcount) {
    make_queries<<<(nq + 255) / 256, 256, 0, s>>>(dq, nq, n_keys, hit_pct, zipf, 77 + hit_pct, 0x9e3779b97f4a7c15ull % n_keys | 1);
    CK(cudaGetLastError());
    const double ms = median_ms(args.reps, s, [&] { OK(table.find_async(dq, nq, dout, dfound, s)); });
    check_hits(dfound, nq, hit_pct, dcount, "gph");
    return gops(nq, ms);
  }

  void check_hits(const uint8_t* dfound, uint64_t nq, int hit_pct, unsigned long long* dcount, const char* who) {
    CK(cudaMemsetAsync(dcount, 0, 8, s));
    count_ones<<<sms * 4, 256, 0, s>>>(dfound, nq, dcount);
    CK(cudaGetLastError());
    unsigned long long hits = 0;
    CK(cudaMemcpyAsync(&hits, dcount, 8, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    const double frac = static_cast<double>(hits) / nq;
    if (std::abs(frac - hit_pct / 100.0) > 0.01) {
      std::fprintf(stderr, "%s: %.4f of the queries hit, expected %d%%\n", who, frac, hit_pct);
      std::exit(3);
    }
  }

  void run_size(uint64_t n, bool sweep) {
    const uint64_t nq = std::min<uint64_t>(n, 100000000ull);
    const uint64_t batch = (n + 9) / 10;
    TableOptions o;
    o.num_buckets = engine::buckets_for_capacity(n, args.load, o.slots_per_bucket);
    auto made = CudaTable::create(o, 0);
    OK(made.status());
    CudaTable& table = **made;
    const double lf = static_cast<double>(n) / (static_cast<double>(o.num_buckets) * o.slots_per_bucket);
    std::printf("\n== %llu keys: N=%llu buckets x M=%u, R=%u, cells/bucket=%.0f, load %.3f, table %.2f GB\n",
                static_cast<unsigned long long>(n), static_cast<unsigned long long>(o.num_buckets),
                o.slots_per_bucket, o.virtual_buckets, o.cells_per_bucket, lf, table.device_bytes() / 1e9);
    std::fflush(stdout);

    uint64_t *dk, *dv, *dq, *dout;
    uint8_t *dfound, *derased;
    UpsertOutcome* doc;
    unsigned long long* dcount;
    CK(cudaMalloc(&dk, batch * 8));
    CK(cudaMalloc(&dv, batch * 8));
    CK(cudaMalloc(&doc, batch));
    CK(cudaMalloc(&derased, batch));
    CK(cudaMalloc(&dq, nq * 8));
    CK(cudaMalloc(&dout, nq * 8));
    CK(cudaMalloc(&dfound, nq));
    CK(cudaMalloc(&dcount, 8));

    // Ceilings over a buffer as large as the key array (8 GiB at most: past
    // L2 the size no longer matters, ../shared/device/README.md).
    const uint64_t key_bytes = static_cast<uint64_t>(o.num_buckets) * o.slots_per_bucket * 8;
    const double ceil = ceiling(std::min<uint64_t>(key_bytes, 8ull << 30), nq, 0, nullptr, 0);
    const double ceil_v = ceiling(std::min<uint64_t>(key_bytes, 8ull << 30), nq, 2, dq, nq);
    std::printf("gather ceiling, 128 B per query: %.2f G/s; with an 8 B value read for every 2nd: %.2f G/s\n", ceil, ceil_v);

    const double insert_build = build(table, n, n >= 500000000ull ? 2 : 3, dk, dv, doc);
    const uint64_t build_no_room = last_no_room;
    std::printf("insert, build from empty to load %.2f (10 batches): %.2f G/s\n", lf, insert_build);

    // Finds on the full table.
    struct FindRow { int hit; bool zipf; double gph, base; };
    std::vector<FindRow> rows;
    for (bool zipf : {false, true}) {
      for (int hit : {0, 50, 100}) rows.push_back({hit, zipf, find(table, n, nq, hit, zipf, dq, dout, dfound, dcount), 0});
    }

    // Bursts of 1% new keys into the full table, then their erase.
    const uint64_t burst = n / 100;
    std::vector<float> ins, era;
    OK(table.synchronize(s));
    const engine::cuda::RefinementStats before_bursts = table.refinement_stats();
    for (int r = 0; r <= args.reps; ++r) {
      make_keys<<<(burst + 255) / 256, 256, 0, s>>>(dk, dv, kBurstBase + r * burst, burst);
      CK(cudaGetLastError());
      cudaEvent_t e0, e1, e2;
      CK(cudaEventCreate(&e0));
      CK(cudaEventCreate(&e1));
      CK(cudaEventCreate(&e2));
      CK(cudaEventRecord(e0, s));
      OK(table.insert_or_assign_async(dk, dv, burst, doc, s));
      CK(cudaEventRecord(e1, s));
      OK(table.erase_async(dk, burst, derased, s));
      CK(cudaEventRecord(e2, s));
      OK(table.synchronize(s));
      float a, b;
      CK(cudaEventElapsedTime(&a, e0, e1));
      CK(cudaEventElapsedTime(&b, e1, e2));
      if (r > 0) {
        ins.push_back(a);
        era.push_back(b);
      }
      check_hits(derased, burst, 100, dcount, "erase of the burst");
      if (table.size() != n - last_no_room) {
        std::fprintf(stderr, "after burst+erase the table holds %llu keys\n", static_cast<unsigned long long>(table.size()));
        std::exit(3);
      }
      for (cudaEvent_t e : {e0, e1, e2}) CK(cudaEventDestroy(e));
    }
    std::sort(ins.begin(), ins.end());
    std::sort(era.begin(), era.end());
    print_stats("the bursts (all runs)", before_bursts, table.refinement_stats());
    const double insert_burst = gops(burst, ins[ins.size() / 2]);
    const double erase_burst = gops(burst, era[era.size() / 2]);

    // Tuning sweep on this table: |g| and block size.
    std::vector<Report::Variant> variants;
    if (sweep) {
      make_queries<<<(nq + 255) / 256, 256, 0, s>>>(dq, nq, n, 50, false, 5, 1);
      CK(cudaGetLastError());
      const LookupShape keep = table.lookup_shape();
      auto measure = [&](LookupShape shape, const std::string& name) {
        table.set_lookup_shape(shape);
        const double ms = median_ms(args.reps, s, [&] { OK(table.find_async(dq, nq, dout, dfound, s)); });
        check_hits(dfound, nq, 50, dcount, "sweep");
        variants.push_back({name, gops(nq, ms)});
      };
      for (int g : {2, 4, 8}) {
        for (int k : {1, 2}) {
          for (int block : {128, 256}) {
            if (block == 128 && !(g == 4 && k == 1)) continue;
            LookupShape shape;
            shape.group = g;
            shape.block = block;
            shape.keys_per_thread = k;
            measure(shape, "find 50% uniform |g|=" + std::to_string(g) + " K=" + std::to_string(k) + " block=" + std::to_string(block));
          }
        }
      }
      for (int stream : {0, 1}) {
        LookupShape shape;
        shape.streaming_loads = stream;
        measure(shape, std::string("find 50% uniform |g|=4 K=1 evict-first bucket loads ") + (stream ? "on" : "off"));
      }
      table.set_lookup_shape(keep);
      // Last, as it takes L2 from every later kernel: the Cell Index pinned in L2.
      OK(table.set_cell_persistence(true));
      for (FindRow& row : rows) {
        make_queries<<<(nq + 255) / 256, 256, 0, s>>>(dq, nq, n, row.hit, row.zipf, 77 + row.hit, 0x9e3779b97f4a7c15ull % n | 1);
        CK(cudaGetLastError());
        const double ms = median_ms(args.reps, s, [&] { OK(table.find_async(dq, nq, dout, dfound, s)); });
        check_hits(dfound, nq, row.hit, dcount, "persist");
        variants.push_back({std::string("L2-persistent Cell Index, find ") + std::to_string(row.hit) + "% " +
                                (row.zipf ? "zipf" : "uniform"),
                            gops(nq, ms)});
      }
      OK(table.set_cell_persistence(false));
      table.set_lookup_shape(keep);
    }
    made->reset();  // free the GPH table before the baseline takes as much

    // The baseline at the same N, M and load.
    BaselineTable base;
    base.num_buckets = o.num_buckets;
    CK(cudaMalloc(&base.keys, key_bytes));
    CK(cudaMalloc(&base.values, key_bytes));
    CK(cudaMemsetAsync(base.keys, 0xff, key_bytes, s));
    CK(cudaMemsetAsync(dcount, 0, 8, s));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventRecord(e0, s));
    baseline_insert<16><<<(n + 255) / 256, 256, 0, s>>>(base, 0, n, dcount);
    CK(cudaGetLastError());
    CK(cudaEventRecord(e1, s));
    unsigned long long failed = 0;
    CK(cudaMemcpyAsync(&failed, dcount, 8, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    float base_build_ms;
    CK(cudaEventElapsedTime(&base_build_ms, e0, e1));
    if (failed) {
      std::fprintf(stderr, "baseline: %llu inserts failed\n", failed);
      std::exit(3);
    }
    for (FindRow& row : rows) {
      make_queries<<<(nq + 255) / 256, 256, 0, s>>>(dq, nq, n, row.hit, row.zipf, 77 + row.hit, 0x9e3779b97f4a7c15ull % n | 1);
      CK(cudaGetLastError());
      const double ms = median_ms(args.reps, s, [&] {
        baseline_lookup<16, 4><<<(nq + 255) / 256, 256, 0, s>>>(base, dq, nq, dout, dfound);
        CK(cudaGetLastError());
      });
      check_hits(dfound, nq, row.hit, dcount, "baseline");
      row.base = gops(nq, ms);
    }
    CK(cudaFree(base.keys));
    CK(cudaFree(base.values));

    Report::Size rs;
    rs.keys = n;
    rs.load = lf;
    rs.buckets = o.num_buckets;
    rs.ceiling = ceil;
    rs.ceiling_with_values = ceil_v;
    rs.insert_build = insert_build;
    rs.build_no_room = build_no_room;
    rs.insert_burst = insert_burst;
    rs.erase_burst = erase_burst;
    rs.baseline_build = gops(n, base_build_ms);
    for (const FindRow& r : rows) rs.finds.push_back({r.hit, r.zipf, r.gph, r.base});
    rs.variants = variants;
    report.sizes.push_back(rs);
    report.print_size(rs);

    for (void* p : {(void*)dk, (void*)dv, (void*)doc, (void*)derased, (void*)dq, (void*)dout, (void*)dfound, (void*)dcount}) {
      CK(cudaFree(p));
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
  }

  // Frees what the stream-ordered pool keeps (the tables' CudaTable::init set
  // it to keep everything), so the next section's cudaMalloc finds the memory.
  void trim() {
    CK(cudaDeviceSynchronize());
    cudaMemPool_t pool;
    CK(cudaDeviceGetDefaultMemPool(&pool, 0));
    CK(cudaMemPoolTrimTo(pool, 0));
  }

  // Median of reps bulk loads (after a warm-up), CUDA events on `s` around
  // each (the build waits on `s` between its phases, so this is its wall time).
  engine::cuda::BulkBuildTimes* phase_times_ = nullptr;  // set for the breakdown run of timed_build

  Report::Build timed_build(const std::string& name, uint64_t inputs, CudaTable& table,
                            const std::function<void(BuildStats*)>& run) {
    BuildStats st;
    const double ms = median_ms(args.reps, s, [&] { run(&st); });
    Report::Build b;
    b.name = name;
    b.inputs = inputs;
    b.keys = table.size();
    b.load = table.load_factor();
    b.ms = ms;
    b.gkeys = gops(inputs, ms);
    b.rounds = st.parallel_rounds;
    b.cells_serial = st.cells_serial;
    // One more run for the phase breakdown (outside the timed ones).
    engine::cuda::BulkBuildTimes times;
    phase_times_ = &times;
    run(&st);
    phase_times_ = nullptr;
    b.dedupe_ms = times.dedupe;
    b.group_ms = times.group;
    b.first_mark_ms = times.first_mark;
    b.rounds_ms = times.rounds;
    b.serial_ms = times.serial;
    b.place_ms = times.place;
    std::printf("  bulk build %-44s %llu inputs -> %llu keys (load %.3f): %.2f ms, %.3f G inputs/s, %u rounds, "
                "%llu cells serial, %llu cells moved\n",
                name.c_str(), static_cast<unsigned long long>(inputs), static_cast<unsigned long long>(b.keys), b.load,
                ms, b.gkeys, st.parallel_rounds, static_cast<unsigned long long>(st.cells_serial),
                static_cast<unsigned long long>(st.cells_moved));
    std::printf("    steps (ms, breakdown run): rounds: admit %.2f, choose %.2f, move %.2f, overflow scan %.2f; "
                "place: sort %.2f, slot fill %.2f\n",
                times.round_admit, times.round_choose, times.round_move, times.round_mark, times.place_sort,
                times.place_fill);
    std::fflush(stdout);
    report.builds.push_back(b);
    return b;
  }

  // Section "build": 10^8 and 10^9 unique pairs (both groupings at the first
  // size), and a burst of writes half of which repeat keys.
  void build_section() {
    for (size_t si = 0; si < args.keys.size(); ++si) {
      const uint64_t n = args.keys[si];
      TableOptions o;
      o.num_buckets = engine::buckets_for_capacity(n, args.load, o.slots_per_bucket);
      const double table_gb = (static_cast<double>(o.num_buckets) * o.slots_per_bucket * 16 +
                               o.num_buckets * o.cells_per_bucket) / 1e9;
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
      KeyValue* d_kv;
      CK(cudaMalloc(&d_kv, n * sizeof(KeyValue)));
      make_pairs<<<blocks_for(n), 256, 0, s>>>(d_kv, 0, n);
      CK(cudaGetLastError());
      {
        auto made = CudaTable::create(o, 0);
        OK(made.status());
        CudaTable& t = **made;
        struct Variant {
          const char* name;
          BulkGrouping grouping;
          BulkPlacement placement;
          BulkOverflowScan scan;
        };
        // The kept configuration last; the others for comparison, at the first size only.
        const Variant variants[] = {
            {"atomic count (V1)", BulkGrouping::kAtomicCount, BulkPlacement::kSortByBucket, BulkOverflowScan::kBitsPerWarp},
            {"V2, atomic-cursor placement", BulkGrouping::kRadixSort, BulkPlacement::kAtomicCursor,
             BulkOverflowScan::kBitsPerWarp},
            {"V2, scan: thread per cell, loads", BulkGrouping::kRadixSort, BulkPlacement::kSortByBucket,
             BulkOverflowScan::kLoadsPerCell},
            {"V2, scan: thread per cell, bits", BulkGrouping::kRadixSort, BulkPlacement::kSortByBucket,
             BulkOverflowScan::kBitsPerCell},
            {"radix sort by cell (V2, binned)", BulkGrouping::kRadixSort, BulkPlacement::kSortByBucket,
             BulkOverflowScan::kBitsPerWarp}};
        for (const auto& [vname, grouping, placement, scan] : variants) {
          if (si > 0 && (placement != BulkPlacement::kSortByBucket || scan != BulkOverflowScan::kBitsPerWarp)) continue;
          BulkBuildConfig config;
          config.grouping = grouping;
          config.placement = placement;
          config.overflow_scan = scan;
          trim();
          // A trial build first: where the scratch does not fit (10^9 pairs, the
          // radix sort's 16 B per pair), say so and go on.
          if (absl::Status trial = t.bulk_load(d_kv, n, nullptr, 0, s, nullptr, config); !trial.ok()) {
            std::printf("  bulk build unique, %s, %llu pairs: skipped: %s\n", vname, static_cast<unsigned long long>(n),
                        trial.ToString().c_str());
            std::fflush(stdout);
            continue;
          }
          timed_build(std::string("unique, ") + vname, n, t, [&](BuildStats* st) {
            config.times = phase_times_;
            OK(t.bulk_load(d_kv, n, nullptr, 0, s, st, config));
          });
          if (t.size() != n) {
            std::fprintf(stderr, "bulk build of %llu unique pairs holds %llu keys\n", static_cast<unsigned long long>(n),
                         static_cast<unsigned long long>(t.size()));
            std::exit(3);
          }
        }
      }
      CK(cudaFree(d_kv));
      trim();
      if (si == 0) {
        // n writes over n/2 keys: the burst's dedupe (radix sort, unique by key) at full size.
        WriteOp* d_w;
        CK(cudaMalloc(&d_w, n * sizeof(WriteOp)));
        make_dup_writes<<<blocks_for(n), 256, 0, s>>>(d_w, 0, n);
        CK(cudaGetLastError());
        TableOptions od;
        od.num_buckets = engine::buckets_for_capacity(n / 2, args.load, od.slots_per_bucket);
        auto made = CudaTable::create(od, 0);
        OK(made.status());
        CudaTable& t = **made;
        for (const auto& [vname, grouping] : {std::pair<const char*, BulkGrouping>{"atomic count (V1)", BulkGrouping::kAtomicCount},
                                              {"radix sort by cell (V2, binned)", BulkGrouping::kRadixSort}}) {
          BulkBuildConfig config;
          config.grouping = grouping;
          timed_build(std::string("half the writes repeat keys, ") + vname, n, t, [&](BuildStats* st) {
            config.times = phase_times_;
            OK(t.bulk_load(nullptr, 0, d_w, n, s, st, config));
          });
          if (t.size() != n / 2) {
            std::fprintf(stderr, "bulk build of %llu writes over %llu keys holds %llu keys\n",
                         static_cast<unsigned long long>(n), static_cast<unsigned long long>(n / 2),
                         static_cast<unsigned long long>(t.size()));
            std::exit(3);
          }
        }
        made->reset();
        CK(cudaFree(d_w));
        trim();
      }
    }
  }

  // Section "burst": a live table of n keys, sized so that a burst of f*n new
  // keys brings it to the load target (the insert path can take it), absorbs
  // the burst (a) through insert_or_assign_async, (b) through a rebuild: a
  // device bulk build of its pairs plus the burst into a table sized by
  // ElasticTable's rule (rebuild_load_factor 0.5).
  void burst_section(uint64_t n) {
    std::printf("\n== bursts into a table of %llu keys: the insert kernel against a rebuild\n",
                static_cast<unsigned long long>(n));
    for (double f : {0.001, 0.01, 0.1, 1.0}) {
      const uint64_t b = static_cast<uint64_t>(n * f);
      TableOptions o;
      o.num_buckets = engine::buckets_for_capacity(n + b, args.load, o.slots_per_bucket);
      auto live = CudaTable::create(o, 0);
      OK(live.status());
      CudaTable& a = **live;
      KeyValue* d_kv;
      WriteOp* d_w;
      uint64_t *d_k, *d_v;
      UpsertOutcome* d_out;
      uint8_t* d_erased;
      CK(cudaMalloc(&d_kv, n * sizeof(KeyValue)));
      CK(cudaMalloc(&d_w, b * sizeof(WriteOp)));
      CK(cudaMalloc(&d_k, b * 8));
      CK(cudaMalloc(&d_v, b * 8));
      CK(cudaMalloc(&d_out, b));
      CK(cudaMalloc(&d_erased, b));
      make_pairs<<<blocks_for(n), 256, 0, s>>>(d_kv, 0, n);
      make_writes<<<blocks_for(b), 256, 0, s>>>(d_w, kBurstBase, b);
      split_writes<<<blocks_for(b), 256, 0, s>>>(d_w, b, d_k, d_v);
      CK(cudaGetLastError());
      OK(a.bulk_load(d_kv, n, nullptr, 0, s));
      CK(cudaFree(d_kv));
      Report::Burst row;
      row.fraction = f;
      row.table_keys = n;
      row.burst = b;
      row.load_before = a.load_factor();
      // (a) The insert kernel; each run's keys are erased again (untimed).
      uint64_t no_room = 0;
      double load_after = 0;
      bool dirty = false;
      row.insert_ms = median_ms(
          args.reps, s,
          [&] {
            OK(a.insert_or_assign_async(d_k, d_v, b, d_out, s));
            dirty = true;
          },
          [&] {
            if (dirty) {  // after a run: restore the live table
              OK(a.erase_async(d_k, b, d_erased, s));
              OK(a.synchronize(s));
              dirty = false;
            }
          });
      OK(a.synchronize(s));
      no_room = n + b - a.size();
      load_after = a.load_factor();
      OK(a.erase_async(d_k, b, d_erased, s));
      OK(a.synchronize(s));
      row.insert_no_room = no_room;
      row.load_after = load_after;
      // (b) The rebuild: a new table (its allocation timed apart) and the build.
      TableOptions ob = o;
      ob.num_buckets = engine::buckets_for_capacity(n + b, 0.5, o.slots_per_bucket);
      row.rebuild_buckets = ob.num_buckets;
      std::vector<double> alloc;
      std::unique_ptr<CudaTable> built;
      for (int r = 0; r < 3; ++r) {
        built.reset();
        const auto t0 = std::chrono::steady_clock::now();
        auto made = CudaTable::create(ob, 0);
        OK(made.status());
        alloc.push_back(host_ms_since(t0));
        built = std::move(*made);
      }
      std::sort(alloc.begin(), alloc.end());
      row.rebuild_alloc_ms = alloc[1];
      BuildStats st;
      row.rebuild_ms = median_ms(args.reps, s, [&] { OK(built->bulk_load_from(a, d_w, b, s, &st)); });
      if (built->size() != n + b) {
        std::fprintf(stderr, "rebuild holds %llu keys, expected %llu\n", static_cast<unsigned long long>(built->size()),
                     static_cast<unsigned long long>(n + b));
        std::exit(3);
      }
      std::printf("  burst %.1f%% (%llu keys), load %.3f -> %.3f: insert kernel %.2f ms (%llu kNoRoom), rebuild %.2f ms "
                  "(+ %.2f ms to allocate the new table, %u rounds), insert/rebuild %.2f\n",
                  f * 100, static_cast<unsigned long long>(b), row.load_before, row.load_after, row.insert_ms,
                  static_cast<unsigned long long>(no_room), row.rebuild_ms, row.rebuild_alloc_ms, st.parallel_rounds,
                  row.insert_ms / row.rebuild_ms);
      std::fflush(stdout);
      report.bursts.push_back(row);
      built.reset();
      live->reset();
      for (void* p : {(void*)d_w, (void*)d_k, (void*)d_v, (void*)d_out, (void*)d_erased}) CK(cudaFree(p));
      trim();
    }
  }

  // Section "rebuild_lookup": batches of lookups on `s` while the table is
  // rebuilt into a larger one on another stream from another thread (as
  // ElasticTable's background rebuild does), against the same loop idle.
  void rebuild_lookup_section(uint64_t n) {
    std::printf("\n== lookups during a rebuild, %llu keys\n", static_cast<unsigned long long>(n));
    TableOptions o;
    o.num_buckets = engine::buckets_for_capacity(n, args.load, o.slots_per_bucket);
    auto live = CudaTable::create(o, 0);
    OK(live.status());
    CudaTable& a = **live;
    KeyValue* d_kv;
    CK(cudaMalloc(&d_kv, n * sizeof(KeyValue)));
    make_pairs<<<blocks_for(n), 256, 0, s>>>(d_kv, 0, n);
    CK(cudaGetLastError());
    OK(a.bulk_load(d_kv, n, nullptr, 0, s));
    CK(cudaFree(d_kv));
    const uint64_t q = std::max<uint64_t>(1, std::min<uint64_t>(n / 10, 10000000));
    uint64_t *dq, *dout;
    uint8_t* dfound;
    unsigned long long* dcount;
    CK(cudaMalloc(&dq, q * 8));
    CK(cudaMalloc(&dout, q * 8));
    CK(cudaMalloc(&dfound, q));
    CK(cudaMalloc(&dcount, 8));
    make_queries<<<blocks_for(q), 256, 0, s>>>(dq, q, n, 50, false, 91, 1);
    CK(cudaGetLastError());
    TableOptions ob = o;
    ob.num_buckets = engine::buckets_for_capacity(n, 0.5, o.slots_per_bucket);
    auto grown = CudaTable::create(ob, 0);
    OK(grown.status());
    CudaTable& g = **grown;
    // The rebuild's stream at the least priority (as CudaTable::bulk_load's);
    // lookups either on the bench's stream (also the least) or at the greatest
    // (as a CudaTable's own stream).
    int least = 0, greatest = 0;
    CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cudaStream_t s2, s_hi;
    CK(cudaStreamCreateWithPriority(&s2, cudaStreamNonBlocking, least));
    CK(cudaStreamCreateWithPriority(&s_hi, cudaStreamNonBlocking, greatest));
    cudaStream_t ls = s;
    // Batches until `stop` (or for `min_ms`), each waited for; returns G lookups/s.
    auto lookups = [&](const std::atomic<bool>& stop, double min_ms, uint64_t* batches) {
      const auto t0 = std::chrono::steady_clock::now();
      uint64_t done = 0;
      while (!stop.load() || host_ms_since(t0) < min_ms) {
        OK(a.find_async(dq, q, dout, dfound, ls));
        CK(cudaStreamSynchronize(ls));
        ++done;
        if (min_ms > 0 && host_ms_since(t0) >= min_ms && stop.load()) break;
      }
      *batches = done;
      return gops(done * q, host_ms_since(t0));
    };
    auto rebuild = [&](double* ms) {
      const auto t0 = std::chrono::steady_clock::now();
      OK(g.bulk_load_from(a, nullptr, 0, s2));
      *ms = host_ms_since(t0);
    };
    double warm = 0;
    rebuild(&warm);  // warm-up (pool, code)
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    for (const bool high : {false, true}) {
      ls = high ? s_hi : s;
      std::vector<double> alone, idle, during, during_ms, batches;
      for (int r = 0; r < args.reps; ++r) {
        double ms = 0;
        rebuild(&ms);
        alone.push_back(ms);
        std::atomic<bool> stop{true};
        uint64_t nb = 0;
        idle.push_back(lookups(stop, std::max(ms, 20.0), &nb));
        std::atomic<bool> done{false};
        double build_ms = 0;
        std::thread builder([&] {
          rebuild(&build_ms);
          done = true;
        });
        const double got = lookups(done, 0, &nb);
        builder.join();
        during.push_back(got);
        during_ms.push_back(build_ms);
        batches.push_back(static_cast<double>(nb));
      }
      check_hits(dfound, q, 50, dcount, "lookups during the rebuild");
      if (g.size() != n) {
        std::fprintf(stderr, "the rebuilt table holds %llu keys\n", static_cast<unsigned long long>(g.size()));
        std::exit(3);
      }
      Report::RebuildLookup row;
      row.setup = high ? "lookups at the greatest stream priority, rebuild at the least"
                       : "lookups and rebuild at the same (least) priority";
      row.keys = n;
      row.batch = q;
      row.idle_gops = median(idle);
      row.during_gops = median(during);
      row.rebuild_ms_alone = median(alone);
      row.rebuild_ms_during = median(during_ms);
      row.batches_during = static_cast<uint64_t>(median(batches));
      report.rebuild_lookups.push_back(row);
      std::printf("  %s: idle %.2f G/s, during the rebuild %.2f G/s (%.3f of idle); rebuild %.1f ms alone, %.1f ms during\n",
                  row.setup.c_str(), row.idle_gops, row.during_gops, row.during_gops / row.idle_gops,
                  row.rebuild_ms_alone, row.rebuild_ms_during);
      std::fflush(stdout);
    }
    CK(cudaStreamDestroy(s2));
    CK(cudaStreamDestroy(s_hi));
    grown->reset();
    live->reset();
    for (void* p : {(void*)dq, (void*)dout, (void*)dfound, (void*)dcount}) CK(cudaFree(p));
    trim();
  }

  // Find at 50% hits, uniform, 10^8 keys, for cells per bucket 1, 2, 4: the
  // Cell Index grows from ~7 to ~29 MB, the L2 holds 50 MB.
  void sweep_cells(uint64_t n) {
    const uint64_t nq = std::min<uint64_t>(n, 100000000ull);
    uint64_t *dk, *dv, *dq, *dout;
    uint8_t* dfound;
    UpsertOutcome* doc;
    unsigned long long* dcount;
    const uint64_t batch = (n + 9) / 10;
    CK(cudaMalloc(&dk, batch * 8));
    CK(cudaMalloc(&dv, batch * 8));
    CK(cudaMalloc(&doc, batch));
    CK(cudaMalloc(&dq, nq * 8));
    CK(cudaMalloc(&dout, nq * 8));
    CK(cudaMalloc(&dfound, nq));
    CK(cudaMalloc(&dcount, 8));
    for (double cpb : {1.0, 2.0, 4.0, 8.0}) {
      TableOptions o;
      o.num_buckets = engine::buckets_for_capacity(n, args.load, o.slots_per_bucket);
      o.cells_per_bucket = cpb;
      auto t = CudaTable::create(o, 0);
      OK(t.status());
      // Past its reachable load factor a shape answers kNoRoom (0.71 at one cell
      // per bucket, 0.79 at two): build those to 0.65 and 0.74.
      const double reach = cpb < 2 ? 0.65 : cpb < 4 ? 0.74 : args.load;
      const uint64_t fill = static_cast<uint64_t>(n * std::min(reach, args.load) / args.load);
      const double ins = build(**t, fill, 1, dk, dv, doc);
      const double f50 = find(**t, fill, nq, 50, false, dq, dout, dfound, dcount);
      const double f0 = find(**t, fill, nq, 0, false, dq, dout, dfound, dcount);
      char name[96];
      std::snprintf(name, sizeof name, "cells/bucket=%.0f (cell index %.0f MB, load %.2f)", cpb,
                    o.num_buckets * cpb / 1e6, static_cast<double>(fill) / (o.num_buckets * 16.0));
      report.cell_sweep.push_back({name, f50, f0, ins});
      std::printf("%-52s find 50%% %.2f G/s, 0%% %.2f G/s, build %.2f G/s\n", name, f50, f0, ins);
      std::fflush(stdout);
    }
    for (void* p : {(void*)dk, (void*)dv, (void*)doc, (void*)dq, (void*)dout, (void*)dfound, (void*)dcount}) CK(cudaFree(p));
  }
};

}  // namespace
}  // namespace gphkv::bench

int main(int argc, char** argv) {
  using namespace gphkv::bench;
  Bench b;
  b.args = parse(argc, argv);
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  b.sms = p.multiProcessorCount;
  CK(cudaStreamCreateWithFlags(&b.s, cudaStreamNonBlocking));
  std::string cmd;
  for (int i = 0; i < argc; ++i) cmd += (i ? " " : "") + std::string(argv[i]);
  char date[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  b.report.device = p.name;
  b.report.sms = p.multiProcessorCount;
  b.report.l2_mb = p.l2CacheSize >> 20;
  b.report.commit = GPHKV_GIT_COMMIT;
  b.report.command = cmd;
  b.report.date = date;
  b.report.reps = b.args.reps;
  std::printf("engine_bench on %s (%d SMs, %d MB L2), commit %s, %s\n", p.name, p.multiProcessorCount,
              p.l2CacheSize >> 20, GPHKV_GIT_COMMIT, date);
  b.report.sections = b.args.sections;
  if (b.args.has("table")) {
    for (size_t i = 0; i < b.args.keys.size(); ++i) b.run_size(b.args.keys[i], b.args.sweep && i == 0);
    if (b.args.sweep) b.sweep_cells(b.args.keys[0]);
  }
  if (b.args.has("build")) b.build_section();
  if (b.args.has("burst")) b.burst_section(b.args.keys[0]);
  if (b.args.has("rebuild_lookup")) b.rebuild_lookup_section(b.args.keys[0]);
  if (!b.report.sizes.empty()) b.report.print_summary();
  b.report.print_build_sections();
  if (!b.args.json.empty()) {
    if (!b.report.write_json(b.args.json)) {
      std::fprintf(stderr, "cannot write %s\n", b.args.json.c_str());
      return 1;
    }
    std::printf("wrote %s\n", b.args.json.c_str());
  }
  return 0;
}
