// The allocators value_heap_bench measures the value heap against: what main
// had before issue 13 (size classes), an extent allocator with a best-fit
// index, the heap's own TLSF index without compaction, and the heap itself
// (server/extent_value_heap.h). Benchmark-only: the comparison that chose the
// heap's design lives here, not in the server (docs/service.md, "The value
// heap").
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "absl/types/span.h"
#include "server/free_extents.h"
#include "server/host_value_heap.h"

namespace gphkv::bench {

// Room for values under a limit on reserved bytes; bookkeeping only (no
// value bytes are copied, so the costs are the allocators' own).
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual const char* name() const = 0;
  // Room for every length, or none (false: nothing changed).
  virtual bool allocate(absl::Span<const uint32_t> lengths, std::vector<uint64_t>* handles) = 0;
  virtual void release(uint64_t handle) = 0;
  virtual uint64_t reserved_bytes() const = 0;
  virtual void set_limit(uint64_t bytes) = 0;
  // Bytes compaction copied (0 where there is none).
  virtual uint64_t moved_bytes() const { return 0; }
};

// main before issue 13 (HostValueHeap at 964272f): size classes 16, 24, 32,
// 48, ... (x1.5 and x4/3), slabs of at least 256 KiB per class, LIFO free
// lists; a slab, once carved for a class, stays with it.
class SizeClassAllocator final : public Allocator {
 public:
  explicit SizeClassAllocator(uint32_t max_value_bytes);
  const char* name() const override { return "size classes (main)"; }
  bool allocate(absl::Span<const uint32_t> lengths, std::vector<uint64_t>* handles) override;
  void release(uint64_t handle) override;
  uint64_t reserved_bytes() const override { return reserved_; }
  void set_limit(uint64_t bytes) override { limit_ = bytes; }

 private:
  struct SizeClass {
    uint32_t slot_bytes = 0;
    uint32_t slots_per_slab = 0;
    uint64_t slabs = 0;
    std::vector<uint64_t> free_slots;
  };
  std::vector<SizeClass> classes_;
  uint64_t reserved_ = 0;
  uint64_t limit_ = UINT64_MAX;
};

// Best fit over an ordered index of free extents (by size, then address),
// with an index by address to merge freed neighbours.
class BestFitIndex {
 public:
  void add(uint64_t addr, uint64_t size);
  std::optional<uint64_t> take(uint64_t size);

 private:
  std::set<std::pair<uint64_t, uint64_t>> by_size_;  // (size, addr)
  std::map<uint64_t, uint64_t> by_addr_;             // addr -> size
};

// Extents of 8-byte granules in chunks of 4 values of the largest size, as
// the heap carves them, with a free index (BestFitIndex or the heap's
// FreeExtents) and no compaction: a chunk is mapped when no extent fits.
template <class Index>
class ExtentAllocator final : public Allocator {
 public:
  ExtentAllocator(const char* name, uint32_t max_value_bytes);
  const char* name() const override { return name_; }
  bool allocate(absl::Span<const uint32_t> lengths, std::vector<uint64_t>* handles) override;
  void release(uint64_t handle) override;
  uint64_t reserved_bytes() const override { return chunks_ * chunk_granules_ * 8; }
  void set_limit(uint64_t bytes) override { limit_ = bytes; }

 private:
  const char* name_;
  uint64_t chunk_granules_;
  uint64_t chunks_ = 0;
  uint64_t limit_ = UINT64_MAX;
  Index index_;
  std::vector<std::pair<uint64_t, uint64_t>> records_;  // handle -> (addr, granules)
  std::vector<uint64_t> free_records_;
};

// The value heap itself: TLSF, value ids and compaction (HostValueHeap).
class ValueHeapAllocator final : public Allocator {
 public:
  explicit ValueHeapAllocator(uint32_t max_value_bytes);
  const char* name() const override { return "value heap (TLSF + compaction)"; }
  bool allocate(absl::Span<const uint32_t> lengths, std::vector<uint64_t>* handles) override {
    return heap_->allocate_slots(lengths, handles).ok();
  }
  void release(uint64_t handle) override { heap_->release(handle); }
  uint64_t reserved_bytes() const override { return heap_->reserved_bytes(); }
  void set_limit(uint64_t bytes) override { heap_->set_limit(bytes); }
  uint64_t moved_bytes() const override { return heap_->moved_bytes(); }

 private:
  std::unique_ptr<server::HostValueHeap> heap_;
};

// Every candidate, in the order the report lists them.
std::vector<std::unique_ptr<Allocator>> make_candidates(uint32_t max_value_bytes);

}  // namespace gphkv::bench
