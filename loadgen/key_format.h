// How the load generator names a key on the wire (--key_format): the key
// space's uint64 id itself, or a byte key made from it ("k:" and the id,
// zero-padded to --key_length bytes), so one workload drives either path of
// the store (docs/byte-keys.md) and the same ids stay checkable by the read
// check.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace gphkv::loadgen {

enum class KeyFormat { kU64, kBytes };

absl::StatusOr<KeyFormat> ParseKeyFormat(const std::string& name);
const char* KeyFormatName(KeyFormat format);

// The byte keys of ids, `length` bytes each (longer where an id needs more digits).
class ByteKeyNames {
 public:
  // At least "k:" and one digit; at most 250 bytes (the server's default --max_key_bytes).
  static constexpr uint32_t kMinLength = 3, kMaxLength = 250;
  explicit ByteKeyNames(uint32_t length) : length_(length) {}
  uint32_t length() const { return length_; }
  // The keys of `ids`, their bytes in *storage and views of them in *views
  // (both cleared first; the views live as long as *storage is unchanged).
  void Name(absl::Span<const uint64_t> ids, std::string* storage, std::vector<std::string_view>* views) const;
  std::string Name(uint64_t id) const;

 private:
  uint32_t length_;
};

}  // namespace gphkv::loadgen
