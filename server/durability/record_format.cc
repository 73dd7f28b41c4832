#include "server/durability/record_format.h"

#include "server/durability/byte_order.h"
#include "server/durability/crc32c.h"

namespace gphkv::server::durability {

std::array<char, kRecordHeaderBytes> record_header(std::string_view payload) {
  std::array<char, kRecordHeaderBytes> h;
  store_le32(h.data(), static_cast<uint32_t>(payload.size()));
  const uint32_t crc = crc32c_extend(crc32c_extend(0, h.data(), 4), payload.data(), payload.size());
  store_le32(h.data() + 4, crc);
  return h;
}

RecordAt read_record(std::string_view bytes, uint64_t offset) {
  RecordAt r;
  if (bytes.size() - offset < kRecordHeaderBytes) {
    r.check = RecordCheck::kTruncated;
    return r;
  }
  const char* h = bytes.data() + offset;
  const uint64_t length = load_le32(h);
  if (bytes.size() - offset - kRecordHeaderBytes < length) {
    r.check = RecordCheck::kTruncated;
    return r;
  }
  const std::string_view payload = bytes.substr(offset + kRecordHeaderBytes, length);
  if (crc32c_extend(crc32c_extend(0, h, 4), payload.data(), payload.size()) != load_le32(h + 4)) {
    r.check = RecordCheck::kBadChecksum;
    return r;
  }
  r.payload = payload;
  r.end = offset + kRecordHeaderBytes + length;
  return r;
}

std::optional<uint64_t> next_intact_record(std::string_view bytes, uint64_t offset) {
  for (uint64_t at = offset + 1; at + kRecordHeaderBytes <= bytes.size(); ++at) {
    if (read_record(bytes, at).check == RecordCheck::kOk) return at;
  }
  return std::nullopt;
}

const char* damage_text(RecordCheck check) {
  return check == RecordCheck::kTruncated ? "cut short" : "with a CRC32C that does not match";
}

}  // namespace gphkv::server::durability
