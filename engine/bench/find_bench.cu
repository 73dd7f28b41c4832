// Find: the GPH lookup (one bucket probe per key, hit or miss) at one point
// of the lookup axes, on the table's own launch (CudaTable::find_async).
#include "engine/bench/key_spaces.cuh"
#include "engine/bench/measurements.h"

namespace gphkv::bench {

double find_rate(Context& c, CudaTable& table, uint64_t n_keys, uint64_t nq, FindCase fc, TableBuffers& b) {
  fill_queries(b.queries, nq, n_keys, fc, 77 + fc.hit_pct, 0x9e3779b97f4a7c15ull % n_keys | 1, c.s);
  const double ms = median_ms(c.args.reps, c.s, [&] { OK(table.find_async(b.queries, nq, b.out, b.found, c.s)); });
  check_hits(c, b.found, nq, fc.hit_pct, b.count, "gph");
  return gops(nq, ms);
}

}  // namespace gphkv::bench
