// HashGraph §3 on the GPU for a GPH table: dedupe the burst, group the
// surviving pairs by cell, then settle and place (bulk_settle.cu).
#include "engine/cuda/bulk_build.h"

#include <algorithm>
#include <chrono>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>
#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/cuda/bulk_settle.h"
#include "gphkv/cuda/device_buffer.h"
#include "gphkv/cuda/status.h"

namespace gphkv::engine::cuda {
namespace {

using ::gphkv::cuda::StreamScratch;

constexpr int kBlock = 256;
constexpr uint32_t kDropped = 0xffffffffu;

unsigned grid_for(uint64_t n) {
  return static_cast<unsigned>(std::clamp<uint64_t>((n + kBlock - 1) / kBlock, 1, uint64_t{1} << 16));
}

#define GRID_STRIDE(i, n)                                                         \
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x, \
                stride_ = static_cast<uint64_t>(gridDim.x) * blockDim.x;          \
       i < (n); i += stride_)

// The burst back to front with its positions, so that a stable sort by key
// puts each key's last write first (and UniqueByKey keeps the first).
__global__ void reverse_burst_keys(const WriteOp* w, uint64_t n, uint64_t* keys, uint32_t* index) {
  GRID_STRIDE(i, n) {
    keys[i] = w[n - 1 - i].key;
    index[i] = static_cast<uint32_t>(n - 1 - i);
  }
}

// Candidates of the build: the base elements [0, base.n), then the burst's
// last write of each key [base.n, base.n + m_u).
struct Inputs {
  BulkBase base;
  const WriteOp* burst;
  const uint64_t* ukeys;  // the burst's keys, distinct, ascending
  const uint32_t* uop;    // the burst position of each one's last write
  uint32_t m_u;
  OutOfBandSlot* base_oob;  // the sentinel key found among base pairs

  __host__ __device__ uint64_t count() const { return base.n + m_u; }
};

__device__ bool in_sorted(const uint64_t* a, uint32_t n, uint64_t k) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (a[mid] < k)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && a[lo] == k;
}

// The pair of candidate i, without checks.
__device__ __forceinline__ void pair_of(const Inputs& in, uint64_t i, uint64_t* key, uint64_t* value) {
  if (i < in.base.n) {
    *key = in.base.keys[i * in.base.stride];
    *value = in.base.values[i * in.base.stride];
  } else {
    const WriteOp& w = in.burst[in.uop[i - in.base.n]];
    *key = w.key;
    *value = w.value;
  }
}

// Whether candidate i goes into the buckets: a base pair the burst does not
// write, or a burst key whose last write is a put. The sentinel key never
// does (it has the out-of-band slot); a base pair holding it is noted there.
__device__ bool survives(const Inputs& in, uint64_t i, uint64_t* key, uint64_t* value) {
  if (i < in.base.n) {
    const uint64_t k = in.base.keys[i * in.base.stride];
    if (k == gph::kEmptyKey) {
      if (in.base.oob == nullptr) {  // pairs: base keys are distinct, so one thread at most
        in.base_oob->present = 1;
        in.base_oob->value = in.base.values[i * in.base.stride];
      }
      return false;
    }
    if (in.m_u != 0 && in_sorted(in.ukeys, in.m_u, k)) return false;  // the burst decides
    *key = k;
    *value = in.base.values[i * in.base.stride];
    return true;
  }
  const WriteOp& w = in.burst[in.uop[i - in.base.n]];
  if (w.erase || w.key == gph::kEmptyKey) return false;
  *key = w.key;
  *value = w.value;
  return true;
}

// Where a record goes with every cell at (0, 0), and its bucket's load: the
// start of the choice of (Φ, Δ), done here while the record is in hand.
__device__ __forceinline__ void locate(const gph::Geometry& g, uint64_t k, uint32_t c, uint64_t at, uint32_t* bucket,
                                       uint32_t* load) {
  const uint32_t b = gph::bucket_for_key(g, k, c, 0);
  bucket[at] = b;
  atomicAdd(&load[b], 1u);
}

// HashGraph V2's binning by a radix sort: each candidate's cell (L when
// dropped), sorted with its index.
__global__ void cell_ids(gph::Geometry g, Inputs in, uint32_t* cell, uint32_t* index) {
  GRID_STRIDE(i, in.count()) {
    uint64_t k, v;
    cell[i] = survives(in, i, &k, &v) ? gph::cell_of(g, k) : g.num_cells;
    index[i] = static_cast<uint32_t>(i);
  }
}

