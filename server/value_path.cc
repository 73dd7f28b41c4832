#include "server/value_path.h"

namespace gphkv::server {

absl::StatusOr<ValuePath> make_value_path(const StoreOptions& options) {
  if (options.backend == engine::Backend::kCuda) return make_device_value_path(options);
  ValuePath path;
  path.heap = std::make_unique<HostValueHeap>(options.max_value_bytes);
  return path;
}

}  // namespace gphkv::server
