// Erase: a burst of 1% new keys inserted into the full table and erased
// again, each run timed in both halves: the insert path's cost at full load,
// and the erase's (a slot cleared in place, no tombstones).
#include <algorithm>
#include <vector>

#include "engine/bench/key_spaces.cuh"
#include "engine/bench/measurements.h"

namespace gphkv::bench {

BurstRates burst_insert_erase(Context& c, CudaTable& table, uint64_t n, uint64_t stored, TableBuffers& b) {
  const uint64_t burst = n / 100;
  std::vector<float> ins, era;
  OK(table.synchronize(c.s));
  const engine::cuda::RefinementStats before_bursts = table.refinement_stats();
  for (int r = 0; r <= c.args.reps; ++r) {
    fill_keys(b.keys, b.values, kBurstBase + r * burst, burst, c.s);
    cudaEvent_t e0, e1, e2;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventCreate(&e2));
    CK(cudaEventRecord(e0, c.s));
    OK(table.insert_or_assign_async(b.keys, b.values, burst, b.outcomes, c.s));
    CK(cudaEventRecord(e1, c.s));
    OK(table.erase_async(b.keys, burst, b.erased, c.s));
    CK(cudaEventRecord(e2, c.s));
    OK(table.synchronize(c.s));
    float insert_ms, erase_ms;
    CK(cudaEventElapsedTime(&insert_ms, e0, e1));
    CK(cudaEventElapsedTime(&erase_ms, e1, e2));
    if (r > 0) {  // r == 0 is the warm-up
      ins.push_back(insert_ms);
      era.push_back(erase_ms);
    }
    check_hits(c, b.erased, burst, 100, b.count, "erase of the burst");
    if (table.size() != stored) {
      std::fprintf(stderr, "after burst+erase the table holds %llu keys\n",
                   static_cast<unsigned long long>(table.size()));
      std::exit(3);
    }
    for (cudaEvent_t e : {e0, e1, e2}) CK(cudaEventDestroy(e));
  }
  std::sort(ins.begin(), ins.end());
  std::sort(era.begin(), era.end());
  print_refinement("the bursts (all runs)", before_bursts, table.refinement_stats());
  return BurstRates{gops(burst, ins[ins.size() / 2]), gops(burst, era[era.size() / 2])};
}

}  // namespace gphkv::bench
