// Zipf popularity: P(rank k) proportional to 1 / k^s over ranks 1..n.
//
// Sampling is O(1) per draw for any n by rejection-inversion (Hörmann and
// Derflinger, "Rejection-inversion to generate variates from monotone
// discrete distributions", 1996): no table of n cumulative weights, so a key
// space of 10^9 costs nothing to set up.
//
// Calibration answers the question the workload is specified by: which
// exponent s makes the hottest fraction f of the n keys receive a share p of
// the draws (TaoBench: the hottest 20% of keys get 82.14% of lookups).
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "loadgen/rng.h"

namespace gphkv::loadgen {

class ZipfSampler {
 public:
  // n >= 1, s >= 0 (s = 0 is uniform).
  ZipfSampler(uint64_t n, double s);
  // A rank in [0, n): 0 is the most popular.
  uint64_t Sample(Rng& rng) const;
  uint64_t n() const { return n_; }
  double exponent() const { return s_; }

 private:
  double H(double x) const;
  double HIntegral(double x) const;
  double HIntegralInverse(double x) const;

  uint64_t n_;
  double s_;
  double h_integral_x1_;
  double h_integral_n_;
  double squeeze_;
};

// Sum_{k=1..m} k^-s, exact for the first terms and by the midpoint integral
// for the tail (relative error far below 1e-9 for the sizes we use).
double GeneralizedHarmonic(uint64_t m, double s);

// The share of draws that land on the hottest ceil(fraction * n) ranks.
double ZipfTopShare(uint64_t n, double s, double fraction);

// The exponent s for which ZipfTopShare(n, s, fraction) == share, by
// bisection over s in [0, 8]. Fails when share is out of reach (at or below
// the uniform share `fraction`, or above what s = 8 gives).
absl::StatusOr<double> CalibrateZipfExponent(uint64_t n, double fraction, double share);

}  // namespace gphkv::loadgen
