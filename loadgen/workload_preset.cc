#include "loadgen/workload_preset.h"

#include "absl/strings/str_cat.h"
#include "loadgen/taobench_tables.h"

namespace gphkv::loadgen {

absl::StatusOr<WorkloadOptions> WorkloadPreset(const std::string& name) {
  WorkloadOptions o;  // its defaults are the default preset
  o.preset = name;
  if (name == "default") return o;
  if (name == "taobench-o") {
    namespace t = taobench;
    const double writes = t::kWorkloadOSingleWrites + t::kWorkloadOWriteTxns;
    o.write_fraction = writes / (t::kWorkloadOSingleReads + t::kWorkloadOReadTxns + writes);
    o.delete_fraction = 0;  // workload O's write types: adds and updates, no deletes
    o.read_batch = "taobench-o-read";
    o.write_batch = "taobench-o-write";
    // TAOBench writes every row as a BIGINT timestamp and a 150-byte value
    // (constants::VALUE_SIZE_BYTES), objects and edges alike.
    o.object_value = "158";
    o.association_value = "158";
    o.association_fraction = 0.5;  // workload O's single reads: 479 object vs 475 edge reads
    o.popularity = "shards";
    o.shard_weights = "taobench";
    return o;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown --workload '", name, "' (want default or taobench-o)"));
}

}  // namespace gphkv::loadgen
