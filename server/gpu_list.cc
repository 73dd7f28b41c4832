#include "server/gpu_list.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gphkv::server {

absl::StatusOr<std::optional<std::vector<int>>> parse_gpu_list(const std::string& text) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  if (trimmed == "all") return std::optional<std::vector<int>>();
  if (trimmed.empty()) {
    return absl::InvalidArgumentError(
        "--gpus is empty: give 'all' or a comma list of CUDA device ids, e.g. --gpus=0,1");
  }
  std::vector<int> ids;
  for (absl::string_view item : absl::StrSplit(trimmed, ',')) {
    item = absl::StripAsciiWhitespace(item);
    int id = -1;
    if (!absl::SimpleAtoi(item, &id) || id < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--gpus=", text, ": '", item,
                                                     "' is not a CUDA device id (a number from 0); give 'all' or a "
                                                     "comma list such as 0,1"));
    }
    if (std::find(ids.begin(), ids.end(), id) != ids.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--gpus=", text, ": device ", id, " is listed twice (one partition per device)"));
    }
    ids.push_back(id);
  }
  return std::optional<std::vector<int>>(std::move(ids));
}

absl::StatusOr<std::vector<int>> resolve_gpus(const std::optional<std::vector<int>>& ids, int device_count) {
  if (device_count <= 0) {
    return absl::FailedPreconditionError("--backend=cuda: the CUDA runtime reports no device");
  }
  if (!ids.has_value()) {
    std::vector<int> all(static_cast<size_t>(device_count));
    for (int d = 0; d < device_count; ++d) all[d] = d;
    return all;
  }
  for (int id : *ids) {
    if (id >= device_count) {
      return absl::InvalidArgumentError(absl::StrCat("--gpus: there is no CUDA device ", id, "; the runtime reports ",
                                                     device_count, " (ids 0 to ", device_count - 1, ")"));
    }
  }
  return *ids;
}

}  // namespace gphkv::server
