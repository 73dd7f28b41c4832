// Stands in for the CUDA backend in builds without nvcc.
#include "gphkv/engine/table.h"

namespace gphkv::engine {

absl::StatusOr<std::unique_ptr<Table>> make_cuda_table(const TableOptions&, int) {
  return absl::UnimplementedError("gphkv was built without the CUDA backend (nvcc was not found at configure time)");
}

int cuda_device_count() { return 0; }

std::string cuda_device_name(int) { return ""; }

}  // namespace gphkv::engine
