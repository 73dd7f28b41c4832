// Where each value of the device heap lives: a device table from value id
// (server/value_handle.h) to the value's device address, in pages of 2^16
// entries under a small directory, so the table grows a page at a time
// (no copy, no moment with two tables) and kernels find a value with two
// reads, the first of them almost always cached. The heap writes an entry
// when a value is stored or moved (the place kernel); the gather reads it.
//
// An entry's lowest bit is the value's access bit, CLOCK's reference bit
// (server/store_eviction.cc, issue 27): values lie at 8-byte granules of
// 256-byte aligned chunks, so an address never uses it. A value stored or
// keeps it where it was (the place kernel's moving flag); a new one has it
// set (a new item counts as used); the get pipeline's lengths
// pass sets it on every hit, so the GPU lookups themselves mark what they
// read; the eviction's hand reads and clears it (launch_access).
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

  static constexpr uintptr_t kAccessedBit = 1;

  // Device memory: pages[p] is a device array of kPageIds addresses.
  char** const* pages = nullptr;

#if defined(__CUDACC__)
  __device__ char*& entry(uint64_t id) const { return pages[id >> kPageBits][id & (kPageIds - 1)]; }
  __device__ char* at(uint64_t id) const {
    return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(entry(id)) & ~kAccessedBit);
  }
  // Stored or moved there: the access bit set.
  __device__ void set(uint64_t id, char* where) const {
    entry(id) = reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(where) | kAccessedBit);
  }
  // Moved there: the access bit as it was (compaction is not a use).
  __device__ void move(uint64_t id, char* where) const {
    char*& e = entry(id);
    e = reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(where) | (reinterpret_cast<uintptr_t>(e) & kAccessedBit));
  }
  __device__ bool accessed(uint64_t id) const { return (reinterpret_cast<uintptr_t>(entry(id)) & kAccessedBit) != 0; }
  // Written only when clear: a hot value's entry is read, not rewritten, by
  // each get. Racing marks of one entry write the same word.
  __device__ void mark(uint64_t id) const {
    char*& e = entry(id);
    const uintptr_t v = reinterpret_cast<uintptr_t>(e);
    if ((v & kAccessedBit) == 0) e = reinterpret_cast<char*>(v | kAccessedBit);
  }
  __device__ void clear(uint64_t id) const {
    char*& e = entry(id);
    e = reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(e) & ~kAccessedBit);
  }
#endif
};

}  // namespace gphkv::server
