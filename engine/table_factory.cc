#include "engine/cpu/bulk_builder.h"
#include "engine/cpu/cpu_table.h"
#include "gphkv/engine/table.h"

#if defined(GPHKV_HAVE_CUDA)
#include "engine/cuda/bulk_table.h"
#endif

namespace gphkv::engine {

absl::StatusOr<std::unique_ptr<Table>> make_table(Backend backend, const TableOptions& options, int device) {
  if (backend == Backend::kCuda) return make_cuda_table(options, device);
  return make_cpu_table(options);
}

absl::StatusOr<std::unique_ptr<Table>> bulk_build(Backend backend, const TableOptions& options,
                                                  absl::Span<const KeyValue> base, absl::Span<const WriteOp> burst,
                                                  BuildStats* stats, int device) {
  auto geometry = make_geometry(options);
  if (!geometry.ok()) return geometry.status();
#if defined(GPHKV_HAVE_CUDA)
  // The CUDA backend builds on the device (engine/cuda/bulk_build.h).
  if (backend == Backend::kCuda) return cuda::bulk_build_table(options, base, burst, stats, device);
#endif
  cpu::WorkerPool pool(options.cpu_threads);
  auto image = cpu::bulk_build_image(*geometry, base, burst, pool, stats);
  if (!image.ok()) return image.status();
  if (backend == Backend::kCpu) return std::unique_ptr<Table>(new cpu::CpuTable(options, std::move(*image)));
  // A backend without a build of its own (CUDA in a build without nvcc, where
  // make_table() answers UNIMPLEMENTED) loads the image the CPU built.
  auto table = make_table(backend, options, device);
  if (!table.ok()) return table.status();
  if (auto s = (*table)->load_image(*image); !s.ok()) return s;
  return table;
}

}  // namespace gphkv::engine
