#include "server/durability/pair_codec.h"

#include "server/durability/byte_order.h"

namespace gphkv::server::durability {
namespace {

void append_entry(std::string* out, uint64_t key, std::string_view value) {
  char h[kPairEntryHeaderBytes];
  store_le64(h, key);
  store_le32(h + 8, static_cast<uint32_t>(value.size()));
  out->append(h, sizeof h);
  out->append(value);
}

}  // namespace

void append_pair_entries(std::string* out, absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values) {
  for (size_t i = 0; i < keys.size(); ++i) append_entry(out, keys[i], values[i]);
}

void append_pair_entries(std::string* out, absl::Span<const uint64_t> keys, absl::Span<const uint32_t> lengths,
                         std::string_view bytes) {
  size_t off = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    append_entry(out, keys[i], bytes.substr(off, lengths[i]));
    off += lengths[i];
  }
}

bool decode_pair_entries(std::string_view bytes, uint64_t* offset, uint64_t count, std::vector<uint64_t>* keys,
                         std::vector<std::string_view>* values) {
  uint64_t at = *offset;
  for (uint64_t i = 0; i < count && (count != UINT64_MAX || at < bytes.size()); ++i) {
    if (bytes.size() - at < kPairEntryHeaderBytes) return false;
    const uint64_t key = load_le64(bytes.data() + at);
    const uint64_t len = load_le32(bytes.data() + at + 8);
    at += kPairEntryHeaderBytes;
    if (bytes.size() - at < len) return false;
    keys->push_back(key);
    values->push_back(bytes.substr(at, len));
    at += len;
  }
  *offset = at;
  return true;
}

}  // namespace gphkv::server::durability
