// TAOBench's published distributions, transcribed (not parsed at run time).
//
// Source: TAOBench (Cheng et al., PVLDB 15(9), 2022), github.com/audreyccheng/taobench:
// src/workload_a.json, and the "Example config (Workload O)" printed on the
// project's site (docs/overview/taobench_architecture.html in the same
// repository), which is workload_a.json's tables with workload O's operation
// and operation-type weights. docs/loadgen.md says what gphkv-loadgen takes
// from them and what it leaves out.
#pragma once

#include "absl/types/span.h"

namespace gphkv::loadgen::taobench {

// "operations" of workload O: single reads, single writes, read transactions,
// write transactions, in that order (8387 : 19 : 242 : 1).
inline constexpr double kWorkloadOSingleReads = 8387;
inline constexpr double kWorkloadOSingleWrites = 19;
inline constexpr double kWorkloadOReadTxns = 242;
inline constexpr double kWorkloadOWriteTxns = 1;

// "read_txn_sizes": weight of a read transaction of i + 1 operations at [i]
// (1 .. 500; size 1 has weight 0). Mean 19.18, median 4, p90 49, p99 241.
absl::Span<const double> ReadTxnSizeWeights();
// "write_txn_sizes": likewise for write transactions (1 .. 103). Mean 5.30.
absl::Span<const double> WriteTxnSizeWeights();
// "primary_shards": the weight of each of the 50 shards (constants::NUM_SHARDS)
// that a read's key is drawn from; the loader spreads keys evenly over them.
absl::Span<const double> PrimaryShardWeights();

}  // namespace gphkv::loadgen::taobench
