#include "server/snapshot_export.h"

#include <algorithm>

namespace gphkv::server {

absl::StatusOr<StoreExport> StoreExport::start(Store& store, std::vector<uint64_t> buffer) {
  if (absl::Status s = store.stored_keys(&buffer); !s.ok()) return s;
  StoreExport e(std::move(buffer));
  if (absl::Status s = store.read_collided(&e.collided_ids_, &e.collided_byte_pairs_); !s.ok()) return s;
  return e;
}

absl::Status StoreExport::next_chunk(Store& store, durability::PairChunk* ids, durability::PairChunk* byte_pairs) {
  const size_t n = std::min(kChunkKeys, keys_.size() - next_);
  ids->clear();
  byte_pairs->clear();
  if (!collided_ids_.empty() || !collided_byte_pairs_.empty()) {
    std::swap(*ids, collided_ids_);
    std::swap(*byte_pairs, collided_byte_pairs_);
    collided_ids_.clear();
    collided_byte_pairs_.clear();
  }
  absl::Status s = store.read_pairs(absl::MakeConstSpan(keys_).subspan(next_, n), ids, byte_pairs);
  if (s.ok()) next_ += n;
  return s;
}

absl::StatusOr<bool> StorePairSource::next(durability::Pairs* out) {
  for (;;) {
    if (!byte_pairs_given_) {
      byte_pairs_given_ = true;
      if (!byte_pairs_.empty()) {
        *out = byte_pairs_.as_pairs(&values_, &byte_keys_);
        return true;
      }
    }
    if (export_.done()) return false;
    if (absl::Status s = export_.next_chunk(store_, &ids_, &byte_pairs_); !s.ok()) return s;
    byte_pairs_given_ = false;
    if (!ids_.empty()) {
      *out = ids_.as_pairs(&values_, &byte_keys_);
      return true;
    }
  }
}

}  // namespace gphkv::server
