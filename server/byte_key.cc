#include "server/byte_key.h"

#include <xxhash.h>

namespace gphkv::server::byte_key {
namespace {

void append_le(uint64_t v, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t read_le(std::string_view bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[at + i])) << (8 * i);
  return v;
}

}  // namespace

uint64_t table_key(std::string_view key, int hash_bits) {
  return keep_bits(XXH3_64bits_withSeed(key.data(), key.size(), kTableKeySeed), hash_bits);
}

uint32_t absolute_exptime(int64_t exptime, uint32_t now) {
  if (exptime == 0) return 0;
  // Expired: `now` itself (an absolute time, so applying the rule again,
  // as a replayed log does, keeps it).
  if (exptime < 0) return now == 0 ? 1 : now;
  if (exptime <= kMaxRelativeExptime) {
    const uint64_t at = uint64_t{now} + static_cast<uint64_t>(exptime);
    return at > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(at);
  }
  return exptime > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(exptime);
}

void append_record(std::string_view key, std::string_view value, std::string* out) {
  append_record(key, value, ItemMeta{}, out);
}

void append_record(std::string_view key, std::string_view value, const ItemMeta& meta, std::string* out) {
  const bool item = !meta.empty();
  append_le(key.size() | (item ? kItemHeaderBit : 0u), 2, out);
  if (item) {
    append_le(meta.flags, 4, out);
    append_le(meta.exptime, 4, out);
    append_le(meta.cas, 8, out);
  }
  out->append(key);
  out->append(value);
}

std::optional<Record> parse_record(std::string_view bytes) {
  if (bytes.size() < kRecordHeaderBytes) return std::nullopt;
  const auto raw = static_cast<uint32_t>(read_le(bytes, 0, 2));
  const uint32_t n = raw & ~uint32_t{kItemHeaderBit};
  Record r;
  size_t at = kRecordHeaderBytes;
  if ((raw & kItemHeaderBit) != 0) {
    if (bytes.size() < kMaxRecordHeaderBytes) return std::nullopt;
    r.meta.flags = static_cast<uint32_t>(read_le(bytes, at, 4));
    r.meta.exptime = static_cast<uint32_t>(read_le(bytes, at + 4, 4));
    r.meta.cas = read_le(bytes, at + 8, 8);
    at = kMaxRecordHeaderBytes;
  }
  if (bytes.size() - at < n) return std::nullopt;
  r.key = bytes.substr(at, n);
  r.value = bytes.substr(at + n);
  return r;
}

std::optional<std::string_view> value_if_key(std::string_view record, std::string_view key) {
  const std::optional<Record> r = parse_record(record);
  if (!r || r->key != key) return std::nullopt;
  return r->value;
}

}  // namespace gphkv::server::byte_key
