#include "server/byte_key.h"

#include <xxhash.h>

namespace gphkv::server::byte_key {
namespace {

// gphkv's own seed ("gphkv b1"), so table keys are not the XXH3 values other
// systems compute from the same keys.
constexpr XXH64_hash_t kSeed = 0x6770686b76206231ull;

}  // namespace

uint64_t table_key(std::string_view key, int hash_bits) {
  const uint64_t h = XXH3_64bits_withSeed(key.data(), key.size(), kSeed);
  return hash_bits >= 64 ? h : h & ((uint64_t{1} << hash_bits) - 1);
}

void append_record(std::string_view key, std::string_view value, std::string* out) {
  const auto n = static_cast<uint16_t>(key.size());
  const char header[kRecordHeaderBytes] = {static_cast<char>(n & 0xff), static_cast<char>(n >> 8)};
  out->append(header, kRecordHeaderBytes);
  out->append(key);
  out->append(value);
}

std::optional<Record> parse_record(std::string_view bytes) {
  if (bytes.size() < kRecordHeaderBytes) return std::nullopt;
  const uint32_t n = static_cast<uint8_t>(bytes[0]) | (static_cast<uint32_t>(static_cast<uint8_t>(bytes[1])) << 8);
  if (bytes.size() - kRecordHeaderBytes < n) return std::nullopt;
  return Record{bytes.substr(kRecordHeaderBytes, n), bytes.substr(kRecordHeaderBytes + n)};
}

std::optional<std::string_view> value_if_key(std::string_view record, std::string_view key) {
  const std::optional<Record> r = parse_record(record);
  if (!r || r->key != key) return std::nullopt;
  return r->value;
}

}  // namespace gphkv::server::byte_key
