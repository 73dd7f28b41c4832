// The "layout" section: would a table that keeps each key beside its value
// (M = 8 key-value pairs in one 128-byte bucket) find faster than the
// engine's keys | values arrays, on real GPH tables?
//
// lookup_bounds prices the layouts with synthetic addresses; this measures
// the lookup itself. For each M = 8 shape (R, cells per bucket) it builds a
// table with the engine's insert kernel (keys and values in separate arrays),
// measures the engine's find on it, then copies the slots into one array of
// pairs, bucket-major, and measures a lookup that reads a bucket of pairs
// (same Cell Index, same addressing, same 4-thread all-loads-first read) and
// answers a hit from the pair it matched: no second read. The M = 16 engine
// table of the table section is the reference.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "engine/bench/key_spaces.cuh"
#include "engine/bench/measurements.h"
#include "engine/bench/sections.h"
#include "engine/cuda/lookup_kernel.cuh"

namespace gphkv::bench {
namespace {

using engine::cuda::DeviceTable;
using engine::cuda::kFullWarp;

// pairs[s] = (keys[s], values[s]) for every slot.
__global__ void interleave(const uint64_t* keys, const uint64_t* values, uint64_t n, ulonglong2* pairs) {
  const uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (i < n) pairs[i] = make_ulonglong2(keys[i], values[i]);
}

// The grouped lookup (lookup_kernel.cuh, K = 1) over buckets of M pairs: G
// threads read a bucket, M/G pairs each (16-byte loads, all issued before the
// first compare); the lane that matches holds the value already.
template <int M, int G, bool kWriteMisses>
__global__ void __launch_bounds__(256)
    lookup_pairs(gphkv::engine::gph::Geometry geo, const uint8_t* __restrict__ cells,
                 const ulonglong2* __restrict__ pairs, const engine::cuda::OutOfBandSlot* oob,
                 const uint64_t* __restrict__ queries, uint64_t n, uint64_t* __restrict__ out_values,
                 uint8_t* __restrict__ out_found) {
  constexpr int P = M / G;
  const uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const int lane = threadIdx.x & 31;
  const int member = lane % G;
  const int leader = lane - member;
  const unsigned group_mask = ((1u << G) - 1u) << leader;
  const uint64_t key = i < n ? queries[i] : 0;
  uint32_t bucket = 0;
  if (key != engine::gph::kEmptyKey) {
    const uint32_t cell = engine::gph::cell_of(geo, key);
    bucket = engine::gph::bucket_for_key(geo, key, cell, __ldg(cells + cell));
  }
  ulonglong2 slots[G][P];
#pragma unroll
  for (int r = 0; r < G; ++r) {
    const uint32_t b = __shfl_sync(kFullWarp, bucket, leader + r);
    const ulonglong2* p = pairs + static_cast<uint64_t>(b) * M + member * P;
#pragma unroll
    for (int x = 0; x < P; ++x) slots[r][x] = __ldcs(p + x);
  }
  uint64_t my_value = 0;
  bool my_found = false;
#pragma unroll
  for (int r = 0; r < G; ++r) {
    const uint64_t want = __shfl_sync(kFullWarp, key, leader + r);
    uint64_t value = 0;
    bool hit = false;
#pragma unroll
    for (int x = 0; x < P; ++x) {
      if (slots[r][x].x == want) {
        hit = true;
        value = slots[r][x].y;
      }
    }
    const unsigned hits = __ballot_sync(kFullWarp, hit) & group_mask;
    const uint64_t v = __shfl_sync(kFullWarp, value, hits ? __ffs(hits) - 1 : leader);
    if (member == r) {
      my_value = v;
      my_found = hits != 0;
    }
  }
  if (i >= n) return;
  if (key == engine::gph::kEmptyKey) {
    my_found = oob->present != 0;
    my_value = oob->value;
  }
  out_found[i] = my_found;
  if (kWriteMisses) {
    out_values[i] = my_found ? my_value : 0;
  } else if (my_found) {
    out_values[i] = my_value;
  }
}

// Checks, on the host, that the pairs lookup answered every query exactly as
// the engine's find did (hits, and each hit's value).
void check_same_answers(Context& c, const TableBuffers& b, const uint64_t* pairs_out, const uint8_t* pairs_found,
                        uint64_t nq) {
  // A sample is enough to catch a wrong kernel; all of 10^8 would take seconds.
  const uint64_t n = std::min<uint64_t>(nq, 1u << 22);
  std::vector<uint64_t> v1(n), v2(n);
  std::vector<uint8_t> f1(n), f2(n);
  CK(cudaMemcpyAsync(v1.data(), b.out, n * 8, cudaMemcpyDeviceToHost, c.s));
  CK(cudaMemcpyAsync(f1.data(), b.found, n, cudaMemcpyDeviceToHost, c.s));
  CK(cudaMemcpyAsync(v2.data(), pairs_out, n * 8, cudaMemcpyDeviceToHost, c.s));
  CK(cudaMemcpyAsync(f2.data(), pairs_found, n, cudaMemcpyDeviceToHost, c.s));
  CK(cudaStreamSynchronize(c.s));
  for (uint64_t i = 0; i < n; ++i) {
    if (f1[i] != f2[i] || (f1[i] && v1[i] != v2[i])) {
      std::fprintf(stderr, "layout: the pairs lookup disagrees with the engine's find at query %llu\n",
                   static_cast<unsigned long long>(i));
      std::exit(3);
    }
  }
}

}  // namespace

void pairs_layout_section(Context& c, uint64_t n) {
  const uint64_t nq = std::min<uint64_t>(n, 100000000ull);
  const uint64_t batch = (n + 9) / 10;
  TableBuffers b(batch, nq);
  uint64_t* pairs_out;
  uint8_t* pairs_found;
  CK(cudaMalloc(&pairs_out, nq * 8));
  CK(cudaMalloc(&pairs_found, nq));

  // The engine's own table (M = 16) and lookup, answering misses with a
  // written 0 instead of leaving their values untouched.
  {
    engine::TableOptions o;
    o.num_buckets = engine::buckets_for_capacity(n, c.args.load, o.slots_per_bucket);
    auto made = CudaTable::create(o, 0);
    OK(made.status());
    uint64_t no_room = 0;
    insert_build(c, **made, n, 1, b, &no_room);
    const DeviceTable t = (*made)->view();
    for (const FindCase& fc : kFindCases) {
      const double engine_rate = find_rate(c, **made, n, nq, fc, b);
      const double ms = median_ms(c.args.reps, c.s, [&] {
        engine::cuda::lookup_grouped<16, 4, 1, true, true>
            <<<blocks_for(nq), 256, 0, c.s>>>(t, b.queries, nq, pairs_out, pairs_found);
        CK(cudaGetLastError());
      });
      check_same_answers(c, b, pairs_out, pairs_found, nq);
      const double rate = gops(nq, ms);
      std::printf("  M=16 find %3d%% %-7s values of hits only %6.2f G/s   every value written %6.2f G/s\n", fc.hit_pct,
                  distribution_name(fc.distribution), engine_rate, rate);
      c.report.layouts.push_back({"M=16 keys|values, the engine's table; pairs = every value written", fc.hit_pct,
                                  fc.distribution == Distribution::kZipf, engine_rate, rate});
    }
    made->reset();
    trim_memory_pool();
  }
  struct Shape {
    uint32_t r;
    double cells_per_bucket;
    double load;  // built to this much of --load's slots: each shape's first kNoRoom comes near its reachable load
  };
  // Reachable loads on the CPU (bench/results/load_factor_sweep_cpu.json):
  // cells/bucket 4: 0.80, 8 cells: 0.87, 2 cells: 0.75. R = 16 at 4 cells
  // (0.82) finds at the same rate as R = 8 (its first run, built on 50012cb: within 0.3%)
  // and builds slower, so it is not measured again.
  const Shape shapes[] = {{8, 4, 0.78}, {8, 8, 0.8}, {8, 2, 0.72}};
  for (const Shape& sh : shapes) {
    engine::TableOptions o;
    o.slots_per_bucket = 8;
    o.virtual_buckets = sh.r;
    o.cells_per_bucket = sh.cells_per_bucket;
    o.num_buckets = engine::buckets_for_capacity(n, c.args.load, o.slots_per_bucket);
    auto made = CudaTable::create(o, 0);
    OK(made.status());
    CudaTable& table = **made;
    const double load = std::min(sh.load, c.args.load);
    const uint64_t fill = static_cast<uint64_t>(n * load / c.args.load);
    uint64_t no_room = 0;
    const double build = insert_build(c, table, fill, 1, b, &no_room);
    const DeviceTable t = table.view();
    const uint64_t slots = t.geo.num_slots();
    ulonglong2* pairs;
    CK(cudaMalloc(&pairs, slots * sizeof(ulonglong2)));
    interleave<<<blocks_for(slots), 256, 0, c.s>>>(t.keys, t.values, slots, pairs);
    CK(cudaGetLastError());
    char shape[160];
    std::snprintf(shape, sizeof shape, "M=8 R=%u cells/bucket=%.0f (cell index %.1f MB, load %.3f, %llu kNoRoom)", sh.r,
                  sh.cells_per_bucket, t.geo.num_cells / 1e6, static_cast<double>(fill - no_room) / slots,
                  static_cast<unsigned long long>(no_room));
    std::printf("layout: %s, insert build %.2f G/s\n", shape, build);
    for (const FindCase& fc : kFindCases) {
      const double engine_rate = find_rate(c, table, fill, nq, fc, b);
      const double ms = median_ms(c.args.reps, c.s, [&] {
        lookup_pairs<8, 4, false>
            <<<blocks_for(nq), 256, 0, c.s>>>(t.geo, t.cells, pairs, t.oob, b.queries, nq, pairs_out, pairs_found);
        CK(cudaGetLastError());
      });
      check_same_answers(c, b, pairs_out, pairs_found, nq);
      const double ms_all = median_ms(c.args.reps, c.s, [&] {
        lookup_pairs<8, 4, true>
            <<<blocks_for(nq), 256, 0, c.s>>>(t.geo, t.cells, pairs, t.oob, b.queries, nq, pairs_out, pairs_found);
        CK(cudaGetLastError());
      });
      check_same_answers(c, b, pairs_out, pairs_found, nq);
      const double pairs_rate = gops(nq, ms);
      std::printf("  find %3d%% %-7s keys|values %6.2f G/s   pairs %6.2f G/s   pairs, every value written %6.2f G/s\n",
                  fc.hit_pct, distribution_name(fc.distribution), engine_rate, pairs_rate, gops(nq, ms_all));
      std::fflush(stdout);
      c.report.layouts.push_back({shape, fc.hit_pct, fc.distribution == Distribution::kZipf, engine_rate, pairs_rate});
      c.report.layouts.push_back({std::string(shape) + ", every value written", fc.hit_pct,
                                  fc.distribution == Distribution::kZipf, engine_rate, gops(nq, ms_all)});
    }
    CK(cudaFree(pairs));
    made->reset();
    trim_memory_pool();
  }
  CK(cudaFree(pairs_out));
  CK(cudaFree(pairs_found));
}

}  // namespace gphkv::bench
