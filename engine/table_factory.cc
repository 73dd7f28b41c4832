#include "gphkv/engine/table.h"

namespace gphkv::engine {

absl::StatusOr<std::unique_ptr<Table>> make_table(Backend backend, const TableOptions& options,
                                                  int device) {
  if (backend == Backend::kCuda) return make_cuda_table(options, device);
  return make_cpu_table(options);
}

}  // namespace gphkv::engine
