#include "loadgen/zipf_sampler.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace gphkv::loadgen {
namespace {

// log1p(x)/x and expm1(x)/x, with their Taylor series near 0 where the
// quotients lose precision; they make the formulas below exact at s = 1.
double Log1pOverX(double x) {
  if (std::fabs(x) > 1e-8) return std::log1p(x) / x;
  return 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
}
double Expm1OverX(double x) {
  if (std::fabs(x) > 1e-8) return std::expm1(x) / x;
  return 1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x));
}

}  // namespace

ZipfSampler::ZipfSampler(uint64_t n, double s) : n_(std::max<uint64_t>(n, 1)), s_(std::max(s, 0.0)) {
  h_integral_x1_ = HIntegral(1.5) - 1.0;
  h_integral_n_ = HIntegral(static_cast<double>(n_) + 0.5);
  squeeze_ = 2.0 - HIntegralInverse(HIntegral(2.5) - H(2.0));
}

// h(x) = x^-s: the continuous hat the discrete weights are compared with.
double ZipfSampler::H(double x) const { return std::exp(-s_ * std::log(x)); }

// The integral of h from 1 to x: (x^(1-s) - 1) / (1 - s), or log(x) at s = 1.
double ZipfSampler::HIntegral(double x) const {
  const double log_x = std::log(x);
  return Expm1OverX((1.0 - s_) * log_x) * log_x;
}

double ZipfSampler::HIntegralInverse(double x) const {
  double t = x * (1.0 - s_);
  if (t < -1.0) t = -1.0;  // guards rounding at the edge of the domain
  return std::exp(Log1pOverX(t) * x);
}

uint64_t ZipfSampler::Sample(Rng& rng) const {
  // Bounded in practice: the acceptance rate is above 0.9 for every s; the
  // cap only protects against a broken RNG.
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const double u = h_integral_n_ + rng.Uniform() * (h_integral_x1_ - h_integral_n_);
    const double x = HIntegralInverse(u);
    double k = std::floor(x + 0.5);
    if (k < 1.0) k = 1.0;
    if (k > static_cast<double>(n_)) k = static_cast<double>(n_);
    if (k - x <= squeeze_ || u >= HIntegral(k + 0.5) - H(k)) {
      return static_cast<uint64_t>(k) - 1;
    }
  }
  return 0;
}

double GeneralizedHarmonic(uint64_t m, double s) {
  constexpr uint64_t kExactTerms = 4096;
  const uint64_t exact = std::min(m, kExactTerms);
  double sum = 0.0;
  // Smallest terms first, for a little less rounding.
  for (uint64_t k = exact; k >= 1; --k) sum += std::pow(static_cast<double>(k), -s);
  if (m > exact) {
    const double a = static_cast<double>(exact) + 0.5;
    const double b = static_cast<double>(m) + 0.5;
    if (std::fabs(s - 1.0) < 1e-12) {
      sum += std::log(b / a);
    } else {
      sum += (std::pow(b, 1.0 - s) - std::pow(a, 1.0 - s)) / (1.0 - s);
    }
  }
  return sum;
}

double ZipfTopShare(uint64_t n, double s, double fraction) {
  const uint64_t top = std::clamp<uint64_t>(static_cast<uint64_t>(std::ceil(fraction * static_cast<double>(n))), 1, n);
  return GeneralizedHarmonic(top, s) / GeneralizedHarmonic(n, s);
}

absl::StatusOr<double> CalibrateZipfExponent(uint64_t n, double fraction, double share) {
  if (n < 2 || fraction <= 0.0 || fraction >= 1.0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("zipf calibration needs n >= 2 and 0 < fraction < 1 (n=%d, fraction=%g)", n, fraction));
  }
  double lo = 0.0, hi = 8.0;
  const double share_lo = ZipfTopShare(n, lo, fraction);
  const double share_hi = ZipfTopShare(n, hi, fraction);
  if (share <= share_lo || share > share_hi) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a hot share of %g for the top %g of %d keys is out of reach (uniform gives %g, s=8 gives %g)",
                        share, fraction, n, share_lo, share_hi));
  }
  // The share grows monotonically with s; 60 halvings pin s to ~1e-17.
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (ZipfTopShare(n, mid, fraction) < share)
      lo = mid;
    else
      hi = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace gphkv::loadgen
