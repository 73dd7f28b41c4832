// The table section: one table per --keys size, every operation on it in the
// order that leaves each measurement the table state it needs.
#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/bench/cuda_check.h"
#include "engine/bench/measurements.h"
#include "engine/bench/sections.h"

namespace gphkv::bench {
namespace {

// Keys stored outside their home line (device_table.cuh, "Lines").
__global__ void count_outside(engine::cuda::DeviceTable t, unsigned long long* outside) {
  const uint32_t M = t.geo.slots_per_bucket;
  unsigned long long mine = 0;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t s = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; s < t.geo.num_slots(); s += stride) {
    const uint64_t key = *engine::cuda::slot_key(t, s);
    if (key == engine::gph::kEmptyKey) continue;
    mine += !engine::cuda::in_line(t.geo, engine::cuda::home_line(t.geo, key), static_cast<uint32_t>(s % M));
  }
  atomicAdd(outside, mine);
}

// How far the table is from one line a lookup: the share of keys stored
// outside their home line (a hit on one reads two lines), of cells flagged
// (a miss in a flagged cell reads the spill bits) and of spill bits set (a
// miss whose bit is set reads two lines).
struct LineShares {
  double keys_outside = 0, cells_flagged = 0, spill_bits_set = 0;
};
LineShares line_shares(const CudaTable& table, uint64_t keys) {
  const engine::cuda::DeviceTable t = table.view();
  std::vector<uint32_t> words(engine::cuda::spill_words(t.geo));
  CK(cudaMemcpy(words.data(), t.spill, words.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  uint64_t set = 0;
  for (uint32_t w : words) set += __builtin_popcount(w);
  std::vector<uint8_t> index(engine::cuda::cell_index_bytes(t.geo.num_cells));
  CK(cudaMemcpy(index.data(), t.cells, index.size(), cudaMemcpyDeviceToHost));
  uint64_t flagged = 0;
  for (size_t g = 0; g < index.size(); g += engine::cuda::kGroupBytes) {
    uint32_t word = 0;
    std::memcpy(&word, index.data() + g + engine::cuda::kGroupCells, sizeof(word));
    flagged += __builtin_popcount(word);
  }
  unsigned long long* outside = nullptr;
  CK(cudaMalloc(&outside, sizeof(*outside)));
  CK(cudaMemset(outside, 0, sizeof(*outside)));
  count_outside<<<1024, 256>>>(t, outside);
  CK(cudaGetLastError());
  unsigned long long host = 0;
  CK(cudaMemcpy(&host, outside, sizeof(host), cudaMemcpyDeviceToHost));
  CK(cudaFree(outside));
  const double bits =
      static_cast<double>(t.geo.num_buckets) * engine::cuda::lines_per_bucket(t.geo) * engine::cuda::kSpillBits;
  return {static_cast<double>(host) / static_cast<double>(keys), static_cast<double>(flagged) / t.geo.num_cells,
          static_cast<double>(set) / bits};
}

}  // namespace

void table_section(Context& c, uint64_t n, bool sweep) {
  const uint64_t nq = std::min<uint64_t>(n, 100000000ull);
  const uint64_t batch = (n + 9) / 10;
  engine::TableOptions o = c.args.table_options();
  o.num_buckets = engine::buckets_for_capacity(n, c.args.load, o.slots_per_bucket);
  auto made = CudaTable::create(o, 0);
  OK(made.status());
  CudaTable& table = **made;
  const double lf = static_cast<double>(n) / (static_cast<double>(o.num_buckets) * o.slots_per_bucket);
  std::printf("\n== %llu keys: N=%llu buckets x M=%u, R=%u, cells/bucket=%.0f, load %.3f, table %.2f GB\n",
              static_cast<unsigned long long>(n), static_cast<unsigned long long>(o.num_buckets), o.slots_per_bucket,
              o.virtual_buckets, o.cells_per_bucket, lf, table.device_bytes() / 1e9);
  std::fflush(stdout);
  TableBuffers b(batch, nq);

  // Ceilings over a buffer as large as the slot array (8 GiB at most: past
  // L2 the size no longer matters, ../shared/device/README.md).
  const uint64_t key_bytes = static_cast<uint64_t>(o.num_buckets) * o.slots_per_bucket * 16;
  const uint64_t ceiling_bytes = std::min<uint64_t>(key_bytes, 8ull << 30);
  const double ceil = gather_ceiling_gops(c, ceiling_bytes, nq, 0, nullptr, 0);
  const double ceil_v = gather_ceiling_gops(c, ceiling_bytes, nq, 2, b.queries, nq);
  std::printf("gather ceiling, 128 B per query: %.2f G/s; with an 8 B value read for every 2nd: %.2f G/s\n", ceil,
              ceil_v);

  uint64_t build_no_room = 0;
  const double insert_rate = insert_build(c, table, n, n >= 500000000ull ? 2 : 3, b, &build_no_room);
  std::printf("insert, build from empty to load %.2f (10 batches): %.2f G/s\n", lf, insert_rate);

  const LineShares lines = line_shares(table, n - build_no_room);
  std::printf(
      "after the build: %.4f of the keys outside their home line, %.4f of the cells flagged, %.4f of the spill bits "
      "set (%u a line)\n",
      lines.keys_outside, lines.cells_flagged, lines.spill_bits_set, engine::cuda::kSpillBits);

  std::vector<double> finds;
  for (const FindCase& fc : kFindCases) finds.push_back(find_rate(c, table, n, nq, fc, b));
  const BurstRates burst = burst_insert_erase(c, table, n, n - build_no_room, b);
  std::vector<Report::RefinementVariant> refinement_rows;
  if (c.args.refinement_variants) refinement_rows = refinement_variants(c, table, n, b);
  if (c.args.burst_variants) {
    const std::vector<Report::RefinementVariant> more = burst_variants(c, table, n, b);
    refinement_rows.insert(refinement_rows.end(), more.begin(), more.end());
  }
  std::vector<Report::Variant> variants;
  if (sweep) variants = lookup_tuning(c, table, n, nq, kFindCases, b);
  made->reset();  // free the GPH table before the baseline takes as much
  const BaselineRates base = baseline(c, n, o.num_buckets * o.slots_per_bucket, nq, kFindCases, b);

  Report::Size rs;
  rs.keys = n;
  rs.load = lf;
  rs.buckets = o.num_buckets;
  rs.slots_per_bucket = o.slots_per_bucket;
  rs.cells_per_bucket = static_cast<uint32_t>(o.cells_per_bucket);
  rs.keys_outside_home_line = lines.keys_outside;
  rs.cells_flagged = lines.cells_flagged;
  rs.spill_bits_set = lines.spill_bits_set;
  rs.spill_bits_per_line = engine::cuda::kSpillBits;
  rs.ceiling = ceil;
  rs.ceiling_with_values = ceil_v;
  rs.insert_build = insert_rate;
  rs.build_no_room = build_no_room;
  rs.insert_burst = burst.insert;
  rs.erase_burst = burst.erase;
  rs.baseline_build = base.build;
  for (size_t i = 0; i < std::size(kFindCases); ++i) {
    const FindCase& fc = kFindCases[i];
    rs.finds.push_back({fc.hit_pct, fc.distribution == Distribution::kZipf, finds[i], base.finds[i]});
  }
  rs.variants = variants;
  rs.refinement_variants = refinement_rows;
  c.report.sizes.push_back(rs);
  c.report.print_size(rs);
}

}  // namespace gphkv::bench
