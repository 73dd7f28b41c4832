// Owners of device memory, so that no error path leaks it.
//
// DeviceArray: storage (a table's, a get pipeline's buffers), cudaMalloc'd
// once (never managed memory).
// StreamScratch: per-batch scratch, cudaMallocAsync'd on the batch's stream
// and freed on the same stream, so a batch never forces a device-wide sync.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "gphkv/cuda/status.h"

namespace gphkv::cuda {

template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    reset();
    ptr_ = std::exchange(o.ptr_, nullptr);
    n_ = std::exchange(o.n_, 0);
    return *this;
  }
  ~DeviceArray() { reset(); }

  absl::Status allocate(size_t n) {
    reset();
    void* p = nullptr;
    GPHKV_CUDA_TRY(cudaMalloc(&p, (n == 0 ? 1 : n) * sizeof(T)));
    ptr_ = static_cast<T*>(p);
    n_ = n;
    return absl::OkStatus();
  }
  void reset() {
    if (ptr_ != nullptr) cudaFree(ptr_);  // destructor path: nothing useful to do with an error
    ptr_ = nullptr;
    n_ = 0;
  }
  T* get() const { return ptr_; }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }

 private:
  T* ptr_ = nullptr;
  size_t n_ = 0;
};

// One stream-ordered allocation carved into aligned pieces.
class StreamScratch {
 public:
  explicit StreamScratch(cudaStream_t stream) : stream_(stream) {}
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  ~StreamScratch() {
    if (base_ != nullptr) cudaFreeAsync(base_, stream_);
  }

  // Reserves `n` elements of T in the layout; call before allocate().
  template <class T>
  size_t reserve(size_t n) {
    const size_t at = (bytes_ + 255) & ~size_t{255};
    bytes_ = at + n * sizeof(T);
    return at;
  }
  absl::Status allocate() {
    GPHKV_CUDA_TRY(cudaMallocAsync(&base_, bytes_ == 0 ? 1 : bytes_, stream_));
    return absl::OkStatus();
  }
  template <class T>
  T* at(size_t offset) const {
    return reinterpret_cast<T*>(static_cast<char*>(base_) + offset);
  }

 private:
  cudaStream_t stream_;
  void* base_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace gphkv::cuda
