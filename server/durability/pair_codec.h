// How the log's puts and a snapshot's blocks store pairs: one entry per pair,
//
//   uint64 keys: [u64 key][u32 value length][value bytes]
//   byte keys:   [u16 key length][key bytes][u32 value length][value bytes]
//
// little-endian, back to back, so a run grows by appending and a reader
// hands out views of the keys and values where they lie. A byte key is 1 to
// kMaxByteKeyBytes bytes; the log's byte-key deletes are the same entries
// without the value: [u16 key length][key bytes].
//
// Byte-key items (issue 27) are byte-key entries whose key length has
// kItemEntryBit set when the item's fields are not all 0, the fields then
// following it as in the value heap's record (server/byte_key.h):
//
//   [u16 key length | 0x8000][u32 flags][u32 exptime][u64 cas][key bytes][u32 value length][value bytes]
//
// Only the runs and blocks of their own kinds hold them (write_batch.h,
// snapshot_format.h): an earlier build meets the kind, not a key length it
// would misread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "server/item_meta.h"

namespace gphkv::server::durability {

inline constexpr size_t kPairEntryHeaderBytes = 12;
// A byte-key entry's framing: the key's length and the value's.
inline constexpr size_t kBytePairEntryHeaderBytes = 6;
inline constexpr size_t kByteKeyEntryHeaderBytes = 2;
// The longest byte key an entry holds (--max_key_bytes' limit).
inline constexpr size_t kMaxByteKeyBytes = 4096;
inline constexpr uint16_t kItemEntryBit = 0x8000;
inline constexpr size_t kItemEntryFieldsBytes = 16;
using ItemMeta = byte_key::ItemMeta;

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

// Byte keys' entries. keys[i] is 1 to kMaxByteKeyBytes bytes (the caller's
// promise: the server validated every key it stores).
void append_byte_pair_entries(std::string* out, absl::Span<const std::string_view> keys,
                              absl::Span<const std::string_view> values);
void append_byte_pair_entries(std::string* out, absl::Span<const std::string_view> keys,
                              absl::Span<const uint32_t> lengths, std::string_view bytes);
void append_byte_key_entries(std::string* out, absl::Span<const std::string_view> keys);

// As decode_pair_entries, for byte keys; false also for a key of 0 or more
// than kMaxByteKeyBytes bytes.
bool decode_byte_pair_entries(std::string_view bytes, uint64_t* offset, uint64_t count,
                              std::vector<std::string_view>* keys, std::vector<std::string_view>* values);
bool decode_byte_key_entries(std::string_view bytes, uint64_t* offset, uint64_t count,
                             std::vector<std::string_view>* keys);

// Byte-key items: metas[i] is keys[i]'s (an empty one writes a plain entry).
void append_byte_item_entries(std::string* out, absl::Span<const std::string_view> keys,
                              absl::Span<const ItemMeta> metas, absl::Span<const std::string_view> values);
void append_byte_item_entries(std::string* out, absl::Span<const std::string_view> keys,
                              absl::Span<const ItemMeta> metas, absl::Span<const uint32_t> lengths,
                              std::string_view bytes);
// As decode_byte_pair_entries, also appending each entry's fields (zeros
// for a plain entry) to metas.
bool decode_byte_item_entries(std::string_view bytes, uint64_t* offset, uint64_t count,
                              std::vector<std::string_view>* keys, std::vector<ItemMeta>* metas,
                              std::vector<std::string_view>* values);

}  // namespace gphkv::server::durability
