#include "loadgen/shard_sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "loadgen/taobench_tables.h"

namespace gphkv::loadgen {

absl::StatusOr<ShardSampler> ShardSampler::Create(uint64_t n, std::vector<double> weights) {
  if (n == 0 || weights.empty()) return absl::InvalidArgumentError("shard popularity needs keys and shards");
  for (double w : weights) {
    if (!(w >= 0) || std::isinf(w)) return absl::InvalidArgumentError("shard weights must be finite and >= 0");
  }
  const size_t count = weights.size();
  // Shard s of the table holds n / count keys, the first n % count one more.
  std::vector<uint64_t> sizes(count);
  for (size_t s = 0; s < count; ++s) sizes[s] = n / count + (s < n % count ? 1 : 0);
  double total = 0;
  for (size_t s = 0; s < count; ++s) total += sizes[s] > 0 ? weights[s] : 0;
  if (!(total > 0)) return absl::InvalidArgumentError("no shard with keys has a positive weight");
  // Rank order: hottest per key first (ties keep the table's order).
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const double pa = sizes[a] ? weights[a] / sizes[a] : 0, pb = sizes[b] ? weights[b] / sizes[b] : 0;
    return pa > pb;
  });
  std::vector<Shard> shards;
  uint64_t next = 0;
  for (size_t s : order) {
    shards.push_back({next, sizes[s], sizes[s] > 0 ? weights[s] / total : 0});
    next += sizes[s];
  }
  return ShardSampler(n, std::move(shards));
}

ShardSampler::ShardSampler(uint64_t n, std::vector<Shard> shards) : n_(n), shards_(std::move(shards)) {
  double acc = 0;
  for (const Shard& s : shards_) {
    acc += s.probability;
    cumulative_.push_back(acc);
  }
  cumulative_.back() = 1.0;
}

uint64_t ShardSampler::Sample(Rng& rng) const {
  // One uniform number picks the shard and, by its position inside the
  // shard's slice of [0, 1), the key within it.
  const double u = rng.Uniform();
  size_t i = std::upper_bound(cumulative_.begin(), cumulative_.end(), u) - cumulative_.begin();
  i = std::min(i, shards_.size() - 1);
  while (shards_[i].probability == 0 && i > 0) --i;  // an empty slice (rounding at its edge)
  const Shard& s = shards_[i];
  const double start = cumulative_[i] - s.probability;
  const double frac = std::clamp((u - start) / s.probability, 0.0, 1.0);
  return s.first_rank + std::min(s.size - 1, static_cast<uint64_t>(frac * static_cast<double>(s.size)));
}

double ShardSampler::TopShare(double fraction) const {
  const uint64_t top =
      std::clamp<uint64_t>(static_cast<uint64_t>(std::ceil(fraction * static_cast<double>(n_))), 0, n_);
  double share = 0;
  for (const Shard& s : shards_) {
    if (s.first_rank >= top) break;
    const uint64_t taken = std::min(s.size, top - s.first_rank);
    share += s.probability * static_cast<double>(taken) / static_cast<double>(s.size);
  }
  return share;
}

absl::StatusOr<std::vector<double>> ParseShardWeights(const std::string& spec) {
  if (spec == "taobench") {
    const auto table = taobench::PrimaryShardWeights();
    return std::vector<double>(table.begin(), table.end());
  }
  std::vector<double> weights;
  for (absl::string_view item : absl::StrSplit(spec, ',')) {
    double w = 0;
    if (!absl::SimpleAtod(item, &w) || !(w >= 0) || std::isinf(w)) {
      return absl::InvalidArgumentError(absl::StrCat("bad shard weight '", item, "' in '", spec, "'"));
    }
    weights.push_back(w);
  }
  return weights;
}

}  // namespace gphkv::loadgen
