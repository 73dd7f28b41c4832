#include "server/cuda/value_kernels.h"

#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include "gphkv/cuda/status.h"
#include "server/byte_key.h"

namespace gphkv::server::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
constexpr unsigned kMaxBlocks = 65535;

unsigned blocks_for(uint64_t items, uint64_t per_block) {
  const uint64_t b = (items + per_block - 1) / per_block;
  return static_cast<unsigned>(b < kMaxBlocks ? (b == 0 ? 1 : b) : kMaxBlocks);
}

// One warp copies one value. Values of 64 bytes at 64-byte offsets (the
// benchmark's) take the 16-byte path: 4 lanes, one load and one store each.
// Values sit at 16-byte granules of 256-byte aligned chunks, the
// destination offsets are whatever the prefix sum gives, so the widest
// access that src, dst and len all allow is chosen per value.
__device__ void warp_copy(char* dst, const char* src, uint64_t len, int lane) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) | len;
  if ((a & 15) == 0) {
    for (uint64_t i = lane; i < len / 16; i += 32) {
      reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
    }
  } else if ((a & 7) == 0) {
    for (uint64_t i = lane; i < len / 8; i += 32) {
      reinterpret_cast<uint64_t*>(dst)[i] = reinterpret_cast<const uint64_t*>(src)[i];
    }
  } else if ((a & 3) == 0) {
    for (uint64_t i = lane; i < len / 4; i += 32) {
      reinterpret_cast<uint32_t*>(dst)[i] = reinterpret_cast<const uint32_t*>(src)[i];
    }
  } else {
    for (uint64_t i = lane; i < len; i += 32) dst[i] = src[i];
  }
}

__global__ void place_kernel(DeviceLocations locations, const uint64_t* handles, const char* const* from,
                             char* const* to, uint64_t n, bool moving) {
  const int lane = threadIdx.x & 31;
  const uint64_t warps = static_cast<uint64_t>(gridDim.x) * kWarpsPerBlock;
  for (uint64_t i = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32; i < n; i += warps) {
    const uint64_t h = handles[i];
    warp_copy(to[i], from[i], value_handle::length(h), lane);
    if (lane == 0) {
      if (moving) {
        locations.move(value_handle::id(h), to[i]);
      } else {
        locations.set(value_handle::id(h), to[i]);
      }
    }
  }
}

__global__ void locate_kernel(DeviceLocations locations, const uint64_t* handles, const uint32_t* offsets, uint64_t n,
                              const uint64_t* run_first, char* const* run_to, uint64_t runs) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    // The last run that starts at or before i (runs are few: a slot holds
    // the packed runs of a few snapshot blocks).
    uint64_t lo = 0, hi = runs;
    while (hi - lo > 1) {
      const uint64_t mid = (lo + hi) / 2;
      if (run_first[mid] <= i) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    locations.set(value_handle::id(handles[i]), run_to[lo] + offsets[i]);
  }
}

// A key's hit and value length. Without `skip` the keys are uint64 keys: a
// slot holding a byte key's record is another key's (server/byte_key.h), so
// a miss. With it, match_records_kernel checked every hit already, and a
// byte key's value starts skip[i] bytes into its record. A miss's handle
// slot was never written by the lookup: it is read only on a hit.
__device__ uint32_t hit_length(const uint64_t* handles, const uint8_t* found, const uint8_t* want, const uint32_t* skip,
                               uint64_t i, bool* hit) {
  *hit = found[i] != 0 && (skip != nullptr || !value_handle::is_record(handles[i]));
  if (!*hit || (want != nullptr && !want[i])) return 0;
  return value_handle::length(handles[i]) - (skip != nullptr ? skip[i] : 0);
}

// A hit's value was read: its access bit (CLOCK's, device_locations.h).
__device__ void mark_hit(DeviceLocations locations, const uint64_t* handles, uint64_t i, bool hit) {
  if (hit) locations.mark(value_handle::id(handles[i]));
}

__global__ void lengths_kernel(DeviceLocations locations, const uint64_t* handles, const uint8_t* found,
                               const uint8_t* want, const uint32_t* skip, uint64_t n, uint32_t* meta, uint64_t* lens) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i <= n; i += stride) {
    if (i == n) {
      lens[n] = 0;
      break;
    }
    bool hit = false;
    const uint32_t len = hit_length(handles, found, want, skip, i, &hit);
    mark_hit(locations, handles, i, hit);
    meta[i] = hit ? (0x80000000u | len) : 0u;
    lens[i] = len;
  }
}

