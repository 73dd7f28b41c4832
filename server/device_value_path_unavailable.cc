// Stands in for the CUDA value path (server/cuda/device_value_path.cc) in
// builds without nvcc, where the CUDA table cannot be made either.
#include "server/value_path.h"

namespace gphkv::server {

absl::StatusOr<ValuePath> make_device_value_path(const StoreOptions&) {
  return absl::UnimplementedError("gphkv was built without CUDA: no device value heap (nvcc was not found)");
}

}  // namespace gphkv::server
