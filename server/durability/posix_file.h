// The POSIX file calls the durability files make, as absl::Status: every
// error names the path (and the offset where one matters) and errno's text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gphkv::server::durability {

// errno as a Status: "<what> <path>: <strerror>", with errno's code
// (ENOSPC is RESOURCE_EXHAUSTED, ENOENT NOT_FOUND, ...).
absl::Status errno_error(int err, absl::string_view what, const std::string& path);

// An open file descriptor; closed by the destructor.
class File {
 public:
  // open(2) with `flags` (O_CLOEXEC is added) and mode 0644.
  static absl::StatusOr<File> open(const std::string& path, int flags);
  File() = default;
  File(File&& other) noexcept;
  File& operator=(File&& other) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  // Writes all of `pieces` (at most 8) at the file offset, retrying short
  // writes and EINTR.
  absl::Status append(std::initializer_list<std::string_view> pieces);
  absl::Status write_at(uint64_t offset, std::string_view bytes);
  // fdatasync(2): the data, and the size, are on the device.
  absl::Status sync_data();
  // sync_file_range(2) with SYNC_FILE_RANGE_WRITE: starts writing the dirty
  // pages of [offset, offset + bytes) to the device and returns without
  // waiting for them (it may wait for a full request queue). Promises
  // nothing about durability: only a later sync_data does; it just leaves
  // that sync less to write.
  absl::Status start_writeback(uint64_t offset, uint64_t bytes);
  absl::Status truncate(uint64_t size);
  absl::StatusOr<uint64_t> size() const;
  absl::Status close();

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  File(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

// A whole file mapped read-only (empty files map to an empty view).
class MappedFile {
 public:
  static absl::StatusOr<MappedFile> open(const std::string& path);
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  ~MappedFile();

  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }
  const std::string& path() const { return path_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

// fsync(2) of a directory, so the files created, renamed or removed in it
// stay so after a crash.
absl::Status sync_dir(const std::string& dir);
absl::Status rename_file(const std::string& from, const std::string& to);
absl::Status remove_file(const std::string& path);
// The names in `dir` (no "." or "..").
absl::StatusOr<std::vector<std::string>> list_dir(const std::string& dir);
absl::StatusOr<uint64_t> file_size(const std::string& path);
// mkdir -p.
absl::Status make_dirs(const std::string& dir);
// Copies the first `bytes` bytes of `from` into a new file `to` and syncs it.
absl::Status copy_prefix(const std::string& from, uint64_t bytes, const std::string& to);

// `dir` + "/" + `name`.
std::string join_path(const std::string& dir, absl::string_view name);

}  // namespace gphkv::server::durability
