// The CUDA backend's value path: values in device memory, gets pipelined.
#include "server/cuda/device_gets.h"
#include "server/cuda/device_value_heap.h"
#include "server/value_path.h"

namespace gphkv::server {

absl::StatusOr<ValuePath> make_device_value_path(const StoreOptions& options) {
  auto heap = DeviceValueHeap::create(options.max_value_bytes, options.device);
  if (!heap.ok()) return heap.status();
  ValuePath path;
  if (options.gpu_pipeline_depth > 0) {
    auto gets = DeviceGets::create(heap->get(), options.gpu_pipeline_depth, options.time_get_stages,
                                   options.gpu_small_gets_keys, options.byte_key_hash_bits);
    if (!gets.ok()) return gets.status();
    path.gets = std::move(*gets);
  }
  path.heap = std::move(*heap);
  path.heap_kind = "device";
  return path;
}

}  // namespace gphkv::server
