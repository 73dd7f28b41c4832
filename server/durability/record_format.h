// The framing every durability file shares: the log's batches and a
// snapshot's header and blocks are records
//
//   [u32 payload length][u32 CRC32C of the length's 4 bytes and the payload][payload]
//
// little-endian, back to back. The CRC covers the length too, so a flipped
// length bit is caught like a flipped payload bit.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace gphkv::server::durability {

inline constexpr size_t kRecordHeaderBytes = 8;
// The length field's limit: a payload must be smaller than 4 GiB.
inline constexpr uint64_t kMaxRecordPayloadBytes = UINT32_MAX;

// The 8 header bytes of a record holding `payload` (at most kMaxRecordPayloadBytes).
std::array<char, kRecordHeaderBytes> record_header(std::string_view payload);

// What is found at an offset of a file's bytes.
enum class RecordCheck {
  kOk,           // an intact record
  kTruncated,    // the header or the payload it announces runs past the end
  kBadChecksum,  // the bytes are all there but the CRC does not match
};

// What is wrong with a damaged record, for messages: "cut short" or "with a
// CRC32C that does not match".
const char* damage_text(RecordCheck check);

struct RecordAt {
  RecordCheck check = RecordCheck::kOk;
  std::string_view payload;  // kOk only
  uint64_t end = 0;          // kOk only: the offset after the record
};

// The record that starts at `offset` of `bytes` (offset <= bytes.size()).
RecordAt read_record(std::string_view bytes, uint64_t offset);

// The offset of the first intact record that starts after `offset`, if any.
// Tells a torn tail (nothing intact follows the bad record: a write cut
// short by a crash) from damage in the middle (intact records follow).
// Tries every offset: slow, but only run once a record failed.
std::optional<uint64_t> next_intact_record(std::string_view bytes, uint64_t offset);

}  // namespace gphkv::server::durability
