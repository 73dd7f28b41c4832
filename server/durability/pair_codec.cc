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

void append_byte_key(std::string* out, std::string_view key) {
  char h[kByteKeyEntryHeaderBytes];
  store_le16(h, static_cast<uint16_t>(key.size()));
  out->append(h, sizeof h);
  out->append(key);
}

void append_item_key(std::string* out, std::string_view key, const ItemMeta& meta) {
  if (meta.empty()) return append_byte_key(out, key);
  char h[kByteKeyEntryHeaderBytes + kItemEntryFieldsBytes];
  store_le16(h, static_cast<uint16_t>(key.size() | kItemEntryBit));
  store_le32(h + 2, meta.flags);
  store_le32(h + 6, meta.exptime);
  store_le64(h + 10, meta.cas);
  out->append(h, sizeof h);
  out->append(key);
}

void append_value(std::string* out, std::string_view value) {
  char h[4];
  store_le32(h, static_cast<uint32_t>(value.size()));
  out->append(h, sizeof h);
  out->append(value);
}

// Reads a byte key's entry at *at: false when it runs past the end or its
// length is out of range. With `meta`, an item's fields are read too (zeros
// for a plain entry); without, a marked entry is malformed.
bool read_byte_key(std::string_view bytes, uint64_t* at, std::string_view* key, ItemMeta* meta = nullptr) {
  if (bytes.size() - *at < kByteKeyEntryHeaderBytes) return false;
  uint16_t n = load_le16(bytes.data() + *at);
  *at += kByteKeyEntryHeaderBytes;
  if (meta != nullptr) {
    *meta = ItemMeta{};
    if ((n & kItemEntryBit) != 0) {
      n &= static_cast<uint16_t>(~kItemEntryBit);
      if (bytes.size() - *at < kItemEntryFieldsBytes) return false;
      const char* f = bytes.data() + *at;
      *meta = ItemMeta{load_le32(f), load_le32(f + 4), load_le64(f + 8)};
      *at += kItemEntryFieldsBytes;
    }
  }
  if (n == 0 || n > kMaxByteKeyBytes || bytes.size() - *at < n) return false;
  *key = bytes.substr(*at, n);
  *at += n;
  return true;
}

bool read_value(std::string_view bytes, uint64_t* at, std::string_view* value) {
  if (bytes.size() - *at < 4) return false;
  const uint64_t len = load_le32(bytes.data() + *at);
  *at += 4;
  if (bytes.size() - *at < len) return false;
  *value = bytes.substr(*at, len);
  *at += len;
  return true;
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

void append_byte_pair_entries(std::string* out, absl::Span<const std::string_view> keys,
                              absl::Span<const std::string_view> values) {
  for (size_t i = 0; i < keys.size(); ++i) {
    append_byte_key(out, keys[i]);
    append_value(out, values[i]);
  }
}

void append_byte_pair_entries(std::string* out, absl::Span<const std::string_view> keys,
                              absl::Span<const uint32_t> lengths, std::string_view bytes) {
  size_t off = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    append_byte_key(out, keys[i]);
    append_value(out, bytes.substr(off, lengths[i]));
    off += lengths[i];
  }
}

void append_byte_key_entries(std::string* out, absl::Span<const std::string_view> keys) {
  for (std::string_view k : keys) append_byte_key(out, k);
}

bool decode_byte_pair_entries(std::string_view bytes, uint64_t* offset, uint64_t count,
                              std::vector<std::string_view>* keys, std::vector<std::string_view>* values) {
  uint64_t at = *offset;
  for (uint64_t i = 0; i < count && (count != UINT64_MAX || at < bytes.size()); ++i) {
    std::string_view key, value;
    if (!read_byte_key(bytes, &at, &key) || !read_value(bytes, &at, &value)) return false;
    keys->push_back(key);
    values->push_back(value);
  }
  *offset = at;
  return true;
}

void append_byte_item_entries(std::string* out, absl::Span<const std::string_view> keys,
                              absl::Span<const ItemMeta> metas, absl::Span<const std::string_view> values) {
  for (size_t i = 0; i < keys.size(); ++i) {
    append_item_key(out, keys[i], metas[i]);
    append_value(out, values[i]);
  }
}

void append_byte_item_entries(std::string* out, absl::Span<const std::string_view> keys,
                              absl::Span<const ItemMeta> metas, absl::Span<const uint32_t> lengths,
                              std::string_view bytes) {
  size_t off = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    append_item_key(out, keys[i], metas[i]);
    append_value(out, bytes.substr(off, lengths[i]));
    off += lengths[i];
  }
}

bool decode_byte_item_entries(std::string_view bytes, uint64_t* offset, uint64_t count,
                              std::vector<std::string_view>* keys, std::vector<ItemMeta>* metas,
                              std::vector<std::string_view>* values) {
  uint64_t at = *offset;
  for (uint64_t i = 0; i < count && (count != UINT64_MAX || at < bytes.size()); ++i) {
    std::string_view key, value;
    ItemMeta meta;
    if (!read_byte_key(bytes, &at, &key, &meta) || !read_value(bytes, &at, &value)) return false;
    keys->push_back(key);
    metas->push_back(meta);
    values->push_back(value);
  }
  *offset = at;
  return true;
}

bool decode_byte_key_entries(std::string_view bytes, uint64_t* offset, uint64_t count,
                             std::vector<std::string_view>* keys) {
  uint64_t at = *offset;
  for (uint64_t i = 0; i < count; ++i) {
    std::string_view key;
    if (!read_byte_key(bytes, &at, &key)) return false;
    keys->push_back(key);
  }
  *offset = at;
  return true;
}

}  // namespace gphkv::server::durability
