// CUDA errors as absl::Status: every runtime call and every launch in the
// CUDA backend and the server's CUDA data path goes through these, so a
// failure carries CUDA's own text and the place it happened, and nothing is
// thrown across a module boundary.
#pragma once

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gphkv::cuda {

inline absl::Status cuda_status(cudaError_t err, const char* what, const char* file, int line) {
  if (err == cudaSuccess) return absl::OkStatus();
  std::string msg =
      absl::StrCat(what, ": ", cudaGetErrorName(err), ": ", cudaGetErrorString(err), " (", file, ":", line, ")");
  // Out of memory is the caller's to act on (grow elsewhere, shed load); the rest are device faults.
  if (err == cudaErrorMemoryAllocation) return absl::ResourceExhaustedError(msg);
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver || err == cudaErrorInvalidDevice) {
    return absl::UnavailableError(msg);
  }
  return absl::InternalError(msg);
}

// cudaGetLastError, which a launcher reads for its launch's error (and CUB
// reads with cudaPeekAtLastError), also returns an error that an earlier
// runtime call already returned to its own caller, such as a refused
// cudaMalloc: a launcher calls this first, so that it reports only its own.
inline void clear_stale_launch_error() { (void)cudaGetLastError(); }

}  // namespace gphkv::cuda

// Returns from the enclosing function with a Status when the CUDA call fails.
#define GPHKV_CUDA_TRY(expr)                                                                                 \
  do {                                                                                                       \
    cudaError_t gphkv_err_ = (expr);                                                                         \
    if (gphkv_err_ != cudaSuccess) return ::gphkv::cuda::cuda_status(gphkv_err_, #expr, __FILE__, __LINE__); \
  } while (0)

// After a <<<...>>> launch: launch-configuration errors surface here, at once.
#define GPHKV_CUDA_TRY_LAUNCH(name) GPHKV_CUDA_TRY(cudaGetLastError())

// Propagates a non-OK absl::Status.
#define GPHKV_RETURN_IF_ERROR(expr)        \
  do {                                     \
    ::absl::Status gphkv_st_ = (expr);     \
    if (!gphkv_st_.ok()) return gphkv_st_; \
  } while (0)
