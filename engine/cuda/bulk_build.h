// HashGraph-style bulk build of a GPH table on the GPU (HashGraph §3 on the
// device; GPH §6's invariants hold on the result). From device arrays of base
// pairs and burst writes: dedupe the burst (stable radix sort, last write
// wins), group the surviving pairs by cell (a radix sort by cell: HashGraph
// V2's binning), choose the (Φ, Δ) of every cell whose buckets overflow in
// parallel rounds, settle the few left one at a time, and place the keys bucket by bucket (a
// radix sort by bucket, then every slot written in order). docs/gph.md, "Bulk
// build", has the measurements.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "engine/cuda/device_table.cuh"
#include "gphkv/engine/table.h"

namespace gphkv::engine::cuda {

// Where the base pairs come from, in device memory: an array of KeyValue
// (distinct keys; kEmptyKey there is the sentinel key, kept out of band), or a
// table's slots (DeviceTable::slots: kEmptyKey marks a vacant slot; the
// sentinel key is in that table's out-of-band slot). Both are (key, value)
// pairs of words.
struct BulkBase {
  const uint64_t* keys = nullptr;  // element i at keys[i * stride]
  const uint64_t* values = nullptr;
  uint32_t stride = 1;
  uint64_t n = 0;
  const OutOfBandSlot* oob = nullptr;  // non-null: table slots

  static BulkBase pairs(const KeyValue* kv, uint64_t n) {
    BulkBase b;
    b.keys = reinterpret_cast<const uint64_t*>(kv);
    b.values = b.keys + 1;
    b.stride = 2;
    b.n = n;
    return b;
  }
  static BulkBase slots(const uint64_t* slots, uint64_t n, const OutOfBandSlot* oob) {
    BulkBase b;
    b.keys = slots;
    b.values = slots + 1;
    b.stride = 2;
    b.n = n;
    b.oob = oob;
    return b;
  }
};

// Host wall time of the build's phases, each ending where the build waits
// for its stream anyway (so taking them adds no wait), in ms.
struct BulkBuildTimes {
  double dedupe = 0;      // the burst's stable sort and unique-by-key
  double group = 0;       // survivors grouped by cell (count+scan, or sort), up to the record count
  double first_mark = 0;  // scatter/gather of the records, locate at (0,0), the first overflow scan
  double rounds = 0;      // the parallel rounds of (Φ, Δ) choice
  double serial = 0;      // the serial pass and its check
  double place = 0;       // placement into the buckets
  // Finer steps, timed by waiting for the stream after each (so only in the
  // run that asks for times): the rounds' admission, choice, moves and
  // overflow scans summed over rounds; the placement's sort and slot fill.
  double round_admit = 0, round_choose = 0, round_move = 0, round_mark = 0;
  double place_sort = 0, place_fill = 0;
};

// One path per step, each the one that won its measurement (H100,
// engine_bench --sections=build, bench/results/engine_bench_build_h100_da7a0063e549.json;
// docs/gph.md, "Bulk build"; the losers left the engine after 5e5ab89, and
// git history keeps them):
// - grouping by a radix sort on the cell id (HashGraph V2's binning): 35.0 ms
//   against 63.9 ms for V1's atomic count per cell on 10^8 unique pairs, 417
//   against 694 ms on 10^9;
// - placement by a radix sort of the records by bucket, then every slot
//   written in order: 35.0 against 43.8 ms for an atomic cursor per bucket;
// - the overflow scan over one bit per bucket, a warp per 32 cells: 35.0
//   against 35.4 (bits, a thread per cell) and 38.6 ms (loads, a thread per cell).
struct BulkBuildConfig {
  // Parallel rounds of (Φ, Δ) choice at most; the cells still overflowing
  // after them are settled one at a time (exact, so the build always ends).
  uint32_t max_parallel_rounds = 32;
  // Go to the serial pass as soon as this few overflowing cells remain.
  uint64_t serial_cells = 256;
  // When set, filled with the phases' times.
  BulkBuildTimes* times = nullptr;
  // Records keep each key beside its value (16 B pairs, besides the keys
  // alone that the cell choice reads), so that the placement's random read
  // of a record is one 16-byte load instead of a key and a value from two
  // arrays; 8 B more a record at the build's peak. On the H100 it took a
  // 10^8-pair build from 37.0 to 35.1 ms, and a 10^9-pair build ran out of
  // memory with it, hence not always: on when set, else by the free memory
  // when the records are allocated (pair_records_when_free).
  bool pair_records = false;
  // Pair records whenever the device's free memory at the records'
  // allocation holds them and the rest of the build's peak with room to
  // spare (bulk_build.cu, pair_records_fit): on at 10^8 pairs on the H100,
  // off at 10^9 (engine_bench --bulk_variants; docs/gph.md).
  bool pair_records_when_free = true;
};

// Whether pair records (BulkBuildConfig::pair_records_when_free) fit in
// `free_bytes` of device memory at the records' allocation, for m records
// into `buckets` buckets (bulk_build.cu says what it counts).
bool pair_records_fit(uint64_t m, uint64_t buckets, size_t free_bytes);

// Fills `dst` (its cells, buckets, out-of-band slot and size counter) with
// `base` plus the `burst` writes applied after it, in order (for a key written
// more than once the last write wins; an erase removes it). `burst` is device
// memory. Runs on `stream`; it waits for `stream` (never the device) where the
// host must see a count (after the dedupe, after the grouping and once per
// round of cell choice), and returns when the table is built.
// RESOURCE_EXHAUSTED when the keys exceed the slots or a cell fits under no
// (Φ, Δ) (dst's contents are then unspecified); INVALID_ARGUMENT past 2^31 - 1
// inputs. `input_pairs` is what stats->input_pairs reports for the base.
absl::Status bulk_build_device(const DeviceTable& dst, const BulkBase& base, const WriteOp* burst, uint64_t n_burst,
                               uint64_t input_pairs, const BulkBuildConfig& config, cudaStream_t stream,
                               BuildStats* stats);

}  // namespace gphkv::engine::cuda
