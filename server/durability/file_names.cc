#include "server/durability/file_names.h"

#include <unistd.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "server/durability/posix_file.h"

namespace gphkv::server::durability {
namespace {

constexpr char kLogPrefix[] = "log-";
constexpr char kSnapshotPrefix[] = "snapshot-";
constexpr char kExtension[] = ".gphkv";
constexpr size_t kDigits = 20;

// The sequence of "<prefix><20 digits>.gphkv", or false.
bool parse_numbered(absl::string_view name, absl::string_view prefix, uint64_t* sequence) {
  if (!absl::ConsumePrefix(&name, prefix) || !absl::ConsumeSuffix(&name, kExtension)) return false;
  return name.size() == kDigits && std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
         absl::SimpleAtoi(name, sequence);
}

}  // namespace

std::string log_segment_name(uint64_t first_sequence) {
  return absl::StrFormat("%s%020u%s", kLogPrefix, first_sequence, kExtension);
}

std::string snapshot_name(uint64_t sequence) {
  return absl::StrFormat("%s%020u%s", kSnapshotPrefix, sequence, kExtension);
}

absl::StatusOr<DirListing> list_data_dir(const std::string& dir) {
  auto names = list_dir(dir);
  if (!names.ok()) return names.status();
  DirListing listing;
  for (const std::string& name : *names) {
    uint64_t seq = 0;
    if (parse_numbered(name, kLogPrefix, &seq)) {
      listing.segments.push_back({seq, join_path(dir, name)});
    } else if (parse_numbered(name, kSnapshotPrefix, &seq)) {
      listing.snapshots.push_back({seq, join_path(dir, name)});
    } else if (absl::StartsWith(name, kSnapshotPrefix) && absl::EndsWith(name, kTempSuffix)) {
      listing.temps.push_back(join_path(dir, name));
    }
  }
  auto by_sequence = [](const NumberedFile& a, const NumberedFile& b) { return a.sequence < b.sequence; };
  std::sort(listing.segments.begin(), listing.segments.end(), by_sequence);
  std::sort(listing.snapshots.begin(), listing.snapshots.end(), by_sequence);
  std::sort(listing.temps.begin(), listing.temps.end());
  return listing;
}

std::string corrupt_name(const std::string& path) {
  std::string name = absl::StrCat(path, ".corrupt");
  for (int n = 2; ::access(name.c_str(), F_OK) == 0; ++n) name = absl::StrCat(path, ".corrupt.", n);
  return name;
}

}  // namespace gphkv::server::durability
