// The per-operation measurements of engine_bench's table section, one file
// each: the gather ceiling, insert (a build from empty), find (per point of
// the lookup axes), erase (a 1% burst in and out), the linear-probing
// baseline, and the lookup tuning sweep (shapes, L2-resident cells).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "engine/bench/axes.h"
#include "engine/bench/context.h"
#include "engine/cuda/cuda_table.h"

namespace gphkv::bench {

using engine::cuda::CudaTable;

// gather_ceiling.cu: what the memory system allows a one-probe lookup, in G
// queries/s over `bytes` of memory: |g| = 4 threads read one random 128-byte
// block (16 keys) per query; with value_every > 0 every value_every-th query
// also reads one 8-byte word of `values` (a hit's value read).
double gather_ceiling_gops(Context& c, uint64_t bytes, uint64_t nq, int value_every, const uint64_t* values,
                           uint64_t nvalues);

// insert_bench.cu: fills `table` with n keys in 10 batches of
// insert_or_assign_async, `builds` times; returns G inserts/s (median of the
// builds) and the keys answered kNoRoom. Exits 3 when more than 1 in 10^4 are.
double insert_build(Context& c, CudaTable& table, uint64_t n, int builds, TableBuffers& b, uint64_t* no_room);
// What Refinement did between two snapshots of its counters.
void print_refinement(const char* what, const engine::cuda::RefinementStats& before,
                      const engine::cuda::RefinementStats& after);

// find_bench.cu: nq queries at one point of the lookup axes against a table
// of n_keys stored keys; checks the hit count; returns G finds/s.
double find_rate(Context& c, CudaTable& table, uint64_t n_keys, uint64_t nq, FindCase fc, TableBuffers& b);

// erase_bench.cu: a burst of 1% new keys inserted into the full table and
// erased again, --reps times; the median G inserts/s and G erases/s.
struct BurstRates {
  double insert = 0, erase = 0;
};
BurstRates burst_insert_erase(Context& c, CudaTable& table, uint64_t n, uint64_t stored, TableBuffers& b);

// refinement_variants_bench.cu (--refinement_variants): Refinement's warp
// and lanes kernels, interleaved on `table` (warp, lanes, warp, lanes): each an
// insert build (as insert_build) and 1% bursts (as burst_insert_erase). Leaves
// the table built, with the kernel it had.
std::vector<Report::RefinementVariant> refinement_variants(Context& c, CudaTable& table, uint64_t n, TableBuffers& b);
// --burst_variants: the insert path's variants (InsertVariants) on the
// default kernel, interleaved twice; rows named after the variant.
std::vector<Report::RefinementVariant> burst_variants(Context& c, CudaTable& table, uint64_t n, TableBuffers& b);

// baseline_bench.cu: bucketed linear probing with num_slots slots (the same
// load as the GPH table) in buckets of 16 keys:
// the build of keys [0, n) and G finds/s at each case.
struct BaselineRates {
  double build = 0;
  std::vector<double> finds;  // per case
};
BaselineRates baseline(Context& c, uint64_t n, uint64_t num_slots, uint64_t nq, absl::Span<const FindCase> cases,
                       TableBuffers& b);

// lookup_tuning_bench.cu: find 50% uniform in every lookup shape measured
// (|g|, keys per thread, block, evict-first loads), then each case with the
// Cell Index kept in L2 (last: it takes L2 from every later kernel).
std::vector<Report::Variant> lookup_tuning(Context& c, CudaTable& table, uint64_t n, uint64_t nq,
                                           absl::Span<const FindCase> cases, TableBuffers& b);

}  // namespace gphkv::bench
