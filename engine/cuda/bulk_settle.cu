// HashGraph §3's choose-and-place phases for a GPH table on the GPU. The
// parallel rounds follow the CPU builder (engine/cpu/bulk_builder.cc): in every
// crowded bucket the cells already there keep their room first, the cells that
// just moved next; the cells that lose choose a new (Φ, Δ) with GPH §6.1's
// Extended Move planner, all against the same loads, and move together.
#include "engine/cuda/bulk_settle.h"

#include <algorithm>
#include <chrono>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "absl/strings/str_cat.h"
#include "gphkv/cuda/device_buffer.h"
#include "gphkv/cuda/status.h"
#include "gphkv/engine/detail/move_planner.h"

namespace gphkv::engine::cuda {
namespace {

using ::gphkv::cuda::StreamScratch;

constexpr int kBlock = 256;

unsigned grid_for(uint64_t n) {
  return static_cast<unsigned>(std::clamp<uint64_t>((n + kBlock - 1) / kBlock, 1, uint64_t{1} << 16));
}

// Appends `item` to `list` where `pred` holds, with one atomic per warp. Every
// lane of the warp must call it (the loops below keep warps converged).
__device__ __forceinline__ void warp_append(bool pred, uint32_t item, uint32_t* list, uint32_t* count) {
  const unsigned mask = __ballot_sync(0xffffffffu, pred);
  if (mask == 0) return;
  const unsigned lane = threadIdx.x & 31u;
  const int leader = __ffs(static_cast<int>(mask)) - 1;
  uint32_t first = 0;
  if (static_cast<int>(lane) == leader) first = atomicAdd(count, static_cast<uint32_t>(__popc(mask)));
  first = __shfl_sync(0xffffffffu, first, leader);
  if (pred) list[first + __popc(mask & ((1u << lane) - 1u))] = item;
}

// Keys of records [begin, end) in bucket b.
__device__ __forceinline__ uint32_t own_in(const uint32_t* bucket, uint32_t begin, uint32_t end, uint32_t b) {
  uint32_t n = 0;
  for (uint32_t r = begin; r < end; ++r) n += bucket[r] == b;
  return n;
}

// One bit per bucket, set where its load exceeds M (word w holds buckets
// [32w, 32w + 32)): the overflow scan below reads this 1/32-size copy of the
// loads, which stays in L2 while the scan streams the records past it.
__global__ void overflow_bits_kernel(uint32_t N, uint32_t M, const uint32_t* load, uint32_t* bits) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t first = blockIdx.x * static_cast<uint64_t>(blockDim.x); first < N; first += stride) {
    const uint64_t b = first + threadIdx.x;  // a block starts at a multiple of 32, so lane 0 starts a word
    const unsigned mask = __ballot_sync(0xffffffffu, b < N && load[b] > M);
    if ((threadIdx.x & 31u) == 0 && b < N) bits[b >> 5] = mask;
  }
}

__device__ __forceinline__ bool overflows(uint32_t b, const uint32_t* bits) {
  return ((bits[b >> 5] >> (b & 31u)) & 1u) != 0;
}

// Lists the cells with a key in an overflowing bucket (counts[0] of them),
// from the overflow bits, a warp at a time: a warp's 32 cells own one
// contiguous run of records, which its lanes read 32 at a time (coalesced,
// independent loads; a thread per cell walking its own few records, one
// dependent load after another, measured slower: docs/gph.md); a ballot of the records in overflowing
// buckets, masked to each lane's record range, flags that lane's cell.
__global__ void mark_warp_kernel(uint32_t L, const uint32_t* cell_begin, const uint32_t* bucket, const uint32_t* bits,
                                 uint32_t* list, uint32_t* counts) {
  const uint32_t lane = threadIdx.x & 31u;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t first = blockIdx.x * static_cast<uint64_t>(blockDim.x); first < L; first += stride) {
    const uint64_t c = first + threadIdx.x;
    const uint32_t begin = cell_begin[c < L ? c : L];
    const uint32_t end = cell_begin[c < L ? c + 1 : L];
    const uint32_t warp_begin = __shfl_sync(0xffffffffu, begin, 0);
    const uint32_t warp_end = __shfl_sync(0xffffffffu, end, 31);  // cell_begin is ascending
    bool over = false;
    for (uint32_t base = warp_begin; base < warp_end; base += 32) {
      const uint32_t r = base + lane;
      bool o = false;
      if (r < warp_end) {
        const uint32_t b = bucket[r];
        o = overflows(b, bits);
      }
      const unsigned mask = __ballot_sync(0xffffffffu, o);
      const uint32_t lo = begin > base ? begin - base : 0;
      const uint32_t hi = end < base + 32 ? (end > base ? end - base : 0) : 32;
      if (lo < hi) {
        const unsigned mine = (hi == 32 ? 0xffffffffu : ((1u << hi) - 1u)) & ~((1u << lo) - 1u);
        over = over || (mask & mine) != 0;
      }
    }
    warp_append(over, static_cast<uint32_t>(c), list, &counts[0]);
  }
}

