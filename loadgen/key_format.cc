#include "loadgen/key_format.h"

#include <algorithm>
#include <charconv>

#include "absl/strings/str_cat.h"

namespace gphkv::loadgen {

absl::StatusOr<KeyFormat> ParseKeyFormat(const std::string& name) {
  if (name == "u64") return KeyFormat::kU64;
  if (name == "bytes") return KeyFormat::kBytes;
  return absl::InvalidArgumentError(absl::StrCat("unknown --key_format '", name, "' (want u64 or bytes)"));
}

const char* KeyFormatName(KeyFormat format) { return format == KeyFormat::kBytes ? "bytes" : "u64"; }

namespace {

// Appends the key of `id`: "k:", zeros up to `length` bytes, the id's digits.
void AppendName(uint64_t id, uint32_t length, std::string* out) {
  char digits[20];
  const size_t n = static_cast<size_t>(std::to_chars(digits, digits + sizeof(digits), id).ptr - digits);
  out->append("k:", 2);
  if (length > 2 + n) out->append(length - 2 - n, '0');
  out->append(digits, n);
}

}  // namespace

std::string ByteKeyNames::Name(uint64_t id) const {
  std::string key;
  AppendName(id, length_, &key);
  return key;
}

// Runs per op on the load generator's hot path: one buffer, sized up front
// for the longest key (20 digits) so that the views taken as it fills stay
// valid, and no string per key.
void ByteKeyNames::Name(absl::Span<const uint64_t> ids, std::string* storage,
                        std::vector<std::string_view>* views) const {
  storage->clear();
  views->clear();
  storage->reserve(ids.size() * std::max<size_t>(length_, 2 + 20));
  for (uint64_t id : ids) {
    const size_t begin = storage->size();
    AppendName(id, length_, storage);
    views->emplace_back(storage->data() + begin, storage->size() - begin);
  }
}

}  // namespace gphkv::loadgen
