// How the load generator names a key on the wire (--key_format): the key
// space's uint64 id itself, or a byte key made from it, so one workload
// drives either path of the store (docs/byte-keys.md) and the same ids stay
// checkable by the read check. Byte keys are "k:" and the id, zero-padded to
// a length drawn from --key_length, a size spec ("24", "16-40", ...: each id
// its own length, from a hash of the id, so it is named the same in every
// phase) (bytes), or TaoBench's shapes (tao): an even id names an
// object, "o:<id/2>", an odd one an association, "a:<id1>:<type>:<id2>",
// 3 to 24 bytes, as a social graph's cache keys them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "loadgen/size_distribution.h"

namespace gphkv::loadgen {

enum class KeyFormat { kU64, kBytes, kTao };

absl::StatusOr<KeyFormat> ParseKeyFormat(const std::string& name);
const char* KeyFormatName(KeyFormat format);

// The byte keys of ids: `length` bytes each (longer where an id needs more
// digits) for kBytes; TaoBench's shapes for kTao (length unused). Each id
// has a name of its own.
class ByteKeyNames {
 public:
  // At least "k:" and one digit; at most 250 bytes (the server's default --max_key_bytes).
  static constexpr uint32_t kMinLength = 3, kMaxLength = 250;
  // The longest name kTao gives: "a:", 16 digits (2^60 / 1000), ":", the type, ":", 3 digits.
  static constexpr uint32_t kMaxTaoLength = 2 + 16 + 1 + 1 + 1 + 3;
  explicit ByteKeyNames(uint32_t length, KeyFormat format = KeyFormat::kBytes) : length_(length), format_(format) {}
  // kBytes, each id's length drawn from `lengths` (its Max() at most kMaxLength).
  explicit ByteKeyNames(std::shared_ptr<const SizeDistribution> lengths)
      : length_(lengths->Max()), format_(KeyFormat::kBytes), lengths_(std::move(lengths)) {}
  // The longest length asked for.
  uint32_t length() const { return length_; }
  KeyFormat format() const { return format_; }
  // The keys of `ids`, their bytes in *storage and views of them in *views
  // (both cleared first; the views live as long as *storage is unchanged).
  void Name(absl::Span<const uint64_t> ids, std::string* storage, std::vector<std::string_view>* views) const;
  std::string Name(uint64_t id) const;

 private:
  void Append(uint64_t id, std::string* out) const;

  // The length of id's key before any digits past it (kBytes).
  uint32_t LengthOf(uint64_t id) const;

  uint32_t length_;
  KeyFormat format_;
  std::shared_ptr<const SizeDistribution> lengths_;  // null: every key length_ long
};

}  // namespace gphkv::loadgen