constexpr int kScanThreads = 1024;

using LengthsBlockScan = cub::BlockScan<uint64_t, kScanThreads>;

// One block of kScanThreads: tiles of kScanThreads keys, each scanned by
// cub::BlockScan and offset by the running total of the tiles before it.
__device__ void lengths_scan_block(DeviceLocations locations, const uint64_t* handles, const uint8_t* found,
                                   const uint8_t* want, const uint32_t* skip, uint64_t n, uint32_t* meta,
                                   uint64_t* offsets, uint64_t* total, LengthsBlockScan::TempStorage& temp) {
  using BlockScan = LengthsBlockScan;
  uint64_t carry = 0;
  for (uint64_t base = 0; base < n; base += kScanThreads) {
    const uint64_t i = base + threadIdx.x;
    uint32_t len = 0;
    if (i < n) {
      bool hit = false;
      len = hit_length(handles, found, want, skip, i, &hit);
      mark_hit(locations, handles, i, hit);
      meta[i] = hit ? (0x80000000u | len) : 0u;
    }
    uint64_t off = 0, tile_total = 0;
    BlockScan(temp).ExclusiveSum(static_cast<uint64_t>(len), off, tile_total);
    if (i < n) offsets[i] = carry + off;
    carry += tile_total;
    __syncthreads();  // temp is reused by the next tile
  }
  if (threadIdx.x == 0) {
    offsets[n] = carry;
    *total = carry;
  }
}

// Single block: the whole scan (n <= kFusedScanMaxKeys).
__global__ void __launch_bounds__(kScanThreads)
    lengths_scan_kernel(DeviceLocations locations, const uint64_t* handles, const uint8_t* found, const uint8_t* want,
                        const uint32_t* skip, uint64_t n, uint32_t* meta, uint64_t* offsets, uint64_t* total) {
  __shared__ LengthsBlockScan::TempStorage temp;
  lengths_scan_block(locations, handles, found, want, skip, n, meta, offsets, total, temp);
}

// Key i's value to dst + offsets[i] (one warp), unless it is a miss or past
// the capacity.
__device__ void gather_one(DeviceLocations locations, const uint64_t* handles, const uint32_t* skip,
                           const uint64_t* offsets, uint64_t i, char* dst, uint64_t capacity, int lane) {
  const uint64_t at = offsets[i];
  const uint64_t len = offsets[i + 1] - at;
  // A miss's handle slot was never written by the lookup: read it only for a value.
  if (len == 0 || at + len > capacity) return;
  const char* value = locations.at(value_handle::id(handles[i])) + (skip != nullptr ? skip[i] : 0);
  warp_copy(dst + at, value, len, lane);
}

__global__ void gather_kernel(DeviceLocations locations, const uint64_t* handles, const uint32_t* skip,
                              const uint64_t* offsets, uint64_t n, char* dst, uint64_t capacity, uint64_t* total_out) {
  if (total_out != nullptr && blockIdx.x == 0 && threadIdx.x == 0) *total_out = offsets[n];
  const int lane = threadIdx.x & 31;
  const uint64_t warps = static_cast<uint64_t>(gridDim.x) * kWarpsPerBlock;
  for (uint64_t i = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32; i < n; i += warps) {
    gather_one(locations, handles, skip, offsets, i, dst, capacity, lane);
  }
}

