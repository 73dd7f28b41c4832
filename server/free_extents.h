// The free space of the value heaps: extents of granules, found in O(1) by
// two-level segregated fits (TLSF: M. Masmano et al., "TLSF: a new dynamic
// memory allocator for real-time systems", ECRTS 2004) and merged with their
// free neighbours when they are freed, so memory freed by values of one size
// serves values of any other size. All of it lives on the host, apart from the
// memory it describes (which may be a GPU's): the heaps keep no boundary tags
// in their chunks. Addresses are the heaps' own (a chunk's index in the high
// bits), so extents of two chunks are never neighbours.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace gphkv::server {

class FreeExtents {
 public:
  FreeExtents();

  // Makes [addr, addr + size) free (size > 0), merged with the free extents
  // that end at addr and start at addr + size. The range must not overlap a
  // free extent.
  void add(uint64_t addr, uint64_t size);
  // Takes `size` granules (size > 0) from the front of a free extent that
  // holds them and returns their address; nullopt (and no change) only when
  // no free extent is that large. Prefers the most recently freed extent of
  // the request's own bin when it is large enough (a freed value's extent
  // serves the next value of its size), else the first extent of the first
  // bin whose extents are all large enough (O(1)), else searches the own bin.
  std::optional<uint64_t> take(uint64_t size);
  // Removes the free extent that is exactly [addr, addr + size); false if
  // there is none.
  bool remove(uint64_t addr, uint64_t size);

  uint64_t free_granules() const { return free_; }
  uint64_t extents() const { return by_start_.size(); }
  // The size of the largest free extent (a scan of the bins: for tests and stats).
  uint64_t largest() const;

 private:
  // 16 second-level bins per power of two (sizes below 16 get a bin each):
  // at most 1/16 of a bin's range separates its smallest and largest extent.
  static constexpr int kSlBits = 4;
  static constexpr uint32_t kSl = 1u << kSlBits;
  static constexpr int kFl = 64 - kSlBits + 1;
  static constexpr uint32_t kNone = UINT32_MAX;

  struct Extent {
    uint64_t addr = 0;
    uint64_t size = 0;
    uint32_t prev = kNone;  // the bin's list
    uint32_t next = kNone;
  };
  struct Bin {
    int fl;
    uint32_t sl;
  };
  static Bin bin_of(uint64_t size);

  uint32_t new_extent(uint64_t addr, uint64_t size);
  void link(uint32_t e);
  void unlink(uint32_t e);
  // Forgets extent e entirely (bin list, both maps, its record).
  void drop(uint32_t e);

  std::vector<Extent> extents_;
  std::vector<uint32_t> spare_;  // records of dropped extents, reused
  uint32_t heads_[kFl][kSl];
  uint64_t fl_bitmap_ = 0;
  uint32_t sl_bitmap_[kFl] = {};
  // Where free extents start and end: what freeing a range merges with.
  absl::flat_hash_map<uint64_t, uint32_t> by_start_, by_end_;
  uint64_t free_ = 0;
};

}  // namespace gphkv::server
