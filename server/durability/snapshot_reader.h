// Recovery's half of snapshots: checks a snapshot file and hands its pairs
// to the sink, block by block.
//
// Under RecoverMode::kStrict any damage (bad magic, header or block CRC,
// malformed pairs, fewer blocks or pairs than the header counts, bytes
// after the last block) is DATA_LOSS naming the file and offset; pairs of
// the blocks before it were delivered already (the caller resets the sink).
// Under kSkipCorrupt a damaged header is still an error (nothing in the file
// can be placed); a format version this build does not read is
// UNIMPLEMENTED under either mode, while a damaged block is skipped up to the next intact
// block and noted in `dropped`, with the pairs lost.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/durability/durability_options.h"
#include "server/durability/file_names.h"
#include "server/durability/pairs.h"
#include "server/durability/snapshot_format.h"

namespace gphkv::server::durability {

struct SnapshotLoad {
  SnapshotHeader header;
  uint64_t pairs = 0;  // delivered
  uint64_t bytes_read = 0;
  std::vector<std::string> dropped;  // kSkipCorrupt
};

// `file.sequence` is the one its name gives; the header must agree.
absl::StatusOr<SnapshotLoad> load_snapshot(const NumberedFile& file, RecoverMode mode, RecoverySink& sink);

}  // namespace gphkv::server::durability
