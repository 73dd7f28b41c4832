// Named workloads (--workload): each is a full set of WorkloadOptions that
// explicit flags then override one by one.
//
//   default     the TaoBench-style load gphkv-loadgen has always run: 99.8%
//               reads as batched gets (workload A's transaction sizes, mean
//               19.5 keys), Zipf popularity calibrated to "top 20% get 82%",
//               ETC object values (docs/loadgen.md, section 1)
//   taobench-o  TAOBench's workload O, the overall TAO workload: 96.97%
//               single-key reads, 2.80% read transactions of 2-500 keys,
//               0.23% writes (a single key, or rarely a write transaction),
//               reads split evenly between objects and associations, keys
//               drawn TAOBench's way (weighted shards), 150-byte values
//               behind an 8-byte timestamp (docs/loadgen.md, section 1.1)
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "loadgen/workload.h"

namespace gphkv::loadgen {

absl::StatusOr<WorkloadOptions> WorkloadPreset(const std::string& name);

}  // namespace gphkv::loadgen
