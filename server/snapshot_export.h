// The store's pairs for a snapshot, read a chunk at a time by the thread
// that owns the store. A snapshot may be fuzzy (docs/durability.md, "Fuzzy
// is enough"): it must hold the value of every key that no batch after its
// sequence number writes. So the export takes the keys stored when the
// snapshot starts (one pass over the table, the only stall), then looks up
// their values chunk by chunk between batches, each chunk as the store is
// then: a key written since has a newer value or is gone, which the log
// after the snapshot sets right, and a key not written since has the value
// it had. No value is copied ahead, and reading goes through the table's
// find, so a rebuild in flight (its overlay) may run alongside.
//
// Byte keys (issue 26): a table slot names a uint64 key or holds a byte key's
// record, which names its key, so the list of table keys covers both; the
// few keys in CollidedKeys (none but for a 64-bit hash collision) are read
// whole when the export starts, as the store is then, and come first.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "server/durability/pairs.h"
#include "server/durability/snapshot_feed.h"
#include "server/store.h"

namespace gphkv::server {

class StoreExport {
 public:
  // Keys looked up per chunk: a find and a gather of this many keys costs
  // the executor a fraction of a millisecond between two batches
  // (docs/durability.md, "Snapshots while serving").
  static constexpr size_t kChunkKeys = 4096;

  // The keys stored now, listed into `buffer` (an earlier export's, from
  // take_keys: its pages are reused). FAILED_PRECONDITION while a table
  // rebuild runs (Store::stored_keys): start again once it is done.
  static absl::StatusOr<StoreExport> start(Store& store, std::vector<uint64_t> buffer = {});
  // The key list's storage, for the next export.
  std::vector<uint64_t> take_keys() && { return std::move(keys_); }

  uint64_t keys() const { return keys_.size(); }
  bool done() const { return next_ == keys_.size() && collided_ids_.empty() && collided_byte_pairs_.empty(); }
  // The next chunk's keys that are still stored, with their values now:
  // uint64 keys' pairs into *ids, byte keys' into *byte_pairs (both cleared first).
  absl::Status next_chunk(Store& store, durability::PairChunk* ids, durability::PairChunk* byte_pairs);

 private:
  explicit StoreExport(std::vector<uint64_t> keys) : keys_(std::move(keys)) {}

  std::vector<uint64_t> keys_;
  size_t next_ = 0;
  // CollidedKeys' pairs, read at the start, given with the first chunk.
  durability::PairChunk collided_ids_, collided_byte_pairs_;
};

// A whole export as a PairSource, pulled on the thread that owns the store
// (the final snapshot at shutdown: DataDir::snapshot on the executor thread).
class StorePairSource final : public durability::PairSource {
 public:
  StorePairSource(Store& store, StoreExport export_) : store_(store), export_(std::move(export_)) {}
  absl::StatusOr<bool> next(durability::Pairs* out) override;

 private:
  Store& store_;
  StoreExport export_;
  // The chunk read last, one of each kind: the uint64 keys' pairs are given
  // first, then the byte keys'.
  durability::PairChunk ids_, byte_pairs_;
  bool byte_pairs_given_ = true;
  std::vector<std::string_view> values_, byte_keys_;
};

}  // namespace gphkv::server
