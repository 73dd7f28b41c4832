// A snapshot file: every pair of the store after the batches up to its
// sequence number, as records (record_format.h):
//
//   "GPHKVSNP"                       8 bytes of magic
//   header record, payload 48 bytes: u32 version (2), u32 flags (0),
//                                    u64 sequence, u64 pairs, u64 value bytes,
//                                    u64 blocks, u64 created (Unix ms)
//   block records, `blocks` of them: [u8 kind: 1 uint64 keys, 2 byte keys,
//                                    3 byte-key items] and that kind's pair
//                                    entries (pair_codec.h), about
//                                    DataDirOptions::snapshot_block_bytes each
//
// Version 1 (before byte keys, issue 26) had no kind byte: every block held
// uint64 keys' entries. This build reads both and writes version 2. Kind 3
// came with the item fields (issue 27): only a run of pairs that carries
// some item's fields is written as one, so a store without them writes
// what earlier builds wrote, and an earlier build refuses a kind-3 block by
// its kind.
//
// A logical dump of pairs, not the table's image: the table's layout differs
// between the CPU and CUDA tables and after every rebuild, and the value
// bytes must be saved anyway. A key may occur more than once (a fuzzy
// snapshot, snapshot_writer.h): the last occurrence wins.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace gphkv::server::durability {

inline constexpr std::string_view kSnapshotMagic = "GPHKVSNP";
inline constexpr uint32_t kSnapshotVersion = 2;
// The oldest version this build reads.
inline constexpr uint32_t kSnapshotVersionUint64Only = 1;
// A version-2 block's first byte.
inline constexpr uint8_t kSnapshotBlockOfKeys = 1;
inline constexpr uint8_t kSnapshotBlockOfByteKeys = 2;
inline constexpr uint8_t kSnapshotBlockOfByteItems = 3;

struct SnapshotHeader {
  uint32_t version = kSnapshotVersion;
  uint64_t sequence = 0;
  uint64_t pairs = 0;
  uint64_t value_bytes = 0;
  uint64_t blocks = 0;
  int64_t created_unix_ms = 0;
};

// The header record's payload.
std::string encode_snapshot_header(const SnapshotHeader& h);
// DATA_LOSS for a payload of the wrong size; UNIMPLEMENTED for a version this
// build does not read.
absl::StatusOr<SnapshotHeader> decode_snapshot_header(std::string_view payload);

// The header record's payload: two u32 and five u64.
inline constexpr size_t kSnapshotHeaderPayloadBytes = 4 + 4 + 5 * 8;
// Where the first block starts: the magic, the header record's framing, its payload.
inline constexpr uint64_t kSnapshotBlocksOffset = 8 + 8 + kSnapshotHeaderPayloadBytes;

}  // namespace gphkv::server::durability
