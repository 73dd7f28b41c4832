#include "server/extent_value_heap.h"

#include <algorithm>
#include <cassert>
#include <chrono>

#include "absl/numeric/bits.h"
#include "absl/strings/str_cat.h"

namespace gphkv::server {
namespace {

// Live values are counted per bin of extent sizes, 8 bins per power of two,
// so max_live_extent_bytes() is at most 1/8 over the longest value's extent.
uint32_t size_bin(uint64_t granules) {
  if (granules < 8) return static_cast<uint32_t>(granules);
  const int f = 63 - absl::countl_zero(granules);
  return static_cast<uint32_t>((f - 2) * 8 + ((granules >> (f - 3)) & 7));
}
uint64_t bin_top(uint32_t bin) {
  if (bin < 8) return bin;
  const int f = static_cast<int>(bin / 8) + 2;
  return ((uint64_t{8} + bin % 8 + 1) << (f - 3)) - 1;
}

}  // namespace

ExtentValueHeap::ExtentValueHeap(uint32_t max_value_bytes, uint64_t min_chunk_bytes)
    : max_value_bytes_(max_value_bytes) {
  const uint64_t want = kMaxValuesPerChunk * granules(max_value_bytes) * kGranuleBytes;
  const uint64_t chunk = (want + min_chunk_bytes - 1) / min_chunk_bytes * min_chunk_bytes;
  chunk_granules_ = chunk / kGranuleBytes;
  live_by_bin_.assign(size_bin(granules(max_value_bytes)) + 1, 0);
}

uint64_t ExtentValueHeap::max_live_extent_bytes() const {
  for (size_t b = live_by_bin_.size(); b-- > 0;) {
    if (live_by_bin_[b] > 0) return bin_top(static_cast<uint32_t>(b)) * kGranuleBytes;
  }
  return 0;
}

absl::StatusOr<uint64_t> ExtentValueHeap::add_chunk() {
  const auto t0 = std::chrono::steady_clock::now();
  auto base = map_chunk();
  backing_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!base.ok()) return base.status();
  uint64_t c;
  if (!spare_chunks_.empty()) {
    c = spare_chunks_.back();
    spare_chunks_.pop_back();
  } else {
    c = chunks_.size();
    chunks_.emplace_back();
  }
  chunks_[c].base = *base;
  chunks_[c].live_granules = 0;
  ++mapped_chunks_;
  reserved_ += chunk_bytes();
  free_.add(chunk_start(c), chunk_granules_);
  return c;
}

void ExtentValueHeap::remove_chunk(uint64_t c) {
  Chunk& ch = chunks_[c];
  assert(ch.members.empty());
  const bool was_free = free_.remove(chunk_start(c), chunk_granules_);
  assert(was_free);
  (void)was_free;
  unmap_chunk(ch.base);
  ch.base = nullptr;
  ch.members = {};
  spare_chunks_.push_back(c);
  --mapped_chunks_;
  reserved_ -= chunk_bytes();
}

void ExtentValueHeap::unmap_all() {
  for (Chunk& ch : chunks_) {
    if (ch.base != nullptr) unmap_chunk(ch.base);
    ch.base = nullptr;
  }
}

void ExtentValueHeap::attach(uint64_t id, uint64_t addr) {
  Record& r = records_[id];
  Chunk& ch = chunks_[addr >> kChunkShift];
  r.addr = addr;
  r.member = static_cast<uint32_t>(ch.members.size());
  ch.members.push_back(id);
  ch.live_granules += granules(r.length);
}

void ExtentValueHeap::detach(uint64_t id) {
  Record& r = records_[id];
  Chunk& ch = chunks_[r.addr >> kChunkShift];
  // Swap-remove: the last member takes the leaver's place.
  const uint64_t last = ch.members.back();
  ch.members[r.member] = last;
  records_[last].member = r.member;
  ch.members.pop_back();
  ch.live_granules -= granules(r.length);
}

uint64_t ExtentValueHeap::addable_chunks(uint64_t id_growth) const {
  const uint64_t taken = reserved_ + id_growth;
  return taken >= limit_ ? 0 : (limit_ - taken) / chunk_bytes();
}

absl::Status ExtentValueHeap::refusal(absl::Span<const uint32_t> lengths, uint64_t need) const {
  return absl::ResourceExhaustedError(absl::StrCat("value heap needs ", need * kGranuleBytes, " bytes for ",
                                                   lengths.size(), " values but has ", free_bytes(),
                                                   " free (largest free extent ", largest_free_bytes(), ") and holds ",
                                                   reserved_, " of the ", limit_, " bytes that --memory leaves it"));
}