// One admission phase of a round: the listed cells with moved[c] == phase
// claim their keys' room in every overflowing bucket they use; a cell that
// finds a bucket's M slots claimed loses (counts[1] losers). Phase 0 (cells
// that did not move last round) runs before phase 1, so residents keep room.
__global__ void admit_kernel(uint32_t M, uint8_t phase, const uint32_t* list, const uint8_t* moved,
                             const uint32_t* cell_begin, const uint32_t* bucket, const uint32_t* bits, uint32_t* admit,
                             uint32_t* losers, uint32_t* counts) {
  const uint32_t n = counts[0];
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t first = blockIdx.x * static_cast<uint64_t>(blockDim.x); first < n; first += stride) {
    const uint64_t i = first + threadIdx.x;
    bool lose = false;
    uint32_t c = 0;
    if (i < n) {
      c = list[i];
      if (moved[c] == phase) {
        const uint32_t begin = cell_begin[c], end = cell_begin[c + 1];
        for (uint32_t r = begin; r < end && !lose; ++r) {
          const uint32_t b = bucket[r];
          if (!overflows(b, bits)) continue;
          if (own_in(bucket, begin, r, b) != 0) continue;  // this bucket was claimed at its first key
          const uint32_t want = own_in(bucket, r, end, b);
          lose = atomicAdd(&admit[b], want) + want > M;
        }
      }
    }
    warp_append(lose, c, losers, &counts[1]);
  }
}

// Extended Move's choice (GPH §6.1) for cell c against the loads as they are,
// its own keys discounted; its current byte when nothing fits.
__device__ uint8_t choose_for(const gph::Geometry& g, uint32_t c, uint8_t current, const CellRecords& rec,
                              const uint32_t* bucket, const uint32_t* load) {
  const uint32_t begin = rec.cell_begin[c], end = rec.cell_begin[c + 1];
  const uint32_t M = g.slots_per_bucket;
  auto others = [&](uint32_t b) {
    const uint32_t l = load[b] - own_in(bucket, begin, end, b);
    return l < M ? l : M;
  };
  uint8_t chosen = current;
  if (!gph::plan_extended_move(g, c, current, rec.keys + begin, end - begin, others, &chosen)) return current;
  return chosen;
}

__device__ void move_to(const gph::Geometry& g, uint32_t c, uint8_t byte, CellBytes cells, const CellRecords& rec,
                        uint32_t* bucket, uint32_t* load) {
  const uint32_t begin = rec.cell_begin[c], end = rec.cell_begin[c + 1];
  for (uint32_t r = begin; r < end; ++r) atomicSub(&load[bucket[r]], 1u);
  cells[c] = byte;
  for (uint32_t r = begin; r < end; ++r) {
    const uint32_t b = gph::bucket_for_key(g, rec.keys[r], c, byte);
    bucket[r] = b;
    atomicAdd(&load[b], 1u);
  }
}

// Every loser chooses against the same loads (no one has moved yet).
__global__ void choose_kernel(gph::Geometry g, CellBytes cells, CellRecords rec, const uint32_t* bucket,
                              const uint32_t* load, const uint32_t* losers, const uint32_t* counts, uint8_t* next) {
  const uint32_t n = counts[1];
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const uint32_t c = losers[i];
    next[i] = choose_for(g, c, cells[c], rec, bucket, load);
  }
}

__global__ void move_kernel(gph::Geometry g, CellBytes cells, CellRecords rec, uint32_t* bucket, uint32_t* load,
                            const uint32_t* losers, const uint32_t* counts, const uint8_t* next, uint8_t* moved) {
  const uint32_t n = counts[1];
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const uint32_t c = losers[i];
    if (next[i] == cells[c]) continue;
    moved[c] = 1;
    move_to(g, c, next[i], cells, rec, bucket, load);
  }
}

