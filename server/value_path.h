// Where a store keeps its values and how its gets read them, by backend: on
// the CPU a host value heap and synchronous gets only; on CUDA a device value
// heap and, at --gpu_pipeline_depth > 0, pipelined gets (server/cuda/). The
// CUDA side is built only with nvcc; without it a stand-in
// (device_value_path_unavailable.cc) answers UNIMPLEMENTED, as the engine's
// cuda_unavailable.cc does for the table.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "server/get_pipeline.h"
#include "server/store_options.h"
#include "server/value_heap.h"

namespace gphkv::server {

struct ValuePath {
  std::unique_ptr<ValueHeap> heap;
  std::unique_ptr<GetPipeline> gets;  // null: every get takes the synchronous path
  const char* heap_kind = "host";     // "device" (CUDA memory) or "host"
};

// The value path of options.backend.
absl::StatusOr<ValuePath> make_value_path(const StoreOptions& options);

// The CUDA backend's: server/cuda/device_value_path.cc, or the stand-in.
absl::StatusOr<ValuePath> make_device_value_path(const StoreOptions& options);

}  // namespace gphkv::server
