// Writes a snapshot file (snapshot_format.h) from the pairs a PairSource
// yields: into snapshot-<sequence>.gphkv.tmp, synced, then renamed and the
// directory synced, so a crash at any point leaves the previous snapshot
// whole and the new one either absent or complete.
//
// The snapshot of `sequence` may be fuzzy: it must hold, for every key that
// no batch after `sequence` writes, that key's value (once or more); a key
// that a later batch writes may hold any value or be missing, because
// recovery replays the log from sequence + 1 over it and every batch sets
// whole values. So a store can hand its pairs over in chunks between
// batches while it keeps serving, without a copy of its whole state.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "server/durability/pairs.h"
#include "server/durability/snapshot_format.h"

namespace gphkv::server::durability {

struct SnapshotInfo {
  std::string path;
  SnapshotHeader header;
  uint64_t file_bytes = 0;
  double seconds = 0;  // from the first pair asked for to the directory synced
};

// On any error (the source's included) the temporary file is removed and
// nothing else changed.
absl::StatusOr<SnapshotInfo> write_snapshot(const std::string& dir, uint64_t sequence, PairSource& source,
                                            uint64_t block_bytes);

}  // namespace gphkv::server::durability
