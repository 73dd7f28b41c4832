#include "gphkv/engine/detail/move_planner.h"

#include <map>
#include <vector>

#include "gphkv/engine/table_options.h"
#include "gtest/gtest.h"

namespace gphkv::engine::gph {
namespace {

// M = 16, 4 cells per bucket: the crowding test below counts on 16 slots.
Geometry small_geometry() {
  TableOptions o;
  o.num_buckets = 4096;
  o.slots_per_bucket = 16;
  o.cells_per_bucket = 4;
  return *make_geometry(o);
}

// Checks a plan the way a relocation would use it: per real bucket, the
// cell's keys plus the other cells' keys fit in M slots.
bool plan_fits(const Geometry& g, uint32_t cell, uint8_t byte, const std::vector<uint64_t>& keys,
               const std::map<uint32_t, uint32_t>& others) {
  std::map<uint32_t, uint32_t> load;
  for (uint64_t k : keys) ++load[bucket_for_key(g, k, cell, byte)];
  for (auto [b, n] : load) {
    auto it = others.find(b);
    if (n + (it == others.end() ? 0 : it->second) > g.slots_per_bucket) return false;
  }
  return true;
}

TEST(MovePlanner, EmptyNeighboursAcceptTheCurrentCell) {
  const Geometry g = small_geometry();
  std::vector<uint64_t> keys = {1, 2, 3};
  uint8_t chosen = 0xff;
  ASSERT_TRUE(plan_extended_move(
      g, 5, make_cell(g, 3, 2), keys.data(), 3, [](uint32_t) { return 0u; }, &chosen));
  EXPECT_EQ(chosen, make_cell(g, 3, 2)) << "the search starts at the current (Φ, Δ)";
}

TEST(MovePlanner, FindsAFittingCellWhenBucketsAreCrowded) {
  const Geometry g = small_geometry();
  const uint32_t cell = 77;
  std::vector<uint64_t> keys;
  for (uint64_t k = 0; k < 40; ++k) keys.push_back(k * 1000003);
  // Every bucket already holds 8 keys of other cells: 8 free slots each,
  // 64 in all for 40 keys, so some (Φ, Δ) fits but not every one.
  std::map<uint32_t, uint32_t> others;
  auto crowd = [&](uint32_t b) {
    others[b] = 8;
    return 8u;
  };
  uint8_t chosen = 0;
  ASSERT_TRUE(plan_extended_move(g, cell, 0, keys.data(), keys.size(), crowd, &chosen));
  EXPECT_TRUE(plan_fits(g, cell, chosen, keys, others));
}

TEST(MovePlanner, RefusesMoreKeysThanTheCellsBucketsHold) {
  const Geometry g = small_geometry();
  std::vector<uint64_t> keys(g.virtual_buckets * g.slots_per_bucket + 1);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = i;
  uint8_t chosen = 0;
  EXPECT_FALSE(plan_extended_move(
      g, 0, 0, keys.data(), keys.size(), [](uint32_t) { return 0u; }, &chosen));
}

TEST(MovePlanner, RefusesWhenNoBucketHasRoom) {
  const Geometry g = small_geometry();
  std::vector<uint64_t> keys = {42};
  uint8_t chosen = 0;
  EXPECT_FALSE(plan_extended_move(
      g, 0, 0, keys.data(), 1, [&](uint32_t) { return g.slots_per_bucket; }, &chosen));
}

}  // namespace
}  // namespace gphkv::engine::gph
