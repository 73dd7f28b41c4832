// Value bytes for puts without drawing them per value: every value is a slice
// of one read-only buffer of random printable bytes, starting at an offset
// derived from its key (so memcached and gphkv store the same bytes), with
// its first bytes overwritten by a stamp: the version of the write that
// stored it (read_check.h). A get's value then says which write it came from
// (the stamp) and whether it is this key's value at all (the rest).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/string_view.h"
#include "loadgen/rng.h"

namespace gphkv::loadgen {

// What the read check needs of one value a get returned.
struct ValueSeen {
  uint64_t key = 0;
  uint64_t stamp = 0;  // the value's first min(kStampBytes, size) bytes, little-endian
  uint32_t size = 0;
  bool intact = false;  // the bytes after the stamp are the pool's for (key, size)
};

class ValuePool {
 public:
  static constexpr uint32_t kOffsets = 1 << 16;
  // A version in 8 bytes never repeats within a run; a value shorter than
  // that carries the version's low bytes only (read_check.h compares them so).
  static constexpr uint32_t kStampBytes = 8;

  explicit ValuePool(uint32_t max_value_bytes) {
    Rng rng(0x76616c7565ULL);
    bytes_.resize(static_cast<size_t>(max_value_bytes) + kOffsets);
    for (char& c : bytes_) c = static_cast<char>('a' + rng.Next() % 26);
  }

  // Appends the value of `key` as written by the write of `version` (0: the load phase).
  void AppendValue(uint64_t key, uint32_t size, uint64_t version, std::string* out) const {
    const size_t at = out->size();
    const absl::string_view slice = Slice(key, size);
    out->append(slice.data(), slice.size());
    const uint32_t n = std::min(size, kStampBytes);
    for (uint32_t i = 0; i < n; ++i) (*out)[at + i] = static_cast<char>(version >> (8 * i));
  }

  // Reads back a value `key` was found with.
  ValueSeen Inspect(uint64_t key, absl::string_view value) const {
    ValueSeen seen;
    seen.key = key;
    seen.size = static_cast<uint32_t>(value.size());
    const size_t n = std::min<size_t>(value.size(), kStampBytes);
    for (size_t i = 0; i < n; ++i) seen.stamp |= uint64_t{static_cast<unsigned char>(value[i])} << (8 * i);
    seen.intact =
        value.size() + kOffsets <= bytes_.size() &&
        (value.size() == n || std::memcmp(Slice(key, seen.size).data() + n, value.data() + n, value.size() - n) == 0);
    return seen;
  }

 private:
  absl::string_view Slice(uint64_t key, uint32_t size) const {
    return absl::string_view(bytes_.data() + Mix64(key) % kOffsets, size);
  }

  std::string bytes_;
};

}  // namespace gphkv::loadgen
