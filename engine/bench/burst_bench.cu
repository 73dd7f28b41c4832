// Bursts: a live table of n keys, sized so that a burst of f*n new keys
// brings it to the load target (the insert path can take it), absorbs the
// burst (a) through insert_or_assign_async, (b) through a rebuild: a device
// bulk build of its pairs plus the burst into a table sized by
// ElasticTable's rule (rebuild_load_factor 0.5). Which path a burst should
// take (engine/include/gphkv/engine/elastic_table.h) rests on this.
#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "engine/bench/key_spaces.cuh"
#include "engine/bench/measurements.h"
#include "engine/bench/sections.h"

namespace gphkv::bench {

void burst_section(Context& c, uint64_t n) {
  std::printf("\n== bursts into a table of %llu keys: the insert kernel against a rebuild\n",
              static_cast<unsigned long long>(n));
  for (double f : {0.001, 0.01, 0.1, 1.0}) {
    const uint64_t b = static_cast<uint64_t>(n * f);
    engine::TableOptions o = c.args.table_options();
    o.num_buckets = engine::buckets_for_capacity(n + b, c.args.load, o.slots_per_bucket);
    auto live = CudaTable::create(o, 0);
    OK(live.status());
    CudaTable& a = **live;
    engine::KeyValue* d_kv;
    engine::WriteOp* d_w;
    uint64_t *d_k, *d_v;
    engine::UpsertOutcome* d_out;
    uint8_t* d_erased;
    CK(cudaMalloc(&d_kv, n * sizeof(engine::KeyValue)));
    CK(cudaMalloc(&d_w, b * sizeof(engine::WriteOp)));
    CK(cudaMalloc(&d_k, b * 8));
    CK(cudaMalloc(&d_v, b * 8));
    CK(cudaMalloc(&d_out, b));
    CK(cudaMalloc(&d_erased, b));
    fill_pairs(d_kv, 0, n, c.s);
    fill_writes(d_w, kBurstBase, b, c.s);
    split_writes(d_w, b, d_k, d_v, c.s);
    OK(a.bulk_load(d_kv, n, nullptr, 0, c.s));
    CK(cudaFree(d_kv));
    Report::Burst row;
    row.fraction = f;
    row.table_keys = n;
    row.burst = b;
    row.load_before = a.load_factor();
    // (a) The insert kernel; each run's keys are erased again (untimed).
    bool dirty = false;
    row.insert_ms = median_ms(
        c.args.reps, c.s,
        [&] {
          OK(a.insert_or_assign_async(d_k, d_v, b, d_out, c.s));
          dirty = true;
        },
        [&] {
          if (dirty) {  // after a run: restore the live table
            OK(a.erase_async(d_k, b, d_erased, c.s));
            OK(a.synchronize(c.s));
            dirty = false;
          }
        });
    OK(a.synchronize(c.s));
    const uint64_t no_room = n + b - a.size();
    row.load_after = a.load_factor();
    OK(a.erase_async(d_k, b, d_erased, c.s));
    OK(a.synchronize(c.s));
    row.insert_no_room = no_room;
    // (b) The rebuild: a new table (its allocation timed apart) and the build.
    engine::TableOptions ob = o;
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
    engine::BuildStats st;
    row.rebuild_ms = median_ms(c.args.reps, c.s, [&] { OK(built->bulk_load_from(a, d_w, b, c.s, &st)); });
    if (built->size() != n + b) {
      std::fprintf(stderr, "rebuild holds %llu keys, expected %llu\n", static_cast<unsigned long long>(built->size()),
                   static_cast<unsigned long long>(n + b));
      std::exit(3);
    }
    std::printf(
        "  burst %.1f%% (%llu keys), load %.3f -> %.3f: insert kernel %.2f ms (%llu kNoRoom), rebuild %.2f ms "
        "(+ %.2f ms to allocate the new table, %u rounds), insert/rebuild %.2f\n",
        f * 100, static_cast<unsigned long long>(b), row.load_before, row.load_after, row.insert_ms,
        static_cast<unsigned long long>(no_room), row.rebuild_ms, row.rebuild_alloc_ms, st.parallel_rounds,
        row.insert_ms / row.rebuild_ms);
    std::fflush(stdout);
    c.report.bursts.push_back(row);
    built.reset();
    live->reset();
    for (void* p : {(void*)d_w, (void*)d_k, (void*)d_v, (void*)d_out, (void*)d_erased}) CK(cudaFree(p));
    trim_memory_pool();
  }
}

}  // namespace gphkv::bench
