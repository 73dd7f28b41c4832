// The lookup tuning sweep (--sweep) on a full table: find 50% uniform in
// every launch shape measured, then every find case with the Cell Index kept
// in L2. The engine keeps the shape that won (engine/cuda/lookup.h) and no L2
// window (docs/gph.md, "Tuning on the H100").
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/bench/key_spaces.cuh"
#include "engine/bench/lookup_shapes.cuh"
#include "engine/bench/measurements.h"

namespace gphkv::bench {

std::vector<Report::Variant> lookup_tuning(Context& c, CudaTable& table, uint64_t n, uint64_t nq,
                                           absl::Span<const FindCase> cases, TableBuffers& b) {
  std::vector<Report::Variant> variants;
  const engine::cuda::DeviceTable view = table.view();
  fill_queries(b.queries, nq, n, FindCase{50, Distribution::kUniform}, 5, 1, c.s);
  // Shapes the table's layout cannot take (K = 2 on two-line buckets) are
  // skipped, not measured; the engine's own shape always fits, so a sweep
  // that measured none of them is a broken sweep, not a result.
  int skipped = 0;
  for (const NamedShape& s : lookup_sweep_shapes()) {
    if (!lookup_shape_fits(view, s.shape)) {
      ++skipped;
      continue;
    }
    const double ms = median_ms(
        c.args.reps, c.s, [&] { CK(launch_lookup_shape(view, b.queries, nq, b.out, b.found, s.shape, nullptr, c.s)); });
    check_hits(c, b.found, nq, 50, b.count, "sweep");
    variants.push_back({s.name, gops(nq, ms)});
  }
  if (!lookup_shape_fits(view, LookupShape{}) || variants.empty()) {
    std::fprintf(stderr, "sweep: the engine's lookup shape does not fit a table of M = %u (%d shapes skipped)\n",
                 static_cast<unsigned>(view.geo.slots_per_bucket), skipped);
    std::exit(2);
  }
  // Last, as it takes L2 from every later kernel: the Cell Index pinned in L2.
  const CellWindow window = keep_cells_in_l2(view, table.device());
  for (const FindCase& fc : cases) {
    fill_queries(b.queries, nq, n, fc, 77 + fc.hit_pct, 0x9e3779b97f4a7c15ull % n | 1, c.s);
    const double ms = median_ms(c.args.reps, c.s, [&] {
      CK(launch_lookup_shape(view, b.queries, nq, b.out, b.found, LookupShape{}, &window, c.s));
    });
    check_hits(c, b.found, nq, fc.hit_pct, b.count, "persist");
    variants.push_back({std::string("L2-persistent Cell Index, find ") + std::to_string(fc.hit_pct) + "% " +
                            distribution_name(fc.distribution),
                        gops(nq, ms)});
  }
  stop_keeping_cells_in_l2(c.s);
  return variants;
}

}  // namespace gphkv::bench
