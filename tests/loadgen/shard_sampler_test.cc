// TAOBench's popularity: the shard of each draw follows the weights, keys
// are uniform within a shard, and the reported hot share is what sampling
// measures.
#include "loadgen/shard_sampler.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "loadgen/taobench_tables.h"
#include "tests/loadgen/test_seed.h"

namespace gphkv::loadgen {
namespace {

using testing::TestSeed;

std::vector<double> TaoBenchWeights() {
  auto w = ParseShardWeights("taobench");
  EXPECT_TRUE(w.ok());
  return *w;
}

TEST(ShardSampler, DrawsFollowTheShardWeightsAndAreUniformWithinAShard) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  const uint64_t n = 1'000'003;  // not a multiple of 50: shards differ in size by one
  const std::vector<double> weights = TaoBenchWeights();
  auto sampler = ShardSampler::Create(n, weights);
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  // The model: shard s (table order) holds n/50 keys, the first n%50 one
  // more; ranks list shards hottest-per-key first. Rebuild that order here.
  const size_t shards = weights.size();
  std::vector<uint64_t> size(shards);
  for (size_t s = 0; s < shards; ++s) size[s] = n / shards + (s < n % shards ? 1 : 0);
  std::vector<size_t> order(shards);
  for (size_t i = 0; i < shards; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return weights[a] / size[a] > weights[b] / size[b]; });
  double total = 0;
  for (double w : weights) total += w;
  std::vector<uint64_t> first(shards);
  uint64_t next = 0;
  for (size_t s : order) {
    first[s] = next;
    next += size[s];
  }
  ASSERT_EQ(next, n);

  Rng rng(seed);
  const int draws = 2'000'000;
  std::vector<int> per_shard(shards, 0);
  // Within the hottest shard: 20 equal buckets of its keys.
  const size_t hottest = order[0];
  std::vector<int> buckets(20, 0);
  for (int i = 0; i < draws; ++i) {
    const uint64_t r = sampler->Sample(rng);
    ASSERT_LT(r, n);
    for (size_t s = 0; s < shards; ++s) {
      if (r >= first[s] && r < first[s] + size[s]) {
        ++per_shard[s];
        if (s == hottest) ++buckets[(r - first[s]) * buckets.size() / size[s]];
        break;
      }
    }
  }
  for (size_t s = 0; s < shards; ++s) {
    const double p = weights[s] / total;
    const double sd = std::sqrt(draws * p * (1 - p));
    EXPECT_NEAR(per_shard[s], draws * p, 5 * sd + 1) << "shard " << s;
  }
  const double per_bucket = static_cast<double>(per_shard[hottest]) / buckets.size();
  for (size_t b = 0; b < buckets.size(); ++b) {
    EXPECT_NEAR(buckets[b], per_bucket, 5 * std::sqrt(per_bucket)) << "bucket " << b << " of the hottest shard";
  }
}

TEST(ShardSampler, TopShareIsWhatSamplingMeasures) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  const uint64_t n = 1'000'000;
  auto sampler = ShardSampler::Create(n, TaoBenchWeights());
  ASSERT_TRUE(sampler.ok());
  Rng rng(seed ^ 0x5a);
  for (double fraction : {0.01, 0.02, 0.05, 0.2, 0.5}) {
    const auto top = static_cast<uint64_t>(std::ceil(fraction * n));
    int hot = 0;
    const int draws = 400'000;
    for (int i = 0; i < draws; ++i) hot += sampler->Sample(rng) < top;
    const double p = sampler->TopShare(fraction);
    EXPECT_NEAR(static_cast<double>(hot) / draws, p, 5 * std::sqrt(p * (1 - p) / draws)) << "top " << fraction;
  }
  // The two hottest shards (4% of the keys) take 80% of the draws: TAOBench's
  // skew, near the TaoBenchmark's "top 20% get 82%" but steeper.
  EXPECT_NEAR(sampler->TopShare(0.04), (94036.0 + 36224.0) / 162622.0, 1e-9);
  EXPECT_NEAR(sampler->TopShare(1.0), 1.0, 1e-12);
  EXPECT_EQ(sampler->TopShare(0.0), 0.0);
}

TEST(ShardSampler, FewerKeysThanShardsDrawsOnlyShardsWithKeys) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  // 3 keys, 5 shards: shards 3 and 4 (the heaviest) are empty and never drawn.
  auto sampler = ShardSampler::Create(3, {1, 2, 3, 1000, 1000});
  ASSERT_TRUE(sampler.ok());
  Rng rng(seed);
  std::vector<int> count(3, 0);
  const int draws = 60'000;
  for (int i = 0; i < draws; ++i) {
    const uint64_t r = sampler->Sample(rng);
    ASSERT_LT(r, 3u);
    ++count[r];
  }
  // Ranks hottest first: shard 2 (3/6), shard 1 (2/6), shard 0 (1/6).
  for (int r = 0; r < 3; ++r) {
    const double p = (3.0 - r) / 6.0;
    EXPECT_NEAR(count[r], draws * p, 5 * std::sqrt(draws * p * (1 - p))) << "rank " << r;
  }
}

TEST(ShardSampler, BadWeightsAreRefused) {
  for (const char* bad : {"", "1,,2", "1,x", "-1,2", "inf", "nan,1"}) {
    EXPECT_FALSE(ParseShardWeights(bad).ok()) << bad;
  }
  EXPECT_FALSE(ShardSampler::Create(10, {0, 0, 0}).ok());
  EXPECT_FALSE(ShardSampler::Create(0, {1}).ok());
  EXPECT_FALSE(ShardSampler::Create(10, {}).ok());
  // Only the empty shards weigh anything: nothing can be drawn.
  EXPECT_FALSE(ShardSampler::Create(2, {0, 0, 5}).ok());
  auto list = ParseShardWeights("3,1.5,0");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(*list, (std::vector<double>{3, 1.5, 0}));
  EXPECT_EQ(TaoBenchWeights().size(), 50u);
}

}  // namespace
}  // namespace gphkv::loadgen
