// Value bytes for puts without allocating per value: every value is a slice
// of one read-only buffer of random printable bytes, starting at an offset
// derived from its key (so memcached and gphkv store the same bytes).
#pragma once

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "loadgen/rng.h"

namespace gphkv::loadgen {

class ValuePool {
 public:
  static constexpr uint32_t kOffsets = 1 << 16;
  explicit ValuePool(uint32_t max_value_bytes) {
    Rng rng(0x76616c7565ULL);
    bytes_.resize(static_cast<size_t>(max_value_bytes) + kOffsets);
    for (char& c : bytes_) c = static_cast<char>('a' + rng.Next() % 26);
  }
  absl::string_view ValueFor(uint64_t key, uint32_t size) const {
    return absl::string_view(bytes_.data() + Mix64(key) % kOffsets, size);
  }

 private:
  std::string bytes_;
};

}  // namespace gphkv::loadgen
