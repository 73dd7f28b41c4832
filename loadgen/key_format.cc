#include "loadgen/key_format.h"

#include "absl/strings/str_cat.h"

namespace gphkv::loadgen {

absl::StatusOr<KeyFormat> ParseKeyFormat(const std::string& name) {
  if (name == "u64") return KeyFormat::kU64;
  if (name == "bytes") return KeyFormat::kBytes;
  return absl::InvalidArgumentError(absl::StrCat("unknown --key_format '", name, "' (want u64 or bytes)"));
}

const char* KeyFormatName(KeyFormat format) { return format == KeyFormat::kBytes ? "bytes" : "u64"; }

std::string ByteKeyNames::Name(uint64_t id) const {
  const std::string digits = absl::StrCat(id);
  std::string key = "k:";
  if (length_ > key.size() + digits.size()) key.append(length_ - key.size() - digits.size(), '0');
  key += digits;
  return key;
}

void ByteKeyNames::Name(absl::Span<const uint64_t> ids, std::string* storage,
                        std::vector<std::string_view>* views) const {
  storage->clear();
  views->clear();
  std::vector<size_t> ends;
  ends.reserve(ids.size());
  for (uint64_t id : ids) {
    storage->append(Name(id));
    ends.push_back(storage->size());
  }
  size_t begin = 0;
  for (size_t end : ends) {
    views->emplace_back(storage->data() + begin, end - begin);
    begin = end;
  }
}

}  // namespace gphkv::loadgen
