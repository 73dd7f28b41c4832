#include "server/value_path.h"

#include "server/host_value_heap.h"

namespace gphkv::server {

absl::StatusOr<ValuePath> make_value_path(const StoreOptions& options) {
  if (options.backend == engine::Backend::kCuda) return make_device_value_path(options);
  auto heap = HostValueHeap::create(options.max_value_bytes);
  if (!heap.ok()) return heap.status();
  ValuePath path;
  path.heap = std::move(*heap);
  return path;
}

}  // namespace gphkv::server
