#include "loadgen/latency_histogram.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace gphkv::loadgen {
namespace {

uint64_t ExactQuantile(std::vector<uint64_t>& sorted, double q) {
  const size_t rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(q * sorted.size())));
  return sorted[rank - 1];
}

TEST(LatencyHistogram, BucketsCoverEveryValueWithinOnePercent) {
  std::mt19937_64 gen(5);
  for (int i = 0; i < 200'000; ++i) {
    const uint64_t v = gen() >> (24 + gen() % 40);  // values of every magnitude up to 2^40
    const size_t b = LatencyHistogram::BucketOf(v);
    const uint64_t lo = LatencyHistogram::BucketLow(b), hi = LatencyHistogram::BucketHigh(b);
    const uint64_t clamped = std::min(v, LatencyHistogram::kMaxValue);
    ASSERT_LE(lo, clamped);
    ASSERT_LE(clamped, hi);
    if (lo > 0) ASSERT_LE(static_cast<double>(hi - lo) / lo, 0.01) << v;
  }
  // Neighbouring buckets tile the line with no gaps.
  for (size_t b = 0; b + 1 < LatencyHistogram::BucketOf(LatencyHistogram::kMaxValue); ++b) {
    ASSERT_EQ(LatencyHistogram::BucketHigh(b) + 1, LatencyHistogram::BucketLow(b + 1)) << b;
  }
}

TEST(LatencyHistogram, PercentilesWithinOnePercentOfExact) {
  // Log-normal latencies around 200 us with a heavy tail, plus rare stalls.
  std::mt19937_64 gen(9);
  std::lognormal_distribution<double> body(std::log(200'000.0), 0.8);
  std::uniform_real_distribution<double> stall(5e7, 2e9);
  std::uniform_real_distribution<double> coin(0, 1);
  LatencyHistogram h;
  std::vector<uint64_t> values;
  for (int i = 0; i < 1'000'000; ++i) {
    const uint64_t v = static_cast<uint64_t>(coin(gen) < 0.002 ? stall(gen) : body(gen));
    values.push_back(v);
    h.Record(v);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.0001, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999}) {
    const double exact = static_cast<double>(ExactQuantile(values, q));
    const double got = static_cast<double>(h.ValueAtQuantile(q));
    EXPECT_LE(std::fabs(got - exact) / exact, 0.01) << "q=" << q << " exact=" << exact << " got=" << got;
  }
  EXPECT_EQ(h.ValueAtQuantile(1.0), values.back());
  EXPECT_EQ(h.min(), values.front());
  EXPECT_EQ(h.count(), values.size());
}

TEST(LatencyHistogram, MergeEqualsRecordingEverythingInOne) {
  LatencyHistogram a, b, both;
  for (uint64_t v = 1; v < 3'000'000; v = v * 3 / 2 + 7) {
    ((v & 1) ? a : b).Record(v);
    both.Record(v);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), both.count());
  EXPECT_EQ(a.max(), both.max());
  EXPECT_EQ(a.min(), both.min());
  for (double q : {0.1, 0.5, 0.99}) EXPECT_EQ(a.ValueAtQuantile(q), both.ValueAtQuantile(q));
  a.Reset();
  EXPECT_EQ(a.count(), 0u);
  EXPECT_EQ(a.ValueAtQuantile(0.5), 0u);
}

}  // namespace
}  // namespace gphkv::loadgen
