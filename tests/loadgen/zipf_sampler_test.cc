#include "loadgen/zipf_sampler.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "loadgen/key_space.h"

namespace gphkv::loadgen {
namespace {

// The share of `draws` draws that land on the hottest ceil(fraction*n) ranks.
double MeasuredTopShare(const ZipfSampler& z, double fraction, int draws, uint64_t seed) {
  const uint64_t top = static_cast<uint64_t>(std::ceil(fraction * z.n()));
  Rng rng(seed);
  int hot = 0;
  for (int i = 0; i < draws; ++i) hot += z.Sample(rng) < top;
  return static_cast<double>(hot) / draws;
}

TEST(ZipfCalibration, DefaultTop20PercentGets82PercentOfAMillionDraws) {
  for (uint64_t n : {uint64_t{100'000}, uint64_t{1'000'000}, uint64_t{165'000'000}}) {
    auto s = CalibrateZipfExponent(n, 0.2, 0.82);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_NEAR(ZipfTopShare(n, *s, 0.2), 0.82, 1e-6) << "n=" << n;
    const double measured = MeasuredTopShare(ZipfSampler(n, *s), 0.2, 1'000'000, 42 + n);
    EXPECT_NEAR(measured, 0.82, 0.02) << "n=" << n << " s=" << *s;
  }
}

TEST(ZipfCalibration, ExponentKnobMovesTheShareBothWays) {
  const uint64_t n = 1'000'000;
  const double low = MeasuredTopShare(ZipfSampler(n, 0.6), 0.2, 200'000, 1);
  const double high = MeasuredTopShare(ZipfSampler(n, 1.2), 0.2, 200'000, 1);
  EXPECT_NEAR(low, ZipfTopShare(n, 0.6, 0.2), 0.01);
  EXPECT_NEAR(high, ZipfTopShare(n, 1.2, 0.2), 0.01);
  EXPECT_LT(low, 0.82);
  EXPECT_GT(high, 0.82);
  // s = 0 is uniform: the top 20% get 20%.
  EXPECT_NEAR(MeasuredTopShare(ZipfSampler(n, 0.0), 0.2, 200'000, 3), 0.2, 0.01);
}

TEST(ZipfCalibration, UnreachableShareIsRefused) {
  EXPECT_FALSE(CalibrateZipfExponent(1000, 0.2, 0.1).ok());  // below uniform
  EXPECT_FALSE(CalibrateZipfExponent(1, 0.2, 0.82).ok());
  EXPECT_FALSE(CalibrateZipfExponent(1000, 1.5, 0.82).ok());
}

TEST(ZipfSampler, SmallDomainMatchesThePmf) {
  // n = 10, s = 1.3: every rank's frequency within 4 standard deviations.
  const uint64_t n = 10;
  const double s = 1.3;
  ZipfSampler z(n, s);
  Rng rng(7);
  const int draws = 500'000;
  std::vector<int> counts(n, 0);
  for (int i = 0; i < draws; ++i) {
    const uint64_t r = z.Sample(rng);
    ASSERT_LT(r, n);
    ++counts[r];
  }
  const double h = GeneralizedHarmonic(n, s);
  for (uint64_t k = 0; k < n; ++k) {
    const double p = std::pow(k + 1.0, -s) / h;
    const double sd = std::sqrt(draws * p * (1 - p));
    EXPECT_NEAR(counts[k], draws * p, 4 * sd) << "rank " << k;
  }
}

TEST(ZipfSampler, HarmonicTailApproximationIsAccurate) {
  // Against the exact sum well past the exact-terms cut-off.
  for (double s : {0.5, 0.93, 1.0, 1.4}) {
    double exact = 0;
    for (int k = 200'000; k >= 1; --k) exact += std::pow(k, -s);
    EXPECT_NEAR(GeneralizedHarmonic(200'000, s) / exact, 1.0, 1e-9) << "s=" << s;
  }
}

TEST(ZipfSampler, SameSeedSameDraws) {
  ZipfSampler z(1'000'000, 0.93);
  Rng a(11), b(11);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(z.Sample(a), z.Sample(b));
}

}  // namespace
}  // namespace gphkv::loadgen
