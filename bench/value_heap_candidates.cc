#include "bench/value_heap_candidates.h"

#include <algorithm>

namespace gphkv::bench {
namespace {

constexpr uint64_t kSlabBytes = 256 * 1024;  // main's HostValueHeap::kMinSlabBytes
constexpr int kClassShift = 56;

uint64_t granules(uint32_t length) { return length == 0 ? 1 : (uint64_t{length} + 7) / 8; }

}  // namespace

SizeClassAllocator::SizeClassAllocator(uint32_t max_value_bytes) {
  for (uint64_t size = 16;;) {
    SizeClass c;
    c.slot_bytes = static_cast<uint32_t>(size);
    c.slots_per_slab = static_cast<uint32_t>(std::max<uint64_t>(1, kSlabBytes / size));
    classes_.push_back(c);
    if (size >= max_value_bytes) break;
    const bool power_of_two = (size & (size - 1)) == 0;
    size = power_of_two ? size + size / 2 : (size / 3) * 4;
  }
}

bool SizeClassAllocator::allocate(absl::Span<const uint32_t> lengths, std::vector<uint64_t>* handles) {
  auto class_of = [&](uint32_t len) {
    return static_cast<size_t>(std::lower_bound(classes_.begin(), classes_.end(), len,
                                                [](const SizeClass& c, uint32_t l) { return c.slot_bytes < l; }) -
                               classes_.begin());
  };
  // main's plan: slots per class beyond the free lists, and the slabs they take.
  std::vector<uint64_t> need(classes_.size(), 0);
  for (uint32_t len : lengths) ++need[class_of(len)];
  uint64_t grow = 0;
  for (size_t ci = 0; ci < classes_.size(); ++ci) {
    const SizeClass& c = classes_[ci];
    if (need[ci] <= c.free_slots.size()) continue;
    const uint64_t slabs = (need[ci] - c.free_slots.size() + c.slots_per_slab - 1) / c.slots_per_slab;
    grow += slabs * c.slots_per_slab * c.slot_bytes;
  }
  if (grow > 0 && reserved_ + grow > limit_) return false;
  for (uint32_t len : lengths) {
    const size_t ci = class_of(len);
    SizeClass& c = classes_[ci];
    if (c.free_slots.empty()) {
      const uint64_t first = c.slabs++ * c.slots_per_slab;
      reserved_ += uint64_t{c.slot_bytes} * c.slots_per_slab;
      for (uint64_t s = first + c.slots_per_slab; s-- > first;) c.free_slots.push_back(s);
    }
    handles->push_back(uint64_t{ci} << kClassShift | c.free_slots.back());
    c.free_slots.pop_back();
  }
  return true;
}

void SizeClassAllocator::release(uint64_t handle) {
  classes_[handle >> kClassShift].free_slots.push_back(handle & ((uint64_t{1} << kClassShift) - 1));
}

void BestFitIndex::add(uint64_t addr, uint64_t size) {
  uint64_t start = addr, end = addr + size;
  auto next = by_addr_.lower_bound(addr);
  if (next != by_addr_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      by_size_.erase({prev->second, prev->first});
      by_addr_.erase(prev);
    }
  }
  if (next != by_addr_.end() && next->first == end) {
    end += next->second;
    by_size_.erase({next->second, next->first});
    by_addr_.erase(next);
  }
  by_addr_.emplace(start, end - start);
  by_size_.emplace(end - start, start);
}

std::optional<uint64_t> BestFitIndex::take(uint64_t size) {
  auto it = by_size_.lower_bound({size, 0});
  if (it == by_size_.end()) return std::nullopt;
  const auto [have, addr] = *it;
  by_size_.erase(it);
  by_addr_.erase(addr);
  if (have > size) {
    by_addr_.emplace(addr + size, have - size);
    by_size_.emplace(have - size, addr + size);
  }
  return addr;
}

template <class Index>
ExtentAllocator<Index>::ExtentAllocator(const char* name, uint32_t max_value_bytes)
    : name_(name), chunk_granules_(std::max<uint64_t>(4 * granules(max_value_bytes), kSlabBytes / 8)) {}

template <class Index>
bool ExtentAllocator<Index>::allocate(absl::Span<const uint32_t> lengths, std::vector<uint64_t>* handles) {
  const size_t first = handles->size();
  for (uint32_t len : lengths) {
    const uint64_t g = granules(len);
    std::optional<uint64_t> addr = index_.take(g);
    if (!addr && (chunks_ + 1) * chunk_granules_ * 8 <= limit_) {
      index_.add(chunks_++ << 32, chunk_granules_);
      addr = index_.take(g);
    }
    if (!addr) {
      // All or nothing: give back this batch's extents (chunks mapped for it
      // stay mapped; never past the limit).
      for (size_t i = first; i < handles->size(); ++i) release((*handles)[i]);
      handles->resize(first);
      return false;
    }
    uint64_t r;
    if (!free_records_.empty()) {
      r = free_records_.back();
      free_records_.pop_back();
    } else {
      r = records_.size();
      records_.emplace_back();
    }
    records_[r] = {*addr, g};
    handles->push_back(r);
  }
  return true;
}

template <class Index>
void ExtentAllocator<Index>::release(uint64_t handle) {
  index_.add(records_[handle].first, records_[handle].second);
  free_records_.push_back(handle);
}

ValueHeapAllocator::ValueHeapAllocator(uint32_t max_value_bytes)
    : heap_(std::move(*server::HostValueHeap::create(max_value_bytes))) {}

std::vector<std::unique_ptr<Allocator>> make_candidates(uint32_t max_value_bytes) {
  std::vector<std::unique_ptr<Allocator>> out;
  out.push_back(std::make_unique<SizeClassAllocator>(max_value_bytes));
  out.push_back(std::make_unique<ExtentAllocator<BestFitIndex>>("extents, best fit (std::set)", max_value_bytes));
  out.push_back(std::make_unique<ExtentAllocator<server::FreeExtents>>("extents, TLSF (FreeExtents)", max_value_bytes));
  out.push_back(std::make_unique<ValueHeapAllocator>(max_value_bytes));
  return out;
}

}  // namespace gphkv::bench
