#include "loadgen/latency_histogram.h"

#include <algorithm>
#include <cmath>

namespace gphkv::loadgen {
namespace {

constexpr int kSubBits = 7;  // 128 sub-buckets per power of two
constexpr uint64_t kSubCount = uint64_t{1} << kSubBits;
constexpr int kMaxBits = 40;
// Exponent group g >= 1 covers [2^(g+7), 2^(g+8)); group 0 covers [0, 256)
// one value per bucket.
constexpr size_t kBuckets = 2 * kSubCount + (kMaxBits - kSubBits - 1) * kSubCount;

int FloorLog2(uint64_t v) { return 63 - __builtin_clzll(v); }

}  // namespace

LatencyHistogram::LatencyHistogram() : counts_(kBuckets, 0) {}

size_t LatencyHistogram::BucketOf(uint64_t value) {
  value = std::min(value, kMaxValue);
  if (value < 2 * kSubCount) return static_cast<size_t>(value);
  const int shift = FloorLog2(value) - kSubBits;  // >= 1
  // (value >> shift) is in [128, 256).
  return static_cast<size_t>(shift) * kSubCount + static_cast<size_t>(value >> shift);
}

uint64_t LatencyHistogram::BucketLow(size_t bucket) {
  if (bucket < 2 * kSubCount) return bucket;
  const size_t shift = bucket / kSubCount - 1;
  const uint64_t sub = bucket - shift * kSubCount;  // in [128, 256)
  return sub << shift;
}

uint64_t LatencyHistogram::BucketHigh(size_t bucket) {
  if (bucket < 2 * kSubCount) return bucket;
  const size_t shift = bucket / kSubCount - 1;
  return BucketLow(bucket) + (uint64_t{1} << shift) - 1;
}

void LatencyHistogram::Record(uint64_t value_ns) {
  ++counts_[BucketOf(value_ns)];
  ++count_;
  min_ = std::min(min_, value_ns);
  max_ = std::max(max_, value_ns);
  sum_ += value_ns;
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  sum_ += other.sum_;
}

void LatencyHistogram::Reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = 0;
  min_ = UINT64_MAX;
  max_ = 0;
  sum_ = 0;
}

uint64_t LatencyHistogram::ValueAtQuantile(double q) const {
  if (count_ == 0) return 0;
  if (q >= 1.0) return max_;
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_))));
  uint64_t seen = 0;
  for (size_t b = 0; b < counts_.size(); ++b) {
    seen += counts_[b];
    if (seen >= rank) {
      const uint64_t mid = BucketLow(b) + (BucketHigh(b) - BucketLow(b)) / 2;
      // Never report beyond what was actually seen.
      return std::clamp(mid, min_, max_);
    }
  }
  return max_;
}

}  // namespace gphkv::loadgen
