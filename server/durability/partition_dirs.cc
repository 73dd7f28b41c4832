#include "server/durability/partition_dirs.h"

#include <fcntl.h>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "server/durability/file_names.h"
#include "server/durability/posix_file.h"

namespace gphkv::server::durability {
namespace {

constexpr char kPartitionPrefix[] = "partition-";

absl::Status count_mismatch(const std::string& root, const std::string& written, uint32_t partitions) {
  return absl::FailedPreconditionError(absl::StrCat(
      "--data_dir=", root, " was written by a server of ", written, ", this one has ", partitions,
      " partition(s) (one per GPU of --gpus, or --partitions on cpu): each key's partition is a hash of the key over "
      "the partition count, so the data would be read with the keys in the wrong places. Start with the count it "
      "was written with, or use another directory"));
}

// The count in DIR/PARTITIONS; 0 when there is none.
absl::StatusOr<uint32_t> written_count(const std::string& root) {
  const std::string path = join_path(root, kPartitionsFileName);
  if (!file_size(path).ok()) return 0u;
  auto file = MappedFile::open(path);
  if (!file.ok()) return file.status();
  const std::string text(file->bytes());
  uint32_t n = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &n) || n < 2) {
    return absl::DataLossError(
        absl::StrCat(path, " should hold a partition count of 2 or more, not '", absl::CEscape(text), "'"));
  }
  return n;
}

// Written before any partition's directory, and made durable (file and
// name), so a directory that holds partition-K folders always says how many.
absl::Status write_count(const std::string& root, uint32_t partitions) {
  const std::string path = join_path(root, kPartitionsFileName);
  const std::string temp = absl::StrCat(path, kTempSuffix);
  {
    auto file = File::open(temp, O_WRONLY | O_CREAT | O_TRUNC);
    if (!file.ok()) return file.status();
    const std::string text = absl::StrCat(partitions, "\n");
    if (absl::Status s = file->append({text}); !s.ok()) return s;
    if (absl::Status s = file->sync_data(); !s.ok()) return s;
    if (absl::Status s = file->close(); !s.ok()) return s;
  }
  if (absl::Status s = rename_file(temp, path); !s.ok()) return s;
  return sync_dir(root);
}

}  // namespace

absl::StatusOr<std::vector<std::string>> partition_dirs(const std::string& root, uint32_t partitions) {
  if (partitions == 0) return absl::InvalidArgumentError("a server has at least one partition");
  if (absl::Status s = make_dirs(root); !s.ok()) return s;
  auto written = written_count(root);
  if (!written.ok()) return written.status();
  auto names = list_dir(root);
  if (!names.ok()) return names.status();
  bool partition_folders = false;
  for (const std::string& name : *names) partition_folders |= absl::StartsWith(name, kPartitionPrefix);

  if (partitions == 1) {
    if (*written > 0) return count_mismatch(root, absl::StrCat(*written, " partitions"), partitions);
    if (partition_folders) {
      return count_mismatch(root, absl::StrCat("several partitions (it holds ", kPartitionPrefix, "K folders)"),
                            partitions);
    }
    return std::vector<std::string>{root};
  }

  if (*written == 0) {
    auto listing = list_data_dir(root);
    if (!listing.ok()) return listing.status();
    if (!listing->segments.empty() || !listing->snapshots.empty()) {
      return count_mismatch(root, "one partition (its log and snapshots lie in the directory itself)", partitions);
    }
    if (partition_folders) {
      return absl::FailedPreconditionError(absl::StrCat("--data_dir=", root, " holds ", kPartitionPrefix,
                                                        "K folders but no ", kPartitionsFileName,
                                                        " file to say how many partitions wrote them"));
    }
    if (absl::Status s = write_count(root, partitions); !s.ok()) return s;
  } else if (*written != partitions) {
    return count_mismatch(root, absl::StrCat(*written, " partitions"), partitions);
  }
  std::vector<std::string> dirs;
  dirs.reserve(partitions);
  for (uint32_t k = 0; k < partitions; ++k) dirs.push_back(join_path(root, absl::StrCat(kPartitionPrefix, k)));
  return dirs;
}

}  // namespace gphkv::server::durability
