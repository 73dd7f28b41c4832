#include "server/cuda/device_bulk_write.h"

#include "gphkv/cuda/status.h"
#include "server/cuda/value_kernels.h"

namespace gphkv::server::cuda {

DeviceBulkWrite::~DeviceBulkWrite() {
  // Destructor path: nothing useful to do with an error. The pinned buffers
  // must not be freed under a copy in flight (cudaFreeHost waits anyway).
  cudaSetDevice(device_);
  cudaStreamSynchronize(stream_);
  for (Slot& s : slots_) {
    if (s.done != nullptr) cudaEventDestroy(s.done);
  }
}

absl::Status DeviceBulkWrite::open_slot() {
  Slot& s = slots_[current_];
  if (s.in_flight) {
    // The ring is full: the host has staged kSlots slots ahead of the device.
    GPHKV_CUDA_TRY(cudaEventSynchronize(s.done));
    s.in_flight = false;
  }
  if (s.done == nullptr) GPHKV_CUDA_TRY(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming));
  GPHKV_RETURN_IF_ERROR(s.head.reserve(12 * kSlotValues + 24 * kSlotRuns));
  GPHKV_RETURN_IF_ERROR(s.bytes.reserve(kSlotBytes));
  s.values = s.runs = s.used = 0;
  open_ = true;
  next_to_ = nullptr;
  return absl::OkStatus();
}

absl::Status DeviceBulkWrite::add_slow(uint64_t handle, std::string_view bytes, char* to, uint64_t chunk,
                                       uint64_t extent, DeviceLocations locations) {
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  if (!open_) GPHKV_RETURN_IF_ERROR(open_slot());
  {
    const Slot& s = slots_[current_];
    const bool fits = s.values < kSlotValues && s.runs < kSlotRuns && s.used + extent <= kSlotBytes;
    if (!fits && s.values > 0) {
      GPHKV_RETURN_IF_ERROR(submit(locations));
      GPHKV_RETURN_IF_ERROR(open_slot());
    }
  }
  Slot& s = slots_[current_];
  // A new run starts here (its bytes are staged from s.used on).
  s.run_first()[s.runs] = s.values;
  s.run_to()[s.runs] = to;
  s.run_staged()[s.runs] = s.used;
  ++s.runs;
  run_chunk_ = chunk;
  if (extent <= kSlotBytes) {
    stage(s, handle, bytes, extent);
    next_to_ = to + extent;
    return absl::OkStatus();
  }
  // Larger than a slot (values up to 32 MiB): straight from the caller's
  // memory. From pageable memory cudaMemcpyAsync returns once the source is
  // read, so `bytes` may be reused as for any other value. Its run stages no
  // bytes, only the place; the next value starts a run of its own.
  GPHKV_CUDA_TRY(cudaMemcpyAsync(to, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, stream_));
  const uint64_t v = s.values++;
  s.handles()[v] = handle;
  s.offsets()[v] = 0;
  next_to_ = nullptr;
  return absl::OkStatus();
}

absl::Status DeviceBulkWrite::submit(DeviceLocations locations) {
  Slot& s = slots_[current_];
  // Each run's bytes, staged back to back, in one copy to their place.
  for (uint64_t r = 0; r < s.runs; ++r) {
    const uint64_t from = s.run_staged()[r];
    const uint64_t to = r + 1 < s.runs ? s.run_staged()[r + 1] : s.used;
    if (to > from) {
      GPHKV_CUDA_TRY(cudaMemcpyAsync(s.run_to()[r], s.bytes.data() + from, to - from, cudaMemcpyHostToDevice, stream_));
    }
  }
  // The head region as laid out in the slot, only the parts in use.
  const uint64_t head = 12 * kSlotValues + 24 * kSlotRuns;
  GPHKV_RETURN_IF_ERROR(d_head_.reserve(head));
  char* h = s.head.data();
  char* d = d_head_.at();
  GPHKV_CUDA_TRY(cudaMemcpyAsync(d, h, 8 * s.values, cudaMemcpyHostToDevice, stream_));
  GPHKV_CUDA_TRY(
      cudaMemcpyAsync(d + 8 * kSlotValues, h + 8 * kSlotValues, 4 * s.values, cudaMemcpyHostToDevice, stream_));
  for (uint64_t part = 0; part < 2; ++part) {
    const uint64_t at = 12 * kSlotValues + part * 8 * kSlotRuns;
    GPHKV_CUDA_TRY(cudaMemcpyAsync(d + at, h + at, 8 * s.runs, cudaMemcpyHostToDevice, stream_));
  }
  GPHKV_CUDA_TRY(launch_locate(locations, d_head_.at<uint64_t>(), d_head_.at<uint32_t>(8 * kSlotValues), s.values,
                               d_head_.at<uint64_t>(12 * kSlotValues),
                               d_head_.at<char* const>(12 * kSlotValues + 8 * kSlotRuns), s.runs, stream_));
  GPHKV_CUDA_TRY(cudaEventRecord(s.done, stream_));
  s.in_flight = true;
  current_ = (current_ + 1) % kSlots;
  open_ = false;
  next_to_ = nullptr;
  return absl::OkStatus();
}

absl::Status DeviceBulkWrite::flush(DeviceLocations locations) {
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  GPHKV_RETURN_IF_ERROR(submit_staged(locations));
  open_ = false;
  next_to_ = nullptr;
  GPHKV_CUDA_TRY(cudaStreamSynchronize(stream_));
  // The load is over: the pinned memory goes back (a later load pins it again).
  for (Slot& s : slots_) {
    s.in_flight = false;
    s.head.reset();
    s.bytes.reset();
  }
  d_head_ = DeviceBytes();
  return absl::OkStatus();
}

}  // namespace gphkv::server::cuda
