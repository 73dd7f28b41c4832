// The CUDA backend of the GPH table.
//
// Two faces: the Table interface (host spans, synchronous: copy in, launch,
// copy out, wait), and the StreamOrderedTable one (device pointers, *_async
// operations for callers that keep their batches on the device: the server's
// pipelined gets, the benchmark). The async operations enqueue work on the
// caller's stream and return; per-batch scratch is allocated stream-ordered
// (cudaMallocAsync), so nothing in them synchronizes the device or the host.
// Private to the engine: everything outside it reaches a CUDA table through
// gphkv/engine/stream_ordered_table.h (the engine's own white-box tests and
// engine_bench link gphkv_engine_internals).
//
// Layout: the Cell Index (L bytes in 32-byte groups of 28 cells and their
// spill flags), N*M slots bucket-major, each a (key, value) pair of 8-byte
// words (kEmptyKey in a vacant slot's key; a bucket's M pairs are one
// 16*M-byte block of 128-byte lines, and a key sits in its home line unless
// its cell's flag and that line's spill bit say otherwise, so a lookup, hit or
// miss, mostly reads one line), the spill bits, and one out-of-band slot for
// the key equal to kEmptyKey. Images (TableImage) keep a byte a cell and keys
// and values in arrays of their own, as the CPU backend's, so the two compare
// slot for slot.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/cuda/bulk_build.h"
#include "engine/cuda/device_table.cuh"
#include "engine/cuda/refinement.h"
#include "gphkv/cuda/device_buffer.h"
#include "gphkv/engine/stream_ordered_table.h"

namespace gphkv::engine::cuda {

class CudaTable final : public StreamOrderedTable {
 public:
  static absl::StatusOr<std::unique_ptr<CudaTable>> create(const TableOptions& options, int device);
  ~CudaTable() override;

  Backend backend() const override { return Backend::kCuda; }
  const TableOptions& options() const override { return options_; }
  const gph::Geometry& geometry() const override { return geo_; }

  absl::Status find(absl::Span<const uint64_t> keys, absl::Span<uint64_t> values, absl::Span<uint8_t> found) override;
  absl::Status insert_or_assign(absl::Span<const uint64_t> keys, absl::Span<const uint64_t> values,
                                absl::Span<UpsertOutcome> outcomes) override;
  absl::Status erase(absl::Span<const uint64_t> keys, absl::Span<uint8_t> erased) override;
  absl::Status clear() override;
  // The count as of the last synchronous operation or sync_size().
  uint64_t size() const override { return size_; }
  absl::StatusOr<std::vector<KeyValue>> export_pairs() const override;
  // Compacts the keys on the device a chunk of slots at a time
  // (kExportChunkSlots, through a staging array of that many keys) and copies
  // only the keys: no copy of the slot array, no filtering on the host.
  absl::Status export_keys(std::vector<uint64_t>* keys) const override;
  static constexpr uint64_t kExportChunkSlots = uint64_t{1} << 22;
  absl::StatusOr<TableImage> image() const override;
  absl::Status load_image(const TableImage& image) override;

  uint64_t relocations() const override { return stats_.moves; }

  // StreamOrderedTable.
  int device() const override { return device_; }
  absl::Status find_async(const uint64_t* keys, uint64_t n, uint64_t* values, uint8_t* found,
                          cudaStream_t stream) override;
  absl::Status insert_or_assign_async(const uint64_t* keys, const uint64_t* values, uint64_t n, UpsertOutcome* outcomes,
                                      cudaStream_t stream) override;
  absl::Status erase_async(const uint64_t* keys, uint64_t n, uint8_t* erased, cudaStream_t stream) override;
  absl::Status synchronize(cudaStream_t stream) override;
  uint64_t device_bytes() const override;

