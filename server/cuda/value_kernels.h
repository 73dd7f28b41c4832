// Kernels of the device value heap and of the CUDA get path (issue 5's data
// path, not part of the GPH paper): place values (a put batch's bytes, or
// values compaction moves) and record where they are, turn a lookup's handles
// into lengths, prefix-sum them (CUB), and gather the values into one
// contiguous buffer. Host-callable launchers; every one
// returns the launch's cudaError_t (cudaGetLastError after <<<>>>).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "server/cuda/device_locations.h"

namespace gphkv::server::cuda {

// to[i][0, length(handles[i])) <- from[i][...], then records to[i] as the
// place of handles[i]'s id. The n ranges of `to` must not overlap any of
// `from`. All pointers are device addresses (from may point into staged bytes).
// moving: the values were stored already (compaction), and keep their
// access bits; else they are new, and their bits are set.
cudaError_t launch_place(DeviceLocations locations, const uint64_t* handles, const char* const* from, char* const* to,
                         uint64_t n, bool moving, cudaStream_t stream);

// The places of a bulk write's values (server/cuda/device_bulk_write.h),
// whose bytes were copied run by run: value i of run r (run_first[r] <= i <
// run_first[r + 1], the last run ending at n) lies at run_to[r] + offsets[i];
// records that as the place of handles[i]'s id.
cudaError_t launch_locate(DeviceLocations locations, const uint64_t* handles, const uint32_t* offsets, uint64_t n,
                          const uint64_t* run_first, char* const* run_to, uint64_t runs, cudaStream_t stream);

// Byte keys (server/byte_key.h) in a batch of gets: key i's bytes are
// key_bytes[key_offsets[i], key_offsets[i + 1]), none for a uint64 key.
// Clears found[i] unless the slot is key i's own (a byte key's: a record of
// the same key bytes; a uint64 key's: no record), and sets skip[i] to where
// the value starts in what the slot holds (the record's header and key for
// a byte key, else 0). A record whose item header (byte_key::kItemHeaderBit)
// gives an expiry at or before `now` (unix seconds) is a miss too. One warp
// per key, reading the record where the gather reads the value.
cudaError_t launch_match_records(DeviceLocations locations, const uint64_t* handles, uint8_t* found,
                                 const uint32_t* key_offsets, const char* key_bytes, uint64_t n, uint32_t now,
                                 uint32_t* skip, cudaStream_t stream);

// For each key of a lookup: meta[i] = hit ? 1u << 31 | len : 0 and
// lens[i] = len, where len = the value's length if hit and (want ==
// nullptr or want[i]), else 0. Also writes lens[n] = 0, so an exclusive scan
// of n + 1 lengths ends in the total. Without `skip` (uint64 keys only) a
// hit is found[i] with a slot holding no record (a record is a byte key's,
// so another key's); with it, found[i] as launch_match_records left it, and
// the value's length is the slot's less skip[i].
// Every hit's access bit is set (device_locations.h): the lookups mark what they read.
cudaError_t launch_lengths(DeviceLocations locations, const uint64_t* handles, const uint8_t* found,
                           const uint8_t* want, const uint32_t* skip, uint64_t n, uint32_t* meta, uint64_t* lens,
                           cudaStream_t stream);

// offsets[0..n] = exclusive prefix sum of lens[0..n] (CUB DeviceScan). With
// temp == nullptr, only sets *temp_bytes.
cudaError_t exclusive_scan(void* temp, size_t* temp_bytes, const uint64_t* lens, uint64_t* offsets, uint64_t count,
                           cudaStream_t stream);

// The lengths pass and the prefix sum in one single-block kernel, for
// batches of at most kFusedScanMaxKeys keys (a server batch is at most
// --max_batch_keys, 16384 by default): meta as launch_lengths, offsets[0..n]
// the exclusive sum of the lengths, *total = offsets[n]. One launch instead
// of three (lengths, CUB's init and scan): at a few thousand keys a batch's
// device time is mostly launch latency.
constexpr uint64_t kFusedScanMaxKeys = 65536;
cudaError_t launch_lengths_scan(DeviceLocations locations, const uint64_t* handles, const uint8_t* found,
                                const uint8_t* want, const uint32_t* skip, uint64_t n, uint32_t* meta,
                                uint64_t* offsets, uint64_t* total, cudaStream_t stream);

// A small batch's whole value path in one single-block kernel (n at most
// kSmallGetsMaxKeys): with key_offsets (byte keys) launch_match_records,
// then launch_lengths_scan (skip passed only with key_offsets), then
// launch_gather, in that order (`now` as launch_match_records takes it).
// meta, total and dst may be pinned host
// memory (device-visible through unified addressing): the answers land where
// the host reads them, so the batch needs no download, and one launch
// replaces three (issue 25: at light load a batch's host time was mostly its
// launches and copies). The inputs (keys aside, read by the lookup) may be
// pinned host memory too.
constexpr uint64_t kSmallGetsMaxKeys = 256;
cudaError_t launch_small_gets(DeviceLocations locations, const uint64_t* handles, uint8_t* found,
                              const uint32_t* key_offsets, const char* key_bytes, const uint8_t* want, uint64_t n,
                              uint32_t now, uint32_t* skip, uint32_t* meta, uint64_t* offsets, uint64_t* total,
                              char* dst, uint64_t capacity, cudaStream_t stream);

// The access bits (CLOCK's, device_locations.h) of the values of handles[0, n):
// kRead writes bits[i] = 1 if set, else 0; kMark sets them (a get the host
// served); kClear clears them (the eviction's hand passed).
enum class AccessOp : uint8_t { kRead, kMark, kClear };
cudaError_t launch_access(DeviceLocations locations, const uint64_t* handles, uint64_t n, AccessOp op, uint8_t* bits,
                          cudaStream_t stream);

// dst[offsets[i], offsets[i + 1]) <- the value of handles[i] (offsets holds
// n + 1 entries; an empty range copies nothing and reads no handle), for
// every value that ends within dst_capacity; one that would not fit is
// skipped (the caller sees total > capacity and takes its slow path). With
// total_out, also writes *total_out = offsets[n]. With `skip`, value i
// starts skip[i] bytes into what its slot holds (a byte key's record).
cudaError_t launch_gather(DeviceLocations locations, const uint64_t* handles, const uint32_t* skip,
                          const uint64_t* offsets, uint64_t n, char* dst, uint64_t dst_capacity, uint64_t* total_out,
                          cudaStream_t stream);

}  // namespace gphkv::server::cuda