absl::Status ExtentValueHeap::too_long(uint64_t length) const {
  return absl::InvalidArgumentError(
      absl::StrCat("value of ", length, " bytes is over the limit of ", max_value_bytes_, " bytes"));
}

absl::Status ExtentValueHeap::allocate(absl::Span<const uint32_t> lengths, std::vector<ValueHandle>* handles,
                                       bool packed) {
  uint64_t need = 0, largest = 0;
  for (uint32_t len : lengths) {
    if (len > max_value_bytes_) return too_long(len);
    need += granules(len);
    largest = std::max(largest, granules(len));
  }
  const uint64_t new_ids = lengths.size() > free_ids_.size() ? lengths.size() - free_ids_.size() : 0;
  if (records_.size() + new_ids > value_handle::kMaxIds) {
    return absl::ResourceExhaustedError("value heap: out of value ids");
  }
  const uint64_t id_growth = id_table_bytes(records_.size() + new_ids) - id_table_bytes(records_.size());
  // Refused at once, with nothing moved, when even perfectly packed the
  // values would not fit in the free space plus the chunks the limit allows.
  if (reserved_ + id_growth > limit_ || need > free_.free_granules() + addable_chunks(id_growth) * chunk_granules_) {
    return refusal(lengths, need);
  }
  const size_t first = handles->size();
  absl::Status placed = place(lengths, id_growth, handles, packed);
  if (placed.code() == absl::StatusCode::kResourceExhausted) {
    // Enough free bytes but no holes to hold them: compact, then try once
    // more. The slack covers the end of a chunk that values cannot straddle.
    auto compacted = compact(need + largest, addable_chunks(id_growth) * chunk_granules_, largest);
    if (!compacted.ok()) return compacted.status();
    // Even short of the goal the chunks it emptied may be enough.
    placed = place(lengths, id_growth, handles, packed);
    if (placed.code() == absl::StatusCode::kResourceExhausted) return refusal(lengths, need);
  }
  if (!placed.ok()) return placed;
  if (id_growth > 0) {
    const auto t0 = std::chrono::steady_clock::now();
    absl::Status s = reserve_ids(records_.size());
    backing_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!s.ok()) {
      for (size_t i = first; i < handles->size(); ++i) release((*handles)[i]);
      handles->resize(first);
      return s;
    }
    reserved_ += id_growth;
  }
  return absl::OkStatus();
}

absl::Status ExtentValueHeap::place(absl::Span<const uint32_t> lengths, uint64_t id_growth,
                                    std::vector<ValueHandle>* handles, bool packed) {
  const size_t first = handles->size();
  std::vector<uint64_t> mapped;
  auto undo = [&](absl::Status why) {
    for (size_t i = first; i < handles->size(); ++i) release((*handles)[i]);
    handles->resize(first);
    // Only this call's values were placed in them: wholly free again.
    for (uint64_t c : mapped) remove_chunk(c);
    return why;
  };
  for (size_t i = 0; i < lengths.size();) {
    // Values [i, end) go back to back into one extent of `run` granules: one
    // value, or packed, the next values up to a chunk's worth, halved until a
    // free extent holds them.
    size_t end = i + 1;
    uint64_t run = granules(lengths[i]);
    if (packed) {
      while (end < lengths.size() && run + granules(lengths[end]) <= chunk_granules_) run += granules(lengths[end++]);
    }
    std::optional<uint64_t> addr;
    while (!(addr = free_.take(run)) && end > i + 1) {
      const size_t keep = (end - i) / 2;
      while (end > i + keep) run -= granules(lengths[--end]);
    }
    if (!addr && addable_chunks(id_growth) > 0) {
      auto c = add_chunk();
      if (!c.ok()) return undo(c.status());
      mapped.push_back(*c);
      addr = free_.take(run);  // an empty chunk holds kMaxValuesPerChunk of the largest values
    }
    if (!addr) return undo(absl::ResourceExhaustedError("no free extent"));
    if (end == i + 1) {
      place_one(lengths[i], *addr, handles);
    } else {
      place_run(lengths.subspan(i, end - i), *addr, handles);
    }
    i = end;
  }
  return absl::OkStatus();
}

