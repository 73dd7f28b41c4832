// Where each value of the device heap lives: a device table from value id
// (server/value_handle.h) to the value's device address, in pages of 2^16
// entries under a small directory, so the table grows a page at a time
// (no copy, no moment with two tables) and kernels find a value with two
// reads, the first of them almost always cached. The heap writes an entry
// when a value is stored or moved (the place kernel); the gather reads it.
//
// Shared by host code (g++) and kernels (nvcc).
#pragma once

#include <cstdint>

#include "server/value_handle.h"

namespace gphkv::server {

struct DeviceLocations {
  static constexpr int kPageBits = 16;
  static constexpr uint64_t kPageIds = uint64_t{1} << kPageBits;
  static constexpr uint64_t kPageBytes = kPageIds * sizeof(char*);

  // Device memory: pages[p] is a device array of kPageIds addresses.
  char** const* pages = nullptr;

#if defined(__CUDACC__)
  __device__ char* at(uint64_t id) const { return pages[id >> kPageBits][id & (kPageIds - 1)]; }
  __device__ void set(uint64_t id, char* where) const { pages[id >> kPageBits][id & (kPageIds - 1)] = where; }
#endif
};

}  // namespace gphkv::server