// cell_begin[c] = the first sorted position with a cell >= c, for c in [0, L].
__global__ void cell_bounds(const uint32_t* sorted, uint64_t n, uint32_t L, uint32_t* cell_begin) {
  GRID_STRIDE(p, n) {
    const uint32_t c = sorted[p];
    const uint32_t from = p == 0 ? 0 : sorted[p - 1] + 1;
    for (uint32_t x = from; x <= c; ++x) cell_begin[x] = static_cast<uint32_t>(p);
    if (p == n - 1) {
      for (uint64_t x = static_cast<uint64_t>(c) + 1; x <= L; ++x) cell_begin[x] = static_cast<uint32_t>(n);
    }
  }
}

__global__ void gather_cells(gph::Geometry g, Inputs in, const uint32_t* sorted_cell, const uint32_t* index, uint64_t m,
                             uint64_t* rec_keys, uint64_t* rec_values, ulonglong2* rec_pairs, uint32_t* bucket,
                             uint32_t* load) {
  GRID_STRIDE(p, m) {
    uint64_t k, v;
    pair_of(in, index[p], &k, &v);
    rec_keys[p] = k;
    if (rec_pairs != nullptr) {
      rec_pairs[p] = make_ulonglong2(k, v);
    } else {
      rec_values[p] = v;
    }
    locate(g, k, sorted_cell[p], p, bucket, load);
  }
}

// The out-of-band slot: the base's, unless the burst wrote the sentinel key
// last (its greatest key, so its last unique entry); then the size counter.
__global__ void finish_oob(Inputs in, OutOfBandSlot* oob, unsigned long long* size, uint64_t m) {
  OutOfBandSlot o = in.base.oob != nullptr ? *in.base.oob : *in.base_oob;
  if (in.m_u != 0 && in.ukeys[in.m_u - 1] == gph::kEmptyKey) {
    const WriteOp& w = in.burst[in.uop[in.m_u - 1]];
    o.present = w.erase ? 0 : 1;
    o.value = w.value;
  }
  o.pad = 0;
  if (!o.present) o.value = 0;
  *oob = o;
  *size = m + o.present;
}

absl::Status read_back(void* host, const void* device, size_t bytes, cudaStream_t s) {
  GPHKV_CUDA_TRY(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, s));
  GPHKV_CUDA_TRY(cudaStreamSynchronize(s));
  return absl::OkStatus();
}

}  // namespace

// The records themselves (8 B key,
// 16 B pair, 4 B bucket a record; 4 B load a bucket), then the placement's
// scratch at the build's peak (three 4 B arrays a record, 4 B a bucket, the
// sort's temporary bounded by 8 B a record), with 1 GiB to spare: about 48 B
// a record. 5.9 GB at 10^8 pairs; 49.7 GB at 10^9, more than an H100 has left
// there beside the table and the input (the pairs build ran out of memory).
bool pair_records_fit(uint64_t m, uint64_t buckets, size_t free_bytes) {
  const uint64_t records = m * (8 + 16 + 4) + buckets * 4;
  const uint64_t place = m * (4 + 4 + 4 + 8) + buckets * 4;
  return free_bytes >= records + place + (uint64_t{1} << 30);
}

