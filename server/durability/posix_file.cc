#include "server/durability/posix_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace gphkv::server::durability {

absl::Status errno_error(int err, absl::string_view what, const std::string& path) {
  return absl::ErrnoToStatus(err, absl::StrCat(what, " ", path));
}

absl::StatusOr<File> File::open(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) return errno_error(errno, "cannot open", path);
  return File(fd, path);
}

File::File(File&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) { other.fd_ = -1; }

File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status File::append(std::initializer_list<std::string_view> pieces) {
  iovec iov[8];
  if (pieces.size() > 8) return absl::InvalidArgumentError("File::append takes at most 8 pieces");
  int n = 0;
  for (std::string_view p : pieces) {
    if (!p.empty()) iov[n++] = iovec{const_cast<char*>(p.data()), p.size()};
  }
  int first = 0;
  while (first < n) {
    const ssize_t w = ::writev(fd_, iov + first, n - first);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno_error(errno, "cannot write to", path_);
    }
    size_t left = static_cast<size_t>(w);
    while (first < n && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (first < n) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return absl::OkStatus();
}

absl::Status File::write_at(uint64_t offset, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t w = ::pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno_error(errno, absl::StrCat("cannot write at offset ", offset, " of"), path_);
    }
    bytes.remove_prefix(static_cast<size_t>(w));
    offset += static_cast<uint64_t>(w);
  }
  return absl::OkStatus();
}

absl::Status File::sync_data() {
  if (::fdatasync(fd_) != 0) return errno_error(errno, "cannot fdatasync", path_);
  return absl::OkStatus();
}

absl::Status File::start_writeback(uint64_t offset, uint64_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  if (::sync_file_range(fd_, static_cast<off64_t>(offset), static_cast<off64_t>(bytes), SYNC_FILE_RANGE_WRITE) != 0) {
    return errno_error(errno, absl::StrCat("cannot start writeback of ", bytes, " bytes at offset ", offset, " of"),
                       path_);
  }
  return absl::OkStatus();
}

absl::Status File::truncate(uint64_t size) {
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
    return errno_error(errno, absl::StrCat("cannot truncate to ", size, " bytes"), path_);
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> File::size() const {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return errno_error(errno, "cannot stat", path_);
  return static_cast<uint64_t>(st.st_size);
}

absl::Status File::close() {
  const int fd = fd_;
  fd_ = -1;
  if (fd >= 0 && ::close(fd) != 0) return errno_error(errno, "cannot close", path_);
  return absl::OkStatus();
}

absl::StatusOr<MappedFile> MappedFile::open(const std::string& path) {
  auto file = File::open(path, O_RDONLY);
  if (!file.ok()) return file.status();
  auto size = file->size();
  if (!size.ok()) return size.status();
  MappedFile m;
  m.path_ = path;
  if (*size == 0) return m;
  void* p = ::mmap(nullptr, *size, PROT_READ, MAP_PRIVATE, file->fd(), 0);
  if (p == MAP_FAILED) return errno_error(errno, "cannot map", path);
  ::madvise(p, *size, MADV_SEQUENTIAL);  // read once, front to back
  m.data_ = p;
  m.size_ = *size;
  return m;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_), path_(std::move(other.path_)) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = other.data_;
    size_ = other.size_;
    path_ = std::move(other.path_);
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

absl::Status sync_dir(const std::string& dir) {
  auto d = File::open(dir, O_RDONLY | O_DIRECTORY);
  if (!d.ok()) return d.status();
  if (::fsync(d->fd()) != 0) return errno_error(errno, "cannot fsync directory", dir);
  return absl::OkStatus();
}

absl::Status rename_file(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    return errno_error(errno, absl::StrCat("cannot rename ", to, " from"), from);
  return absl::OkStatus();
}

absl::Status remove_file(const std::string& path) {
  if (::unlink(path.c_str()) != 0) return errno_error(errno, "cannot remove", path);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> list_dir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return errno_error(errno, "cannot list directory", dir);
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name(e->d_name);
    if (name != "." && name != "..") names.emplace_back(name);
  }
  const int err = errno;
  ::closedir(d);
  if (err != 0) return errno_error(err, "cannot list directory", dir);
  return names;
}

absl::StatusOr<uint64_t> file_size(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return errno_error(errno, "cannot stat", path);
  return static_cast<uint64_t>(st.st_size);
}

absl::Status make_dirs(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return errno_error(ec.value(), "cannot create directory", dir);
  return absl::OkStatus();
}

absl::Status copy_prefix(const std::string& from, uint64_t bytes, const std::string& to) {
  auto src = MappedFile::open(from);
  if (!src.ok()) return src.status();
  if (bytes > src->bytes().size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot copy ", bytes, " bytes of ", from, ": it has ", src->bytes().size()));
  }
  auto dst = File::open(to, O_WRONLY | O_CREAT | O_TRUNC);
  if (!dst.ok()) return dst.status();
  if (auto s = dst->append({src->bytes().substr(0, bytes)}); !s.ok()) return s;
  return dst->sync_data();
}

std::string join_path(const std::string& dir, absl::string_view name) { return absl::StrCat(dir, "/", name); }

}  // namespace gphkv::server::durability
