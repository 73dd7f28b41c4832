// A value heap's handle: what a table slot holds for a stored value. An id,
// not an address: the heap keeps each id's place (host records, and on a GPU
// a table the kernels read), so it can move a value to compact its memory
// without the table learning of it. The value's length travels in the handle,
// so a get's length/prefix-sum pass reads nothing but the handles the lookup
// produced.
//
//   bits 63..39  length   (25 bits: values up to 32 MiB - 1)
//   bit  38      record   (the slot holds a byte key's record, server/byte_key.h,
//                          not a uint64 key's value; the heaps never look at it)
//   bits 37..0   id       (38 bits)
//
// Shared by host code (g++) and kernels (nvcc).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GPHKV_HOST_DEVICE __host__ __device__
#else
#define GPHKV_HOST_DEVICE
#endif

namespace gphkv::server::value_handle {

constexpr int kIdBits = 38;
constexpr int kLengthShift = kIdBits + 1;
constexpr uint64_t kIdMask = (uint64_t{1} << kIdBits) - 1;
constexpr uint64_t kMaxIds = uint64_t{1} << kIdBits;
constexpr uint64_t kRecordBit = uint64_t{1} << kIdBits;
constexpr uint32_t kMaxLength = (uint32_t{1} << (64 - kLengthShift)) - 1;

// `length` must be at most kMaxLength (the heaps refuse longer values).
GPHKV_HOST_DEVICE inline uint64_t make(uint32_t length, uint64_t id) {
  return (static_cast<uint64_t>(length) << kLengthShift) | id;
}
GPHKV_HOST_DEVICE inline uint32_t length(uint64_t h) { return static_cast<uint32_t>(h >> kLengthShift); }
GPHKV_HOST_DEVICE inline uint64_t id(uint64_t h) { return h & kIdMask; }
// Whether the slot holds a byte key's record; the handle marked as one.
GPHKV_HOST_DEVICE inline bool is_record(uint64_t h) { return (h & kRecordBit) != 0; }
GPHKV_HOST_DEVICE inline uint64_t as_record(uint64_t h) { return h | kRecordBit; }

}  // namespace gphkv::server::value_handle
