// Insert: a table filled from empty to the load target in 10 batches of the
// insert kernel (Saturation Fill, then Refinement as the table fills).
#include <algorithm>
#include <vector>

#include "engine/bench/key_spaces.cuh"
#include "engine/bench/measurements.h"

namespace gphkv::bench {

void print_refinement(const char* what, const engine::cuda::RefinementStats& a,
                      const engine::cuda::RefinementStats& b) {
  std::printf(
      "  refinement during %s: %llu transactions, %llu attempts, %llu wait-die deaths, %llu direct, "
      "%llu moves, %llu mapping loads\n",
      what, b.transactions - a.transactions, b.attempts - a.attempts, b.deaths - a.deaths, b.direct - a.direct,
      b.moves - a.moves, b.mappings - a.mappings);
}

double insert_build(Context& c, CudaTable& table, uint64_t n, int builds, TableBuffers& b, uint64_t* no_room) {
  const uint64_t batch = (n + 9) / 10;
  std::vector<double> rates;
  for (int r = 0; r < builds; ++r) {
    OK(table.clear());
    const engine::cuda::RefinementStats before = table.refinement_stats();
    float total = 0;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (uint64_t first = 0; first < n; first += batch) {
      const uint64_t m = std::min(batch, n - first);
      fill_keys(b.keys, b.values, first, m, c.s);
      CK(cudaEventRecord(e0, c.s));
      OK(table.insert_or_assign_async(b.keys, b.values, m, b.outcomes, c.s));
      CK(cudaEventRecord(e1, c.s));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      total += ms;
      // Batch by batch, the first build: the early batches show sort + Saturation
      // Fill alone, the late ones add the Refinement of a filling table.
      if (r == 0)
        std::printf("  build batch to load %.2f: %.2f ms (%.2f G/s)\n",
                    static_cast<double>(first + m) / table.geometry().num_slots(), ms, gops(m, ms));
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    OK(table.synchronize(c.s));
    // Keys answered kNoRoom (a cell no (Φ, Δ) fits) are left out, as the API says.
    *no_room = n - table.size();
    if (*no_room > n / 10000) {
      std::fprintf(stderr, "build: %llu of %llu keys got kNoRoom\n", static_cast<unsigned long long>(*no_room),
                   static_cast<unsigned long long>(n));
      std::exit(3);
    }
    if (r == 0) {
      std::printf("  build: %llu of %llu keys got kNoRoom\n", static_cast<unsigned long long>(*no_room),
                  static_cast<unsigned long long>(n));
      print_refinement("the build", before, table.refinement_stats());
    }
    rates.push_back(gops(n, total));
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace gphkv::bench
