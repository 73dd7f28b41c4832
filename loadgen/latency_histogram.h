// A log-bucketed latency histogram in the manner of HdrHistogram.
//
// Values (nanoseconds) below 256 get a bucket each; above, every power-of-two
// range [2^e, 2^(e+1)) is cut into 128 equal sub-buckets, so a bucket is at
// most 1/128 of its lower bound wide. A percentile is reported as the
// bucket's midpoint: its relative error is below 1/256 = 0.4% (the issue asks
// for 1%). Recording is an index computation and an increment; histograms of
// different threads merge by adding counts. Min, max and the sum are exact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gphkv::loadgen {

class LatencyHistogram {
 public:
  // Values above kMaxValue (about 18 minutes in ns) are clamped to it.
  static constexpr uint64_t kMaxValue = (uint64_t{1} << 40) - 1;

  LatencyHistogram();
  void Record(uint64_t value_ns);
  void Merge(const LatencyHistogram& other);
  void Reset();

  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ ? static_cast<double>(sum_) / count_ : 0.0; }
  // The value at quantile q in [0, 1]: the smallest recorded value v (to
  // bucket precision) such that at least ceil(q * count) values are <= v.
  // q = 1 returns the exact max; an empty histogram returns 0.
  uint64_t ValueAtQuantile(double q) const;

  // Exposed for tests: the bucket of a value and the bucket's range.
  static size_t BucketOf(uint64_t value);
  static uint64_t BucketLow(size_t bucket);
  static uint64_t BucketHigh(size_t bucket);  // inclusive

 private:
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
  unsigned __int128 sum_ = 0;
};

}  // namespace gphkv::loadgen
