// The files of a data directory:
//
//   LOCK                               held (flock) by the server using the directory
//   log-<first sequence>.gphkv         a log segment: batches <first sequence>, +1, ...
//   snapshot-<sequence>.gphkv          every pair after batches 1..<sequence>
//   snapshot-<sequence>.gphkv.tmp      a snapshot being written (left by a crash: removed at start)
//   <name>.corrupt[.N]                 a file set aside by --recover=skip-corrupt
//
// Sequence numbers are written with 20 digits, so names sort as numbers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gphkv::server::durability {

std::string log_segment_name(uint64_t first_sequence);
std::string snapshot_name(uint64_t sequence);
inline constexpr char kTempSuffix[] = ".tmp";
inline constexpr char kLockName[] = "LOCK";

struct NumberedFile {
  uint64_t sequence = 0;
  std::string path;
};

// What a directory holds, each list sorted by sequence (ascending).
struct DirListing {
  std::vector<NumberedFile> segments;
  std::vector<NumberedFile> snapshots;
  std::vector<std::string> temps;  // unfinished snapshots
};
absl::StatusOr<DirListing> list_data_dir(const std::string& dir);

// `path` + ".corrupt", or ".corrupt.2", ... : the first name not taken.
std::string corrupt_name(const std::string& path);

}  // namespace gphkv::server::durability
