// Hands a store's pairs from the thread that owns the store (the executor)
// to the snapshot writer's thread, without making the owner wait on the
// disk: the owner pushes a chunk between batches whenever wants_more() (the
// queue holds less than its byte cap), and finish()es; the writer pulls
// chunks as a PairSource, waiting for the next one. If the writer stops
// (an error), abandoned() turns true and pushes are dropped.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "server/durability/pairs.h"

namespace gphkv::server::durability {

// One chunk as a store exports it: keys, their value lengths, and the
// values concatenated (what a value heap's gather produces). A chunk holds
// one kind of key: uint64 keys in `keys`, or byte keys packed the way the
// values are (key_lengths, key_bytes).
struct PairChunk {
  std::vector<uint64_t> keys;
  std::vector<uint32_t> lengths;
  std::string bytes;
  std::vector<uint32_t> key_lengths;
  std::string key_bytes;
  // Byte keys' item fields, one per pair (empty: all 0).
  std::vector<byte_key::ItemMeta> metas;

  size_t size() const { return lengths.size(); }
  bool empty() const { return lengths.empty(); }
  void clear();
  // What it holds, about: for the feed's cap.
  uint64_t bytes_held() const {
    return bytes.size() + key_bytes.size() + 12 * lengths.size() + sizeof(byte_key::ItemMeta) * metas.size();
  }

  // The chunk as Pairs, each value a view into `bytes` kept in *values and
  // each byte key one into `key_bytes` kept in *byte_keys (valid while the
  // chunk and the vectors are unchanged).
  Pairs as_pairs(std::vector<std::string_view>* values, std::vector<std::string_view>* byte_keys) const;
};

class SnapshotFeed final : public PairSource {
 public:
  explicit SnapshotFeed(uint64_t max_queued_bytes) : max_queued_bytes_(max_queued_bytes) {}

  // Owner's side.
  bool wants_more() const;
  void push(PairChunk chunk);
  void finish();
  // Ends the snapshot with `error` (the writer returns it; nothing is kept).
  void fail(absl::Status error);
  bool abandoned() const;

  // Writer's side.
  absl::StatusOr<bool> next(Pairs* out) override;
  // The writer gives up (its own error): the owner's pushes are dropped.
  void abandon();

 private:
  const uint64_t max_queued_bytes_;
  mutable std::mutex mu_;
  std::condition_variable ready_;
  std::deque<PairChunk> queue_;
  uint64_t queued_bytes_ = 0;
  bool finished_ = false;
  bool abandoned_ = false;
  absl::Status error_;
  // The chunk the writer holds views into (until its next call).
  PairChunk current_;
  std::vector<std::string_view> current_values_;
  std::vector<std::string_view> current_byte_keys_;
};

}  // namespace gphkv::server::durability
