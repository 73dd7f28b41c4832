#include "engine/cpu/bulk_builder.h"
#include "engine/cpu/cpu_table.h"
#include "gphkv/engine/table.h"

namespace gphkv::engine {

absl::StatusOr<std::unique_ptr<Table>> make_table(Backend backend, const TableOptions& options,
                                                  int device) {
  if (backend == Backend::kCuda) return make_cuda_table(options, device);
  return make_cpu_table(options);
}

absl::StatusOr<std::unique_ptr<Table>> bulk_build(Backend backend, const TableOptions& options,
                                                  absl::Span<const KeyValue> base,
                                                  absl::Span<const WriteOp> burst, BuildStats* stats,
                                                  int device) {
  auto geometry = make_geometry(options);
  if (!geometry.ok()) return geometry.status();
  cpu::WorkerPool pool(options.cpu_threads);
  auto image = cpu::bulk_build_image(*geometry, base, burst, pool, stats);
  if (!image.ok()) return image.status();
  if (backend == Backend::kCpu) return std::unique_ptr<Table>(new cpu::CpuTable(options, std::move(*image)));
  // Other backends load the image the CPU built (a device-side build is a
  // backend's own business and replaces this path where it exists).
  auto table = make_table(backend, options, device);
  if (!table.ok()) return table.status();
  if (auto s = (*table)->load_image(*image); !s.ok()) return s;
  return table;
}

}  // namespace gphkv::engine
