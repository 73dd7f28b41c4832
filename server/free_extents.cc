#include "server/free_extents.h"

#include <cassert>

#include "absl/numeric/bits.h"

namespace gphkv::server {

FreeExtents::FreeExtents() {
  for (auto& fl : heads_) {
    for (uint32_t& head : fl) head = kNone;
  }
}

FreeExtents::Bin FreeExtents::bin_of(uint64_t size) {
  if (size < kSl) return {0, static_cast<uint32_t>(size)};
  const int f = 63 - absl::countl_zero(size);
  return {f - kSlBits + 1, static_cast<uint32_t>(size >> (f - kSlBits)) ^ kSl};
}

uint32_t FreeExtents::new_extent(uint64_t addr, uint64_t size) {
  uint32_t e;
  if (!spare_.empty()) {
    e = spare_.back();
    spare_.pop_back();
  } else {
    e = static_cast<uint32_t>(extents_.size());
    extents_.emplace_back();
  }
  extents_[e] = Extent{addr, size, kNone, kNone};
  by_start_[addr] = e;
  by_end_[addr + size] = e;
  free_ += size;
  link(e);
  return e;
}

void FreeExtents::link(uint32_t e) {
  // At the head: the most recently freed extent is the first one offered.
  const Bin b = bin_of(extents_[e].size);
  uint32_t& head = heads_[b.fl][b.sl];
  extents_[e].prev = kNone;
  extents_[e].next = head;
  if (head != kNone) extents_[head].prev = e;
  head = e;
  fl_bitmap_ |= uint64_t{1} << b.fl;
  sl_bitmap_[b.fl] |= 1u << b.sl;
}

void FreeExtents::unlink(uint32_t e) {
  const Bin b = bin_of(extents_[e].size);
  Extent& x = extents_[e];
  if (x.prev != kNone) extents_[x.prev].next = x.next;
  if (x.next != kNone) extents_[x.next].prev = x.prev;
  uint32_t& head = heads_[b.fl][b.sl];
  if (head == e) {
    head = x.next;
    if (head == kNone) {
      sl_bitmap_[b.fl] &= ~(1u << b.sl);
      if (sl_bitmap_[b.fl] == 0) fl_bitmap_ &= ~(uint64_t{1} << b.fl);
    }
  }
  x.prev = x.next = kNone;
}

void FreeExtents::drop(uint32_t e) {
  unlink(e);
  const Extent& x = extents_[e];
  by_start_.erase(x.addr);
  by_end_.erase(x.addr + x.size);
  free_ -= x.size;
  spare_.push_back(e);
}

void FreeExtents::add(uint64_t addr, uint64_t size) {
  assert(size > 0);
  uint64_t start = addr, end = addr + size;
  if (auto it = by_end_.find(start); it != by_end_.end()) {
    const uint32_t left = it->second;
    start = extents_[left].addr;
    drop(left);
  }
  if (auto it = by_start_.find(end); it != by_start_.end()) {
    const uint32_t right = it->second;
    end = extents_[right].addr + extents_[right].size;
    drop(right);
  }
  new_extent(start, end - start);
}

std::optional<uint64_t> FreeExtents::take(uint64_t size) {
  assert(size > 0);
  const Bin own = bin_of(size);
  uint32_t e = heads_[own.fl][own.sl];
  if (e == kNone || extents_[e].size < size) {
    // Search from the bin that starts at or above size rounded up to the
    // next bin boundary: every extent from there on is large enough, so the
    // first one found fits (bins below 32 granules are exact sizes).
    uint64_t wanted = size;
    if (size >= kSl) {
      const uint64_t step = uint64_t{1} << (63 - absl::countl_zero(size) - kSlBits);
      if (size > UINT64_MAX - step) return std::nullopt;
      wanted = size + step - 1;
    }
    const Bin b = bin_of(wanted);
    uint32_t sl_map = sl_bitmap_[b.fl] & (~0u << b.sl);
    int fl = b.fl;
    const uint64_t fl_map = fl + 1 < 64 ? fl_bitmap_ & (~uint64_t{0} << (fl + 1)) : 0;
    if (sl_map != 0) {
      e = heads_[fl][absl::countr_zero(sl_map)];
    } else if (fl_map != 0) {
      fl = absl::countr_zero(fl_map);
      e = heads_[fl][absl::countr_zero(sl_bitmap_[fl])];
    } else {
      // Only the request's own bin may still hold an extent large enough:
      // look through it, so that take() fails only when no extent fits
      // (a put is refused only when the space is really not there).
      e = heads_[own.fl][own.sl];
      while (e != kNone && extents_[e].size < size) e = extents_[e].next;
      if (e == kNone) return std::nullopt;
    }
  }
  assert(e != kNone && extents_[e].size >= size);
  const uint64_t addr = extents_[e].addr;
  const uint64_t rest = extents_[e].size - size;
  drop(e);
  if (rest > 0) new_extent(addr + size, rest);
  return addr;
}

bool FreeExtents::remove(uint64_t addr, uint64_t size) {
  auto it = by_start_.find(addr);
  if (it == by_start_.end() || extents_[it->second].size != size) return false;
  drop(it->second);
  return true;
}

uint64_t FreeExtents::largest() const {
  for (int fl = kFl; fl-- > 0;) {
    for (uint32_t sl = kSl; sl-- > 0;) {
      uint64_t best = 0;
      for (uint32_t e = heads_[fl][sl]; e != kNone; e = extents_[e].next) best = std::max(best, extents_[e].size);
      if (best > 0) return best;
    }
  }
  return 0;
}

}  // namespace gphkv::server
