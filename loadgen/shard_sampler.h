// Key popularity the way TAOBench draws it: a read picks a shard by the
// shards' weights, then a key uniformly within that shard, and the keys are
// spread evenly over the shards (TAOBench: GetRandomEdge and LoadRow in
// src/workload.cc; the weights are workload O's "primary_shards",
// taobench_tables.h). The alternative to Zipf popularity (zipf_sampler.h).
//
// The n ranks are cut into one contiguous run per shard, sizes differing by
// at most one, hottest shard (by probability per key) first, so rank 0 is a
// key of the hottest shard as it is for Zipf; KeySpace then scatters ranks
// over the items. A shard left empty by a tiny n is never drawn (TAOBench
// draws again).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "loadgen/rng.h"

namespace gphkv::loadgen {

class ShardSampler {
 public:
  // n >= 1; weights non-negative, at least one positive.
  static absl::StatusOr<ShardSampler> Create(uint64_t n, std::vector<double> weights);

  // A rank in [0, n): 0 is in the hottest shard.
  uint64_t Sample(Rng& rng) const;
  // The share of draws that land on the hottest ceil(fraction * n) ranks.
  double TopShare(double fraction) const;
  uint64_t n() const { return n_; }
  size_t shards() const { return shards_.size(); }

 private:
  struct Shard {
    uint64_t first_rank, size;
    double probability;  // of the shard, normalized
  };
  ShardSampler(uint64_t n, std::vector<Shard> shards);
  uint64_t n_;
  std::vector<Shard> shards_;       // in rank order
  std::vector<double> cumulative_;  // of probability, last = 1
};

// "taobench" (workload O's primary_shards) or a comma-separated list of weights.
absl::StatusOr<std::vector<double>> ParseShardWeights(const std::string& spec);

}  // namespace gphkv::loadgen