// The final pass, one cell at a time on one thread: each choice sees every
// earlier move, and a cell only enters buckets with room for it, so the pass
// ends with every bucket within M or with a cell that fits nowhere.
__global__ void serial_kernel(gph::Geometry g, CellBytes cells, CellRecords rec, uint32_t* bucket, uint32_t* load,
                              const uint32_t* list, const uint32_t* counts) {
  const uint32_t n = counts[0];
  const uint32_t M = g.slots_per_bucket;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t c = list[i];
    bool over = false;
    for (uint32_t r = rec.cell_begin[c], end = rec.cell_begin[c + 1]; r < end && !over; ++r) {
      over = load[bucket[r]] > M;
    }
    if (!over) continue;
    const uint8_t byte = choose_for(g, c, cells[c], rec, bucket, load);
    if (byte != cells[c]) move_to(g, c, byte, cells, rec, bucket, load);
  }
}

__global__ void count_moved_kernel(CellBytes cells, uint32_t L, unsigned long long* moved) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t first = blockIdx.x * static_cast<uint64_t>(blockDim.x); first < L; first += stride) {
    const uint64_t c = first + threadIdx.x;
    const unsigned mask = __ballot_sync(0xffffffffu, c < L && cells[static_cast<uint32_t>(c)] != 0);
    if ((threadIdx.x & 31u) == 0 && mask != 0) atomicAdd(moved, static_cast<unsigned long long>(__popc(mask)));
  }
}

__global__ void iota_kernel(uint32_t* a, uint64_t n) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    a[i] = static_cast<uint32_t>(i);
  }
}

// HashGraph's final pass, one thread per slot: with the records sorted by
// (bucket, home line) (`order`, stable, so a bucket's records keep their cell
// order within a line; `line_key`, the sorted bucket * lines + line) and each
// bucket's first sorted position (`bucket_begin`, a prefix sum of the loads),
// a line's slots hold, in order, the bucket's records of that home line, then
// the records other lines could not hold (device_table.cuh, "Lines"), each
// of which sets its home line's spill bit (cleared before). No other atomics,
// every slot written once in order (coalesced), so the table needs no
// clearing first. One line (M = 8): slot s holds the bucket's s-th record.
__global__ void place_kernel(DeviceTable t, CellRecords rec, const uint32_t* load, const uint32_t* bucket_begin,
                             const uint32_t* order, const uint32_t* line_key, uint32_t m_shift) {
  constexpr uint32_t kMaxLines = 64 / kLinePairs;
  const uint32_t M = t.geo.slots_per_bucket, lines = lines_per_bucket(t.geo);
  const uint64_t slots = t.geo.num_slots();
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t slot = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; slot < slots; slot += stride) {
    // M is a power of two in every table we make; the division is the fallback.
    const uint64_t b = m_shift != 0xffffffffu ? slot >> m_shift : slot / M;
    const uint32_t s = static_cast<uint32_t>(slot - b * M);
    const uint32_t l = load[b], begin = bucket_begin[b];
    int64_t at = -1;     // the record's sorted position in its bucket, if any
    int32_t spill = -1;  // its home line, when it is placed outside it
    if (lines == 1) {
      if (s < l) at = s;
    } else {
      uint32_t count[kMaxLines] = {};
      for (uint32_t j = 0; j < l && j < M; ++j) ++count[line_key[begin + j] - b * lines];
      const uint32_t line = s / kLinePairs, in_line = s % kLinePairs;
      uint32_t start = 0, left_before = 0;
      for (uint32_t x = 0; x < line; ++x) {
        start += count[x];
        left_before += kLinePairs - min(count[x], kLinePairs);
      }
      const uint32_t own = min(count[line], kLinePairs);
      if (in_line < own) {
        at = start + in_line;
      } else {
        // The u-th slot left after the lines' own records takes the u-th
        // record past its line's slots, lines in order.
        uint32_t u = left_before + (in_line - own), first = 0;
        for (uint32_t x = 0; x < lines; ++x) {
          const uint32_t over = count[x] > kLinePairs ? count[x] - kLinePairs : 0;
          if (u < over) {
            at = first + kLinePairs + u;
            spill = static_cast<int32_t>(x);
            break;
          }
          u -= over;
          first += count[x];
        }
      }
    }
    uint64_t k = gph::kEmptyKey, v = 0;
    if (at >= 0) {
      const uint32_t i = order[begin + at];
      if (rec.pairs != nullptr) {  // one 16-byte load for a record read at random
        const ulonglong2 kv = rec.pairs[i];
        k = kv.x;
        v = kv.y;
      } else {
        k = rec.keys[i];
        v = rec.values[i];
      }
      if (spill >= 0) {
        mark_spill(t, static_cast<uint32_t>(b), static_cast<uint32_t>(spill), line_hash(t.geo, k),
                   gph::cell_of(t.geo, k));
      }
    }
    if (s == 0 && l > M) atomicAdd(t.fault, 1u);  // settling fitted every bucket: reaching here is a bug
    reinterpret_cast<ulonglong2*>(t.slots)[slot] = make_ulonglong2(k, v);  // one 16-byte store
  }
}

