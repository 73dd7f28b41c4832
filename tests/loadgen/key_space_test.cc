#include "loadgen/key_space.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include <gtest/gtest.h>

#include "loadgen/workload.h"

namespace gphkv::loadgen {
namespace {

TEST(KeyScrambler, IsABijectionOfItsDomain) {
  for (uint64_t n : {uint64_t{2}, uint64_t{3}, uint64_t{17}, uint64_t{1000}, uint64_t{65536}, uint64_t{100'003}}) {
    KeyScrambler s(n, 99);
    std::vector<bool> seen(n, false);
    for (uint64_t x = 0; x < n; ++x) {
      const uint64_t y = s.Permute(x);
      ASSERT_LT(y, n);
      ASSERT_FALSE(seen[y]) << "n=" << n << " collision at " << x;
      seen[y] = true;
    }
  }
}

TEST(KeySpace, EveryItemHasADistinctKeyAndAssociationsDecode) {
  auto ks = KeySpace::Create(200'000, 0.5, 3);
  ASSERT_TRUE(ks.ok()) << ks.status();
  std::unordered_set<uint64_t> keys;
  for (uint64_t i = 0; i < ks->items(); ++i) {
    const uint64_t k = ks->KeyAt(i);
    ASSERT_TRUE(keys.insert(k).second) << "duplicate key for item " << i;
    ASSERT_EQ(KeySpace::KeyIsAssociation(k), ks->IsAssociation(i));
    if (ks->IsAssociation(i)) {
      const Association a = ks->AssociationAt(i);
      ASSERT_LT(a.id1, ks->objects());
      ASSERT_LT(a.id2, ks->objects());
      ASSERT_NE(a.id1, a.id2);
      ASSERT_LT(a.type, KeySpace::kAssociationTypes);
      // The documented packing, field by field.
      ASSERT_EQ((k >> 60) & 7, a.type);
      ASSERT_EQ((k >> 30) & ((1u << 30) - 1), a.id1);
      ASSERT_EQ(k & ((1u << 30) - 1), a.id2);
    }
  }
}

TEST(KeySpace, HotItemsAreScatteredNotTheSmallestIds) {
  auto ks = KeySpace::Create(1'000'000, 0.5, 1);
  ASSERT_TRUE(ks.ok());
  // The 1000 hottest ranks: spread over the whole index range, both kinds.
  double mean = 0;
  int associations = 0;
  uint64_t smallest = UINT64_MAX;
  for (uint64_t r = 0; r < 1000; ++r) {
    const uint64_t i = ks->IndexOfRank(r);
    mean += static_cast<double>(i) / 1000;
    associations += ks->IsAssociation(i);
    smallest = std::min(smallest, i);
  }
  EXPECT_NEAR(mean / ks->items(), 0.5, 0.05);
  EXPECT_GT(associations, 400);
  EXPECT_LT(associations, 600);
  EXPECT_GT(smallest, 0u);  // rank 0..999 are not ids 0..999
}

TEST(KeySpace, RefusesWhatThePackingCannotHold) {
  EXPECT_FALSE(KeySpace::Create(1, 0.5, 1).ok());
  EXPECT_FALSE(KeySpace::Create(100, 1.0, 1).ok());
  EXPECT_FALSE(KeySpace::Create((uint64_t{1} << 31) + 10, 0.0, 1).ok());  // 2^31 objects
  EXPECT_TRUE(KeySpace::Create((uint64_t{1} << 31), 0.5, 1).ok());        // 2^30 objects + 2^30 edges
}

}  // namespace
}  // namespace gphkv::loadgen
