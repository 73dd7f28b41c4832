// Distributions of sizes: keys per batch and bytes per value.
//
// Every distribution is used through its quantile function, Quantile(u) for
// u in [0,1): batch sizes take u from the stream's RNG, value sizes take u
// from a hash of the key, so a key has the same value size in the load phase,
// in every later put, and against every target.
//
// Spec strings (flags):
//   "16"                           always 16
//   "2:29.5,3:16.6,6-7:7.6,..."    ranges LO[-HI] with weights, uniform inside
//   "gpareto:SIGMA:K[:MIN:MAX]"    generalized Pareto (location 0), clamped
//   "taobench-read", "taobench-write", "tao-object", "tao-association"
//                                  the named defaults documented in docs/loadgen.md
//   "taobench-read-txn", "taobench-write-txn"
//                                  TAOBench's transaction-size tables, exact
//   "taobench-o-read", "taobench-o-write"
//                                  workload O's reads (writes): a single key, or
//                                  a transaction from the table above, in
//                                  workload O's proportions (taobench_tables.h)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gphkv::loadgen {

class SizeDistribution {
 public:
  virtual ~SizeDistribution() = default;
  // u in [0, 1) -> a size in [min(), max()].
  virtual uint32_t Quantile(double u) const = 0;
  virtual double Mean() const = 0;
  virtual uint32_t Max() const = 0;
  // The spec that rebuilds this distribution (for the JSON report).
  virtual std::string Spec() const = 0;
};

// Ranges with weights; the workhorse for batch sizes.
class WeightedRanges : public SizeDistribution {
 public:
  struct Range {
    uint32_t lo, hi;
    double weight;
  };
  explicit WeightedRanges(std::vector<Range> ranges);
  uint32_t Quantile(double u) const override;
  double Mean() const override;
  uint32_t Max() const override;
  std::string Spec() const override;

 private:
  std::vector<Range> ranges_;
  std::vector<double> cumulative_;  // normalized, last = 1
};

// Generalized Pareto with location 0: x = sigma * ((1-u)^-k - 1) / k.
class GeneralizedPareto : public SizeDistribution {
 public:
  GeneralizedPareto(double sigma, double k, uint32_t min, uint32_t max);
  uint32_t Quantile(double u) const override;
  double Mean() const override;  // of the clamped distribution, numerically
  uint32_t Max() const override { return max_; }
  std::string Spec() const override;

 private:
  double sigma_, k_;
  uint32_t min_, max_;
};

absl::StatusOr<std::unique_ptr<SizeDistribution>> ParseSizeDistribution(const std::string& spec);

}  // namespace gphkv::loadgen