absl::Status bulk_build_device(const DeviceTable& dst, const BulkBase& base, const WriteOp* burst, uint64_t n_burst,
                               uint64_t input_pairs, const BulkBuildConfig& config, cudaStream_t s, BuildStats* stats) {
  const auto t0 = std::chrono::steady_clock::now();
  ::gphkv::cuda::clear_stale_launch_error();  // CUB's dispatch and our launch checks read it
  BulkBuildTimes times;
  auto lap = [last = t0]() mutable {
    const auto now = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - last).count();
    last = now;
    return ms;
  };
  const gph::Geometry& g = dst.geo;
  const uint32_t L = g.num_cells;
  if (base.n + n_burst >= (uint64_t{1} << 31)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bulk build takes at most 2^31 - 1 base elements and writes, got ", base.n + n_burst));
  }

  // 1. The burst's last write per key: a stable radix sort of the reversed
  // burst by key, then the first of each run of equal keys.
  Inputs in{base, burst, nullptr, nullptr, 0, nullptr};
  std::unique_ptr<StreamScratch> burst_scratch;
  if (n_burst > 0) {
    const auto n = static_cast<int64_t>(n_burst);
    size_t sort_bytes = 0, unique_bytes = 0;
    GPHKV_CUDA_TRY(cub::DeviceRadixSort::SortPairs(
        nullptr, sort_bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
        static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr), n));
    GPHKV_CUDA_TRY(cub::DeviceSelect::UniqueByKey(
        nullptr, unique_bytes, static_cast<const uint64_t*>(nullptr), static_cast<const uint32_t*>(nullptr),
        static_cast<uint64_t*>(nullptr), static_cast<uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr), n));
    burst_scratch = std::make_unique<StreamScratch>(s);
    StreamScratch& b = *burst_scratch;
    const size_t o_keys = b.reserve<uint64_t>(n_burst), o_index = b.reserve<uint32_t>(n_burst);
    const size_t o_skeys = b.reserve<uint64_t>(n_burst), o_sindex = b.reserve<uint32_t>(n_burst);
    const size_t o_ukeys = b.reserve<uint64_t>(n_burst), o_uop = b.reserve<uint32_t>(n_burst);
    const size_t o_count = b.reserve<uint32_t>(1);
    const size_t o_temp = b.reserve<uint8_t>(std::max(sort_bytes, unique_bytes));
    GPHKV_RETURN_IF_ERROR(b.allocate());
    reverse_burst_keys<<<grid_for(n_burst), kBlock, 0, s>>>(burst, n_burst, b.at<uint64_t>(o_keys),
                                                            b.at<uint32_t>(o_index));
    GPHKV_CUDA_TRY_LAUNCH("reverse_burst_keys");
    // LSD radix sort is stable: equal keys keep the (reversed) burst order.
    GPHKV_CUDA_TRY(cub::DeviceRadixSort::SortPairs(b.at<void>(o_temp), sort_bytes, b.at<uint64_t>(o_keys),
                                                   b.at<uint64_t>(o_skeys), b.at<uint32_t>(o_index),
                                                   b.at<uint32_t>(o_sindex), n, 0, 64, s));
    GPHKV_CUDA_TRY(cub::DeviceSelect::UniqueByKey(b.at<void>(o_temp), unique_bytes, b.at<uint64_t>(o_skeys),
                                                  b.at<uint32_t>(o_sindex), b.at<uint64_t>(o_ukeys),
                                                  b.at<uint32_t>(o_uop), b.at<uint32_t>(o_count), n, s));
    GPHKV_RETURN_IF_ERROR(read_back(&in.m_u, b.at<uint32_t>(o_count), sizeof(uint32_t), s));
    in.ukeys = b.at<uint64_t>(o_ukeys);
    in.uop = b.at<uint32_t>(o_uop);
  }
  times.dedupe = lap();

  // 2. Group the surviving pairs by cell.
  StreamScratch index_scratch(s);
  const size_t o_begin = index_scratch.reserve<uint32_t>(static_cast<uint64_t>(L) + 1);
  const size_t o_oob = index_scratch.reserve<OutOfBandSlot>(1);
  GPHKV_RETURN_IF_ERROR(index_scratch.allocate());
  uint32_t* cell_begin = index_scratch.at<uint32_t>(o_begin);
  in.base_oob = index_scratch.at<OutOfBandSlot>(o_oob);
  GPHKV_CUDA_TRY(cudaMemsetAsync(in.base_oob, 0, sizeof(OutOfBandSlot), s));
  const uint64_t n_cand = in.count();
  uint32_t m = 0;
  StreamScratch records(s);
  uint64_t* rec_keys = nullptr;
  uint64_t* rec_values = nullptr;
  ulonglong2* rec_pairs = nullptr;  // pair records (BulkBuildConfig): in place of rec_values
  uint32_t* rec_bucket = nullptr;
  uint32_t* load = nullptr;
  auto allocate_records = [&]() -> absl::Status {
    if (m > g.num_slots()) {
      return absl::ResourceExhaustedError(absl::StrCat("bulk build: ", m, " keys exceed the ", g.num_slots(),
                                                       " slots of ", g.num_buckets, " buckets; grow the table"));
    }
    bool pairs = config.pair_records;
    if (!pairs && config.pair_records_when_free) {
      size_t free_b = 0, total_b = 0;
      GPHKV_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
      pairs = pair_records_fit(m, g.num_buckets, free_b);
    }
    const size_t o_k = records.reserve<uint64_t>(m);
    const size_t o_v = pairs ? records.reserve<ulonglong2>(m) : records.reserve<uint64_t>(m);
    const size_t o_b = records.reserve<uint32_t>(m), o_l = records.reserve<uint32_t>(g.num_buckets);
    GPHKV_RETURN_IF_ERROR(records.allocate());
    rec_keys = records.at<uint64_t>(o_k);
    if (pairs) {
      rec_pairs = records.at<ulonglong2>(o_v);
    } else {
      rec_values = records.at<uint64_t>(o_v);
    }
    rec_bucket = records.at<uint32_t>(o_b);
    load = records.at<uint32_t>(o_l);
    GPHKV_CUDA_TRY(cudaMemsetAsync(load, 0, sizeof(uint32_t) * g.num_buckets, s));
    return absl::OkStatus();
  };
  {
    StreamScratch group(s);
    const int end_bit = 32 - __builtin_clz(L);  // holds L, the mark of a dropped candidate
    size_t sort_bytes = 0;
    GPHKV_CUDA_TRY(
        cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, static_cast<const uint32_t*>(nullptr),
                                        static_cast<uint32_t*>(nullptr), static_cast<const uint32_t*>(nullptr),
                                        static_cast<uint32_t*>(nullptr), static_cast<int64_t>(n_cand), 0, end_bit));
    const size_t o_cell = group.reserve<uint32_t>(n_cand), o_index = group.reserve<uint32_t>(n_cand);
    const size_t o_scell = group.reserve<uint32_t>(n_cand), o_sindex = group.reserve<uint32_t>(n_cand);
    const size_t o_temp = group.reserve<uint8_t>(sort_bytes);
    GPHKV_RETURN_IF_ERROR(group.allocate());
    cell_ids<<<grid_for(n_cand), kBlock, 0, s>>>(g, in, group.at<uint32_t>(o_cell), group.at<uint32_t>(o_index));
    GPHKV_CUDA_TRY_LAUNCH("cell_ids");
    if (n_cand > 0) {
      GPHKV_CUDA_TRY(cub::DeviceRadixSort::SortPairs(
          group.at<void>(o_temp), sort_bytes, group.at<uint32_t>(o_cell), group.at<uint32_t>(o_scell),
          group.at<uint32_t>(o_index), group.at<uint32_t>(o_sindex), static_cast<int64_t>(n_cand), 0, end_bit, s));
    }
    GPHKV_CUDA_TRY(cudaMemsetAsync(cell_begin, 0, sizeof(uint32_t) * (static_cast<uint64_t>(L) + 1), s));
    cell_bounds<<<grid_for(n_cand), kBlock, 0, s>>>(group.at<uint32_t>(o_scell), n_cand, L, cell_begin);
    GPHKV_CUDA_TRY_LAUNCH("cell_bounds");
    GPHKV_RETURN_IF_ERROR(read_back(&m, cell_begin + L, sizeof(uint32_t), s));
    times.group = lap();
    GPHKV_RETURN_IF_ERROR(allocate_records());
    gather_cells<<<grid_for(m), kBlock, 0, s>>>(g, in, group.at<uint32_t>(o_scell), group.at<uint32_t>(o_sindex), m,
                                                rec_keys, rec_values, rec_pairs, rec_bucket, load);
    GPHKV_CUDA_TRY_LAUNCH("gather_cells");
  }  // the grouping's scratch goes back to the pool, stream-ordered
  finish_oob<<<1, 1, 0, s>>>(in, dst.oob, dst.size, m);
  GPHKV_CUDA_TRY_LAUNCH("finish_oob");
  burst_scratch.reset();

  // 3. Choose the cells' (Φ, Δ) and place the keys.
  SettleResult settled;
  GPHKV_RETURN_IF_ERROR(settle_and_place(
      dst, CellRecords{rec_keys, rec_values, cell_begin, m, rec_bucket, load, rec_pairs}, config, s, &settled));
  if (config.times != nullptr) {
    // settle_and_place timed its own phases, from the end of the grouping on.
    times.first_mark = settled.first_mark_ms;
    times.rounds = settled.rounds_ms;
    times.serial = settled.serial_ms;
    times.place = settled.place_ms;
    times.round_admit = settled.round_admit_ms;
    times.round_choose = settled.round_choose_ms;
    times.round_move = settled.round_move_ms;
    times.round_mark = settled.round_mark_ms;
    times.place_sort = settled.place_sort_ms;
    times.place_fill = settled.place_fill_ms;
    *config.times = times;
  }
  if (stats != nullptr) {
    OutOfBandSlot oob{};
    GPHKV_RETURN_IF_ERROR(read_back(&oob, dst.oob, sizeof(oob), s));
    stats->input_pairs = input_pairs + n_burst;
    stats->keys = m + oob.present;
    stats->parallel_rounds = settled.parallel_rounds;
    stats->cells_moved = settled.cells_moved;
    stats->cells_serial = settled.cells_serial;
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return absl::OkStatus();
}

}  // namespace gphkv::engine::cuda
