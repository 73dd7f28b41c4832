#include "gphkv/engine/gph_hash.h"

#include <cmath>
#include <set>
#include <vector>

#include "gphkv/engine/table_options.h"
#include "gtest/gtest.h"

namespace gphkv::engine::gph {
namespace {

Geometry geometry(uint32_t buckets, uint32_t r = 8) {
  TableOptions o;
  o.num_buckets = buckets;
  o.virtual_buckets = r;
  return *make_geometry(o);
}

TEST(GphHash, Fmix32MatchesMurmurHash3) {
  // Reference values of MurmurHash3's fmix32.
  EXPECT_EQ(fmix32(0), 0u);
  EXPECT_EQ(fmix32(1), 0x514e28b7u);
  EXPECT_EQ(fmix32(0xffffffffu), 0x81f16f39u);
}

TEST(GphHash, ElevenComponentSeedsAreDistinct) {
  for (uint32_t table_seed : {0u, 1u, 0x47504831u}) {
    HashSeeds s = derive_seeds(table_seed);
    std::set<uint32_t> all(std::begin(s.cell), std::end(s.cell));
    all.insert(std::begin(s.vbucket), std::end(s.vbucket));
    all.insert(std::begin(s.bucket), std::end(s.bucket));
    EXPECT_EQ(all.size(), 11u) << "table seed " << table_seed;
  }
}

TEST(GphHash, AddressesStayInRange) {
  const Geometry g = geometry(1000, 16);
  for (uint64_t k = 0; k < 100000; ++k) {
    const uint64_t key = k * 0x9e3779b97f4a7c15ull;
    const uint32_t cell = cell_of(g, key);
    ASSERT_LT(cell, g.num_cells);
    for (uint32_t phi = 0; phi < g.num_mappings(); ++phi) {
      ASSERT_LT(virtual_bucket_of(g, key, phi), g.virtual_buckets);
    }
    ASSERT_LT(bucket_for_key(g, key, cell, static_cast<uint8_t>(k)), g.num_buckets);
  }
}

TEST(GphHash, HighKeyBitsChangeTheCell) {
  // Keys differing only in the high word must not all share a cell.
  const Geometry g = geometry(1 << 16);
  std::set<uint32_t> cells;
  for (uint64_t hi = 0; hi < 64; ++hi) cells.insert(cell_of(g, hi << 32));
  EXPECT_GT(cells.size(), 60u);
}

TEST(GphHash, OffsetOnlyRotatesAmongTheCellsBuckets) {
  // For one (cell, Φ), every Δ reaches the same set of R buckets (GPH §6.1:
  // changing Δ relocates keys only among the cell's buckets).
  const Geometry g = geometry(1 << 20);
  const uint32_t cell = 12345;
  for (uint32_t phi = 0; phi < 3; ++phi) {
    std::set<uint32_t> own;
    for (uint32_t r = 0; r < g.virtual_buckets; ++r) own.insert(bucket_of(g, cell, r, phi));
    for (uint32_t delta = 0; delta < g.virtual_buckets; ++delta) {
      for (uint64_t key = 0; key < 200; ++key) {
        const uint32_t b = bucket_for_key(g, key, cell, make_cell(g, phi, delta));
        EXPECT_TRUE(own.count(b)) << "key " << key << " phi " << phi << " delta " << delta;
      }
    }
  }
}

TEST(GphHash, CellByteRoundTrips) {
  const Geometry g = geometry(64, 8);
  EXPECT_EQ(g.delta_bits, 3u);
  EXPECT_EQ(g.num_mappings(), 32u);
  for (uint32_t phi = 0; phi < 32; ++phi) {
    for (uint32_t delta = 0; delta < 8; ++delta) {
      const uint8_t c = make_cell(g, phi, delta);
      EXPECT_EQ(cell_mapping(g, c), phi);
      EXPECT_EQ(cell_offset(g, c), delta);
    }
  }
}

// Chi-square statistic minus its 6-sigma bound: negative when the counts are
// as even as random ones (a false alarm once in about 10^9 runs).
double chi_square_excess(const std::vector<uint32_t>& count, uint32_t n) {
  double chi2 = 0;
  const double expect = static_cast<double>(n) / count.size();
  for (uint32_t c : count) chi2 += (c - expect) * (c - expect) / expect;
  const double dof = count.size() - 1.0;
  return chi2 - (dof + 6.0 * std::sqrt(2.0 * dof));
}

TEST(GphHash, SequentialKeysSpreadOverCellsLikeRandomOnes) {
  // Social-graph ids are dense and sequential; H_c must scatter them.
  const Geometry g = geometry(256);
  std::vector<uint32_t> count(g.num_cells, 0);
  const uint32_t n = g.num_cells * 256;
  for (uint64_t key = 0; key < n; ++key) ++count[cell_of(g, key)];
  EXPECT_LT(chi_square_excess(count, n), 0.0);
}

TEST(GphHash, CellsAndVirtualBucketsSpreadOverBuckets) {
  // Each (cell, r, Φ) names one bucket; together they must cover the buckets evenly.
  const Geometry g = geometry(256);
  std::vector<uint32_t> count(256, 0);
  uint32_t n = 0;
  for (uint32_t cell = 0; cell < 4096; ++cell) {
    for (uint32_t r = 0; r < g.virtual_buckets; ++r, ++n) ++count[bucket_of(g, cell, r, cell % 7)];
  }
  EXPECT_LT(chi_square_excess(count, n), 0.0);
}

}  // namespace
}  // namespace gphkv::engine::gph
