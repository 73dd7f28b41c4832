// How full a GPH table gets before the first insert fails, for several
// (M, R, cells per bucket). The measured values are in docs/gph.md.
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tests/engine/backend_param.h"
#include "tests/engine/table_checks.h"

namespace gphkv::engine::testing {
namespace {

// Inserts fresh random keys in batches of `batch` until one gets kNoRoom;
// returns the load factor at that moment.
double fill_until_failure(Table& table, std::mt19937_64& rng, size_t batch) {
  std::vector<uint64_t> keys(batch), values(batch);
  std::vector<UpsertOutcome> out(batch);
  for (;;) {
    for (auto& k : keys) k = rng();
    for (auto& v : values) v = rng();
    EXPECT_TRUE(table.insert_or_assign(keys, values, absl::MakeSpan(out)).ok());
    for (auto o : out) {
      if (o == UpsertOutcome::kNoRoom) return table.load_factor();
    }
    if (table.load_factor() >= 1.0) return 1.0;
  }
}

struct Shape {
  uint32_t m, r;
  double cells_per_bucket;
  double floor;  // the least load factor this shape must reach
};

class LoadFactorTest : public BackendTest {};

TEST_P(LoadFactorTest, ReachableLoadFactorPerShape) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  // (bench/load_factor_sweep means over 3 runs: 0.68, 0.80, 0.87, 0.71, 0.79, 0.85, 0.84, 0.87,
  // 0.89; single tables spread by a few points, the GPU saw 0.67-0.73 for M=16 R=8 at one cell per
  // bucket, and now and then one falls far lower, so the floors sit about 0.05 under the means and
  // bound the median of three tables. M=16 R=8 at 4 cells per bucket is the default shape.)
  const Shape shapes[] = {
      {8, 8, 1.0, 0.62},  {8, 8, 4.0, 0.75},   {8, 8, 8.0, 0.82},  {16, 8, 1.0, 0.65}, {16, 8, 2.0, 0.74},
      {16, 8, 4.0, 0.80}, {16, 16, 4.0, 0.79}, {32, 8, 4.0, 0.82}, {16, 8, 8.0, 0.84},
  };
  // The median of three tables a shape: the first failure of one table has a
  // long low tail (one unlucky cell ends it; 1 table in about 20 fell below
  // a floor, e.g. 0.77 for M=8 R=8 at 8 cells), which a placement bug would
  // not give only one table in three.
  constexpr int kTables = 3;
  std::printf("   M   R  cells/bucket  load factor at first failure (%d tables)\n", kTables);
  for (const Shape& s : shapes) {
    double lf[kTables];
    for (double& one : lf) {
      TableOptions o;
      o.slots_per_bucket = s.m;
      o.virtual_buckets = s.r;
      o.cells_per_bucket = s.cells_per_bucket;
      o.num_buckets = (1u << 20) / s.m;
      o.seed = static_cast<uint32_t>(rng());
      auto table = make(o);
      ASSERT_NE(table, nullptr);
      // Batches of 1/256 of the slots: the failure point is within 0.4%.
      one = fill_until_failure(*table, rng, (1u << 20) / 256);
      auto img = table->image();
      ASSERT_TRUE(img.ok());
      EXPECT_EQ(check_invariants(*img, table->size()), "");
    }
    std::sort(lf, lf + kTables);
    std::printf("%4u %3u %13.2f  %.4f %.4f %.4f\n", s.m, s.r, s.cells_per_bucket, lf[0], lf[1], lf[2]);
    EXPECT_GE(lf[kTables / 2], s.floor) << "the median table; M=" << s.m << " R=" << s.r
                                        << " cells/bucket=" << s.cells_per_bucket;
  }
}

GPHKV_INSTANTIATE_BACKENDS(LoadFactorTest);

}  // namespace
}  // namespace gphkv::engine::testing
