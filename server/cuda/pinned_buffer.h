// Page-locked host memory (cudaHostAlloc) that grows on demand: the staging
// buffers of uploads and downloads, so cudaMemcpyAsync is a true DMA that
// overlaps kernels instead of a staged, host-blocking copy.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <utility>

#include "gphkv/cuda/device_buffer.h"
#include "gphkv/cuda/status.h"

namespace gphkv::server::cuda {

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  ~PinnedBuffer() { reset(); }

  // Makes room for at least `bytes` (contents are lost when it grows). It at
  // least doubles: freeing pinned memory waits for the device and pinning
  // megabytes takes milliseconds, so slowly rising needs must not pay it
  // each time.
  absl::Status reserve(size_t bytes) {
    if (bytes <= bytes_) return absl::OkStatus();
    const size_t want = std::max({bytes, 2 * bytes_, size_t{4096}});
    reset();
    void* p = nullptr;
    GPHKV_CUDA_TRY(cudaHostAlloc(&p, want, cudaHostAllocDefault));
    ptr_ = static_cast<char*>(p);
    bytes_ = want;
    return absl::OkStatus();
  }
  void reset() {
    if (ptr_ != nullptr) cudaFreeHost(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  char* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  char* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Device memory that grows on demand: the engine's DeviceArray (cudaMalloc,
// never managed memory) with PinnedBuffer's growth rule.
class DeviceBytes {
 public:
  // As PinnedBuffer::reserve: at least doubles (cudaFree waits for the device).
  absl::Status reserve(size_t bytes) {
    if (bytes <= array_.size() && array_.get() != nullptr) return absl::OkStatus();
    return array_.allocate(std::max({bytes, 2 * array_.size(), size_t{256}}));
  }
  template <class T = char>
  T* at(size_t offset = 0) const {
    return reinterpret_cast<T*>(array_.get() + offset);
  }
  size_t bytes() const { return array_.size(); }

 private:
  gphkv::cuda::DeviceArray<char> array_;
};

}  // namespace gphkv::server::cuda
