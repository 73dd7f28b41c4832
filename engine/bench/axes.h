// The axes engine_bench measures lookups along, as cuCollections' benchmarks
// name them: the key distribution of the queries, the share of queries that
// hit, and the table's occupancy (its load factor, --load).
#pragma once

namespace gphkv::bench {

enum class Distribution {
  kUniform,  // every stored key equally likely
  kZipf,     // TaoBench-like skew: the hottest 20% of keys take 82% of the queries
};

inline const char* distribution_name(Distribution d) { return d == Distribution::kZipf ? "zipf" : "uniform"; }

// One point of the lookup axes.
struct FindCase {
  int hit_pct;
  Distribution distribution;
};

// The table section's finds, in the order they are run and reported.
inline constexpr FindCase kFindCases[] = {
    {0, Distribution::kUniform}, {50, Distribution::kUniform}, {100, Distribution::kUniform},
    {0, Distribution::kZipf},    {50, Distribution::kZipf},    {100, Distribution::kZipf},
};

}  // namespace gphkv::bench
