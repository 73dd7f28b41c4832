// Rebuild while serving: batches of lookups on one stream while the table is
// rebuilt into a larger one on another stream from another thread (as
// ElasticTable's background rebuild does), against the same loop idle, with
// the lookups at the rebuild's priority and at the greatest.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "engine/bench/key_spaces.cuh"
#include "engine/bench/measurements.h"
#include "engine/bench/sections.h"

namespace gphkv::bench {

void rebuild_lookup_section(Context& c, uint64_t n) {
  std::printf("\n== lookups during a rebuild, %llu keys\n", static_cast<unsigned long long>(n));
  engine::TableOptions o = c.args.table_options();
  o.num_buckets = engine::buckets_for_capacity(n, c.args.load, o.slots_per_bucket);
  auto live = CudaTable::create(o, 0);
  OK(live.status());
  CudaTable& a = **live;
  engine::KeyValue* d_kv;
  CK(cudaMalloc(&d_kv, n * sizeof(engine::KeyValue)));
  fill_pairs(d_kv, 0, n, c.s);
  OK(a.bulk_load(d_kv, n, nullptr, 0, c.s));
  CK(cudaFree(d_kv));
  const uint64_t q = std::max<uint64_t>(1, std::min<uint64_t>(n / 10, 10000000));
  uint64_t *dq, *dout;
  uint8_t* dfound;
  unsigned long long* dcount;
  CK(cudaMalloc(&dq, q * 8));
  CK(cudaMalloc(&dout, q * 8));
  CK(cudaMalloc(&dfound, q));
  CK(cudaMalloc(&dcount, 8));
  fill_queries(dq, q, n, FindCase{50, Distribution::kUniform}, 91, 1, c.s);
  engine::TableOptions ob = o;
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
  cudaStream_t ls = c.s;
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
    ls = high ? s_hi : c.s;
    std::vector<double> alone, idle, during, during_ms, batches;
    for (int r = 0; r < c.args.reps; ++r) {
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
    check_hits(c, dfound, q, 50, dcount, "lookups during the rebuild");
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
    c.report.rebuild_lookups.push_back(row);
    std::printf(
        "  %s: idle %.2f G/s, during the rebuild %.2f G/s (%.3f of idle); rebuild %.1f ms alone, %.1f ms during\n",
        row.setup.c_str(), row.idle_gops, row.during_gops, row.during_gops / row.idle_gops, row.rebuild_ms_alone,
        row.rebuild_ms_during);
    std::fflush(stdout);
  }
  CK(cudaStreamDestroy(s2));
  CK(cudaStreamDestroy(s_hi));
  grown->reset();
  live->reset();
  for (void* p : {(void*)dq, (void*)dout, (void*)dfound, (void*)dcount}) CK(cudaFree(p));
  trim_memory_pool();
}

}  // namespace gphkv::bench
