// The value heap: where value bytes live; the table's slot holds only a handle.
//
// Values are byte strings up to --max_value_bytes. The heaps keep them in
// extents carved from chunks (server/extent_value_heap.h): memory freed by any
// value serves values of any size, and a handle fits the table's 64-bit value.
// One owner (the executor thread) calls every method: no locks inside.
//
// ValueHeap is the interface; HostValueHeap serves the CPU backend, and
// DeviceValueHeap (server/cuda/, built with CUDA) keeps the chunks in device
// memory for the CUDA backend, where a kernel gathers a batch's values into
// one buffer that is copied out once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace gphkv::server {

// An opaque reference to one stored value: the table's 64-bit slot value
// (server/value_handle.h).
using ValueHandle = uint64_t;

class ValueHeap {
 public:
  virtual ~ValueHeap() = default;

  // Stores `bytes` (allocate_slots and write of one value). RESOURCE_EXHAUSTED,
  // with the sizes involved, when it would take reserved memory past limit().
  virtual absl::StatusOr<ValueHandle> allocate(std::string_view bytes) = 0;
  // Takes one slot per length, all or nothing: RESOURCE_EXHAUSTED (and no
  // change to any stored value, nothing reserved) when the slots would take
  // reserved memory past limit(); INVALID_ARGUMENT for a length over
  // max_value_bytes. May move stored values to make room (their handles stay
  // valid). The slots' bytes are undefined until write().
  virtual absl::Status allocate_slots(absl::Span<const uint32_t> lengths, std::vector<ValueHandle>* handles) = 0;
  // As allocate_slots, for a bulk load (recovery's, server/bulk_load.h): the
  // values go back to back into as few free extents as hold them, one
  // free-list operation per extent rather than per value. Not for the
  // serving path: it passes over the holes single values left.
  virtual absl::Status allocate_packed_slots(absl::Span<const uint32_t> lengths, std::vector<ValueHandle>* handles) {
    return allocate_slots(lengths, handles);
  }
  // Stores bytes[i] in handles[i]'s slot (bytes[i].size() must be the length
  // the slot was taken for). On a device: one upload of the concatenated bytes
  // and a place kernel; returns once they are stored.
  virtual absl::Status write(absl::Span<const ValueHandle> handles, absl::Span<const std::string_view> bytes) = 0;
  // For a bulk load: room for this many more values (a hint), so the
  // bookkeeping grows once instead of by doublings that copy it.
  virtual void reserve_values(uint64_t values) { (void)values; }
  // As write, for a bulk load's values (allocate_packed_slots'), which the
  // heap may store asynchronously: it may return before the bytes are
  // stored (the caller may reuse `bytes` at once), and flush_writes() waits
  // for them. Only flush_writes() may report a failure of such a write. No
  // get, gather or trim of these values before flush_writes().
  virtual absl::Status write_bulk(absl::Span<const ValueHandle> handles, absl::Span<const std::string_view> bytes) {
    return write(handles, bytes);
  }
  // Returns once every write_bulk is stored (or with the error that stopped one).
  virtual absl::Status flush_writes() { return absl::OkStatus(); }
  // Frees the handle's slot for values of any size.
  virtual void release(ValueHandle handle) = 0;
  // The stored value's byte length.
  virtual uint32_t length(ValueHandle handle) const = 0;
  // Where the value lies, as an order: values side by side in memory have
  // neighbouring places (the eviction's hand walks them so). 0 where the
  // heap keeps no such order.
  virtual uint64_t place(ValueHandle handle) const {
    (void)handle;
    return 0;
  }
  // Appends the stored bytes of each handle to `out`, in order: one contiguous
  // buffer for a whole batch (on a device, the gather kernel's job). Fails
  // only on a device error.
  virtual absl::Status gather(absl::Span<const ValueHandle> handles, std::string* out) const = 0;

  // CLOCK's access bits (issue 27, server/store_eviction.cc), one per stored
  // value: set when the value is stored or moved and when a get reads it;
  // the eviction's hand reads them and clears those it passes. The host heap
  // keeps them in its records, the device heap in each value's place entry,
  // where the CUDA get pipeline's kernels set them (cuda/device_locations.h).
  // A gather() sets none: snapshots and the sweep read values too.
  //
  // Sets the bits of values a get read on the host.
  virtual absl::Status mark_accessed(absl::Span<const ValueHandle> handles) = 0;
  // (*bits)[i] = 1 when handles[i]'s bit is set, else 0.
  virtual absl::Status read_accessed(absl::Span<const ValueHandle> handles, std::vector<uint8_t>* bits) = 0;
  virtual absl::Status clear_accessed(absl::Span<const ValueHandle> handles) = 0;

  // Seconds spent so far taking backing memory (mapping chunks, growing a
  // device's table of places): recovery's log line says how much of taking
  // its slots that was.
  virtual double backing_seconds() const { return 0; }
  // Bytes reserved from the backend's memory (chunks, whether used or free,
  // and the device's table of value places).
  virtual uint64_t reserved_bytes() const = 0;
  // Bytes of live values, each rounded up to its slot (8-byte granules).
  virtual uint64_t used_bytes() const = 0;
  // Number of live values.
  virtual uint64_t live_values() const = 0;
  // Gives freed memory back to the backend (an operator's Shrink): moves
  // values out of sparse chunks and releases every chunk left wholly free.
  // Returns the bytes released; fails only on a device error. All at once:
  // the server trims in steps instead (below), serving between them.
  virtual absl::StatusOr<uint64_t> trim() = 0;

  // The same trim, in steps of bounded work. begin_trim() starts one (or
  // starts over); each trim_step() moves the values of chunks holding about
  // `max_values` values in all (at least one chunk's, whatever its count)
  // and releases the chunks left wholly free. Puts, deletes and gets may run
  // between steps: a step works on the heap as it finds it.
  struct TrimProgress {
    uint64_t released_bytes = 0;  // by this step
    bool done = false;            // nothing left to move: trimming() is false
  };
  virtual void begin_trim() = 0;
  virtual bool trimming() const = 0;
  virtual absl::StatusOr<TrimProgress> trim_step(uint64_t max_values) = 0;

  // The cap on reserved_bytes(); the executor lowers it by what the table takes.
  void set_limit(uint64_t bytes) { limit_ = bytes; }
  uint64_t limit() const { return limit_; }

 protected:
  uint64_t limit_ = UINT64_MAX;
};

}  // namespace gphkv::server