// The sort key of the placement: bucket * lines + the record's home line.
__global__ void line_key_kernel(gph::Geometry g, const uint64_t* keys, uint32_t* bucket, uint64_t n) {
  const uint32_t lines = lines_per_bucket(g);
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    bucket[i] = bucket[i] * lines + home_line(g, keys[i]);
  }
}

}  // namespace

absl::Status settle_and_place(const DeviceTable& t, const CellRecords& rec, const BulkBuildConfig& config,
                              cudaStream_t s, SettleResult* result) {
  const gph::Geometry& g = t.geo;
  const uint32_t L = g.num_cells, N = g.num_buckets, M = g.slots_per_bucket;
  auto lap = [last = std::chrono::steady_clock::now()]() mutable {
    const auto now = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - last).count();
    last = now;
    return ms;
  };
  // The breakdown run (config.times set) also waits for the stream after each
  // step of a round and of the placement, to time them apart; the timed runs do not.
  const bool detail = config.times != nullptr;
  auto detail_lap = [&, last = std::chrono::steady_clock::now()](double* acc) mutable -> absl::Status {
    if (!detail) return absl::OkStatus();
    GPHKV_CUDA_TRY(cudaStreamSynchronize(s));
    const auto now = std::chrono::steady_clock::now();
    *acc += std::chrono::duration<double, std::milli>(now - last).count();
    last = now;
    return absl::OkStatus();
  };
  StreamScratch scratch(s);
  const size_t o_admit = scratch.reserve<uint32_t>(N);
  const size_t o_moved = scratch.reserve<uint8_t>(L);
  const size_t o_list = scratch.reserve<uint32_t>(L);
  const size_t o_losers = scratch.reserve<uint32_t>(L);
  const size_t o_next = scratch.reserve<uint8_t>(L);
  const size_t o_counts = scratch.reserve<uint32_t>(2);
  const size_t o_bits = scratch.reserve<uint32_t>((static_cast<uint64_t>(N) + 31) / 32);
  const size_t o_moved_cells = scratch.reserve<unsigned long long>(1);
  GPHKV_RETURN_IF_ERROR(scratch.allocate());
  uint32_t* bucket = rec.bucket;  // located at (0, 0) by the caller, with the loads
  uint32_t* load = rec.load;
  uint32_t* admit = scratch.at<uint32_t>(o_admit);
  uint8_t* moved = scratch.at<uint8_t>(o_moved);
  uint32_t* list = scratch.at<uint32_t>(o_list);
  uint32_t* losers = scratch.at<uint32_t>(o_losers);
  uint8_t* next = scratch.at<uint8_t>(o_next);
  uint32_t* counts = scratch.at<uint32_t>(o_counts);
  uint32_t* bits = scratch.at<uint32_t>(o_bits);
  auto* moved_cells = scratch.at<unsigned long long>(o_moved_cells);

  // Every cell at (0, 0), where the caller located the keys, and every flag
  // clear (the placement sets them).
  GPHKV_CUDA_TRY(cudaMemsetAsync(t.cells, 0, cell_index_bytes(L), s));
  GPHKV_CUDA_TRY(cudaMemsetAsync(moved, 0, L, s));

  // Lists the overflowing cells; returns how many.
  auto mark = [&](uint32_t* flagged) -> absl::Status {
    GPHKV_CUDA_TRY(cudaMemsetAsync(counts, 0, 2 * sizeof(uint32_t), s));
    overflow_bits_kernel<<<grid_for(N), kBlock, 0, s>>>(N, M, load, bits);
    GPHKV_CUDA_TRY_LAUNCH("overflow_bits_kernel");
    mark_warp_kernel<<<grid_for(L), kBlock, 0, s>>>(L, rec.cell_begin, bucket, bits, list, counts);
    GPHKV_CUDA_TRY_LAUNCH("mark_warp_kernel");
    GPHKV_CUDA_TRY(cudaMemcpyAsync(flagged, counts, sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
    GPHKV_CUDA_TRY(cudaStreamSynchronize(s));
    return absl::OkStatus();
  };
  uint32_t flagged = 0;
  GPHKV_RETURN_IF_ERROR(mark(&flagged));
  result->first_mark_ms = lap();
  double skip = 0;
  GPHKV_RETURN_IF_ERROR(detail_lap(&skip));
  uint32_t rounds = 0;
  while (flagged > config.serial_cells && rounds < config.max_parallel_rounds) {
    ++rounds;
    const unsigned grid = grid_for(flagged);
    GPHKV_CUDA_TRY(cudaMemsetAsync(admit, 0, sizeof(uint32_t) * N, s));
    for (uint8_t phase : {uint8_t{0}, uint8_t{1}}) {
      if (phase == 1 && rounds == 1) continue;  // no cell has moved yet: phase 1 would find none
      admit_kernel<<<grid, kBlock, 0, s>>>(M, phase, list, moved, rec.cell_begin, bucket, bits, admit, losers, counts);
      GPHKV_CUDA_TRY_LAUNCH("admit_kernel");
    }
    GPHKV_RETURN_IF_ERROR(detail_lap(&result->round_admit_ms));
    GPHKV_CUDA_TRY(cudaMemsetAsync(moved, 0, L, s));
    choose_kernel<<<grid, kBlock, 0, s>>>(g, CellBytes{t.cells}, rec, bucket, load, losers, counts, next);
    GPHKV_CUDA_TRY_LAUNCH("choose_kernel");
    GPHKV_RETURN_IF_ERROR(detail_lap(&result->round_choose_ms));
    move_kernel<<<grid, kBlock, 0, s>>>(g, CellBytes{t.cells}, rec, bucket, load, losers, counts, next, moved);
    GPHKV_CUDA_TRY_LAUNCH("move_kernel");
    GPHKV_RETURN_IF_ERROR(detail_lap(&result->round_move_ms));
    GPHKV_RETURN_IF_ERROR(mark(&flagged));
    GPHKV_RETURN_IF_ERROR(detail_lap(&result->round_mark_ms));
  }
  result->parallel_rounds = rounds;
  result->cells_serial = flagged;
  result->rounds_ms = lap();
  if (flagged > 0) {
    serial_kernel<<<1, 1, 0, s>>>(g, CellBytes{t.cells}, rec, bucket, load, list, counts);
    GPHKV_CUDA_TRY_LAUNCH("serial_kernel");
    GPHKV_RETURN_IF_ERROR(mark(&flagged));
    if (flagged > 0) {
      uint32_t cell = 0, range[2] = {0, 0};
      GPHKV_CUDA_TRY(cudaMemcpyAsync(&cell, list, sizeof(cell), cudaMemcpyDeviceToHost, s));
      GPHKV_CUDA_TRY(cudaStreamSynchronize(s));
      GPHKV_CUDA_TRY(cudaMemcpyAsync(range, rec.cell_begin + cell, sizeof(range), cudaMemcpyDeviceToHost, s));
      GPHKV_CUDA_TRY(cudaStreamSynchronize(s));
      return absl::ResourceExhaustedError(absl::StrCat("bulk build: cell ", cell, " with ", range[1] - range[0],
                                                       " keys fits under no (mapping, offset) at ", N,
                                                       " buckets; grow the table"));
    }
  }
  result->serial_ms = lap();
  GPHKV_RETURN_IF_ERROR(detail_lap(&skip));
  GPHKV_CUDA_TRY(cudaMemsetAsync(moved_cells, 0, sizeof(unsigned long long), s));
  count_moved_kernel<<<grid_for(L), kBlock, 0, s>>>(CellBytes{t.cells}, L, moved_cells);
  GPHKV_CUDA_TRY_LAUNCH("count_moved_kernel");
  {
    // 4. Place: a stable radix sort of (bucket, record index) on the bucket
    // id's bits, the loads' prefix sum, then every slot from its bucket's
    // range. The bucket array is the sort's first key buffer (no one reads it
    // after this), so the sort adds one key and two index buffers.
    const uint32_t lines = lines_per_bucket(g);
    if (static_cast<uint64_t>(N) * lines > UINT32_MAX) {  // past any device's memory today
      return absl::InvalidArgumentError(
          absl::StrCat("bulk build: ", N, " buckets of ", lines, " lines exceed the placement's 32-bit sort key"));
    }
    const uint32_t sort_range = N * lines;
    const int end_bit = sort_range > 1 ? 32 - __builtin_clz(sort_range - 1) : 1;
    const auto n = static_cast<int64_t>(rec.m);
    size_t sort_bytes = 0, scan_bytes = 0;
    cub::DoubleBuffer<uint32_t> sort_keys(bucket, nullptr), sort_index(nullptr, nullptr);
    GPHKV_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, sort_keys, sort_index, n, 0, end_bit));
    GPHKV_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, static_cast<const uint32_t*>(nullptr),
                                                 static_cast<uint32_t*>(nullptr), static_cast<int64_t>(N)));
    StreamScratch place(s);
    const size_t o_keys2 = place.reserve<uint32_t>(rec.m);
    const size_t o_index = place.reserve<uint32_t>(rec.m), o_index2 = place.reserve<uint32_t>(rec.m);
    const size_t o_begin = place.reserve<uint32_t>(N);
    const size_t o_temp = place.reserve<uint8_t>(std::max(sort_bytes, scan_bytes));
    GPHKV_RETURN_IF_ERROR(place.allocate());
    uint32_t* bucket_begin = place.at<uint32_t>(o_begin);
    sort_keys = cub::DoubleBuffer<uint32_t>(bucket, place.at<uint32_t>(o_keys2));
    sort_index = cub::DoubleBuffer<uint32_t>(place.at<uint32_t>(o_index), place.at<uint32_t>(o_index2));
    GPHKV_CUDA_TRY(cub::DeviceScan::ExclusiveSum(place.at<void>(o_temp), scan_bytes, load, bucket_begin,
                                                 static_cast<int64_t>(N), s));
    if (rec.m > 0) {
      iota_kernel<<<grid_for(rec.m), kBlock, 0, s>>>(sort_index.Current(), rec.m);
      GPHKV_CUDA_TRY_LAUNCH("iota_kernel");
      if (lines > 1) {
        line_key_kernel<<<grid_for(rec.m), kBlock, 0, s>>>(g, rec.keys, bucket, rec.m);
        GPHKV_CUDA_TRY_LAUNCH("line_key_kernel");
      }
      GPHKV_CUDA_TRY(
          cub::DeviceRadixSort::SortPairs(place.at<void>(o_temp), sort_bytes, sort_keys, sort_index, n, 0, end_bit, s));
    }
    GPHKV_RETURN_IF_ERROR(detail_lap(&result->place_sort_ms));
    const uint32_t m_shift = (M & (M - 1)) == 0 ? static_cast<uint32_t>(__builtin_ctz(M)) : 0xffffffffu;
    GPHKV_CUDA_TRY(cudaMemsetAsync(t.spill, 0, spill_words(g) * sizeof(uint32_t), s));
    place_kernel<<<grid_for(g.num_slots()), kBlock, 0, s>>>(t, rec, load, bucket_begin, sort_index.Current(),
                                                            sort_keys.Current(), m_shift);
    GPHKV_CUDA_TRY_LAUNCH("place_kernel");
    GPHKV_RETURN_IF_ERROR(detail_lap(&result->place_fill_ms));
  }  // the placement's scratch goes back to the pool, stream-ordered
  unsigned long long host_moved = 0;
  GPHKV_CUDA_TRY(cudaMemcpyAsync(&host_moved, moved_cells, sizeof(host_moved), cudaMemcpyDeviceToHost, s));
  GPHKV_CUDA_TRY(cudaStreamSynchronize(s));
  result->cells_moved = host_moved;
  result->place_ms = lap();
  return absl::OkStatus();
}

}  // namespace gphkv::engine::cuda
