// The last phases of the GPU bulk build (HashGraph §3 with GPH's cells, §6):
// every cell starts at (Φ=0, Δ=0); cells whose buckets overflow choose again in
// parallel rounds, then the rest one at a time; then the records, sorted by
// bucket, fill each bucket from slot 0.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "engine/cuda/bulk_build.h"
#include "engine/cuda/device_table.cuh"

namespace gphkv::engine::cuda {

// The distinct keys of a build, grouped by cell: cell c's records are
// [cell_begin[c], cell_begin[c + 1]).
struct CellRecords {
  const uint64_t* keys;
  const uint64_t* values;
  const uint32_t* cell_begin;  // L + 1
  uint64_t m;                  // records
  // Each record's bucket and each bucket's load (N) with every cell at
  // (Φ, Δ) = (0, 0), found by the caller while it grouped the records (one
  // pass fewer over them); settling updates both, and the placement sorts
  // `bucket` in place.
  uint32_t* bucket;
  uint32_t* load;
  // With BulkBuildConfig::pair_records: the records as (key, value) pairs,
  // which the placement reads instead of keys and values (then null).
  const ulonglong2* pairs = nullptr;
};

struct SettleResult {
  uint32_t parallel_rounds = 0;
  uint64_t cells_serial = 0;
  uint64_t cells_moved = 0;
  // Host wall time (ms) from the call to the first overflow scan's count, the
  // parallel rounds, the serial pass, the placement.
  double first_mark_ms = 0, rounds_ms = 0, serial_ms = 0, place_ms = 0;
  // With config.times set only (the stream waited for after each step): the
  // rounds' admission, choice, moves and overflow scans summed over rounds;
  // the placement's sort and its slot fill.
  double round_admit_ms = 0, round_choose_ms = 0, round_move_ms = 0, round_mark_ms = 0;
  double place_sort_ms = 0, place_fill_ms = 0;
};

// Chooses dst's cell bytes for `records` and places them into dst's buckets
// (dst's cells, keys and values are overwritten; its out-of-band slot and size
// are the caller's). RESOURCE_EXHAUSTED when some cell fits nowhere.
absl::Status settle_and_place(const DeviceTable& dst, const CellRecords& records, const BulkBuildConfig& config,
                              cudaStream_t stream, SettleResult* result);

}  // namespace gphkv::engine::cuda
