// --refinement_variants: Refinement's two transactions (engine/cuda/refinement.h)
// against each other on one table, interleaved (warp, lanes, warp, lanes), each
// an insert build from empty and 1% bursts into the full table, measured as the
// table section measures the default.
#include <cstdio>
#include <vector>

#include "engine/bench/measurements.h"

namespace gphkv::bench {

std::vector<Report::RefinementVariant> refinement_variants(Context& c, CudaTable& table, uint64_t n, TableBuffers& b) {
  using engine::cuda::RefinementKernel;
  const RefinementKernel before = table.refinement_kernel();
  std::vector<Report::RefinementVariant> rows;
  for (RefinementKernel k :
       {RefinementKernel::kWarp, RefinementKernel::kLanes, RefinementKernel::kWarp, RefinementKernel::kLanes}) {
    const char* name = k == RefinementKernel::kLanes ? "lanes" : "warp";
    std::printf("  refinement kernel %s:\n", name);
    OK(table.set_refinement_kernel(k));
    Report::RefinementVariant row;
    row.kernel = name;
    row.insert_build = insert_build(c, table, n, n >= 500000000ull ? 2 : 3, b, &row.build_no_room);
    const BurstRates burst = burst_insert_erase(c, table, n, n - row.build_no_room, b);
    row.insert_burst = burst.insert;
    row.erase_burst = burst.erase;
    std::printf("  refinement kernel %s: insert build %.3f G/s (%llu kNoRoom), 1%% bursts %.3f G/s, erase %.3f G/s\n",
                name, row.insert_build, static_cast<unsigned long long>(row.build_no_room), row.insert_burst,
                row.erase_burst);
    std::fflush(stdout);
    rows.push_back(row);
  }
  OK(table.set_refinement_kernel(before));
  return rows;
}

// --burst_variants: the insert path's variants (engine/cuda/refinement.h,
// InsertVariants) on the table's default kernel, interleaved twice (the
// default, repeats found by sorting, by grouping; then again), each measured
// as above.
std::vector<Report::RefinementVariant> burst_variants(Context& c, CudaTable& table, uint64_t n, TableBuffers& b) {
  using engine::cuda::InsertVariants;
  const InsertVariants before = table.insert_variants();
  struct Named {
    const char* name;
    InsertVariants v;
  };
  using engine::cuda::RepeatFinder;
  const Named variants[] = {{"default", {RepeatFinder::kBySize}},
                            {"repeats_by_sort", {RepeatFinder::kSort}},
                            {"repeats_by_group", {RepeatFinder::kGroup}}};
  std::vector<Report::RefinementVariant> rows;
  for (int round = 0; round < 2; ++round) {
    for (const Named& x : variants) {
      std::printf("  insert variant %s:\n", x.name);
      table.set_insert_variants(x.v);
      Report::RefinementVariant row;
      row.kernel = x.name;
      row.insert_build = insert_build(c, table, n, n >= 500000000ull ? 2 : 3, b, &row.build_no_room);
      const BurstRates burst = burst_insert_erase(c, table, n, n - row.build_no_room, b);
      row.insert_burst = burst.insert;
      row.erase_burst = burst.erase;
      std::printf("  insert variant %s: insert build %.3f G/s (%llu kNoRoom), 1%% bursts %.3f G/s, erase %.3f G/s\n",
                  x.name, row.insert_build, static_cast<unsigned long long>(row.build_no_room), row.insert_burst,
                  row.erase_burst);
      std::fflush(stdout);
      rows.push_back(row);
    }
  }
  table.set_insert_variants(before);
  return rows;
}

}  // namespace gphkv::bench
