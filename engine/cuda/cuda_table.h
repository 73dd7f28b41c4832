// The CUDA backend of the GPH table.
//
// Two faces: the Table interface (host spans, synchronous: copy in, launch,
// copy out, wait), and device-pointer, stream-ordered *_async operations for
// callers that keep their batches on the device (the server's executor, the
// benchmark). The async operations enqueue work on the caller's stream and
// return; per-batch scratch is allocated stream-ordered (cudaMallocAsync), so
// nothing in them synchronizes the device or the host.
//
// Layout (the same as the CPU backend, so images compare slot for slot): the
// Cell Index (L bytes), keys[N*M] and values[N*M] bucket-major, kEmptyKey in a
// vacant key slot, and one out-of-band slot for the key equal to kEmptyKey.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/cuda/bulk_build.h"
#include "engine/cuda/device_buffer.h"
#include "engine/cuda/device_table.cuh"
#include "engine/cuda/lookup.h"
#include "engine/cuda/refinement.h"
#include "gphkv/engine/table.h"

namespace gphkv::engine::cuda {

class CudaTable final : public Table {
 public:
  static absl::StatusOr<std::unique_ptr<CudaTable>> create(const TableOptions& options, int device);
  ~CudaTable() override;

  Backend backend() const override { return Backend::kCuda; }
  const TableOptions& options() const override { return options_; }
  const gph::Geometry& geometry() const override { return geo_; }

  absl::Status find(absl::Span<const uint64_t> keys, absl::Span<uint64_t> values,
                    absl::Span<uint8_t> found) override;
  absl::Status insert_or_assign(absl::Span<const uint64_t> keys, absl::Span<const uint64_t> values,
                                absl::Span<UpsertOutcome> outcomes) override;
  absl::Status erase(absl::Span<const uint64_t> keys, absl::Span<uint8_t> erased) override;
  absl::Status clear() override;
  // The count as of the last synchronous operation or sync_size().
  uint64_t size() const override { return size_; }
  absl::StatusOr<std::vector<KeyValue>> export_pairs() const override;
  absl::StatusOr<TableImage> image() const override;
  absl::Status load_image(const TableImage& image) override;

  // Device pointers, stream-ordered. find_async writes values[i] only where
  // found[i] = 1. outcomes are UpsertOutcome bytes. Pointers must stay valid
  // until the stream reaches the work.
  absl::Status find_async(const uint64_t* keys, uint64_t n, uint64_t* values, uint8_t* found,
                          cudaStream_t stream);
  absl::Status insert_or_assign_async(const uint64_t* keys, const uint64_t* values, uint64_t n,
                                      UpsertOutcome* outcomes, cudaStream_t stream);
  absl::Status erase_async(const uint64_t* keys, uint64_t n, uint8_t* erased, cudaStream_t stream);

  // Replaces the contents with a HashGraph-style bulk build on the device
  // (engine/cuda/bulk_build.h): `base` pairs (distinct keys) plus the `burst`
  // writes applied after them in order, all in device memory. Runs on
  // `stream`, waiting for that stream (never the device) between phases;
  // returns when the table is built, with size() current. RESOURCE_EXHAUSTED
  // when the table is too small: the contents are then unspecified (clear()).
  absl::Status bulk_load(const KeyValue* base, uint64_t n, const WriteOp* burst, uint64_t n_burst,
                         cudaStream_t stream, BuildStats* stats = nullptr, const BulkBuildConfig& config = {});
  // The rebuild path: `source`'s pairs (read in place from its slots and its
  // out-of-band slot) plus `burst`. `source` must not change until it returns.
  absl::Status bulk_load_from(const CudaTable& source, const WriteOp* burst, uint64_t n_burst, cudaStream_t stream,
                              BuildStats* stats = nullptr, const BulkBuildConfig& config = {});
  // Host spans (bulk_build(Backend::kCuda, ...)), on a stream of its own at
  // the least priority; the table's own stream is at the greatest.
  absl::Status bulk_load(absl::Span<const KeyValue> base, absl::Span<const WriteOp> burst, BuildStats* stats);

  // Waits for `stream`, refreshes size() from the device's count and reports a
  // kernel's broken invariant (INTERNAL) if one was seen.
  absl::Status synchronize(cudaStream_t stream);

  // Refinement's counters as of the last synchronous operation or synchronize().
  const RefinementStats& refinement_stats() const { return stats_; }

  // Keeps the Cell Index in L2 for lookups: sets aside persisting L2 lines
  // (a device-wide limit) and launches lookups with an access-policy window
  // over the cells. Off by default: on the H100 it sped misses up by 7% and
  // 50%-hit lookups by 1%, but the set-aside (31 MB of 50 MB of L2 at 10^8
  // keys) is taken from every other kernel: a build that does not use it at
  // all ran 3x slower (docs/gph.md, "Tuning on the H100"). Off resets the
  // limit and the persisting lines.
  absl::Status set_cell_persistence(bool on);

  // Lookup launch shape (|g|, block); for tuning.
  void set_lookup_shape(LookupShape shape) { lookup_shape_ = shape; }
  LookupShape lookup_shape() const { return lookup_shape_; }
  int device() const { return device_; }
  // Device bytes the table holds (cells, keys, values, locks).
  uint64_t device_bytes() const;

 private:
  CudaTable(const TableOptions& options, const gph::Geometry& geometry, int device);
  absl::Status init();
  absl::Status reset_contents(cudaStream_t stream);
  absl::Status reserve_l2_for_cells();
  absl::Status bulk_load_async_base(const BulkBase& base, uint64_t input_pairs, const WriteOp* burst,
                                    uint64_t n_burst, cudaStream_t stream, BuildStats* stats,
                                    const BulkBuildConfig& config);
  DeviceTable view() const;
  // Runs a synchronous operation on the table's own stream; on failure waits
  // for the stream so no copy still reads the caller's buffers.
  template <class Body>
  absl::Status run_sync(Body&& body);

  TableOptions options_;
  gph::Geometry geo_;
  int device_;
  cudaStream_t stream_ = nullptr;
  LookupShape lookup_shape_;
  CellWindow cell_window_;
  RefinementShape refinement_shape_;

  struct Counters {
    unsigned long long size;
    unsigned int fault;
    unsigned int pad;
    RefinementStats stats;
  };
  DeviceArray<uint8_t> cells_;
  DeviceArray<uint64_t> keys_;
  DeviceArray<uint64_t> values_;
  DeviceArray<OutOfBandSlot> oob_;
  DeviceArray<Counters> counters_;
  DeviceArray<uint32_t> locks_;
  uint64_t size_ = 0;
  RefinementStats stats_{};
};

}  // namespace gphkv::engine::cuda
