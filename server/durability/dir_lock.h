// The lock that keeps two servers off one data directory: an exclusive
// flock(2) on DIR/LOCK, held while the DirLock lives. The kernel drops it
// when the process dies, however it dies (kill -9 included), so a stale
// LOCK file never blocks a restart. The file holds the holder's pid for
// the error message of the one refused.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "server/durability/posix_file.h"

namespace gphkv::server::durability {

class DirLock {
 public:
  // FAILED_PRECONDITION, naming the directory and the holder's pid, when
  // another process (or another DirLock in this one) holds it.
  static absl::StatusOr<DirLock> acquire(const std::string& dir);

 private:
  explicit DirLock(File file) : file_(std::move(file)) {}
  File file_;
};

}  // namespace gphkv::server::durability
