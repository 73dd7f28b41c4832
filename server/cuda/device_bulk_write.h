// The device value heap's bulk write (ValueHeap::write_bulk): a bulk load's
// values, which allocate_packed_slots put back to back in device memory,
// copied in few large transfers that overlap the host's work.
//
// Why not the ordinary write(): it stages three words per value (handle,
// source, destination) beside the bytes, runs the place kernel to copy each
// value out of the staged bytes, and waits for the device, once per snapshot
// block (about 4096 pairs): 3.5-4.3 s of a 10^8-key restart on the H100 host
// (docs/durability.md). Here the values are staged in pinned memory exactly
// as they will lie in device memory (each at its extent, granule-padded), so
// a run of values that are neighbours there is one cudaMemcpyAsync straight
// into the heap's chunk; per value only the handle and its offset in its run
// are staged, for a small kernel that records each value's place
// (cuda::launch_locate). Staging goes round a ring of kSlots pinned buffers:
// the host fills one while the device copies the others, and waits only when
// the ring is full. flush() waits for everything.
//
// One owner thread, the heap's; all copies and kernels go on the heap's
// stream, so a later write(), move or gather sees these bytes in place.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "absl/status/status.h"
#include "server/cuda/device_locations.h"
#include "server/cuda/pinned_buffer.h"
#include "server/value_handle.h"

namespace gphkv::server::cuda {

class DeviceBulkWrite {
 public:
  // Pinned buffers in the ring: enough that the host rarely waits for the
  // device, few enough that the pinned memory (kSlots x about 24 MiB, held
  // only until flush()) stays small.
  static constexpr int kSlots = 4;
  // A slot stages up to this many value bytes, values and runs.
  static constexpr uint64_t kSlotBytes = uint64_t{16} << 20;
  static constexpr uint64_t kSlotValues = uint64_t{1} << 19;
  static constexpr uint64_t kSlotRuns = uint64_t{1} << 12;

  DeviceBulkWrite(int device, cudaStream_t stream) : device_(device), stream_(stream) {}
  ~DeviceBulkWrite();
  DeviceBulkWrite(const DeviceBulkWrite&) = delete;
  DeviceBulkWrite& operator=(const DeviceBulkWrite&) = delete;

  // Queues `bytes` for the value `handle` at device address `to` in the
  // heap's chunk `chunk`, its extent of `extent` bytes (its length rounded up
  // to the heap's granule). May return before they are copied; `bytes` may be
  // reused at once.
  absl::Status add(uint64_t handle, std::string_view bytes, char* to, uint64_t chunk, uint64_t extent,
                   DeviceLocations locations) {
    Slot& s = slots_[current_];
    // The common case: the next neighbour of the run being staged. A run
    // stays in one chunk: two chunks (two cudaMallocs) can be neighbours in
    // the address space, but one copy may not span both (cudaErrorInvalidValue).
    if (s.runs > 0 && to == next_to_ && chunk == run_chunk_ && s.values < kSlotValues &&
        s.used + extent <= kSlotBytes) {
      stage(s, handle, bytes, extent);
      next_to_ = to + extent;
      return absl::OkStatus();
    }
    return add_slow(handle, bytes, to, chunk, extent, locations);
  }
  // Starts the copies of the values staged so far, without waiting: before
  // any other write, move, gather or free of the heap's memory, which the
  // stream then orders after them.
  absl::Status submit_staged(DeviceLocations locations) {
    return open_ && slots_[current_].values > 0 ? submit(locations) : absl::OkStatus();
  }
  // Returns once every value added is stored and its place recorded, or with
  // the device error that stopped one; gives the pinned buffers back.
  absl::Status flush(DeviceLocations locations);

 private:
  // What a slot's head region holds, in this order: per value its handle
  // (u64) and its offset in its run (u32); per run the index of its first
  // value (u64), its device address, and where its bytes are staged (u64).
  struct Slot {
    PinnedBuffer head;   // kSlotValues x 12 + kSlotRuns x 24 bytes
    PinnedBuffer bytes;  // kSlotBytes
    cudaEvent_t done = nullptr;
    bool in_flight = false;
    uint64_t values = 0, runs = 0, used = 0;
    uint64_t* handles() const { return reinterpret_cast<uint64_t*>(head.data()); }
    uint32_t* offsets() const { return reinterpret_cast<uint32_t*>(head.data() + 8 * kSlotValues); }
    uint64_t* run_first() const { return reinterpret_cast<uint64_t*>(head.data() + 12 * kSlotValues); }
    char** run_to() const { return reinterpret_cast<char**>(run_first() + kSlotRuns); }
    uint64_t* run_staged() const { return run_first() + 2 * kSlotRuns; }
  };

  void stage(Slot& s, uint64_t handle, std::string_view bytes, uint64_t extent) {
    const uint64_t v = s.values++;
    s.handles()[v] = handle;
    s.offsets()[v] = static_cast<uint32_t>(s.used - s.run_staged()[s.runs - 1]);
    if (!bytes.empty()) std::memcpy(s.bytes.data() + s.used, bytes.data(), bytes.size());
    s.used += extent;
  }
  // A new run, a full slot, the ring's first use, or a value larger than a slot.
  absl::Status add_slow(uint64_t handle, std::string_view bytes, char* to, uint64_t chunk, uint64_t extent,
                        DeviceLocations locations);
  // Makes slot `current_` empty and its buffers ready (waiting for its last copies).
  absl::Status open_slot();
  // Starts the copies and the locate kernel of the current slot, then moves
  // on to the next slot of the ring.
  absl::Status submit(DeviceLocations locations);

  int device_;
  cudaStream_t stream_;
  std::array<Slot, kSlots> slots_;
  int current_ = 0;
  bool open_ = false;  // slots_[current_] is ready to stage into
  char* next_to_ = nullptr;
  uint64_t run_chunk_ = 0;  // the heap chunk of the run being staged
  // The device copy of a slot's head region (one at a time: the stream
  // orders each upload after the kernel that read the one before).
  DeviceBytes d_head_;
};

}  // namespace gphkv::server::cuda
