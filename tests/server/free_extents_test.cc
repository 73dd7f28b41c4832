// FreeExtents against a model: a bit per granule of a few chunks (apart in
// the address space, as the heaps keep them), random takes, frees and
// removals; after each, the free granules, the maximal free runs (merged
// extents), the largest run, and whether a take may fail.
#include "server/free_extents.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tests/engine/table_checks.h"

namespace gphkv::server {
namespace {

struct Model {
  std::vector<std::vector<bool>> free;  // per chunk, per granule
  static uint64_t addr(uint64_t chunk, uint64_t offset) { return chunk << 32 | offset; }

  // The maximal free runs: (address, granules).
  std::vector<std::pair<uint64_t, uint64_t>> runs() const {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    for (uint64_t c = 0; c < free.size(); ++c) {
      for (uint64_t i = 0; i < free[c].size();) {
        if (!free[c][i]) {
          ++i;
          continue;
        }
        uint64_t j = i;
        while (j < free[c].size() && free[c][j]) ++j;
        out.emplace_back(addr(c, i), j - i);
        i = j;
      }
    }
    return out;
  }
  void set(uint64_t a, uint64_t n, bool value) {
    for (uint64_t i = 0; i < n; ++i) free[a >> 32][(a & 0xffffffff) + i] = value;
  }
  bool all(uint64_t a, uint64_t n, bool value) const {
    const auto& chunk = free[a >> 32];
    if ((a & 0xffffffff) + n > chunk.size()) return false;
    for (uint64_t i = 0; i < n; ++i) {
      if (chunk[(a & 0xffffffff) + i] != value) return false;
    }
    return true;
  }
};

void expect_same(const FreeExtents& f, const Model& m) {
  const auto runs = m.runs();
  uint64_t total = 0, largest = 0;
  for (const auto& [a, n] : runs) {
    total += n;
    largest = std::max(largest, n);
  }
  ASSERT_EQ(f.free_granules(), total);
  ASSERT_EQ(f.extents(), runs.size()) << "free neighbours were not merged";
  ASSERT_EQ(f.largest(), largest);
}

TEST(FreeExtents, TakesFreesAndMergesMatchAModel) {
  const uint64_t seed = engine::testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  FreeExtents f;
  Model m;
  // Chunks of sizes around the TLSF bin edges, one of them tiny.
  for (uint64_t size : {4096u, 1000u, 17u, 65536u}) {
    m.free.emplace_back(size, true);
    f.add(Model::addr(m.free.size() - 1, 0), size);
  }
  std::vector<std::pair<uint64_t, uint64_t>> taken;
  int failed_takes = 0;
  for (int step = 0; step < 20000; ++step) {
    const int op = static_cast<int>(rng() % 10);
    if (op < 5) {
      // Mostly small, sometimes near or past the largest run.
      const uint64_t size = rng() % 4 == 0 ? 1 + rng() % 70000 : 1 + rng() % 64;
      const uint64_t largest = f.largest();
      auto a = f.take(size);
      ASSERT_EQ(a.has_value(), size <= largest) << "size " << size << " largest " << largest;
      if (!a) {
        ++failed_takes;
        continue;
      }
      ASSERT_TRUE(m.all(*a, size, true)) << "took granules that were not free";
      m.set(*a, size, false);
      taken.emplace_back(*a, size);
    } else if (op < 9 && !taken.empty()) {
      // Free a random taken range, or a random piece of one.
      const size_t i = rng() % taken.size();
      auto [a, n] = taken[i];
      taken[i] = taken.back();
      taken.pop_back();
      if (n > 1 && rng() % 3 == 0) {
        const uint64_t cut = 1 + rng() % (n - 1);
        taken.emplace_back(a + cut, n - cut);
        n = cut;
      }
      f.add(a, n);
      m.set(a, n, true);
    } else {
      // Remove a whole free run (as a heap retires a chunk's holes), or fail
      // to remove one that is not exactly a free extent.
      const auto runs = m.runs();
      if (runs.empty()) continue;
      const auto [a, n] = runs[rng() % runs.size()];
      if (n > 1) ASSERT_FALSE(f.remove(a, n - 1));
      ASSERT_TRUE(f.remove(a, n));
      m.set(a, n, false);
      taken.emplace_back(a, n);
    }
    expect_same(f, m);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(failed_takes, 0);
  // Everything back: one extent per chunk.
  for (const auto& [a, n] : taken) f.add(a, n);
  EXPECT_EQ(f.extents(), m.free.size());
}

TEST(FreeExtents, AFreedExtentServesTheNextRequestOfItsSize) {
  FreeExtents f;
  f.add(0, 1 << 20);
  std::vector<uint64_t> at;
  for (int i = 0; i < 100; ++i) at.push_back(*f.take(3750));  // 60000-byte values
  f.add(at[40], 3750);
  EXPECT_EQ(f.take(3750), at[40]);
  // Smaller requests split a freed extent instead of the big tail.
  f.add(at[60], 3750);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(f.take(750), at[60] + 750 * i);
  EXPECT_EQ(f.extents(), 1u);
}

TEST(FreeExtents, RefusesWhatNoExtentHolds) {
  FreeExtents f;
  EXPECT_FALSE(f.take(1).has_value());
  f.add(100, 40);
  f.add(200, 40);
  EXPECT_FALSE(f.take(41).has_value());
  EXPECT_EQ(f.free_granules(), 80u);
  f.add(140, 60);  // bridges both
  EXPECT_EQ(f.extents(), 1u);
  EXPECT_EQ(f.take(140), 100u);
  EXPECT_FALSE(f.take(~uint64_t{0}).has_value());
}

}  // namespace
}  // namespace gphkv::server
