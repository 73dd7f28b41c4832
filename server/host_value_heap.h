// The value heap of the CPU backend: value bytes in host memory.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/extent_value_heap.h"

namespace gphkv::server {

// The heap in host memory (the CPU backend's): chunks from the system
// allocator, copies with memcpy.
class HostValueHeap final : public ExtentValueHeap {
 public:
  // The smallest chunk: small stores (tests, small --memory) reserve little.
  static constexpr uint64_t kMinChunkBytes = 256 * 1024;

  // INVALID_ARGUMENT if max_value_bytes is over what a handle carries
  // (value_handle::kMaxLength).
  static absl::StatusOr<std::unique_ptr<HostValueHeap>> create(uint32_t max_value_bytes);
  ~HostValueHeap() override;

  absl::Status write(absl::Span<const ValueHandle> handles, absl::Span<const std::string_view> bytes) override;
  absl::Status gather(absl::Span<const ValueHandle> handles, std::string* out) const override;

 private:
  explicit HostValueHeap(uint32_t max_value_bytes) : ExtentValueHeap(max_value_bytes, kMinChunkBytes) {}
  absl::StatusOr<char*> map_chunk() override;
  void unmap_chunk(char* base) override;
  absl::Status move(absl::Span<const Move> moves, bool overlapping) override;
};

}  // namespace gphkv::server
