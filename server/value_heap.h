// The value heap: where value bytes live; the table's slot holds only a handle.
//
// Values are byte strings up to --max_value_bytes. The heap keeps them in size
// classes with free lists, so a put reuses a freed slot of its class without a
// call into the system allocator, and a handle fits the table's 64-bit value.
// One owner (the executor thread) calls every method: no locks inside.
//
// ValueHeap is the interface; HostValueHeap serves the CPU backend, and
// DeviceValueHeap (server/cuda/, built with CUDA) keeps the slabs in device
// memory for the CUDA backend, where a kernel gathers a batch's values into
// one buffer that is copied out once.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"

namespace gphkv::server {

// An opaque reference to one stored value: the table's 64-bit slot value.
using ValueHandle = uint64_t;

// The slot sizes of the size classes for values up to max_value_bytes:
// 16, 24, 32, 48, 64, 96, ... (x1.5 and x4/3 alternately), up to the first
// that holds max_value_bytes. Every class is a multiple of 8 bytes.
std::vector<uint32_t> value_size_classes(uint32_t max_value_bytes);

// What both heaps share about their classes, each of which has slot_bytes,
// slots_per_slab and a free_slots list (ordered by slot_bytes).
namespace size_classes {

// The class a value of `length` bytes goes to: the first whose slots hold it.
template <class Classes>
uint32_t class_of(const Classes& classes, uint32_t length) {
  // At most ~2 * log2(max_value_bytes) classes: a binary search is plenty.
  auto it = std::lower_bound(classes.begin(), classes.end(), length,
                             [](const auto& c, uint32_t len) { return c.slot_bytes < len; });
  return static_cast<uint32_t>(it - classes.begin());
}

// What a batch of values takes: slots per class, and the slabs (and their
// bytes) to add where a class's free list is too short.
struct SlotPlan {
  std::vector<uint64_t> need;
  uint64_t new_slabs = 0;
  uint64_t new_bytes = 0;
};

// INVALID_ARGUMENT, naming the limit, for a value over max_value_bytes.
template <class Classes>
absl::StatusOr<SlotPlan> plan(const Classes& classes, absl::Span<const uint32_t> lengths, uint32_t max_value_bytes) {
  SlotPlan p;
  p.need.assign(classes.size(), 0);
  for (uint32_t len : lengths) {
    if (len > max_value_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("value of ", len, " bytes is over the limit of ", max_value_bytes, " bytes"));
    }
    ++p.need[class_of(classes, len)];
  }
  for (size_t ci = 0; ci < classes.size(); ++ci) {
    const auto& c = classes[ci];
    if (p.need[ci] <= c.free_slots.size()) continue;
    const uint64_t slabs = (p.need[ci] - c.free_slots.size() + c.slots_per_slab - 1) / c.slots_per_slab;
    p.new_slabs += slabs;
    p.new_bytes += slabs * c.slots_per_slab * c.slot_bytes;
  }
  return p;
}

}  // namespace size_classes

class ValueHeap {
 public:
  virtual ~ValueHeap() = default;

  // Copies `bytes` into a slot of their size class. RESOURCE_EXHAUSTED, with
  // the sizes involved, when the slot would take reserved memory past limit().
  virtual absl::StatusOr<ValueHandle> allocate(std::string_view bytes) = 0;
  // Takes one slot per length, all or nothing: RESOURCE_EXHAUSTED (and no
  // change at all, not even a slab reserved) when the slots would take
  // reserved memory past limit(); INVALID_ARGUMENT for a length over
  // max_value_bytes. The slots' bytes are undefined until write().
  virtual absl::Status allocate_slots(absl::Span<const uint32_t> lengths, std::vector<ValueHandle>* handles) = 0;
  // Stores bytes[i] in handles[i]'s slot (bytes[i].size() must be the length
  // the slot was taken for). On a device: one upload of the concatenated bytes
  // and a scatter kernel; returns once they are stored.
  virtual absl::Status write(absl::Span<const ValueHandle> handles, absl::Span<const std::string_view> bytes) = 0;
  // Returns the handle's slot to its class's free list.
  virtual void release(ValueHandle handle) = 0;
  // The stored value's byte length.
  virtual uint32_t length(ValueHandle handle) const = 0;
  // Appends the stored bytes of each handle to `out`, in order: one contiguous
  // buffer for a whole batch (on a device, the gather kernel's job). Fails
  // only on a device error.
  virtual absl::Status gather(absl::Span<const ValueHandle> handles, std::string* out) const = 0;

  // Bytes reserved from the backend's memory (slabs, whether used or free).
  virtual uint64_t reserved_bytes() const = 0;
  // Bytes of live values, rounded up to their size classes.
  virtual uint64_t used_bytes() const = 0;
  // Number of live values.
  virtual uint64_t live_values() const = 0;

  // The cap on reserved_bytes(); the executor lowers it by what the table takes.
  void set_limit(uint64_t bytes) { limit_ = bytes; }
  uint64_t limit() const { return limit_; }

 protected:
  uint64_t limit_ = UINT64_MAX;
};

// The heap in host memory (the CPU backend's). Size classes grow by factors
// of 1.5 and 2 alternately (16, 24, 32, 48, ...), so at most a third of a slot
// is padding. A class reserves slabs of at least kMinSlabBytes at a time.
class HostValueHeap final : public ValueHeap {
 public:
  static constexpr uint32_t kMinClassBytes = 16;
  static constexpr uint64_t kMinSlabBytes = 256 * 1024;

  // max_value_bytes: the largest value allocate() accepts.
  explicit HostValueHeap(uint32_t max_value_bytes);

  absl::StatusOr<ValueHandle> allocate(std::string_view bytes) override;
  absl::Status allocate_slots(absl::Span<const uint32_t> lengths, std::vector<ValueHandle>* handles) override;
  absl::Status write(absl::Span<const ValueHandle> handles, absl::Span<const std::string_view> bytes) override;
  void release(ValueHandle handle) override;
  uint32_t length(ValueHandle handle) const override;
  absl::Status gather(absl::Span<const ValueHandle> handles, std::string* out) const override;
  uint64_t reserved_bytes() const override { return reserved_; }
  uint64_t used_bytes() const override { return used_; }
  uint64_t live_values() const override { return live_; }

  // The size class a value of `length` bytes goes to, and that class's slot size.
  uint32_t class_of(uint32_t length) const;
  uint32_t class_bytes(uint32_t size_class) const { return classes_[size_class].slot_bytes; }

 private:
  struct SizeClass {
    uint32_t slot_bytes = 0;
    uint32_t slots_per_slab = 0;
    std::vector<std::unique_ptr<char[]>> slabs;
    std::vector<uint32_t> lengths;     // per slot; the value's byte length
    std::vector<uint64_t> free_slots;  // LIFO: the most recently freed slot is warm in cache
  };
  // A slot of `len`'s class (its length set, its bytes not), growing a slab if need be.
  absl::StatusOr<ValueHandle> take_slot(uint32_t len);
  char* slot_ptr(const SizeClass& c, uint64_t slot) const {
    return c.slabs[slot / c.slots_per_slab].get() + (slot % c.slots_per_slab) * c.slot_bytes;
  }

  uint32_t max_value_bytes_;
  std::vector<SizeClass> classes_;
  uint64_t reserved_ = 0;
  uint64_t used_ = 0;
  uint64_t live_ = 0;
};

}  // namespace gphkv::server
