// The value heap of the CUDA backend: value bytes in device memory.
//
// Slabs of at least kMinSlabBytes are cudaMalloc'd per size class (the same
// classes as HostValueHeap: 16, 24, 32, 48, ...); the free lists and all
// bookkeeping stay on the host, owned by the executor thread. A handle
// (server/cuda/device_handle.h) names the slab and slot and carries the
// length, so the get path needs nothing but the handles the lookup returns.
// The heap keeps a table of its slabs on the device for the kernels.
//
// Puts: write() stages the batch's concatenated bytes in pinned memory, makes
// one upload and one scatter kernel. Gets: DeviceGets (device_gets.h) runs
// lookup -> lengths -> prefix sum -> gather -> one download; gather() here is
// the synchronous form of the same gather, for the paths that have handles on
// the host (the rebuild overlay's, tests).
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "server/cuda/device_handle.h"
#include "server/cuda/pinned_buffer.h"
#include "server/value_heap.h"

namespace gphkv::server {

class DeviceValueHeap final : public ValueHeap {
 public:
  static constexpr uint32_t kMinClassBytes = 16;
  static constexpr uint64_t kMinSlabBytes = uint64_t{1} << 20;
  // One upload of a put batch stages at most this much (bigger batches go in chunks).
  static constexpr uint64_t kStageBytes = uint64_t{64} << 20;

  // INVALID_ARGUMENT if max_value_bytes is over what a handle can carry;
  // UNAVAILABLE/INTERNAL with CUDA's text if the device cannot be used.
  static absl::StatusOr<std::unique_ptr<DeviceValueHeap>> create(uint32_t max_value_bytes, int device);
  ~DeviceValueHeap() override;

  absl::StatusOr<ValueHandle> allocate(std::string_view bytes) override;
  absl::Status allocate_slots(absl::Span<const uint32_t> lengths, std::vector<ValueHandle>* handles) override;
  absl::Status write(absl::Span<const ValueHandle> handles, absl::Span<const std::string_view> bytes) override;
  void release(ValueHandle handle) override;
  uint32_t length(ValueHandle handle) const override { return device_handle::length(handle); }
  absl::Status gather(absl::Span<const ValueHandle> handles, std::string* out) const override;
  uint64_t reserved_bytes() const override { return reserved_; }
  uint64_t used_bytes() const override { return used_; }
  uint64_t live_values() const override { return live_; }

  uint32_t class_of(uint32_t length) const;
  uint32_t class_bytes(uint32_t size_class) const { return classes_[size_class].slot_bytes; }
  uint32_t num_classes() const { return static_cast<uint32_t>(classes_.size()); }
  // The slot size of the largest class holding a live value: no stored
  // value is longer (the get path sizes its download by it).
  uint32_t max_live_slot_bytes() const;
  // The slab table on the device, for kernels; valid until the next allocation.
  const DeviceSlab* device_slabs() const { return d_slabs_.at<DeviceSlab>(); }
  uint64_t slabs() const { return slabs_.size(); }
  int device() const { return device_; }

 private:
  struct SizeClass {
    uint32_t slot_bytes = 0;
    uint32_t slots_per_slab = 0;
    std::vector<uint64_t> free_slots;  // handles without length; LIFO
    uint64_t live = 0;
  };
  DeviceValueHeap(uint32_t max_value_bytes, int device);
  absl::Status init();
  absl::Status add_slab(uint32_t size_class);

  uint32_t max_value_bytes_;
  int device_;
  std::vector<SizeClass> classes_;
  std::vector<DeviceSlab> slabs_;  // host mirror of d_slabs_
  cuda::DeviceBytes d_slabs_;
  uint64_t d_slabs_capacity_ = 0;  // entries
  cudaStream_t stream_ = nullptr;
  // Upload staging (write) and the device copy it lands in. Mutable: the
  // const gather() stages through them too (one owner thread, no locks).
  mutable cuda::PinnedBuffer stage_;
  mutable cuda::DeviceBytes d_stage_;
  mutable cuda::DeviceBytes d_out_;
  uint64_t reserved_ = 0;
  uint64_t used_ = 0;
  uint64_t live_ = 0;
};

}  // namespace gphkv::server