// Key i (one warp). A byte key (key_offsets[i + 1] > key_offsets[i]) keeps
// its hit only when the slot holds a record of the same key bytes that has
// not expired by `now`, read where the gather will read the value: the
// record's 2-byte length, its item header when the length's top bit says
// so (server/byte_key.h), then the key. A uint64 key keeps its hit only
// when the slot holds no record.
__device__ void match_record(DeviceLocations locations, const uint64_t* handles, uint8_t* found,
                             const uint32_t* key_offsets, const char* key_bytes, uint64_t i, uint32_t now,
                             uint32_t* skip, int lane) {
  const uint32_t key_len = key_offsets[i + 1] - key_offsets[i];
  if (found[i] == 0) {
    if (lane == 0) skip[i] = 0;
    return;
  }
  const uint64_t h = handles[i];
  bool match = value_handle::is_record(h) == (key_len > 0);
  uint32_t header = byte_key::kRecordHeaderBytes;
  if (match && key_len > 0) {
    const auto* record = reinterpret_cast<const unsigned char*>(locations.at(value_handle::id(h)));
    const uint32_t raw = record[0] | (static_cast<uint32_t>(record[1]) << 8);
    const uint32_t stored_len = raw & ~uint32_t{byte_key::kItemHeaderBit};
    if ((raw & byte_key::kItemHeaderBit) != 0) {
      header = byte_key::kMaxRecordHeaderBytes;
      match = header <= value_handle::length(h);
      if (match) {
        // The exptime, bytes 6-9 (the header's flags come first), read
        // bytewise: only the record's start is aligned.
        const uint32_t exptime = record[6] | (static_cast<uint32_t>(record[7]) << 8) |
                                 (static_cast<uint32_t>(record[8]) << 16) | (static_cast<uint32_t>(record[9]) << 24);
        match = !byte_key::is_expired(exptime, now);
      }
    }
    match = match && stored_len == key_len && header + key_len <= value_handle::length(h);
    bool differ = false;
    if (match) {
      const char* key = key_bytes + key_offsets[i];
      for (uint32_t j = lane; j < key_len; j += 32) differ |= static_cast<char>(record[header + j]) != key[j];
    }
    match = match && !__any_sync(0xffffffffu, differ);
  }
  if (lane == 0) {
    if (!match) found[i] = 0;
    skip[i] = match && key_len > 0 ? header + key_len : 0;
  }
}

// One warp per key.
__global__ void match_records_kernel(DeviceLocations locations, const uint64_t* handles, uint8_t* found,
                                     const uint32_t* key_offsets, const char* key_bytes, uint64_t n, uint32_t now,
                                     uint32_t* skip) {
  const int lane = threadIdx.x & 31;
  const uint64_t warps = static_cast<uint64_t>(gridDim.x) * kWarpsPerBlock;
  for (uint64_t i = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32; i < n; i += warps) {
    match_record(locations, handles, found, key_offsets, key_bytes, i, now, skip, lane);
  }
}

// Many small gets (n <= kSmallGetsMaxKeys) in one block: the records
// matched, the lengths scanned and the values gathered, phase after phase
// (__syncthreads makes each phase's global writes visible to the next).
// meta, total and dst may be pinned host memory (mapped: unified
// addressing): the batch's answers are written where the host reads them,
// with no download.
__global__ void __launch_bounds__(kScanThreads)
    small_gets_kernel(DeviceLocations locations, const uint64_t* handles, uint8_t* found, const uint32_t* key_offsets,
                      const char* key_bytes, const uint8_t* want, uint64_t n, uint32_t now, uint32_t* skip,
                      uint32_t* meta, uint64_t* offsets, uint64_t* total, char* dst, uint64_t capacity) {
  __shared__ LengthsBlockScan::TempStorage temp;
  const int lane = threadIdx.x & 31;
  const uint64_t warp = threadIdx.x / 32;
  constexpr uint64_t kWarps = kScanThreads / 32;
  if (key_offsets != nullptr) {
    for (uint64_t i = warp; i < n; i += kWarps) {
      match_record(locations, handles, found, key_offsets, key_bytes, i, now, skip, lane);
    }
    __syncthreads();
  }
  lengths_scan_block(locations, handles, found, want, key_offsets != nullptr ? skip : nullptr, n, meta, offsets, total,
                     temp);
  __syncthreads();
  for (uint64_t i = warp; i < n; i += kWarps) {
    gather_one(locations, handles, key_offsets != nullptr ? skip : nullptr, offsets, i, dst, capacity, lane);
  }
}

__global__ void access_kernel(DeviceLocations locations, const uint64_t* handles, uint64_t n, AccessOp op,
                              uint8_t* bits) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint64_t id = value_handle::id(handles[i]);
    switch (op) {
      case AccessOp::kRead: bits[i] = locations.accessed(id) ? 1 : 0; break;
      case AccessOp::kMark: locations.mark(id); break;
      case AccessOp::kClear: locations.clear(id); break;
    }
  }
}

}  // namespace

cudaError_t launch_access(DeviceLocations locations, const uint64_t* handles, uint64_t n, AccessOp op, uint8_t* bits,
                          cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (op == AccessOp::kRead && bits == nullptr) return cudaErrorInvalidValue;
  gphkv::cuda::clear_stale_launch_error();
  access_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(locations, handles, n, op, bits);
  return cudaGetLastError();
}