void ExtentValueHeap::place_run(absl::Span<const uint32_t> lengths, uint64_t addr, std::vector<ValueHandle>* handles) {
  // Freed ids first, one at a time; the rest take fresh ids, consecutive
  // ones, in one pass without a per-value push_back: a bulk load places
  // 10^8 values here (docs/durability.md, the restart measurements).
  size_t k = 0;
  for (; k < lengths.size() && !free_ids_.empty(); ++k) {
    place_one(lengths[k], addr, handles);
    addr += granules(lengths[k]);
  }
  const size_t m = lengths.size() - k;
  if (m == 0) return;
  const uint64_t first_id = records_.size();
  records_.resize(first_id + m);
  Record* rec = records_.data() + first_id;
  Chunk& ch = chunks_[addr >> kChunkShift];
  const size_t first_member = ch.members.size();
  if (ch.members.capacity() < first_member + m) {
    // A bulk load fills the chunk with runs like this one: room for as many
    // values as it holds at this run's mean size, so that the member list
    // grows once rather than by doublings that copy it.
    uint64_t run = 0;
    for (size_t j = k; j < lengths.size(); ++j) run += granules(lengths[j]);
    ch.members.reserve(std::max<uint64_t>(first_member + m, chunk_granules_ * m / run));
  }
  ch.members.resize(first_member + m);
  uint64_t* member = ch.members.data() + first_member;
  const size_t first_handle = handles->size();
  handles->resize(first_handle + m);
  ValueHandle* h = handles->data() + first_handle;
  uint64_t run = 0;
  for (size_t j = 0; j < m; ++j) {
    const uint32_t len = lengths[k + j];
    const uint64_t g = granules(len);
    rec[j].addr = addr + run;
    rec[j].length = len;
    rec[j].member = static_cast<uint32_t>(first_member + j);
    member[j] = first_id + j;
    h[j] = value_handle::make(len & value_handle::kMaxLength, first_id + j);
    ++live_by_bin_[size_bin(g)];
    run += g;
  }
  ch.live_granules += run;
  used_ += run * kGranuleBytes;
  live_ += m;
}

void ExtentValueHeap::reserve_values(uint64_t values) {
  const uint64_t fresh = values > free_ids_.size() ? values - free_ids_.size() : 0;
  const uint64_t want = std::min<uint64_t>(records_.size() + fresh, value_handle::kMaxIds);
  if (want <= records_.capacity()) return;
  records_prefault_.stop();  // before the old array goes
  records_.reserve(want);
  records_prefault_.start(records_.data() + records_.size(), (records_.capacity() - records_.size()) * sizeof(Record));
}

void ExtentValueHeap::place_one(uint32_t len, uint64_t addr, std::vector<ValueHandle>* handles) {
  const uint64_t g = granules(len);
  uint64_t id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = records_.size();
    records_.emplace_back();
  }
  records_[id].length = len;
  records_[id].accessed = 1;  // a new value counts as used
  attach(id, addr);
  used_ += g * kGranuleBytes;
  ++live_;
  ++live_by_bin_[size_bin(g)];
  handles->push_back(value_handle::make(len & value_handle::kMaxLength, id));
}

void ExtentValueHeap::release(ValueHandle handle) {
  const uint64_t id = value_handle::id(handle);
  Record& r = records_[id];
  assert(r.addr != kNoAddr);
  const uint64_t g = granules(r.length);
  const uint64_t addr = r.addr;
  detach(id);
  free_.add(addr, g);
  r.addr = kNoAddr;
  free_ids_.push_back(id);
  used_ -= g * kGranuleBytes;
  --live_;
  --live_by_bin_[size_bin(g)];
}

absl::StatusOr<ValueHandle> ExtentValueHeap::allocate(std::string_view bytes) {
  if (bytes.size() > max_value_bytes_) return too_long(bytes.size());
  const uint32_t len = static_cast<uint32_t>(bytes.size());
  std::vector<ValueHandle> h;
  if (absl::Status s = allocate_slots({&len, 1}, &h); !s.ok()) return s;
  if (absl::Status s = write(h, {&bytes, 1}); !s.ok()) {
    release(h[0]);
    return s;
  }
  return h[0];
}

absl::Status ExtentValueHeap::mark_accessed(absl::Span<const ValueHandle> handles) {
  for (ValueHandle h : handles) records_[value_handle::id(h)].accessed = 1;
  return absl::OkStatus();
}

absl::Status ExtentValueHeap::read_accessed(absl::Span<const ValueHandle> handles, std::vector<uint8_t>* bits) {
  bits->resize(handles.size());
  for (size_t i = 0; i < handles.size(); ++i) (*bits)[i] = records_[value_handle::id(handles[i])].accessed;
  return absl::OkStatus();
}

absl::Status ExtentValueHeap::clear_accessed(absl::Span<const ValueHandle> handles) {
  for (ValueHandle h : handles) records_[value_handle::id(h)].accessed = 0;
  return absl::OkStatus();
}

}  // namespace gphkv::server
