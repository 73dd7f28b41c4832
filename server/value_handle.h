// A value heap's handle: what a table slot holds for a stored value. An id,
// not an address: the heap keeps each id's place (host records, and on a GPU
// a table the kernels read), so it can move a value to compact its memory
// without the table learning of it. The value's length travels in the handle,
// so a get's length/prefix-sum pass reads nothing but the handles the lookup
// produced.
//
//   bits 63..39  length   (25 bits: values up to 32 MiB - 1)
//   bits 38..0   id       (39 bits)
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

constexpr int kIdBits = 39;
constexpr uint64_t kIdMask = (uint64_t{1} << kIdBits) - 1;
constexpr uint64_t kMaxIds = uint64_t{1} << kIdBits;
constexpr uint32_t kMaxLength = (uint32_t{1} << (64 - kIdBits)) - 1;

// `length` must be at most kMaxLength (the heaps refuse longer values).
GPHKV_HOST_DEVICE inline uint64_t make(uint32_t length, uint64_t id) {
  return (static_cast<uint64_t>(length) << kIdBits) | id;
}
GPHKV_HOST_DEVICE inline uint32_t length(uint64_t h) { return static_cast<uint32_t>(h >> kIdBits); }
GPHKV_HOST_DEVICE inline uint64_t id(uint64_t h) { return h & kIdMask; }

}  // namespace gphkv::server::value_handle
