#include "server/durability/durability_options.h"

#include "absl/strings/str_cat.h"

namespace gphkv::server::durability {

absl::StatusOr<FsyncPolicy> parse_fsync_policy(absl::string_view name) {
  if (name == "always") return FsyncPolicy::kAlways;
  if (name == "everysec") return FsyncPolicy::kEverySec;
  if (name == "never") return FsyncPolicy::kNever;
  return absl::InvalidArgumentError(absl::StrCat("fsync policy '", name, "': expected always, everysec or never"));
}

const char* fsync_policy_name(FsyncPolicy policy) {
  switch (policy) {
    case FsyncPolicy::kAlways: return "always";
    case FsyncPolicy::kEverySec: return "everysec";
    case FsyncPolicy::kNever: return "never";
  }
  return "?";
}

absl::StatusOr<RecoverMode> parse_recover_mode(absl::string_view name) {
  if (name == "strict") return RecoverMode::kStrict;
  if (name == "skip-corrupt") return RecoverMode::kSkipCorrupt;
  return absl::InvalidArgumentError(absl::StrCat("recover mode '", name, "': expected strict or skip-corrupt"));
}

const char* recover_mode_name(RecoverMode mode) { return mode == RecoverMode::kStrict ? "strict" : "skip-corrupt"; }

}  // namespace gphkv::server::durability