cudaError_t launch_place(DeviceLocations locations, const uint64_t* handles, const char* const* from, char* const* to,
                         uint64_t n, bool moving, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  gphkv::cuda::clear_stale_launch_error();
  place_kernel<<<blocks_for(n, kWarpsPerBlock), kThreads, 0, stream>>>(locations, handles, from, to, n, moving);
  return cudaGetLastError();
}

cudaError_t launch_locate(DeviceLocations locations, const uint64_t* handles, const uint32_t* offsets, uint64_t n,
                          const uint64_t* run_first, char* const* run_to, uint64_t runs, cudaStream_t stream) {
  if (n == 0 || runs == 0) return cudaSuccess;
  gphkv::cuda::clear_stale_launch_error();
  locate_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(locations, handles, offsets, n, run_first, run_to,
                                                                  runs);
  return cudaGetLastError();
}

cudaError_t launch_lengths(DeviceLocations locations, const uint64_t* handles, const uint8_t* found,
                           const uint8_t* want, const uint32_t* skip, uint64_t n, uint32_t* meta, uint64_t* lens,
                           cudaStream_t stream) {
  gphkv::cuda::clear_stale_launch_error();
  lengths_kernel<<<blocks_for(n + 1, kThreads), kThreads, 0, stream>>>(locations, handles, found, want, skip, n, meta,
                                                                       lens);
  return cudaGetLastError();
}

cudaError_t exclusive_scan(void* temp, size_t* temp_bytes, const uint64_t* lens, uint64_t* offsets, uint64_t count,
                           cudaStream_t stream) {
  gphkv::cuda::clear_stale_launch_error();
  return cub::DeviceScan::ExclusiveSum(temp, *temp_bytes, lens, offsets, static_cast<int64_t>(count), stream);
}

cudaError_t launch_lengths_scan(DeviceLocations locations, const uint64_t* handles, const uint8_t* found,
                                const uint8_t* want, const uint32_t* skip, uint64_t n, uint32_t* meta,
                                uint64_t* offsets, uint64_t* total, cudaStream_t stream) {
  if (n > kFusedScanMaxKeys) return cudaErrorInvalidValue;
  gphkv::cuda::clear_stale_launch_error();
  lengths_scan_kernel<<<1, kScanThreads, 0, stream>>>(locations, handles, found, want, skip, n, meta, offsets, total);
  return cudaGetLastError();
}

cudaError_t launch_gather(DeviceLocations locations, const uint64_t* handles, const uint32_t* skip,
                          const uint64_t* offsets, uint64_t n, char* dst, uint64_t dst_capacity, uint64_t* total_out,
                          cudaStream_t stream) {
  gphkv::cuda::clear_stale_launch_error();
  gather_kernel<<<blocks_for(n, kWarpsPerBlock), kThreads, 0, stream>>>(locations, handles, skip, offsets, n, dst,
                                                                        dst_capacity, total_out);
  return cudaGetLastError();
}

cudaError_t launch_match_records(DeviceLocations locations, const uint64_t* handles, uint8_t* found,
                                 const uint32_t* key_offsets, const char* key_bytes, uint64_t n, uint32_t now,
                                 uint32_t* skip, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  gphkv::cuda::clear_stale_launch_error();
  match_records_kernel<<<blocks_for(n, kWarpsPerBlock), kThreads, 0, stream>>>(locations, handles, found, key_offsets,
                                                                               key_bytes, n, now, skip);
  return cudaGetLastError();
}

cudaError_t launch_small_gets(DeviceLocations locations, const uint64_t* handles, uint8_t* found,
                              const uint32_t* key_offsets, const char* key_bytes, const uint8_t* want, uint64_t n,
                              uint32_t now, uint32_t* skip, uint32_t* meta, uint64_t* offsets, uint64_t* total,
                              char* dst, uint64_t capacity, cudaStream_t stream) {
  if (n > kSmallGetsMaxKeys) return cudaErrorInvalidValue;
  gphkv::cuda::clear_stale_launch_error();
  small_gets_kernel<<<1, kScanThreads, 0, stream>>>(locations, handles, found, key_offsets, key_bytes, want, n, now,
                                                    skip, meta, offsets, total, dst, capacity);
  return cudaGetLastError();
}

}  // namespace gphkv::server::cuda
