// The stream-ordered face of a table whose slots live in GPU memory (the CUDA
// backend implements it): device pointers in and out, the work enqueued on
// the caller's CUDA stream, nothing waited for. For owners that keep a batch
// on the device from upload to download: the server's pipelined gets, the
// engine's benchmark. Table::stream_ordered() hands it out, so no owner needs
// to know the backend's class. Like Table, not safe for concurrent calls.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "gphkv/engine/table.h"

// cudaStream_t is a CUstream_st*: the same type, without the CUDA headers, so
// that code built without nvcc can name this interface.
struct CUstream_st;

namespace gphkv::engine {

using CudaStream = CUstream_st*;

class StreamOrderedTable : public Table {
 public:
  // The CUDA device that holds the table.
  virtual int device() const = 0;

  // Each enqueues its work on `stream` and returns. find_async writes
  // values[i] only where found[i] = 1; outcomes are UpsertOutcome bytes.
  // Pointers must stay valid until the stream reaches the work; size() and
  // relocations() catch up at the next synchronize() or synchronous call.
  virtual absl::Status find_async(const uint64_t* keys, uint64_t n, uint64_t* values, uint8_t* found,
                                  CudaStream stream) = 0;
  virtual absl::Status insert_or_assign_async(const uint64_t* keys, const uint64_t* values, uint64_t n,
                                              UpsertOutcome* outcomes, CudaStream stream) = 0;
  virtual absl::Status erase_async(const uint64_t* keys, uint64_t n, uint8_t* erased, CudaStream stream) = 0;

  // Waits for `stream`, refreshes size() and relocations() from the device's
  // counters and reports a kernel's broken invariant (INTERNAL) if one was seen.
  virtual absl::Status synchronize(CudaStream stream) = 0;

  // Device bytes the table holds (cells, keys, values, locks).
  virtual uint64_t device_bytes() const = 0;

  StreamOrderedTable* stream_ordered() override { return this; }
};

}  // namespace gphkv::engine
