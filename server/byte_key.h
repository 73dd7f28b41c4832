// Byte keys (issue 26): how a key of 1 to --max_key_bytes arbitrary bytes
// ("user:42:profile", NUL bytes included) lives in the GPH table, whose keys
// are 64-bit. Mega-KV's path: the table holds a short signature of the key
// and the full key is kept where the value lives, compared on every hit.
//
// - The signature is the key's table key: XXH3-64 of its bytes (Debian's
//   libxxhash) with a seed of gphkv's own. A table key is only a hint: two
//   keys may share one, so a hit counts only once the stored key matches.
// - The value heap stores a byte key's record, the key and the value back to
//   back (append_record), and the table's slot holds the record's handle
//   marked as a record (value_handle::kRecordBit). A uint64 key's slot holds
//   its plain value, unmarked. So a uint64 key and a byte key never alias: a
//   lookup of uint64 key K that meets a marked handle, or of a byte key that
//   meets an unmarked one or another key's record, has not found its key.
// - Two keys whose table keys collide are both stored: the first holds the
//   table slot, the others wait in CollidedKeys (server/collided_keys.h).
//
// Shared by the host and the CUDA get path (the record layout is what a
// gather kernel compares).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/item_meta.h"
#include "server/value_handle.h"  // GPHKV_HOST_DEVICE

namespace gphkv::server::byte_key {

// memcached's KEY_MAX_LENGTH: the default --max_key_bytes.
constexpr uint32_t kDefaultMaxKeyBytes = 250;
// The most --max_key_bytes may be raised to.
constexpr uint32_t kMaxKeyBytesLimit = 4096;
// The record's header: the key's length, 2 bytes little-endian. Its top bit
// (kItemHeaderBit) says an item header follows (issue 27): the client's
// flags (u32), the absolute expiry time (u32 unix seconds, 0 = never) and
// the CAS version (u64), little-endian, then the key. A record without the
// bit (every record written before issue 27, and one whose item fields are
// all 0) reads as flags 0, never expiring, CAS 0. Key lengths stay below
// 2^13 (kMaxKeyBytesLimit), so the bit is free.
constexpr uint32_t kRecordHeaderBytes = 2;
constexpr uint16_t kItemHeaderBit = 0x8000;
constexpr uint32_t kItemHeaderBytes = 16;
// The longest header a record may have.
constexpr uint32_t kMaxRecordHeaderBytes = kRecordHeaderBytes + kItemHeaderBytes;

// memcached's rule for an item's expiry (items.c): an item whose exptime is
// set and not after `now` is gone. Shared with the CUDA kernel's check.
GPHKV_HOST_DEVICE constexpr bool is_expired(uint32_t exptime, uint32_t now) { return exptime != 0 && exptime <= now; }

// memcached's exptime rule (memcached.c realtime()), turning a client's
// exptime into an absolute time at `now`: 0 never expires; up to 30 days
// (kMaxRelativeExptime) is seconds from now; beyond that, an absolute unix
// time (one at or before now is expired at once); negative: expired at once
// (`now`). For a `now` past 30 days the result is its own absolute time, so
// the rule applied twice gives the same.
constexpr int64_t kMaxRelativeExptime = 60 * 60 * 24 * 30;
uint32_t absolute_exptime(int64_t exptime, uint32_t now);

// gphkv's own XXH3 seed ("gphkv b1"), so table keys are not the XXH3 values
// other systems compute from the same keys.
constexpr uint64_t kTableKeySeed = 0x6770686b76206231ull;
// A table key keeps the hash's `hash_bits` low bits (0..64).
GPHKV_HOST_DEVICE constexpr uint64_t keep_bits(uint64_t hash, int hash_bits) {
  return hash_bits >= 64 ? hash : hash & ((uint64_t{1} << hash_bits) - 1);
}

// XXH3-64 of the key with kTableKeySeed. `hash_bits` < 64 keeps only that
// many low bits: tests force collisions with it (a handful of table keys for
// thousands of byte keys); serving always uses 64. The CUDA get path makes
// the same keys on the device (server/xxh3.h, cuda/table_keys_kernel.h).
uint64_t table_key(std::string_view key, int hash_bits = 64);

// The bytes a record of this key and value takes in the heap (with an item
// header when `meta` is not empty).
inline uint64_t record_bytes(std::string_view key, std::string_view value, const ItemMeta& meta = {}) {
  return kRecordHeaderBytes + (meta.empty() ? 0 : kItemHeaderBytes) + key.size() + value.size();
}
// Appends the record of `key` (1 to kMaxKeyBytesLimit bytes) and `value`;
// with an item header when `meta` is not empty.
void append_record(std::string_view key, std::string_view value, std::string* out);
void append_record(std::string_view key, std::string_view value, const ItemMeta& meta, std::string* out);

struct Record {
  std::string_view key;
  std::string_view value;
  ItemMeta meta;
};
// The key and value of a stored record; nullopt when `bytes` is too short
// for the key length its header gives (never so for a record this file wrote).
std::optional<Record> parse_record(std::string_view bytes);
// The value of the record when it is `key`'s; nullopt when it is another
// key's (or malformed).
std::optional<std::string_view> value_if_key(std::string_view record, std::string_view key);

}  // namespace gphkv::server::byte_key
