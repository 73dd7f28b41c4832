// The CPU backend of the GPH table: the same layout and hashes as the CUDA
// backend, run on all cores. It serves machines without a GPU and is the
// reference the CUDA backend is tested against.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/cpu/worker_pool.h"
#include "gphkv/engine/table.h"

namespace gphkv::engine::cpu {

class CpuTable final : public Table {
 public:
  CpuTable(const TableOptions& options, const gph::Geometry& geometry);
  // Takes over a built image's arrays without copying them (bulk_build).
  CpuTable(const TableOptions& options, TableImage&& image);

  Backend backend() const override { return Backend::kCpu; }
  const TableOptions& options() const override { return options_; }
  const gph::Geometry& geometry() const override { return geo_; }

  absl::Status find(absl::Span<const uint64_t> keys, absl::Span<uint64_t> values, absl::Span<uint8_t> found) override;
  absl::Status insert_or_assign(absl::Span<const uint64_t> keys, absl::Span<const uint64_t> values,
                                absl::Span<UpsertOutcome> outcomes) override;
  absl::Status erase(absl::Span<const uint64_t> keys, absl::Span<uint8_t> erased) override;
  absl::Status clear() override;
  uint64_t size() const override { return size_; }
  absl::StatusOr<std::vector<KeyValue>> export_pairs() const override;
  absl::Status export_keys(std::vector<uint64_t>* keys) const override;
  absl::StatusOr<TableImage> image() const override;
  absl::Status load_image(const TableImage& image) override;
  WorkerPool& pool() { return pool_; }

 private:
  // Indices of a batch's keys grouped by the worker that owns their cell,
  // each group in batch order. A key always goes to one worker, so repeats of
  // a key within a batch are applied in order by that worker alone.
  using OwnerLists = std::vector<std::vector<std::vector<uint32_t>>>;  // [chunk][owner]
  OwnerLists partition_by_owner(absl::Span<const uint64_t> keys);

  // GPH §6.1 Direct Insert into `bucket` (the key's one bucket) for a key of
  // a cell this worker owns: overwrite, or claim a vacant slot with a
  // compare-and-swap. False when the bucket is full.
  bool direct_insert(uint64_t key, uint64_t value, uint32_t bucket, UpsertOutcome* outcome);
  // GPH §6.1 Extended Move: re-choose (Φ, Δ) of `cell` so its keys and the new
  // one fit among its R buckets, and relocate them. Runs single-threaded.
  bool extended_move(uint64_t key, uint64_t value, uint32_t cell);
  // Occupied slots of `bucket` that hold keys of cells other than `cell`.
  uint32_t others_in_bucket(uint32_t bucket, uint32_t cell) const;

  uint64_t* bucket_keys(uint32_t b) { return keys_.data() + static_cast<uint64_t>(b) * geo_.slots_per_bucket; }
  uint64_t* bucket_values(uint32_t b) { return values_.data() + static_cast<uint64_t>(b) * geo_.slots_per_bucket; }
  const uint64_t* bucket_keys(uint32_t b) const {
    return keys_.data() + static_cast<uint64_t>(b) * geo_.slots_per_bucket;
  }
  void count_size();

  TableOptions options_;
  gph::Geometry geo_;
  std::vector<uint8_t> cells_;
  std::vector<uint64_t> keys_;    // N * M, kEmptyKey when vacant
  std::vector<uint64_t> values_;  // N * M
  bool has_empty_key_ = false;    // the out-of-band slot for key == kEmptyKey
  uint64_t empty_key_value_ = 0;
  uint64_t size_ = 0;
  // Scratch space of extended_move(): the moving cell's pairs and old slots.
  std::vector<uint64_t> move_keys_, move_values_;
  std::vector<uint64_t*> move_slots_;
  WorkerPool pool_;
};

}  // namespace gphkv::engine::cpu
