#include "server/durability/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "server/durability/file_names.h"

namespace gphkv::server::durability {

absl::StatusOr<DirLock> DirLock::acquire(const std::string& dir) {
  const std::string path = join_path(dir, kLockName);
  auto file = File::open(path, O_RDWR | O_CREAT);
  if (!file.ok()) return file.status();
  if (::flock(file->fd(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return errno_error(errno, "cannot lock", path);
    char pid[32] = {};
    const ssize_t n = ::pread(file->fd(), pid, sizeof pid - 1, 0);
    return absl::FailedPreconditionError(absl::StrCat(
        "data directory ", dir, " is in use by another gphkv-server (pid ",
        n > 0 ? std::string(absl::StripAsciiWhitespace(absl::string_view(pid, static_cast<size_t>(n)))) : "unknown",
        ", from ", path, ")"));
  }
  if (auto s = file->truncate(0); !s.ok()) return s;
  if (auto s = file->write_at(0, absl::StrCat(::getpid(), "\n")); !s.ok()) return s;
  return DirLock(std::move(*file));
}

}  // namespace gphkv::server::durability
