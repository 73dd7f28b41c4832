#include "server/host_value_heap.h"

#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"

namespace gphkv::server {

absl::StatusOr<std::unique_ptr<HostValueHeap>> HostValueHeap::create(uint32_t max_value_bytes) {
  if (max_value_bytes > value_handle::kMaxLength) {
    return absl::InvalidArgumentError(absl::StrCat("--max_value_bytes=", max_value_bytes,
                                                   " is over the value heap's limit of ", value_handle::kMaxLength,
                                                   " bytes (the length field of a handle)"));
  }
  return std::unique_ptr<HostValueHeap>(new HostValueHeap(max_value_bytes));
}

HostValueHeap::~HostValueHeap() { unmap_all(); }

absl::StatusOr<char*> HostValueHeap::map_chunk() {
  // Aligned as the device's chunks are, though memcpy does not need it.
  void* p = ::operator new (chunk_bytes(), std::align_val_t{256}, std::nothrow);
  if (p == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("value heap: no host memory for a chunk of ", chunk_bytes(), " bytes"));
  }
  return static_cast<char*>(p);
}

void HostValueHeap::unmap_chunk(char* base) { ::operator delete (base, std::align_val_t{256}); }

absl::Status HostValueHeap::move(absl::Span<const Move> moves, bool overlapping) {
  // In order: memmove copies a slid value whose ranges overlap.
  for (const Move& m : moves) {
    if (overlapping) {
      std::memmove(m.to, m.from, length(m.handle));
    } else {
      std::memcpy(m.to, m.from, length(m.handle));
    }
  }
  return absl::OkStatus();
}

absl::Status HostValueHeap::write(absl::Span<const ValueHandle> handles, absl::Span<const std::string_view> bytes) {
  if (handles.size() != bytes.size()) return absl::InvalidArgumentError("write: handles and values differ in count");
  for (size_t i = 0; i < handles.size(); ++i) {
    if (bytes[i].size() != length(handles[i]))
      return absl::InvalidArgumentError("write: value length differs from its slot's");
  }
  for (size_t i = 0; i < handles.size(); ++i) {
    if (!bytes[i].empty()) std::memcpy(address(handles[i]), bytes[i].data(), bytes[i].size());
  }
  return absl::OkStatus();
}

absl::Status HostValueHeap::gather(absl::Span<const ValueHandle> handles, std::string* out) const {
  size_t pos = out->size();
  size_t total = pos;
  for (ValueHandle h : handles) total += length(h);
  out->resize(total);
  for (ValueHandle h : handles) {
    const uint32_t len = length(h);
    if (len > 0) std::memcpy(out->data() + pos, address(h), len);
    pos += len;
  }
  return absl::OkStatus();
}

}  // namespace gphkv::server
