// --gpus: which CUDA devices the server runs a partition on. "all" (the
// default) is every device the CUDA runtime reports; otherwise a comma list
// of device ids ("0,1"), each once, in the order given (partition k is the
// k-th id).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gphkv::server {

// The ids of `text`, or nullopt for "all". INVALID_ARGUMENT for an empty
// list, an empty item, an id that is not a number >= 0, or one repeated.
absl::StatusOr<std::optional<std::vector<int>>> parse_gpu_list(const std::string& text);

// The devices to use: `ids` (nullopt: all of them) checked against the
// device_count devices visible. INVALID_ARGUMENT naming the id and the
// devices there are; FAILED_PRECONDITION when there is none.
absl::StatusOr<std::vector<int>> resolve_gpus(const std::optional<std::vector<int>>& ids, int device_count);

}  // namespace gphkv::server
