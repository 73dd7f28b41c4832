// The data directory of a server with several partitions, as one: each
// partition keeps its own log and snapshots (DIR/partition-K), and Stats'
// top-level data_dir and the gphkv_log_* / gphkv_snapshot_* gauges show
// their totals. Counts and bytes add up; the sequence numbers too (they
// count each partition's batches); times are the worst partition's (the
// oldest snapshot, the longest recovery: what an operator alerts on); an
// error is the first partition's, named. With one partition, its own state.
#pragma once

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "server/store_durability.h"

namespace gphkv::server {

// parts[k] is partition k's, names[k] how messages name it.
DataDirStatus total_data_dir_status(const std::string& root, absl::Span<const DataDirStatus> parts,
                                    absl::Span<const std::string> names);

}  // namespace gphkv::server
