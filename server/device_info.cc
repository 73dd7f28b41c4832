#include "server/device_info.h"

#ifdef GPHKV_HAVE_CUDA
#include <cuda_runtime.h>

#include "engine/cuda/cuda_table.h"
#endif

namespace gphkv::server {

std::string cuda_device_name(int device) {
#ifdef GPHKV_HAVE_CUDA
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    (void)cudaGetLastError();  // clear it: the caller falls back to "cuda:N"
    return "";
  }
  return prop.name;
#else
  (void)device;
  return "";
#endif
}

uint64_t table_relocations(const engine::Table& table) {
#ifdef GPHKV_HAVE_CUDA
  if (const auto* t = dynamic_cast<const engine::cuda::CudaTable*>(&table)) return t->refinement_stats().moves;
#endif
  (void)table;
  return 0;
}

}  // namespace gphkv::server
