// How the log's puts and a snapshot's blocks store pairs: one entry per pair,
//
//   [u64 key][u32 value length][value bytes]
//
// little-endian, back to back, so a run grows by appending and a reader
// hands out views of the values where they lie.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/types/span.h"

namespace gphkv::server::durability {

inline constexpr size_t kPairEntryHeaderBytes = 12;

// Appends one entry per pair.
void append_pair_entries(std::string* out, absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values);
// The same from a PutRequest's layout: the values concatenated in `bytes`,
// lengths[i] bytes each.
void append_pair_entries(std::string* out, absl::Span<const uint64_t> keys, absl::Span<const uint32_t> lengths,
                         std::string_view bytes);

// Decodes `count` entries from bytes[*offset...] (all up to the end when
// count is UINT64_MAX), appending to keys and values (views into bytes) and
// advancing *offset. False, at the first entry that runs past the end.
bool decode_pair_entries(std::string_view bytes, uint64_t* offset, uint64_t count, std::vector<uint64_t>* keys,
                         std::vector<std::string_view>* values);

}  // namespace gphkv::server::durability
