#include "server/value_heap.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace gphkv::server {
namespace {

// A handle: the size class in the top 8 bits, the slot index below.
constexpr int kClassShift = 56;
constexpr uint64_t kSlotMask = (uint64_t{1} << kClassShift) - 1;

ValueHandle make_handle(uint32_t size_class, uint64_t slot) {
  return (static_cast<uint64_t>(size_class) << kClassShift) | slot;
}
uint32_t handle_class(ValueHandle h) { return static_cast<uint32_t>(h >> kClassShift); }
uint64_t handle_slot(ValueHandle h) { return h & kSlotMask; }

}  // namespace

std::vector<uint32_t> value_size_classes(uint32_t max_value_bytes) {
  std::vector<uint32_t> out;
  uint64_t size = HostValueHeap::kMinClassBytes;
  for (;;) {
    out.push_back(static_cast<uint32_t>(size));
    if (size >= max_value_bytes) break;
    const bool power_of_two = (size & (size - 1)) == 0;
    size = power_of_two ? size + size / 2 : (size / 3) * 4;
  }
  return out;
}

HostValueHeap::HostValueHeap(uint32_t max_value_bytes) : max_value_bytes_(max_value_bytes) {
  for (uint32_t size : value_size_classes(max_value_bytes)) {
    SizeClass c;
    c.slot_bytes = size;
    c.slots_per_slab = static_cast<uint32_t>(std::max<uint64_t>(1, kMinSlabBytes / size));
    classes_.push_back(std::move(c));
  }
}

uint32_t HostValueHeap::class_of(uint32_t length) const { return size_classes::class_of(classes_, length); }

absl::StatusOr<ValueHandle> HostValueHeap::allocate(std::string_view bytes) {
  if (bytes.size() > max_value_bytes_) {
    return absl::InvalidArgumentError(absl::StrCat("value of ", bytes.size(),
                                                   " bytes is over the limit of ",
                                                   max_value_bytes_, " bytes"));
  }
  const uint32_t len = static_cast<uint32_t>(bytes.size());
  auto h = take_slot(len);
  if (!h.ok()) return h;
  const SizeClass& c = classes_[handle_class(*h)];
  if (len > 0) std::memcpy(slot_ptr(c, handle_slot(*h)), bytes.data(), len);
  return h;
}

absl::StatusOr<ValueHandle> HostValueHeap::take_slot(uint32_t len) {
  const uint32_t ci = class_of(len);
  SizeClass& c = classes_[ci];
  uint64_t slot;
  if (!c.free_slots.empty()) {
    slot = c.free_slots.back();
    c.free_slots.pop_back();
  } else {
    const uint64_t slab_bytes = static_cast<uint64_t>(c.slot_bytes) * c.slots_per_slab;
    if (reserved_ + slab_bytes > limit_) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "value heap needs ", slab_bytes, " more bytes for a ", len, "-byte value but holds ",
          reserved_, " of the ", limit_, " bytes that --memory leaves it"));
    }
    c.slabs.push_back(std::unique_ptr<char[]>(new char[slab_bytes]));
    reserved_ += slab_bytes;
    const uint64_t first = static_cast<uint64_t>(c.slabs.size() - 1) * c.slots_per_slab;
    c.lengths.resize(first + c.slots_per_slab, 0);
    // Push in reverse so the lowest slot is handed out first.
    for (uint64_t s = first + c.slots_per_slab; s-- > first + 1;) c.free_slots.push_back(s);
    slot = first;
  }
  c.lengths[slot] = len;
  used_ += c.slot_bytes;
  ++live_;
  return make_handle(ci, slot);
}

absl::Status HostValueHeap::allocate_slots(absl::Span<const uint32_t> lengths, std::vector<ValueHandle>* handles) {
  // Check first, so a refusal changes nothing: slots each class still needs
  // beyond its free list, and the slabs that takes.
  auto plan = size_classes::plan(classes_, lengths, max_value_bytes_);
  if (!plan.ok()) return plan.status();
  const uint64_t grow = plan->new_bytes;
  if (grow > 0 && reserved_ + grow > limit_) {
    return absl::ResourceExhaustedError(absl::StrCat("value heap needs ", grow, " more bytes for ", lengths.size(),
                                                     " values but holds ", reserved_, " of the ", limit_,
                                                     " bytes that --memory leaves it"));
  }
  for (uint32_t len : lengths) {
    auto h = take_slot(len);
    if (!h.ok()) return h.status();  // unreachable: checked above
    handles->push_back(*h);
  }
  return absl::OkStatus();
}

absl::Status HostValueHeap::write(absl::Span<const ValueHandle> handles, absl::Span<const std::string_view> bytes) {
  if (handles.size() != bytes.size()) return absl::InvalidArgumentError("write: handles and values differ in count");
  for (size_t i = 0; i < handles.size(); ++i) {
    const SizeClass& c = classes_[handle_class(handles[i])];
    const uint64_t slot = handle_slot(handles[i]);
    if (bytes[i].size() != c.lengths[slot]) return absl::InvalidArgumentError("write: value length differs from its slot's");
    if (!bytes[i].empty()) std::memcpy(slot_ptr(c, slot), bytes[i].data(), bytes[i].size());
  }
  return absl::OkStatus();
}

void HostValueHeap::release(ValueHandle handle) {
  SizeClass& c = classes_[handle_class(handle)];
  c.free_slots.push_back(handle_slot(handle));
  used_ -= c.slot_bytes;
  --live_;
}

uint32_t HostValueHeap::length(ValueHandle handle) const {
  return classes_[handle_class(handle)].lengths[handle_slot(handle)];
}

absl::Status HostValueHeap::gather(absl::Span<const ValueHandle> handles, std::string* out) const {
  size_t total = out->size();
  for (ValueHandle h : handles) total += length(h);
  size_t pos = out->size();
  out->resize(total);
  char* dst = out->data();
  for (ValueHandle h : handles) {
    const SizeClass& c = classes_[handle_class(h)];
    const uint64_t slot = handle_slot(h);
    const uint32_t len = c.lengths[slot];
    if (len > 0) std::memcpy(dst + pos, slot_ptr(c, slot), len);
    pos += len;
  }
  return absl::OkStatus();
}

}  // namespace gphkv::server
