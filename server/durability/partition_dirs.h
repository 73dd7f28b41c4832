// Where each partition of a server keeps its data under --data_dir, and the
// check that the directory was written with the same partition count (a key's
// partition is a hash of the key modulo the count, server/key_placement.h:
// read with another count, a partition would hold keys it is never asked for).
//
//   one partition:     DIR itself, the layout of every server before
//                      partitions (so existing data directories load as they are)
//   N > 1 partitions:  DIR/PARTITIONS (the count, "N\n", written first),
//                      DIR/partition-0 .. DIR/partition-(N-1), each a data
//                      directory of its own (log, snapshots, LOCK)
//
// Refused, with FAILED_PRECONDITION naming both counts: a count other than
// DIR/PARTITIONS's; N > 1 over a DIR that holds one partition's log or
// snapshots; one partition over a DIR with a PARTITIONS file or
// partition-K folders. Moving data between layouts is not done here: start a
// server with the old count and copy the keys through a client.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gphkv::server::durability {

inline constexpr char kPartitionsFileName[] = "PARTITIONS";

// The directory of each partition, in partition order, once `root` was
// checked for (and, for N > 1, marked with) `partitions`; creates root.
absl::StatusOr<std::vector<std::string>> partition_dirs(const std::string& root, uint32_t partitions);

}  // namespace gphkv::server::durability
