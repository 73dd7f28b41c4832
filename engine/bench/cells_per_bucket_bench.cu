// Find at 50% and 0% hits, uniform, and the build, for cells per bucket 1,
// 2, 4 and 8: at 10^8 keys and load 0.8 (M = 8) the Cell Index grows from
// ~16 MB to ~62 MB (4) and ~125 MB (8), past the H100's 50 MB of L2.
#include <algorithm>

#include "engine/bench/measurements.h"
#include "engine/bench/sections.h"

namespace gphkv::bench {

void cells_per_bucket_sweep(Context& c, uint64_t n) {
  const uint64_t nq = std::min<uint64_t>(n, 100000000ull);
  const uint64_t batch = (n + 9) / 10;
  TableBuffers b(batch, nq);
  for (double cpb : {1.0, 2.0, 4.0, 8.0}) {
    engine::TableOptions o = c.args.table_options();
    o.num_buckets = engine::buckets_for_capacity(n, c.args.load, o.slots_per_bucket);
    o.cells_per_bucket = cpb;
    auto t = CudaTable::create(o, 0);
    OK(t.status());
    // Past its reachable load factor a shape answers kNoRoom (M = 8: 0.68 at
    // one cell per bucket, 0.75 at two, 0.80 at four): build those to 0.62,
    // 0.70 and 0.76.
    const double reach = cpb < 2 ? 0.62 : cpb < 4 ? 0.70 : cpb < 8 ? 0.76 : c.args.load;
    const uint64_t fill = static_cast<uint64_t>(n * std::min(reach, c.args.load) / c.args.load);
    uint64_t no_room = 0;
    const double ins = insert_build(c, **t, fill, 1, b, &no_room);
    const double f50 = find_rate(c, **t, fill, nq, FindCase{50, Distribution::kUniform}, b);
    const double f0 = find_rate(c, **t, fill, nq, FindCase{0, Distribution::kUniform}, b);
    char name[96];
    std::snprintf(name, sizeof name, "cells/bucket=%.0f (cell index %.0f MB, load %.2f)", cpb,
                  o.num_buckets * cpb / 1e6,
                  static_cast<double>(fill) / (static_cast<double>(o.num_buckets) * o.slots_per_bucket));
    c.report.cell_sweep.push_back({name, f50, f0, ins});
    std::printf("%-52s find 50%% %.2f G/s, 0%% %.2f G/s, build %.2f G/s\n", name, f50, f0, ins);
    std::fflush(stdout);
  }
}

}  // namespace gphkv::bench