  // Replaces the contents with a HashGraph-style bulk build on the device
  // (engine/cuda/bulk_build.h): `base` pairs (distinct keys) plus the `burst`
  // writes applied after them in order, all in device memory. Runs on
  // `stream`, waiting for that stream (never the device) between phases;
  // returns when the table is built, with size() current. RESOURCE_EXHAUSTED
  // when the table is too small: the contents are then unspecified (clear()).
  absl::Status bulk_load(const KeyValue* base, uint64_t n, const WriteOp* burst, uint64_t n_burst, cudaStream_t stream,
                         BuildStats* stats = nullptr, const BulkBuildConfig& config = {});
  // The rebuild path: `source`'s pairs (read in place from its slots and its
  // out-of-band slot) plus `burst`. `source` must not change until it returns.
  absl::Status bulk_load_from(const CudaTable& source, const WriteOp* burst, uint64_t n_burst, cudaStream_t stream,
                              BuildStats* stats = nullptr, const BulkBuildConfig& config = {});
  // Host spans (bulk_build(Backend::kCuda, ...)), on a stream of its own at
  // the least priority; the table's own stream is at the greatest.
  absl::Status bulk_load(absl::Span<const KeyValue> base, absl::Span<const WriteOp> burst, BuildStats* stats);

  // Which transaction Refinement runs (refinement.h): a table starts with
  // default_refinement_kernel(geometry()); engine_bench and the tests run one
  // against the other. INVALID_ARGUMENT for kLanes on a geometry it does not
  // fit. Not while an insert of this table runs.
  absl::Status set_refinement_kernel(RefinementKernel kernel);
  RefinementKernel refinement_kernel() const { return refinement_shape_.kernel; }
  // The insert and erase paths' variants (refinement.h, InsertVariants; all
  // off by default), kept across set_refinement_kernel. Not while an insert
  // or erase of this table runs.
  void set_insert_variants(const InsertVariants& v) { refinement_shape_.variants = v; }
  const InsertVariants& insert_variants() const { return refinement_shape_.variants; }
  // Whether a batch of n keys finds its repeats by grouping (else by sorting).
  bool groups_repeats(uint64_t n) const;

  // Refinement's counters as of the last synchronous operation or synchronize().
  const RefinementStats& refinement_stats() const { return stats_; }

  // The table as kernels see it (device pointers and geometry), for kernels
  // outside the class: engine_bench's lookup shapes and L2 window.
  DeviceTable view() const;

 private:
  CudaTable(const TableOptions& options, const gph::Geometry& geometry, int device);
  absl::Status init();
  absl::Status reset_contents(cudaStream_t stream);
  absl::Status bulk_load_async_base(const BulkBase& base, uint64_t input_pairs, const WriteOp* burst, uint64_t n_burst,
                                    cudaStream_t stream, BuildStats* stats, const BulkBuildConfig& config);
  // Runs a synchronous operation on the table's own stream; on failure waits
  // for the stream so no copy still reads the caller's buffers.
  template <class Body>
  absl::Status run_sync(Body&& body);

  TableOptions options_;
  gph::Geometry geo_;
  int device_;
  uint64_t l2_bytes_ = 0;  // the device's L2, for RepeatFinder::kBySize
  cudaStream_t stream_ = nullptr;
  RefinementShape refinement_shape_;

  struct Counters {
    unsigned long long size;
    unsigned int fault;
    unsigned int pad;
    RefinementStats stats;
  };
  // Copies the slots (and the cells, when asked) and the out-of-band slot
  // to the host, on the table's stream, and waits.
  absl::Status copy_to_host(std::vector<uint64_t>* slots, std::vector<uint8_t>* cells, OutOfBandSlot* oob) const;

  gphkv::cuda::DeviceArray<uint8_t> cells_;
  gphkv::cuda::DeviceArray<uint64_t> slots_;  // 2 words a slot: key, value
  gphkv::cuda::DeviceArray<uint32_t> spill_;  // a bit per line of a bucket (device_table.cuh)
  gphkv::cuda::DeviceArray<OutOfBandSlot> oob_;
  gphkv::cuda::DeviceArray<Counters> counters_;
  gphkv::cuda::DeviceArray<uint32_t> locks_;
  uint64_t size_ = 0;
  RefinementStats stats_{};
};

}  // namespace gphkv::engine::cuda
