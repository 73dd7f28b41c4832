// The device value heap's handle: what a table slot holds for a value stored
// in device memory. The value's length travels in the handle, so a get's
// length/prefix-sum pass reads nothing but the handles the lookup produced.
//
//   bits 63..39  length   (25 bits: values up to 32 MiB - 1)
//   bits 38..17  slab id  (22 bits: index into the heap's slab table)
//   bits 16..0   slot     (17 bits: slabs hold at most 2^17 slots)
//
// Shared by host code (g++) and kernels (nvcc).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GPHKV_HOST_DEVICE __host__ __device__
#else
#define GPHKV_HOST_DEVICE
#endif

namespace gphkv::server::device_handle {

constexpr int kSlotBits = 17;
constexpr int kSlabBits = 22;
constexpr int kLengthShift = kSlotBits + kSlabBits;  // 39
constexpr uint32_t kMaxLength = (uint32_t{1} << (64 - kLengthShift)) - 1;
constexpr uint64_t kMaxSlabs = uint64_t{1} << kSlabBits;
constexpr uint64_t kMaxSlotsPerSlab = uint64_t{1} << kSlotBits;
// The handle without its length: a slot's identity (what the free lists hold).
constexpr uint64_t kSlotIdMask = (uint64_t{1} << kLengthShift) - 1;

GPHKV_HOST_DEVICE inline uint64_t make(uint32_t length, uint64_t slab, uint64_t slot) {
  return (static_cast<uint64_t>(length) << kLengthShift) | (slab << kSlotBits) | slot;
}
GPHKV_HOST_DEVICE inline uint32_t length(uint64_t h) { return static_cast<uint32_t>(h >> kLengthShift); }
GPHKV_HOST_DEVICE inline uint64_t slab(uint64_t h) { return (h >> kSlotBits) & (kMaxSlabs - 1); }
GPHKV_HOST_DEVICE inline uint64_t slot(uint64_t h) { return h & (kMaxSlotsPerSlab - 1); }

}  // namespace gphkv::server::device_handle

namespace gphkv::server {

// One slab of device memory: slots of one size class. The heap keeps a table
// of these on the device; a handle's slab id indexes it.
struct DeviceSlab {
  char* base;
  uint32_t slot_bytes;
  uint32_t size_class;
};

}  // namespace gphkv::server
