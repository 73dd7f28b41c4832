// The value heap of the CUDA backend: value bytes in device memory.
//
// Chunks of device memory (cudaMalloc, a multiple of kMinChunkBytes) carved
// into extents as the host heap's (server/extent_value_heap.h); the free
// extents and all bookkeeping stay on the host, owned by the executor thread.
// A handle (server/value_handle.h) names a value id and carries the length,
// so the get path needs nothing but the handles the lookup returns; the
// kernels find each id's bytes in a table on the device
// (server/cuda/device_locations.h).
//
// Puts: write() stages the batch's concatenated bytes in pinned memory, makes
// one upload and one place kernel (which also records where each value went).
// Compaction moves values with the same kernel, device to device. Gets:
// DeviceGets (device_gets.h) runs lookup -> lengths -> prefix sum -> gather ->
// one download; gather() here is the synchronous form of the same gather, for
// the paths that have handles on the host (the rebuild overlay's, tests).
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "gphkv/cuda/device_buffer.h"
#include "server/cuda/device_bulk_write.h"
#include "server/cuda/device_locations.h"
#include "server/cuda/pinned_buffer.h"
#include "server/cuda/value_kernels.h"
#include "server/extent_value_heap.h"

namespace gphkv::server {

class DeviceValueHeap final : public ExtentValueHeap {
 public:
  // cudaMalloc hands out large allocations in 2 MiB pages.
  static constexpr uint64_t kMinChunkBytes = uint64_t{2} << 20;
  // One upload of a put batch stages at most this much (bigger batches go in chunks).
  static constexpr uint64_t kStageBytes = uint64_t{64} << 20;

  // INVALID_ARGUMENT if max_value_bytes is over what a handle can carry;
  // UNAVAILABLE/INTERNAL with CUDA's text if the device cannot be used.
  static absl::StatusOr<std::unique_ptr<DeviceValueHeap>> create(uint32_t max_value_bytes, int device);
  ~DeviceValueHeap() override;

  absl::Status write(absl::Span<const ValueHandle> handles, absl::Span<const std::string_view> bytes) override;
  absl::Status gather(absl::Span<const ValueHandle> handles, std::string* out) const override;
  // The access bits in the place entries (device_locations.h), one kernel each.
  absl::Status mark_accessed(absl::Span<const ValueHandle> handles) override;
  absl::Status read_accessed(absl::Span<const ValueHandle> handles, std::vector<uint8_t>* bits) override;
  absl::Status clear_accessed(absl::Span<const ValueHandle> handles) override;
  // A bulk load's values: staged as they lie in device memory and copied a
  // run at a time, asynchronously (server/cuda/device_bulk_write.h).
  absl::Status write_bulk(absl::Span<const ValueHandle> handles, absl::Span<const std::string_view> bytes) override;
  absl::Status flush_writes() override;
  // Starts the staged bulk writes first: the freed id and extent may serve
  // the next value at once, whose place and bytes must land after theirs
  // (the locate kernel sets all of a slot's places at once, in no order).
  void release(ValueHandle handle) override {
    (void)settle_bulk();  // an error shows at flush_writes or the next copy
    ExtentValueHeap::release(handle);
  }

  // The id -> place table on the device, for kernels; valid until the next
  // allocate_slots (which may grow its directory).
  DeviceLocations device_locations() const { return DeviceLocations{directory_.get()}; }
  int device() const { return device_; }

 private:
  DeviceValueHeap(uint32_t max_value_bytes, int device);
  absl::Status init();
  absl::StatusOr<char*> map_chunk() override;
  void unmap_chunk(char* base) override;
  absl::Status move(absl::Span<const Move> moves, bool overlapping) override;
  // Copies each move's bytes with the place kernel (ranges must not overlap).
  absl::Status place_moves(absl::Span<const Move> moves);
  uint64_t id_table_bytes(uint64_t ids) const override;
  absl::Status reserve_ids(uint64_t ids) override;
  // Uploads the n staged [handles | from | to] (and `payload` value bytes
  // after them) and runs the place kernel; returns once it ran. `from`
  // points into the device copy of the staged bytes (write) or at values in
  // chunks (moves).
  // moving: compaction's moves, which keep their access bits (a write's
  // new values have theirs set).
  absl::Status place_staged(uint64_t n, uint64_t payload, bool moving);
  // Uploads the handles and runs the access kernel's `op`; with kRead,
  // downloads the bits into *bits. Returns once it ran.
  absl::Status access(absl::Span<const ValueHandle> handles, cuda::AccessOp op, std::vector<uint8_t>* bits);
  // Starts the copies of bulk-written values still staged, so that the
  // stream orders them before whatever the caller does next to the heap's
  // memory (write, move, gather, free).
  // (None once the destructor has waited for them.)
  absl::Status settle_bulk() const {
    return bulk_ == nullptr ? absl::OkStatus() : bulk_->submit_staged(device_locations());
  }

  int device_;
  cudaStream_t stream_ = nullptr;
  // The location table: device pages and their directory (host mirror in pages_).
  std::vector<char**> pages_;
  gphkv::cuda::DeviceArray<char**> directory_;
  // Upload staging (write, move) and the device copy it lands in. Mutable:
  // the const gather() stages through them too (one owner thread, no locks).
  mutable cuda::PinnedBuffer stage_;
  mutable cuda::DeviceBytes d_stage_;
  mutable cuda::DeviceBytes d_out_;
  // write_bulk's staging ring. Mutable: the const gather() settles it.
  mutable std::unique_ptr<cuda::DeviceBulkWrite> bulk_;
};

}  // namespace gphkv::server
